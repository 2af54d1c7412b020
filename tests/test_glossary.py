"""Glossaries: parsing and limits, term matching, and what the pipeline does with them (transformer_hub/text/glossary.py)."""
import pytest

from helpers.decoding_fixtures import one_thread, random_model, trained_model
from transformer_hub.decoding import DecodingConfig, generate
from transformer_hub.text.pipeline import ModelSet, translate_texts
from transformer_hub.text.glossary import MAX_ENTRIES, MAX_TERM_CHARS, Entry, Glossary

BEAM = dict(strategy="beam", beam_size=4)


def matched(glossary, sentence):
    return [(m.entry.source, sentence[m.start:m.end]) for m in glossary.match(sentence)]


def test_tsv_csv_and_dict_give_the_same_entries():
    tsv = Glossary.parse("bicycle\tFahrrad\n\nred  car\tRotwagen\n")
    csv = Glossary.parse('bicycle,Fahrrad\n"red car",Rotwagen\n', "csv")
    assert tsv.entries == csv.entries == Glossary.from_dict({"bicycle": "Fahrrad", "red car": "Rotwagen"}).entries
    assert tsv.entries[1] == Entry("red car", "Rotwagen")  # whitespace inside a term is normalised
    with_langs = Glossary.parse("bicycle,Fahrrad,en,de\nbicycle,vélo,en,fr\n", "csv")
    assert [e.target for e in with_langs.for_pair("en", "fr").entries] == ["vélo"]


@pytest.mark.parametrize("text, fmt, message", [
    ("bicycle Fahrrad\n", "tsv", "glossary line 1: expected source<TAB>target, got 1 field"),
    ("a\tb\tc\n", "tsv", "glossary line 1: expected source<TAB>target, got 3 fields"),
    ("a\tb\n\t Fahrrad\n", "tsv", "glossary line 2: the source term is empty"),
    ("a\t \n", "tsv", "glossary line 1: the target term is empty"),
    ("a,b,c\n", "csv", r"glossary line 1: expected source,target\[,source_lang,target_lang\], got 3 fields"),
    ('"a,b\n', "csv", "glossary line 1: not valid CSV"),
    ("Bicycle\tFahrrad\nbicycle\tRad\n", "tsv", "glossary entry 2: the source term 'bicycle' is already entry 1"),
    ("\n\n", "tsv", "the glossary has no entries"),
    ("a\tb\n", "xml", "entries_format must be one of tsv, csv, got 'xml'"),
])
def test_malformed_glossaries_are_clear_errors(text, fmt, message):
    with pytest.raises(ValueError, match=message):
        Glossary.parse(text, fmt)


def test_limits_on_entries_and_term_length():
    too_many = "".join(f"term{i}\tZiel{i}\n" for i in range(10_000))
    with pytest.raises(ValueError, match=f"more than the {MAX_ENTRIES} entries allowed"):
        Glossary.parse(too_many)
    with pytest.raises(ValueError, match=f"more than the {MAX_ENTRIES} allowed"):
        Glossary.from_dict({f"term{i}": "x" for i in range(MAX_ENTRIES + 1)})
    long = "x" * (MAX_TERM_CHARS + 1)
    with pytest.raises(ValueError, match=f"glossary line 1: the source term is {MAX_TERM_CHARS + 1} characters"):
        Glossary.parse(f"{long}\tkurz\n")
    with pytest.raises(ValueError, match="the target term must be text, got int"):
        Glossary.from_dict({"a": 3})
    assert len(Glossary.parse("".join(f"t{i}\tz{i}\n" for i in range(MAX_ENTRIES)))) == MAX_ENTRIES


def test_terms_match_case_insensitively_on_word_boundaries():
    glossary = Glossary.from_dict({"car": "Auto", "bike": "Rad"})
    assert matched(glossary, "A CAR, a Car and a car.") == [("car", "CAR"), ("car", "Car"), ("car", "car")]
    assert matched(glossary, "A carpet, a scar, bikers and sidecars.") == []
    assert matched(glossary, "(bike) car's \"car\"-park") == [("bike", "bike"), ("car", "car"), ("car", "car")]


