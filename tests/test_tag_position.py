"""Target-language tags at the decoder start (tag_position="decoder"): training data, forced decoding, exports."""
import json

import pytest
import torch

from helpers.tolerances import RUNTIME_REL, f32, f64, score
from helpers.multilingual import LANGS, LEXICON, four_way_corpus, languages_of
from transformer_hub import Transformer, TransformerConfig
from transformer_hub.training.data import Example, collate, encode_pairs
from transformer_hub.decoding import DecodingPool, generate
from transformer_hub.errors import UserError
from transformer_hub.export import export_ctranslate2
from transformer_hub.export.common import UnsupportedModelError, check_exportable
from transformer_hub.training.trainer import main as train_main

PAIRS = [(s, t) for s in LANGS for t in LANGS if s != t]


@pytest.fixture(scope="module")
def decoder_tagged(tmp_path_factory):
    """A tiny multilingual model trained with its tags after bos, and the four-way corpus it learned."""
    root = tmp_path_factory.mktemp("decoder_tags")
    data = four_way_corpus(root)
    status = train_main(["--out", str(root / "run"), "--data-dir", str(data), "--langs", ",".join(LANGS),
                         "--tag-position", "decoder", "--preset", "tiny", "--vocab-size", "300", "--max-tokens", "400",
                         "--warmup", "30", "--peak-lr", "0.005", "--max-updates", "150", "--final-beam", "0",
                         "--threads", "1", "--bleu-every", "1000", "--average-last", "1", "--test-splits", ""])
    assert status == 0
    return Transformer.from_pretrained(root / "run" / "final"), data, root


def test_config_field_is_checked_and_defaults_to_the_source():
    assert TransformerConfig.preset("tiny", languages=list(LANGS)).tag_position == "source"
    with pytest.raises(ValueError, match="tag_position must be one of source, decoder, got 'target'"):
        TransformerConfig.preset("tiny", languages=list(LANGS), tag_position="target")
    with pytest.raises(ValueError, match="tag_position 'decoder' is for multilingual encoder-decoder models"):
        TransformerConfig.preset("tiny", src_lang="en", tgt_lang="de", tag_position="decoder")
    old = TransformerConfig.preset("tiny", languages=list(LANGS)).to_dict()
    del old["tag_position"]  # a config.json written before the field existed
    assert TransformerConfig.from_dict(old).tag_position == "source"


class Pieces:
    sampling = None

    def encode(self, text, side="source"):
        return [10 + len(word) for word in text.split()]


def test_training_examples_put_the_tag_after_bos_and_never_ask_for_it():
    source_tagged = encode_pairs([("a bb", "ccc")], Pieces(), bos=1, eos=2, max_len=10, tags=[7])
    assert (list(source_tagged[0].src), list(source_tagged[0].tgt), source_tagged[0].forced) == (
        [7, 11, 12, 2], [1, 13, 2], 0)
    decoder_tagged = encode_pairs([("a bb", "ccc")], Pieces(), bos=1, eos=2, max_len=10, tags=[7], tag_in_decoder=True)
    assert (list(decoder_tagged[0].src), list(decoder_tagged[0].tgt), decoder_tagged[0].forced) == (
        [11, 12, 2], [1, 7, 13, 2], 1)
    src, tgt_in, tgt_out = collate(decoder_tagged + [Example([11, 2], [1, 13, 14, 2])], pad_id=0)
    assert tgt_in.tolist() == [[1, 7, 13], [1, 13, 14]]
    assert tgt_out.tolist() == [[0, 13, 2], [13, 14, 2]]  # the tag's position is padding: no loss


