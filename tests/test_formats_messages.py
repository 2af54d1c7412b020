"""JSON message files, i18next style (formats/messages.py): messages translated, keys, nesting, order, plurals,
placeholders and layout kept; bad files refused with one line."""
import json
import re

import pytest

from transformer_hub.formats import DocumentError, extensions, read_document, translate_document
from transformer_hub.formats.budget import MAX_DEPTH
from transformer_hub.formats.layout import translate_document_texts

MESSAGES = '''{
  "app": {
    "title": "Photo manager",
    "menu": {
      "open": "Open {{name}}",
      "recent": [
        "First file",
        "Second file"
      ]
    },
    "files_one": "{{count}} file",
    "files_other": "{{count}} files",
    "items_zero": "No items",
    "items_one": "One item",
    "items_other": "{{count}} items",
    "version": 3,
    "beta": true,
    "empty": "",
    "nothing": null
  },
  "help.about": "About <b>$t(app.title)</b>",
  "help.quit": "Quit"
}
'''


def fake(sentences):
    """A translator that keeps what it is given, behind a Czech word: marks and pieces come back as they came."""
    return [f"Přeloženo {s}" for s in sentences]


def translate(data: str, tgt_lang="cs", translator=fake) -> dict:
    document = read_document(data.encode(), ".json", tgt_lang=tgt_lang)
    return json.loads(document.write(translate_document_texts(document.texts, translator, lang="en")))


def test_every_message_is_translated_and_the_rest_kept_in_order():
    document = read_document(MESSAGES.encode(), ".JSON", tgt_lang="de")
    assert document.texts == ["Photo manager", "Open {{name}}", "First file", "Second file", "{{count}} file",
                              "{{count}} files", "No items", "One item", "{{count}} items", "About <b>$t(app.title)</b>",
                              "Quit"]
    out = translate(MESSAGES, "de")
    assert out["app"]["title"] == "Přeloženo Photo manager"
    assert out["app"]["menu"] == {"open": "Přeloženo Open {{name}}",
                                  "recent": ["Přeloženo First file", "Přeloženo Second file"]}
    assert (out["app"]["version"], out["app"]["beta"], out["app"]["empty"], out["app"]["nothing"]) == (3, True, "", None)
    assert out["help.about"] == "Přeloženo About <b>$t(app.title)</b>"  # a flat key is a key like any other
    assert list(out) == ["app", "help.about", "help.quit"]
    assert list(out["app"]) == list(json.loads(MESSAGES)["app"])  # German has the source's categories


@pytest.mark.parametrize("tgt_lang, categories", [
    ("cs", ["one", "few", "many", "other"]), ("fr", ["one", "many", "other"]), ("de", ["one", "other"]),
    ("xx", ["one", "other"]),  # a language without a table: the source's own keys
])
def test_plurals_get_the_target_languages_categories(tgt_lang, categories):
    app = translate(MESSAGES, tgt_lang)["app"]
    assert [k for k in app if k.startswith("files_")] == [f"files_{c}" for c in categories]
    assert [k for k in app if k.startswith("items_")] == ["items_zero"] + [f"items_{c}" for c in categories]
    assert app["files_one"] == "Přeloženo {{count}} file"
    assert all(app[f"files_{c}"] == "Přeloženo {{count}} files" for c in categories if c != "one")  # from _other
    keys = list(app)
    assert keys.index("menu") < keys.index("files_one") < keys.index("items_zero") < keys.index("version")


def test_a_message_that_would_lose_a_placeholder_stays_as_it_was():
    def breaking(sentences):  # a directive the source does not have, where it has a piece (a lost one is repaired)
        return [f"{s} %d" if "#" in s else f"{s} X" for s in sentences]

    out = translate(MESSAGES, "de", breaking)
    assert out["app"]["menu"]["open"] == "Open {{name}}"
    assert out["help.about"] == "About <b>$t(app.title)</b>"
    assert out["help.quit"] == "Quit X"


@pytest.mark.parametrize("data", [MESSAGES, MESSAGES.replace("  ", "\t"), MESSAGES.replace("\n", "\r\n"),
                                  json.dumps(json.loads(MESSAGES)), "\ufeff" + MESSAGES])
def test_the_layout_is_the_inputs(data):
    out = translate_document(data.encode(), ".json", lambda s: list(s), lang="en", tgt_lang="de").decode()
    assert out == data.lstrip("\ufeff")  # nothing translated differently: the same file, but for its byte order mark


def test_non_ascii_is_written_as_it_is():
    out = translate_document('{"a": "Save"}'.encode(), ".json", lambda s: ["Uložit" for _ in s], lang="en")
    assert out == '{"a": "Uložit"}'.encode()


@pytest.mark.parametrize("data, message", [
    ('{"a": "Müll"}'.encode("latin-1"), "not UTF-8 (byte 0xfc at position 8)"),
    (b'{"a": "b",}', "not valid JSON (Expecting property name enclosed in double quotes at line 1, column 11)"),
    (b'["a", "b"]', "holds list, not an object of messages"),
    (b"null", "holds null, not an object"),
    (b'{"a": "b", "a": "c"}', "defines the key 'a' twice in one object"),
    (b'{"a": ' * (MAX_DEPTH + 5) + b'"x"' + b"}" * (MAX_DEPTH + 5), f"nests elements more than {MAX_DEPTH} deep"),
    (b"[" * 200_000 + b"]" * 200_000, "nests its values too deep to read"),
])
def test_a_bad_file_is_refused_with_one_line(data, message):
    with pytest.raises(DocumentError, match=re.escape(message)) as refused:
        read_document(data, ".json")
    assert "\n" not in str(refused.value)


def test_json_is_a_registered_format():
    assert ".json" in extensions()
