"""One model, several languages: target-language tags, direction checks, mixed batches, training on {split}.{lang}."""
import json

import pytest

from helpers.multilingual import LANGS, LEXICON, four_way_corpus, languages_of, train_four_way
from helpers.tolerances import score as score_within
from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.training.data import parse_directions, read_lines
from transformer_hub.training.metrics import score
from transformer_hub.decoding import generate
from transformer_hub.hub import card_data_from_file
from transformer_hub.hub.results import METRICS
from transformer_hub.hub.results import load as load_results
from transformer_hub.training.trainer import main as train_main

@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Transformer:
    """A tiny multilingual model trained long enough on the four-way corpus to follow its tags."""
    return Transformer.from_pretrained(train_four_way(tmp_path_factory.mktemp("multilingual")))


def test_config_records_languages_and_checks_pairs():
    cfg = TransformerConfig.preset("tiny", languages=["en", "de", "fr"], src_lang=None, tgt_lang=None)
    assert cfg.multilingual and len(cfg.pairs()) == 6
    assert cfg.check_pair("de", "fr") == ("de", "fr")
    with pytest.raises(ValueError, match="needs tgt_lang, one of en, de, fr"):
        cfg.check_pair("de", None)
    with pytest.raises(ValueError, match=r"unknown tgt_lang 'cs': this model serves en->de, en->fr"):
        cfg.check_pair("en", "cs")
    restricted = TransformerConfig.preset("tiny", languages=["en", "de", "fr"], directions=["en-de", "de-en"])
    with pytest.raises(ValueError, match=r"does not translate en->fr; it serves en->de, de->en"):
        restricted.check_pair("en", "fr")
    bilingual = TransformerConfig.preset("tiny", src_lang="en", tgt_lang="de")
    assert bilingual.check_pair(None, None) == ("en", "de")
    with pytest.raises(ValueError, match=r"unknown src_lang 'fr': this model serves en->de"):
        bilingual.check_pair("fr", "de")


@pytest.mark.parametrize("bad, message", [
    ({"languages": ["en"]}, "2 to 64 language codes"),
    ({"languages": ["en", "EN"]}, "'EN' is not a language code"),
    ({"languages": ["en", "en"]}, "lists a language twice"),
    ({"languages": ["en", "de"], "src_lang": "en"}, "has no single src_lang"),
    ({"languages": ["en", "de"], "directions": ["en-fr"]}, "'en-fr' is not 'src-tgt'"),
    ({"directions": ["en-de"]}, "directions needs languages"),
    ({"src_lang": "english"}, "not a language code"),
])
def test_config_rejects_bad_languages(bad, message):
    with pytest.raises(ValueError, match=message):
        TransformerConfig.preset("tiny", **bad)


def test_tokenizer_tags_are_control_symbols_text_cannot_produce():
    texts = [" ".join(words) for words in LEXICON.values()] * 20
    tok = Tokenizer.train(texts, vocab_size=300, languages=list(LANGS))
    assert tok.languages == list(LANGS)
    tag = tok.lang_tag_id("fr")
    assert tag not in tok.encode("<2fr> bonjour")  # typing the tag gives ordinary pieces
    assert tok.decode([tag]) == ""
    with pytest.raises(ValueError, match="no tag <2xx>"):
        tok.lang_tag_id("xx")
    with pytest.raises(ValueError, match="joint vocabulary"):
        Tokenizer.train(texts, texts, joint=False, languages=["en", "de"])


def test_parse_directions():
    assert len(parse_directions(["en", "de", "fr", "cs"])) == 12
    assert parse_directions(["en", "de"], "de-en") == [("de", "en")]
    with pytest.raises(ValueError, match="'en-xx' is not 'src-tgt'"):
        parse_directions(["en", "de"], "en-xx")


def test_saved_model_keeps_its_languages_and_decodes_every_direction(trained, tmp_path):
    assert trained.config.languages == list(LANGS) and trained.tokenizer.languages == list(LANGS)
    trained.save_pretrained(tmp_path / "copy")
    again = Transformer.from_pretrained(tmp_path / "copy")
    assert again.config == trained.config
    card = (tmp_path / "copy" / "README.md").read_text()
    assert "- cs" in card and "- fr" in card  # language: [en, de, fr, cs] in the card's metadata
    source = {lang: " ".join(LEXICON[lang][i] for i in (1, 2, 3)) for lang in LANGS}
    for src_lang, tgt_lang in trained.config.pairs():
        text = again.translate([source[src_lang]], src_lang=src_lang, tgt_lang=tgt_lang)[0]
        assert languages_of(text) == {tgt_lang}, (src_lang, tgt_lang, text)


