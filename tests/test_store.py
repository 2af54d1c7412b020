"""The server's SQLite file (suggestions, API keys), its command-line commands, and the access checks on top."""
import sqlite3

import pytest

from space.hosting.access import Access, AccessDenied, AccessSettings, MovingWindow
from transformer_hub.cli import main
from transformer_hub.training.data import load_split
from transformer_hub.store import KeyLimits, Store


def test_suggestions_are_stored_with_languages_time_and_model_and_export_aligned(tmp_path):
    store = Store(tmp_path / "db" / "s.db")
    store.add_suggestion("A dog runs.", "Ein Hund rennt.", "en", "de", model="en-de")
    store.add_suggestion("Two lines.\nSecond line.", "Zwei Zeilen.\nZweite Zeile.", "en", "de")
    store.add_suggestion("One line here.", "Eine\nZeile hier.", "en", "de")       # uneven: one joined pair
    store.add_suggestion("A dog runs.", "Ein Hund läuft.", "en", "de")             # the latest wins
    store.add_suggestion("Un chien.", "A dog.", "fr", "en")
    rows = sqlite3.connect(tmp_path / "db" / "s.db").execute(
        "SELECT q, s, source, target, model, created FROM suggestions").fetchall()
    assert rows[0][:5] == ("A dog runs.", "Ein Hund rennt.", "en", "de", "en-de") and rows[0][5] > 1.7e9
    assert store.export(tmp_path / "out") == {("en", "de"): 4, ("fr", "en"): 1}
    pairs = load_split(tmp_path / "out" / "en-de", "train", "en", "de")        # what training reads
    assert pairs == [("A dog runs.", "Ein Hund läuft."), ("Two lines.", "Zwei Zeilen."),
                     ("Second line.", "Zweite Zeile."), ("One line here.", "Eine Zeile hier.")]
    assert load_split(tmp_path / "out" / "fr-en", "train", "fr", "en") == [("Un chien.", "A dog.")]


def test_keys_added_looked_up_replaced_and_removed(tmp_path):
    store = Store(tmp_path / "k.db")
    key = store.add_key(60)
    assert len(key) >= 32 and store.lookup(key) == KeyLimits(60, None)
    assert store.add_key(5, key="mine", char_limit=100) == "mine"
    store.add_key(7, key="mine")
    assert store.lookup("mine") == KeyLimits(7, None) and store.lookup("other") is None
    assert [k for k, _ in store.keys()] == [key, "mine"]
    assert store.remove_key("mine") and not store.remove_key("mine")
    with pytest.raises(ValueError, match="request limit must be at least 1 a minute, got 0"):
        store.add_key(0)
    with pytest.raises(ValueError, match="non-empty word without spaces"):
        store.add_key(1, key="a b")


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    (tmp_path / "bad.db").write_bytes(b"not a database at all" * 10)
    with pytest.raises(ValueError, match="is not a database this server can use"):
        Store(tmp_path / "bad.db")


# --------------------------------------------------------------------------- the commands
def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_keys_commands(tmp_path, capsys):
    db = str(tmp_path / "keys.db")
    status, out, err = run(capsys, "keys", "list", "--db", db)
    assert status == 2 and err.startswith("transformer_hub keys: error: no database at ") and len(err.splitlines()) == 1
    status, out, _ = run(capsys, "keys", "add", "30", "--char-limit", "500", "--db", db)
    key = out.strip()
    assert status == 0 and Store(db).lookup(key) == KeyLimits(30, 500)
    status, out, _ = run(capsys, "keys", "list", "--db", db)
    assert status == 0 and out == f"{key}\t30 requests/minute\t500 characters/text\n"
    status, out, err = run(capsys, "keys", "remove", "nope", "--db", db)
    assert status == 2 and "no key 'nope' in" in err
    assert run(capsys, "keys", "remove", key, "--db", db)[:2] == (0, f"removed {key}\n")
    status, _, err = run(capsys, "keys", "add", "many", "--db", db)
    assert status == 2 and "invalid int value: 'many'" in err and "Traceback" not in err


def test_suggestions_export_command(tmp_path, capsys, monkeypatch):
    db = tmp_path / "s.db"
    Store(db).add_suggestion("A cat.", "Eine Katze.", "en", "de")
    monkeypatch.setenv("SPACE_SUGGESTIONS_DB", str(db))
    status, out, _ = run(capsys, "suggestions", "export", "--out", str(tmp_path / "out"))
    assert status == 0 and out.startswith("1 pair(s) en->de in ") and "--init-from MODEL" in out
    assert (tmp_path / "out" / "en-de" / "train.de").read_text(encoding="utf-8") == "Eine Katze.\n"
    status, _, err = run(capsys, "suggestions", "export")
    assert status == 2 and "the following arguments are required: --out" in err


# --------------------------------------------------------------------------- access
class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_moving_window_counts_costs_forgets_after_a_minute_and_bounds_memory():
    clock = Clock()
    window = MovingWindow(clock=clock, max_clients=2)
    assert window.hit("a", 3, cost=2) and not window.hit("a", 3, cost=2) and window.hit("a", 3)
    assert not window.hit("a", 3)
    clock.now += 60.0
    assert window.hit("a", 3, cost=3)
    window.hit("b", 3), window.hit("c", 3)
    assert list(window._hits) == ["b", "c"]  # "a", least recently seen, forgotten


