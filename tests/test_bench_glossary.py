"""benchmarks/glossary.py and glossary_terms.py: phrase sampling, FreeDict reading, term selection, and docs/glossary.md == its JSON."""
import gzip
import json
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    from benchmarks import glossary as bench_glossary

    return bench_glossary


def test_reference_phrases_are_seeded_short_and_disjoint(bench):
    refs = ["Ein Mann mit einer orangefarbenen Mütze, der etwas anstarrt.", "Zwei Hunde.", "Hallo"]
    two = bench.reference_phrases(refs, 2, seed=3)
    assert two == bench.reference_phrases(refs, 2, seed=3) and two != bench.reference_phrases(refs, 2, seed=4)
    for ref, phrases in zip(refs, two):
        assert all(1 <= len(p.split()) <= 3 and p in ref and not p.endswith((",", ".")) for p in phrases)
    first = two[0]
    assert len(first) == 2 and not set(first[0].split()) & set(first[1].split())
    assert two[2] == ["Hallo"]  # one word: only one phrase fits


def _b64(n: int) -> str:
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = ""
    while True:
        out = digits[n % 64] + out
        n //= 64
        if not n:
            return out


def write_freedict(folder: Path, entries):
    body, index = b"", []
    for head, text in entries:
        data = text.encode("utf-8")
        index.append(f"{head}\t{_b64(len(body))}\t{_b64(len(data))}")
        body += data
    (folder / "freedict-eng-deu.index").write_text("\n".join(index) + "\n", encoding="utf-8")
    with gzip.open(folder / "freedict-eng-deu.dict.dz", "wb") as fh:
        fh.write(body)


def test_freedict_entries_are_read_without_markup(bench, tmp_path):
    assert bench.read_freedict(tmp_path, "deu") is None  # absent: the protocol is skipped
    write_freedict(tmp_path, [
        ("bicycle", "bicycle /bˈaɪsɪkəl/\nFahrrad <neut>, Rad <neut> [Bayr.] , Velo <neut> [Schw.]\n"
                    "      \"man's bicycle\"  - Herrenrad\n   Synonyms: {bike}\n"),
        ("dog", "dog /dˈɒɡ/\n1. Hund <masc>\n2. Rüde (männlich)\n         Note: Tier\n"),
        ("00-database-info", "info\nnot a term\n"),
    ])
    assert bench.read_freedict(tmp_path, "deu") == {"bicycle": ["Fahrrad", "Rad", "Velo"], "dog": ["Hund", "Rüde"]}


def test_dictionary_terms_need_the_source_term_and_a_translation_in_the_reference(bench):
    dictionary = {"bicycle": ["Fahrrad", "Rad"], "dog": ["Hund"], "red bicycle": ["Rotrad"], "a": ["ein"]}
    sources = ["A dog rides a bicycle.", "A dog.", "A red bicycle."]
    references = ["Ein Hund fährt Rad.", "Eine Katze.", "Ein rotes Fahrrad."]
    terms = bench.dictionary_terms(sources, references, dictionary, frequent={"a"}, seed=0)
    assert sorted(terms[0]) == [("bicycle", "Rad"), ("dog", "Hund")]
    assert terms[1] == []  # "Hund" is not in the reference
    assert terms[2] == [("bicycle", "Fahrrad")]  # "red bicycle" has no translation there; "a" is too frequent


