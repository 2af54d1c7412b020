"""Tokenizer: SentencePiece training, round trips, special ids, joint/separate vocabularies, byte fallback for unseen
characters, what control characters become, files (save/load, corrupt files)."""
import json
import unicodedata

import pytest
import sentencepiece as spm

from helpers.corpus import MULTI30K_MISSING, read_multi30k, synthetic_pairs
from transformer_hub import Tokenizer, TransformerConfig
from transformer_hub import tokenizer as tokenizer_module


def normalised(text: str) -> str:
    """What the tokenizer promises to give back: NFKC, whitespace runs collapsed, ends stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def test_special_ids_agree_with_the_config(tiny_tokenizer):
    cfg = TransformerConfig()
    for side in (tiny_tokenizer.source, tiny_tokenizer.target):
        assert (side.pad_id(), side.bos_id(), side.eos_id(), side.unk_id()) == \
            (cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id) == (0, 1, 2, 3)
    assert tiny_tokenizer.pieces([0, 1, 2, 3]) == ["<pad>", "<s>", "</s>", "<unk>"]


def test_vocabulary_size(tiny_tokenizer):
    assert tiny_tokenizer.joint
    assert 4 + 256 < tiny_tokenizer.src_vocab_size == tiny_tokenizer.tgt_vocab_size <= 512
    pieces = tiny_tokenizer.pieces(range(tiny_tokenizer.src_vocab_size))
    assert sum(p.startswith("<0x") for p in pieces) == 256  # every byte has a piece: byte fallback


def test_round_trip_on_the_training_text(tiny_tokenizer, sentence_pairs):
    for en, de in sentence_pairs:
        for text, side in ((en, "source"), (de, "target")):
            ids = tiny_tokenizer.encode(text, side=side)
            assert ids and all(0 <= i < tiny_tokenizer.src_vocab_size for i in ids)
            assert 3 not in ids
            assert tiny_tokenizer.decode(ids, side=side) == normalised(text)


def test_round_trip_on_unseen_sentences(tiny_tokenizer):
    held_out = [en for en, _ in synthetic_pairs(50, seed=7)] + ["Quick zephyrs blow, vexing daft Jim.",
                                                                  "Jörg wählt Quarz-Äxte; Übermut tut selten gut."]
    for text in held_out:
        ids = tiny_tokenizer.encode(text)
        assert 3 not in ids  # nothing becomes <unk>
        assert tiny_tokenizer.decode(ids) == normalised(text)


UNSEEN = ["😀🐶🚲", "漢字と日本語のテキスト", "مرحبا بالعالم", "Привет, мир", "שָׁלוֹם", "ἀλήθεια", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ",
          "e\u0301 à la carte", "👩‍👩‍👧 family", "Ein Hund 🐕 läuft über die Straße 🚦.", "\U0010FFFF"]


@pytest.mark.parametrize("text", UNSEEN)
def test_byte_fallback_round_trips_unseen_characters(tiny_tokenizer, text):
    ids = tiny_tokenizer.encode(text)
    assert 3 not in ids
    assert tiny_tokenizer.decode(ids) == normalised(text)
    if text == "😀🐶🚲":
        assert all(p.startswith("<0x") or p == "▁" for p in tiny_tokenizer.pieces(ids))  # spelled as UTF-8 bytes
        assert sum(p.startswith("<0x") for p in tiny_tokenizer.pieces(ids)) == len(text.encode("utf-8"))


def test_normalisation_is_nfkc():
    assert normalised("ﬁne Ｆｕｌｌ") == "fine Full"  # the documented behaviour the checks above rely on


@pytest.mark.parametrize("text, expected", [
    ("a\tb\nc\r\nd", "a b c d"),  # whitespace controls become spaces (then runs collapse)
    ("a\x0bb\x0cc\x1cd\x85e", "a b c d e"),
    ("x\x00y\x07z\x1b[0mq\x7f\x80\x9f!", "xyz[0mq!"),  # every other control character is dropped
    ("\x00\x01\x02", ""),
    ("  spaced   out  ", "spaced out"),
    ("lone \ud800 surrogate", "lone surrogate"),  # not valid Unicode: dropped, no crash
    ("pair \ud83d\ude00", "pair 😀"),  # a surrogate pair is its character
])
def test_control_characters(tiny_tokenizer, text, expected):
    assert tiny_tokenizer.decode(tiny_tokenizer.encode(text)) == expected
    assert tokenizer_module.clean_text(text).split() == expected.split()


def test_empty_and_long_input(tiny_tokenizer):
    assert tiny_tokenizer.encode("") == [] and tiny_tokenizer.encode(" \t\n") == []
    assert tiny_tokenizer.decode([]) == ""
    long = "A dog runs. " * 2000
    assert tiny_tokenizer.decode(tiny_tokenizer.encode(long)) == normalised(long)


def test_decode_drops_specials_and_invalid_ids(tiny_tokenizer):
    ids = tiny_tokenizer.encode("A dog.")
    assert tiny_tokenizer.decode([1] + ids + [2, 0, 0]) == "A dog."
    assert tiny_tokenizer.decode(ids + [-1, 10**9]) == "A dog."


def test_argument_checks(tiny_tokenizer):
    with pytest.raises(TypeError, match="expected a string"):
        tiny_tokenizer.encode(b"bytes")
    with pytest.raises(TypeError):
        tiny_tokenizer.encode(None)
    with pytest.raises(ValueError, match="side must be 'source' or 'target'"):
        tiny_tokenizer.encode("x", side="left")


# --------------------------------------------------------------------------- training
def test_joint_and_separate_vocabularies(sentence_pairs):
    en, de = zip(*sentence_pairs)
    joint = Tokenizer.train(en, de, vocab_size=400, joint=True)
    separate = Tokenizer.train(en, de, vocab_size=400, joint=False)
    assert joint.joint and joint.source is joint.target
    assert not separate.joint and separate.source is not separate.target
    assert joint.encode("Hund", side="source") == joint.encode("Hund", side="target")
    # each side's vocabulary fits its own language: German text costs fewer pieces on the German side
    german, english = " ".join(de[:50]), " ".join(en[:50])
    assert len(separate.encode(german, side="target")) < len(separate.encode(german, side="source"))
    assert len(separate.encode(english, side="source")) < len(separate.encode(english, side="target"))
    for text, side in ((de[0], "target"), (en[0], "source")):
        assert separate.decode(separate.encode(text, side=side), side=side) == normalised(text)


def test_vocab_size_is_an_upper_bound():
    tok = Tokenizer.train(["a b c", "a b"], vocab_size=8000)
    assert tok.src_vocab_size < 8000


def test_training_needs_text():
    with pytest.raises(ValueError, match="empty text"):
        Tokenizer.train(["", "   ", "\x00"])
    with pytest.raises(ValueError, match="separate vocabularies need target texts"):
        Tokenizer.train(["some text"], joint=False)


@pytest.mark.parametrize("vocab_size", [100, 262, 0])
def test_too_small_vocabulary_is_a_clear_error(sentence_pairs, vocab_size):
    with pytest.raises(ValueError, match=f"vocab_size={vocab_size}"):
        Tokenizer.train([en for en, _ in sentence_pairs], vocab_size=vocab_size)


def test_training_text_is_cleaned_like_encoded_text():
    tok = Tokenizer.train(["tab\tseparated\x00 words", "more\nwords here"], vocab_size=300)
    pieces = tok.pieces(range(tok.src_vocab_size))
    assert not any("\x00" in p or "\t" in p for p in pieces if not p.startswith("<0x"))


def test_foreign_special_ids_are_refused(tmp_path):
    proto = tmp_path / "other"
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["a b c d e f", "g h i j"]), model_prefix=str(proto),
                                   vocab_size=14, minloglevel=2)  # SentencePiece defaults: unk 0, bos 1, eos 2, no pad
    processor = spm.SentencePieceProcessor(model_file=str(proto) + ".model")
    with pytest.raises(ValueError, match=r"special ids \(pad, bos, eos, unk\) are \(-1, 1, 2, 0\)"):
        Tokenizer(processor)


@pytest.mark.data
@pytest.mark.skipif(read_multi30k("train", "en", 1) is None, reason=MULTI30K_MISSING)
def test_multi30k_vocabulary_covers_the_test_set():
    en, de = read_multi30k("train", "en", 2000), read_multi30k("train", "de", 2000)
    tok = Tokenizer.train(en, de, vocab_size=2000)
    for text in read_multi30k("test_2016_flickr", "de", 200) + read_multi30k("test_2016_flickr", "en", 200):
        ids = tok.encode(text)
        assert 3 not in ids and tok.decode(ids) == normalised(text)


# --------------------------------------------------------------------------- files
@pytest.mark.parametrize("joint", [True, False])
def test_save_and_load(sentence_pairs, tmp_path, joint):
    en, de = zip(*sentence_pairs)
    tok = Tokenizer.train(en, de, vocab_size=400, joint=joint)
    names = tok.save(tmp_path)
    expected = ["spm.model"] if joint else ["source.spm.model", "target.spm.model"]
    assert names == expected + ["tokenizer_config.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["type"] == "sentencepiece"
    loaded = Tokenizer.from_directory(tmp_path)
    assert loaded.joint == joint
    for side in ("source", "target"):
        assert loaded._side(side).serialized_model_proto() == tok._side(side).serialized_model_proto()
    for text in list(en[:20]) + list(de[:20]) + UNSEEN:
        assert loaded.encode(text) == tok.encode(text)
        assert loaded.encode(text, side="target") == tok.encode(text, side="target")


@pytest.mark.parametrize("content", [
    b"", b"not a sentencepiece model at all", b"\x0a\x05hello\x12\x00", bytes(range(256)) * 4,
])
def test_corrupt_model_file(tmp_path, content):
    path = tmp_path / "spm.model"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="not a valid SentencePiece model"):
        Tokenizer.from_files(path)


def test_truncated_model_file(tiny_tokenizer, tmp_path):
    proto = tiny_tokenizer.source.serialized_model_proto()
    path = tmp_path / "spm.model"
    path.write_bytes(proto[: len(proto) // 2])
    with pytest.raises(ValueError, match="not a valid SentencePiece model"):
        Tokenizer.from_files(path)


def test_oversized_model_file_is_not_read(tiny_tokenizer, tmp_path, monkeypatch):
    tiny_tokenizer.save(tmp_path)
    monkeypatch.setattr(tokenizer_module, "MAX_MODEL_BYTES", 1000)
    with pytest.raises(ValueError, match="larger than 1000 bytes"):
        Tokenizer.from_directory(tmp_path)


@pytest.mark.parametrize("config", [
    "{not json", json.dumps([1]), json.dumps({"source": "../../etc/passwd", "target": "spm.model"}),
    json.dumps({"source": "/abs/spm.model", "target": "spm.model"}), json.dumps({"source": "spm.model"}),
    json.dumps({"source": ".hidden", "target": "spm.model"}), json.dumps({"source": 3, "target": "spm.model"}),
])
def test_bad_tokenizer_config(tiny_tokenizer, tmp_path, config):
    tiny_tokenizer.save(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text(config)
    with pytest.raises(ValueError, match="tokenizer config"):
        Tokenizer.from_directory(tmp_path)


# --------------------------------------------------------------------------- subword sampling (training only)
SAMPLED_TEXT = "Two young children are playing together in the sand near the water."


def test_sampling_draws_varied_segmentations_and_encode_never_samples(tiny_tokenizer):
    from transformer_hub.tokenizer import SubwordSampling, seed_sampling

    plain = tiny_tokenizer.encode(SAMPLED_TEXT)
    tok = Tokenizer(tiny_tokenizer.source, sampling=SubwordSampling(alpha=0.1, side="source"))

    def draws(seed):
        seed_sampling(seed)
        return [tuple(tok.sample(SAMPLED_TEXT, "source")) for _ in range(8)]

    first = draws(7)
    assert draws(7) == first  # the same seed, the same draws
    assert draws(8) != first and len(set(first)) > 1  # other seeds and other calls: other segmentations
    assert all(tok.decode(list(ids), side="source") == SAMPLED_TEXT for ids in first)  # still the same text
    assert tok.sample(SAMPLED_TEXT, "target") == plain  # side "source": targets are not sampled
    assert {tuple(tok.encode(SAMPLED_TEXT)) for _ in range(8)} == {tuple(plain)}  # decoding's pieces
    both = Tokenizer(tiny_tokenizer.source, sampling=SubwordSampling(alpha=0.1, side="both"))
    seed_sampling(7)
    assert len({tuple(both.sample(SAMPLED_TEXT, "target")) for _ in range(8)}) > 1


def test_sampling_is_saved_with_the_tokenizer_and_checked(tiny_tokenizer, tmp_path):
    from transformer_hub.tokenizer import SubwordSampling

    setting = SubwordSampling(alpha=0.2, side="both", nbest=64)
    Tokenizer(tiny_tokenizer.source, sampling=setting).save(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["sampling"] == \
        {"alpha": 0.2, "side": "both", "nbest": 64}
    assert Tokenizer.from_directory(tmp_path).sampling == setting
    tiny_tokenizer.save(tmp_path / "none")
    assert "sampling" not in json.loads((tmp_path / "none" / "tokenizer_config.json").read_text())
    assert Tokenizer.from_directory(tmp_path / "none").sampling is None
    for bad, message in (({"alpha": 0}, r"alpha must be a number in \(0, 1\], got 0"),
                         ({"alpha": 0.1, "side": "target"}, "side must be one of source, both, got 'target'"),
                         ({"alpha": 0.1, "nbest": 1}, "nbest must be -1 .* got 1"),
                         ({"alpha": 0.1, "extra": 1}, "sampling must be an object with alpha, side and nbest")):
        config = json.loads((tmp_path / "tokenizer_config.json").read_text())
        (tmp_path / "tokenizer_config.json").write_text(json.dumps({**config, "sampling": bad}))
        with pytest.raises(ValueError, match="tokenizer config .*" + message):
            Tokenizer.from_directory(tmp_path)