def test_the_tag_reaches_the_model(trained):
    result = generate(trained, ["ena enb enc"], src_lang="en", tgt_lang="cs")[0]
    assert result.source_ids[0] == trained.tokenizer.lang_tag_id("cs")
    outputs = {tgt: trained.translate(["ena enb enc"], src_lang="en", tgt_lang=tgt)[0] for tgt in ("de", "fr", "cs")}
    assert len(set(outputs.values())) == 3 and all(languages_of(v) == {k} for k, v in outputs.items())


def test_mixed_directions_in_one_call_equal_each_alone(trained):
    texts = ["ena enb", "dea deb dec ded", "fra frj", "csc csd cse", "ena enj enc"]
    src = ["en", "de", "fr", "cs", "en"]
    tgt = ["fr", "cs", "de", "en", "cs"]
    for options in ({"strategy": "greedy"}, {"strategy": "beam", "beam_size": 3}):
        together = generate(trained, texts, src_lang=src, tgt_lang=tgt, **options)
        for i, result in enumerate(together):
            alone = generate(trained, [texts[i]], src_lang=src[i], tgt_lang=tgt[i], **options)[0]
            assert result.best.tokens == alone.best.tokens
            assert result.best.score == score_within(alone.best.score, len(alone.best.token_logprobs))


def test_unknown_language_and_bad_lists_are_clear_errors(trained, tiny_model):
    with pytest.raises(ValueError, match=r"unknown tgt_lang 'xx': this model serves en->de, en->fr"):
        trained.translate(["ena"], src_lang="en", tgt_lang="xx")
    with pytest.raises(ValueError, match="needs tgt_lang"):
        trained.translate(["ena"])
    with pytest.raises(ValueError, match="tgt_lang has 1 entries for 2 texts"):
        trained.translate(["ena", "enb"], src_lang="en", tgt_lang=["de"])
    with pytest.raises(ValueError, match=r"unknown tgt_lang 'fr': this model serves en->de"):
        tiny_model.translate(["Ein Hund."], src_lang="de", tgt_lang="fr")
    with pytest.raises(ValueError, match=r"does not translate de->en; it serves en->de"):
        tiny_model.translate(["Ein Hund."], src_lang="de", tgt_lang="en")
    assert tiny_model.translate(["A dog."], src_lang="en", tgt_lang="de") == tiny_model.translate(["A dog."])


def test_training_writes_per_direction_metrics(trained, tmp_path):
    data = four_way_corpus(tmp_path)
    out = tmp_path / "run"
    train_main(["--out", str(out), "--data-dir", str(data), "--langs", "en,de,fr", "--directions", "en-de,de-fr",
                "--preset", "tiny", "--vocab-size", "300", "--max-tokens", "400", "--max-updates", "6",
                "--valid-every", "3", "--bleu-directions", "1", "--final-beam", "2", "--threads", "1",
                "--average-last", "1", "--test-splits", "test_2016_flickr"])
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r["kind"] == "val"]
    assert {"val_loss/en-de", "val_loss/de-fr"} <= set(val[0])
    assert [k for k in val[0] if k.startswith("bleu/")] == ["bleu/en-de"]  # one direction, rotating
    assert [k for k in val[1] if k.startswith("bleu/")] == ["bleu/de-fr"]
    config = json.loads((out / "final" / "config.json").read_text())
    assert config["languages"] == ["en", "de", "fr"] and config["directions"] == ["en-de", "de-fr"]
    results = json.loads((out / "results.json").read_text())["results"]
    assert {(r["split"], r["direction"]) for r in results} == {
        (split, d) for split in ("val", "test_2016_flickr") for d in ("en-de", "de-fr")}