def test_multi_word_and_overlapping_terms_longest_first():
    glossary = Glossary.from_dict({"red": "rot", "red car": "Rotwagen", "car park": "Parkplatz",
                                   "new york": "NY", "new york city": "NYC"})
    assert matched(glossary, "the red car") == [("red car", "red car")]
    assert matched(glossary, "a red\n car park") == [("red car", "red\n car")]  # equally long: the first
    assert matched(glossary, "a red big car park") == [("red", "red"), ("car park", "car park")]
    assert matched(glossary, "in New York City.") == [("new york city", "New York City")]
    assert matched(glossary, "red, red car.") == [("red", "red"), ("red car", "red car")]
    targets, applied = glossary.constraints(["the red car in New York", "nothing here"])
    assert targets == [["Rotwagen", "NY"], []]
    assert [e.source for e in applied[0]] == ["red car", "new york"] and applied[1] == []


@pytest.fixture(scope="module")
def model():
    with one_thread():
        yield trained_model()


def test_the_pipeline_applies_a_glossary_and_reports_the_entries(model):
    glossary = Glossary.from_dict({"dog": "blau", "bench": "wasser"})
    results = translate_texts(model, ["a dog runs in the park .", "two people sit on a bench .", "the child plays ."],
                              glossary=glossary, split_sentences=False, **BEAM)
    assert "blau" in results[0].text and "wasser" in results[1].text
    assert [[e.source for e in r.glossary] for r in results] == [["dog"], ["bench"], []]
    assert results[0].constraints == ["blau"] and results[2].constraints == []
    plain = generate(model, ["the child plays ."], **BEAM)
    assert results[2].best.tokens == plain[0].best.tokens  # no term: plain beam search
    (tsv,) = translate_texts(model, ["a dog runs ."], glossary="dog\tblau\n", constraints=[["rot"]],
                             split_sentences=False, **BEAM)
    assert tsv.glossary == [Entry("dog", "blau")] and tsv.constraints == ["rot", "blau"]
    assert tsv.best.constraints_met == [True, True]


def test_a_term_in_one_sentence_of_a_paragraph_constrains_that_sentence_only(model):
    text = "A dog runs in the park. Two people sit on a bench."
    (result,) = translate_texts(model, [text], glossary={"bench": "wasser"}, **BEAM)
    first, second = result.sentences
    assert first.glossary == [] and first.constraints == []
    assert second.glossary == [Entry("bench", "wasser")] and "wasser" in second.text
    assert result.glossary == [Entry("bench", "wasser")] and "wasser" in result.text
    (alone,) = generate(model, [first.source], **BEAM)
    assert first.best.tokens == alone.best.tokens


def test_the_pipeline_applies_each_directions_entries_to_its_model():
    models = ModelSet({"en-de": random_model(src_lang="en", tgt_lang="de"),
                       "en-fr": random_model(seed=1, src_lang="en", tgt_lang="fr")})
    glossary = Glossary.parse("dog,blau,en,de\ndog,vert,en,fr\n", "csv")
    with one_thread():
        de, fr = translate_texts(models, ["a dog runs .", "a dog runs ."], DecodingConfig(**BEAM), src_lang="en",
                                 tgt_lang=["de", "fr"], split_sentences=False, glossary=glossary)
    assert (de.model, de.glossary, de.constraints) == ("en-de", [Entry("dog", "blau", "en", "de")], ["blau"])
    assert (fr.model, fr.glossary, fr.constraints) == ("en-fr", [Entry("dog", "vert", "en", "fr")], ["vert"])
    assert "blau" in de.text and "vert" in fr.text and de.best.constraints_met == [True]


def test_constraints_belong_to_whole_texts_and_a_bad_glossary_names_its_fault(model):
    with pytest.raises(ValueError, match="cannot be used with split_sentences=True"):
        translate_texts(model, ["A dog. A cat."], constraints=[["blau"]], **BEAM)
    with pytest.raises(ValueError, match="glossary line 2: expected source<TAB>target, got 3 fields"):
        translate_texts(model, ["a dog ."], glossary="dog\tblau\ncat\trot\tx\n", **BEAM)
    with pytest.raises(ValueError, match="constraints need beam search"):
        translate_texts(model, ["a dog ."], glossary={"dog": "blau"}, strategy="greedy")


def test_a_glossary_term_and_a_verbatim_piece_both_come_through(model):
    text = "A dog runs to www.example.com today. Two people sit on a bench."
    (result,) = translate_texts(model, [text], glossary={"bench": "wasser"}, **BEAM)
    assert "www.example.com" in result.sentences[0].text and "wasser" in result.sentences[1].text
    assert result.glossary == [Entry("bench", "wasser")] and result.sentences[1].best.constraints_met == [True]