def test_everything_is_open_by_default():
    access = Access(AccessSettings())
    assert access.store is None
    assert access.check(None, "1.2.3.4", ["x" * 100_000], cost=1000) == -1
    with pytest.raises(AccessDenied, match="Suggestions are disabled on this server.") as refused:
        access.suggest("q", "s", "en", "de")
    assert refused.value.status == 403


def test_request_and_character_limits_with_libretranslates_messages():
    access = Access(AccessSettings(req_limit=2, char_limit=10), window=MovingWindow(clock=Clock()))
    assert access.check(None, "1.1.1.1", ["short"]) == 10
    with pytest.raises(AccessDenied, match=r"^Invalid request: request \(11\) exceeds text limit \(10\)$") as e:
        access.check(None, "1.1.1.1", ["x" * 11])
    assert e.value.status == 400
    with pytest.raises(AccessDenied, match="^Slowdown: 2 per 1 minute$") as e:
        access.check(None, "1.1.1.1", ["ok"])
    assert e.value.status == 429
    assert access.check(None, "2.2.2.2", ["ok"]) == 10  # another client


def test_api_keys_bring_their_own_limits_and_unknown_ones_are_refused(tmp_path):
    store = Store(tmp_path / "k.db")
    store.add_key(1, key="k1", char_limit=3)
    access = Access(AccessSettings(req_limit=100, char_limit=50, api_keys=True), store, MovingWindow(clock=Clock()))
    with pytest.raises(AccessDenied, match="^Invalid API key$") as e:
        access.check("wrong", "1.1.1.1")
    assert e.value.status == 403
    assert access.check("k1", "1.1.1.1", ["abc"]) == 3
    with pytest.raises(AccessDenied, match="Slowdown: 1 per 1 minute"):
        access.check("k1", "9.9.9.9")               # the key's own window, from any address
    assert access.check(None, "1.1.1.1") == 50      # no key: the address's window and the server's limits
    required = Access(AccessSettings(api_keys=True, require_key=True), store)
    with pytest.raises(AccessDenied, match="Please contact the server operator to get an API key") as e:
        required.check(None, "1.1.1.1")
    assert e.value.status == 400 and required.frontend()["keyRequired"] is True


def test_settings_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPACE_REQ_LIMIT", "30")
    monkeypatch.setenv("SPACE_SUGGESTIONS", "1")
    monkeypatch.setenv("SPACE_SUGGESTIONS_DB", str(tmp_path / "x.db"))
    settings = AccessSettings.from_env()
    assert (settings.req_limit, settings.char_limit, settings.suggestions, settings.api_keys) == (30, -1, True, False)
    access = Access(settings)
    access.suggest("A dog.", "Ein Hund.", "en", "de", model="m")
    assert [(s.q, s.model) for s in Store(tmp_path / "x.db").suggestions()] == [("A dog.", "m")]
    monkeypatch.setenv("SPACE_CHAR_LIMIT", "0")
    with pytest.raises(ValueError, match="SPACE_CHAR_LIMIT must be at least 1 .or -1 for no limit., got 0"):
        AccessSettings.from_env()


def test_each_client_has_its_share_of_the_suggestion_store_by_default(tmp_path):
    store = Store(tmp_path / "s.db")
    access = Access(AccessSettings(suggestions=True), store)
    big = "x" * 4000  # 8,000 bytes a suggestion (q and s): 131 fit in 1 MB
    taken = 0
    with pytest.raises(AccessDenied, match=r"^Slowdown: your suggestions have used your share of the store "
                                           r"\(1 MB per client\)$") as refused:
        for _ in range(200):
            access.suggest(big, big, "en", "de", who=access.who(None, "1.1.1.1"))
            taken += 1
    assert refused.value.status == 429 and taken == (1 << 20) // 8000
    access.suggest(big, big, "en", "de", who=access.who(None, "2.2.2.2"))  # another client still has its share
    stored = sqlite3.connect(tmp_path / "s.db").execute("SELECT DISTINCT client FROM suggestions").fetchall()
    assert len(stored) == 2 and not any("1.1.1.1" in c for (c,) in stored)  # hashed, not the address


def test_a_store_from_before_clients_were_named_gains_the_column(tmp_path):
    old = sqlite3.connect(tmp_path / "old.db")
    old.executescript("CREATE TABLE suggestions (id INTEGER PRIMARY KEY AUTOINCREMENT, q TEXT NOT NULL, "
                      "s TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL, model TEXT, created REAL NOT NULL);"
                      "INSERT INTO suggestions (q, s, source, target, created) VALUES ('A.', 'B.', 'en', 'de', 0);")
    old.close()
    store = Store(tmp_path / "old.db")
    store.add_suggestion("C.", "D.", "en", "de", client="c1")
    assert store.client_bytes("c1") == 4 and [s.q for s in store.suggestions()] == ["A.", "C."]