def test_cli_translate_and_evaluate_take_languages(trained, tmp_path, capsys, monkeypatch):
    from transformer_hub.cli import main as cli_main

    trained.save_pretrained(tmp_path / "model")
    src = tmp_path / "src.de"
    src.write_text("dea deb dec\ndeb ded\n", encoding="utf-8")
    assert cli_main(["translate", "--model", str(tmp_path / "model"), "--src-lang", "de", "--tgt-lang", "fr",
                     "--input", str(src)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(languages_of(line) == {"fr"} for line in lines)
    ref = tmp_path / "ref.fr"
    ref.write_text("fra frb frc\nfrb frd\n", encoding="utf-8")
    assert cli_main(["evaluate", "--model", str(tmp_path / "model"), "--src", str(src), "--ref", str(ref),
                     "--src-lang", "de", "--tgt-lang", "fr", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sentences"] == 2
    assert cli_main(["translate", "--model", str(tmp_path / "model"), "--src-lang", "de", "--tgt-lang", "xx",
                     "--input", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--src-lang/--tgt-lang: unknown tgt_lang 'xx': this model serves" in err


def test_results_script_scores_every_direction_split_and_the_pivot(trained, tmp_path, capsys):
    from scripts import domain_results

    data = four_way_corpus(tmp_path)
    trained.save_pretrained(tmp_path / "model")
    out = tmp_path / "results.json"
    assert domain_results.main(["--model", f"multi={tmp_path / 'model'}", "--data-dir", f"captions={data}", "--split",
                                "captions=test_2016_flickr,test_2017_flickr", "--beam", "2", "--limit", "4",
                                "--workers", "2", "--out", str(out), "--card", "multi"]) == 0
    saved = load_results(out)  # the library's schema, validated
    direct = [s for s in saved.results if s.model == "multi"]
    assert {s.direction for s in direct} == {f"{a}-{b}" for a in LANGS for b in LANGS if a != b}
    assert {s.split for s in direct} == {"captions/test_2016_flickr"}  # no test_2017_flickr files here: skipped
    pivot = {s.direction for s in saved.results if s.model == "multi via en"}
    assert "de-fr" in pivot and "en-fr" not in pivot
    table = capsys.readouterr().out
    en_de = {s.metric: s.value for s in direct if s.direction == "en-de"}
    assert f"| captions | en-de | {en_de['bleu_lowercase']:.2f} | {en_de['chrf']:.2f} |" in table
    recorded = {(r["split"], r["direction"], r["metric"], r["metric_name"]): r["value"]
                for r in card_data_from_file(str(tmp_path / "model" / "README.md"))["results"]}
    assert recorded == {("test_2016_flickr", s.direction, "chrf" if s.metric == "chrf" else "bleu",
                         METRICS[s.metric]): s.value for s in direct}  # the card's model-index: the direct scores
    sources = read_lines(data / "test_2016_flickr.en")[:4]  # a direct score, done by hand, is the saved one
    by_hand = score(trained.translate(sources, src_lang="en", tgt_lang="de", strategy="beam", beam_size=2),
                    read_lines(data / "test_2016_flickr.de")[:4])
    assert en_de == {k: round(v, 2) for k, v in by_hand.items()}
    sources = read_lines(data / "test_2016_flickr.de")[:4]  # the pivot, done by hand, scores the same
    middle = trained.translate(sources, src_lang="de", tgt_lang="en", strategy="beam", beam_size=2)
    by_hand = score(trained.translate(middle, src_lang="en", tgt_lang="fr", strategy="beam", beam_size=2),
                    read_lines(data / "test_2016_flickr.fr")[:4])
    saved_pivot = {s.metric: s.value for s in saved.results if s.model == "multi via en" and s.direction == "de-fr"}
    assert saved_pivot == {k: round(v, 2) for k, v in by_hand.items()}


def test_results_targets_gaps_and_anchors():
    """The v2 table's verdicts (scripts/multilingual_v2.py, which docs/results.md's table is checked against)."""
    from scripts import multilingual_v2 as mr

    def row(direction, lc, split="test_2016_flickr", pivot=None):
        found = {"split": split, "direction": direction, "multilingual": {"bleu_lowercase": lc}}
        return {**found, "pivot": {"bleu_lowercase": pivot}} if pivot is not None else found

    assert mr.verdict(row("en-de", 40.77)) == "42.00 (missed by 1.23)"
    assert mr.verdict(row("de-fr", 42.0, pivot=41.5)) == "42.00 (met, +0.00)"  # the pivot plus 0.5
    assert mr.verdict(row("de-fr", 41.9, pivot=41.5)) == "42.00 (missed by 0.10)"
    assert mr.verdict(row("en-de", 50.0, split="test_2017_flickr")) == ""  # targets are for test_2016_flickr
    assert mr.anchor(row("en-fr", 1.0)) == "59.70 (Helcl et al. 2018, lowercased)"
    assert mr.anchor(row("en-de", 1.0)).endswith("tokenized)") and mr.anchor(row("de-en", 1.0)) == ""