def test_keeps_both_counts_outputs_with_the_term_and_the_plain_translation_it_replaces(bench):
    dictionary = {"bicycle": ["Fahrrad", "Rad", "Velo"], "street": ["Straße", "Gasse"], "dog": ["Hund"]}
    terms = [[("bicycle", "Velo"), ("street", "Gasse")], [("bicycle", "Velo")], [("dog", "Hund")]]
    plain = ["Ein Mann fährt Fahrrad auf der Straße.", "Ein Velo.", "Ein Hund."]
    usual = [bench.usual_words(pairs, text, dictionary) for pairs, text in zip(terms, plain)]
    assert usual == [["Fahrrad", "Straße"], [None], [None]]  # plain already wrote "Velo"; "Hund" is the target
    both = ["Ein Mann fährt Fahrrad, ein Velo, auf der Gasse.", "Ein Velo.", "Ein Hund."]
    assert bench.keeps_usual(both, terms, usual) == (2, 0.5)  # "Velo" beside "Fahrrad"; "Gasse" replaced "Straße"
    assert bench.keeps_usual(["Ein Mann fährt Velo in der Gasse.", "", ""], terms, usual) == (2, 0.0)
    # a translation that is a word of the target ("Velo" in "Velo Rad") is not what the target replaced
    assert bench.usual_words([("bicycle", "Velo Rad")], "Ein Velo.", dictionary) == [None]
    assert bench.usual_words([("bicycle", "Velo Rad")], "Ein Fahrrad.", dictionary) == ["Fahrrad"]


def test_a_usual_word_that_other_source_words_explain_is_not_kept_for_the_term(bench):
    """"le" translates "him", but also "the": the article of "le visage" is no "le" kept beside "à lui"; a word
    kept beyond what the other words explain counts, and so does an occurrence of the term left to the usual word."""
    dictionary = {"him": ["à lui", "le"], "the": ["la", "le"], "while": ["lors", "tandis que"],
                  "during": ["lors", "tandis que"], "cloth": ["linge", "tissu"], "face": ["visage"]}
    src = "He punches him in the face."
    assert bench.usual_words([("him", "à lui")], "Il frappe dans le visage.", dictionary, src) == [None]
    assert bench.usual_words([("him", "à lui")], "Il le frappe dans le visage.", dictionary, src) == ["le"]
    terms, usual = [[("him", "à lui")]], [["le"]]
    assert bench.keeps_usual(["Il frappe à lui dans le visage."], terms, usual, [src], dictionary) == (1, 0.0)
    assert bench.keeps_usual(["Il le frappe à lui dans le visage."], terms, usual, [src], dictionary) == (1, 1.0)
    assert bench.keeps_usual(["Il frappe à lui dans le visage."], terms, usual) == (1, 1.0)  # nothing explained
    src = "She sits during the day while they pass, while it rains."  # "while" twice: two "tandis que" explained
    assert bench.usual_words([("during", "lors")], "Elle est assise tandis que ils passent, tandis que il pleut.",
                             dictionary, src) == [None]
    src = "A basket of cloth, surrounded by cloth."  # the term's own occurrences explain nothing
    terms, usual = [[("cloth", "linge")]], [["tissu"]]
    assert bench.keeps_usual(["Un panier de linge, entouré de tissu."], terms, usual, [src], dictionary) == (1, 1.0)
    assert bench.keeps_usual(["Un panier de linge, entouré de linge."], terms, usual, [src], dictionary) == (1, 0.0)


def test_term_use_counts_phrases_found(bench):
    assert bench.term_use(["ein Hund", "eine Katze"], [["Hund", "ein"], ["Maus"]]) == pytest.approx(2 / 3)


def test_the_published_tables_are_the_json(bench):
    report = json.loads((ROOT / "docs" / "glossary.json").read_text(encoding="utf-8"))
    text = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert text.split("\n", 2)[2] == bench.markdown(report)
    assert report["command"].startswith("python -m benchmarks glossary")
    assert report["sentences"] == 1000 or f"--limit {report['sentences']} " in report["command"]
    for row in report["results"]:
        assert row["targets"] == bench.targets_met(row)
        for c in (1, 2):
            assert c * report["sentences"] - 5 <= row[f"reference_{c}"]["phrases"] <= c * report["sentences"]
        speed = row["speed"]
        assert speed["sentences"] == report["speed_sentences"] and len(speed["plain_seconds"]) == report["rounds"]
        for name in ("reference_1", "reference_2", "dictionary"):
            ratios = speed[name]["ratios"]  # the table's time is the median of the interleaved rounds' ratios
            assert len(ratios) == report["rounds"] and row[name]["time_ratio"] == speed[name]["median"]
            assert speed[name]["median"] == pytest.approx(statistics.median(ratios), abs=0.006)