def test_each_direction_follows_its_forced_tag(decoder_tagged):
    model, data, _ = decoder_tagged
    assert model.config.tag_position == "decoder"
    source = {lang: " ".join(LEXICON[lang][i] for i in (1, 2, 3)) for lang in LANGS}
    for src_lang, tgt_lang in PAIRS:  # the same source, another forced tag: another language
        text = model.translate([source[src_lang]], src_lang=src_lang, tgt_lang=tgt_lang, strategy="beam")[0]
        words = [w for w in text.split() if len(w) == 3]  # whole lexicon words (this tiny model's output is rough)
        assert words and languages_of(" ".join(words)) == {tgt_lang}, (src_lang, tgt_lang, text)
    result = generate(model, [source["en"]], src_lang="en", tgt_lang="fr", return_attention=True)[0]
    assert not any(p.startswith("<2") for p in result.source_pieces)  # the encoder never saw the tag
    tags = {model.tokenizer.lang_tag_id(lang) for lang in LANGS}
    assert not tags & set(result.best.tokens)  # forced, not output
    c = model.config  # one attention row per output step (the tag's step is not one), one column per source id
    assert result.best.attention.shape == (c.n_decoder_layers, c.n_heads, len(result.best.token_logprobs),
                                           len(result.source_ids))


def test_the_tag_is_forced_and_not_scored(decoder_tagged):
    model, data, _ = decoder_tagged
    text = (data / "test_2016_flickr.de").read_text().splitlines()[0]
    best = generate(model, [text], src_lang="de", tgt_lang="cs", return_attention=True)[0]
    hyp, tok, cfg = best.best, model.tokenizer, model.config
    src = torch.tensor([tok.encode(text) + [cfg.eos_id]])
    tgt_in = torch.tensor([[cfg.bos_id, tok.lang_tag_id("cs")] + hyp.tokens])
    with torch.inference_mode():
        log_probs = model(src, tgt_in).log_softmax(-1)[0, 1:]  # the predictions after the tag
    expected = log_probs.gather(1, torch.tensor(hyp.tokens + [cfg.eos_id])[:, None]).squeeze(1)
    assert len(hyp.token_logprobs) == len(hyp.tokens) + 1  # the output tokens and eos, no tag
    assert hyp.token_logprobs == f32(expected.tolist())
    assert hyp.score == score(float(expected.double().sum()), len(expected))
    assert best.best.attention.shape[-1] == src.size(1)  # cross-attention over the tag-free source
    assert best.source_ids == src[0].tolist()


@pytest.mark.parametrize("options", [
    dict(strategy="greedy"), dict(strategy="beam", beam_size=3, n_best=2),
    dict(strategy="sample", n_best=2, seed=3), dict(strategy="beam", beam_size=2, use_cache=False),
], ids=["greedy", "beam", "sample", "beam-no-cache"])
def test_mixed_directions_batched_equal_one_by_one(decoder_tagged, options):
    model, data, _ = decoder_tagged
    texts = {lang: (data / f"test_2016_flickr.{lang}").read_text().splitlines() for lang in LANGS}
    sources = [texts[s][i % 8] for i, (s, _) in enumerate(PAIRS)]
    src_langs, tgt_langs = [s for s, _ in PAIRS], [t for _, t in PAIRS]
    together = generate(model, sources, src_lang=src_langs, tgt_lang=tgt_langs, batch_size=12, **options)
    for i, (text, s, t) in enumerate(zip(sources, src_langs, tgt_langs)):
        alone = generate(model, [text], src_lang=s, tgt_lang=t, **options)[0]
        assert [h.tokens for h in alone.hypotheses] == [h.tokens for h in together[i].hypotheses], (s, t)
        for a, b in zip(alone.hypotheses, together[i].hypotheses):
            assert a.score == score(b.score, len(b.token_logprobs))


def test_prefixes_follow_the_tag(decoder_tagged):
    model, data, _ = decoder_tagged
    text = (data / "test_2016_flickr.en").read_text().splitlines()[1]
    word = "fr" + "abcdefghij"[7]  # a French word of the lexicon, not necessarily the model's first choice
    result = generate(model, [text], src_lang="en", tgt_lang="fr", prefix=word + " ", strategy="beam", beam_size=3)
    assert result[0].text.split()[0] == word
    # the tag still steers what follows the prefix: the same prefix towards German goes on in German
    german = generate(model, [text], src_lang="en", tgt_lang="de", prefix=word + " ", strategy="beam", beam_size=3)
    assert german[0].text.split()[0] == word
    after = {lang: [w for w in r[0].text.split()[1:] if len(w) == 3] for lang, r in (("fr", result), ("de", german))}
    assert after["fr"] and languages_of(" ".join(after["fr"])) == {"fr"}, result[0].text
    assert after["de"] and languages_of(" ".join(after["de"])) == {"de"}, german[0].text


def test_save_load_round_trip_and_the_pool(decoder_tagged, tmp_path):
    model, data, _ = decoder_tagged
    model.save_pretrained(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["tag_position"] == "decoder"
    loaded = Transformer.from_pretrained(tmp_path / "saved")
    sources = (data / "test_2016_flickr.cs").read_text().splitlines()[:6]
    expected = model.translate(sources, src_lang="cs", tgt_lang="de", strategy="beam", beam_size=2)
    assert loaded.translate(sources, src_lang="cs", tgt_lang="de", strategy="beam", beam_size=2) == expected


@pytest.mark.slow  # starts worker processes
def test_the_decoding_pool_decodes_decoder_tags_like_this_process(decoder_tagged):
    model, data, _ = decoder_tagged
    sources = (data / "test_2016_flickr.fr").read_text().splitlines()[:6]
    expected = model.translate(sources, src_lang="fr", tgt_lang="en", strategy="beam", beam_size=2, batch_size=2)
    with DecodingPool(model, processes=2, threads=1) as pool:
        assert model.translate(sources, src_lang="fr", tgt_lang="en", strategy="beam", beam_size=2, batch_size=2,
                         engine=pool) == expected


def test_the_marian_export_refuses_and_ctranslate2_forces_the_tag_as_target_prefix(decoder_tagged, tmp_path):
    model, data, _ = decoder_tagged
    with pytest.raises(UnsupportedModelError, match=r"cannot export tag_position='decoder' to marian: "
                                                    r"MarianMTModel.generate starts every output"):
        check_exportable(model.config, "marian")
    pytest.importorskip("ctranslate2")
    texts = {lang: (data / f"test_2016_flickr.{lang}").read_text().splitlines() for lang in LANGS}
    sources = [texts[s][i % 8] for i, (s, _) in enumerate(PAIRS)]
    languages = dict(src_lang=[s for s, _ in PAIRS], tgt_lang=[t for _, t in PAIRS])
    tags = {model.tokenizer.lang_tag_id(lang) for lang in LANGS}
    for options in (dict(strategy="greedy"), dict(strategy="greedy", prefix=["frc "] * 12),
                    dict(strategy="beam", beam_size=3)):
        ours = generate(model, sources, **languages, **options)
        theirs = generate(model, sources, **languages, engine="ctranslate2", batch_size=5, **options)
        for a, b in zip(ours, theirs):
            assert b.source_ids == a.source_ids and not tags & set(b.best.tokens)
            assert len(b.best.token_logprobs) == len(b.best.tokens) + int(b.best.finished)  # no tag among them
            assert b.best.score == f64(sum(b.best.token_logprobs), scale=len(b.best.token_logprobs))
            if options["strategy"] == "greedy":  # the same search: the same tokens and (tag-free) scores
                assert b.best.tokens == a.best.tokens
                assert b.best.score == score(a.best.score, len(a.best.token_logprobs), RUNTIME_REL)
    out = export_ctranslate2(model, tmp_path / "ct2")
    assert "target_prefix=[['<2en>']]" in (out / "README.md").read_text()


def test_decoder_tags_without_languages_is_a_one_line_training_error(tmp_path):
    data = four_way_corpus(tmp_path)
    with pytest.raises(UserError, match="these model options make no valid config: tag_position 'decoder' is for "
                                        "multilingual encoder-decoder models"):
        train_main(["--out", str(tmp_path / "run"), "--data-dir", str(data), "--src-lang", "en", "--tgt-lang", "de",
                    "--tag-position", "decoder", "--preset", "tiny", "--vocab-size", "300", "--max-updates", "1"])


def test_the_inside_views_refuse_a_decoder_tag_model_clearly(decoder_tagged):
    from transformer_hub.inside import attention_maps

    model, _, _ = decoder_tagged
    with pytest.raises(ValueError, match=r"reads its target-language tag at the decoder start \(tag_position "
                                         r"'decoder'\); the inside views teacher-force from bos alone"):
        attention_maps(model, "ena enb", src_lang="en", tgt_lang="de")