def test_the_recorded_command_names_every_option_that_changed_the_measurement(bench):
    report = json.loads((ROOT / "docs" / "glossary.json").read_text(encoding="utf-8"))
    limit = None if report["sentences"] == 1000 else report["sentences"]  # the test set has 1000
    args = bench.argparse.Namespace(limit=limit, speed_sentences=report["speed_sentences"], rounds=report["rounds"],
                                    seed=report["seed"], threads=report["threads"])
    assert report["command"] == bench.command(args)


def test_timing_rounds_interleave_plain_and_constrained_and_report_the_median(bench, monkeypatch):
    """Every chunk decoded by every setting in turn, plain first then last alternately; a round's ratio is its
    seconds over that round's plain seconds, summed over its chunks."""
    calls, clock = [], iter([1.0, 3.0, 2.0, 4.0, 8.0, 2.0, 1.0, 5.0, 1.0, 1.0, 1.0, 1.0])  # seconds, in call order

    def fake_decode(model, sources, tgt, constraints=None):
        calls.append((None if constraints is None else constraints[0][0], tuple(sources)))
        return [], next(clock), 0

    monkeypatch.setattr(bench, "decode", fake_decode)
    settings = {"one": [["x"], ["x2"]], "two": [["y"], ["y2"]]}
    out = bench.timed_rounds(None, "de", ["a", "b"], settings, rounds=2, chunk=1)
    assert calls == [(None, ("a",)), ("x", ("a",)), ("y", ("a",)), ("y2", ("b",)), ("x2", ("b",)), (None, ("b",)),
                     ("y", ("a",)), ("x", ("a",)), (None, ("a",)), (None, ("b",)), ("x2", ("b",)), ("y2", ("b",))]
    assert out["plain_seconds"] == [3.0, 2.0] and out["chunk"] == 1
    assert out["one"]["ratios"] == [3.667, 3.0] and out["one"]["median"] == 3.33  # (11/3, 6/2), 3 and 2 decimals
    assert out["two"]["ratios"] == [2.0, 1.0] and out["two"]["median"] == 1.5


def test_the_python_page_quotes_the_results_as_the_script_words_them(bench):
    report = json.loads((ROOT / "docs" / "glossary.json").read_text(encoding="utf-8"))
    page_text = " ".join((ROOT / "docs" / "python.md").read_text(encoding="utf-8").split())  # its lines wrap anywhere
    assert bench.summary(report) in page_text


def test_the_summary_gives_keeps_both_before_and_after_and_bleu_against_constrained_search_alone(bench):
    ref = {"term_use": 1.0, "term_use_plain": 0.5, "time_ratio": 1.5}
    row = {"model": "en-de", "tgt": "de", "plain": {"bleu": 40.0}, "reference_1": ref, "reference_2": ref,
           "dictionary": {"term_use": 1.0, "bleu": 41.25, "keeps_usual": 0.031, "replaced_terms": 32,
                          "unanchored": {"bleu": 40.5, "keeps_usual": 0.281}}}
    report = {"sentences": 300, "command": "python -m benchmarks glossary --limit 300 --out docs", "rounds": 3,
              "speed_sentences": 120, "results": [row]}
    text = bench.summary(report)
    assert "(`python -m benchmarks glossary --limit 300 --out docs`)" in text
    assert "FreeDict terms 100.0% (BLEU +1.25 against plain beam 5)" in text
    assert text.endswith("constrained search alone: en-de en-de 28.1% to 3.1% of 32 (BLEU +0.75).")
