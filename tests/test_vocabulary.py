"""A new joint vocabulary for a trained model: balanced tokenizer text and the vocabulary transplant."""
import random

import pytest
import torch

from helpers.training import DE, EN
from transformer_hub.tokenizer import Tokenizer
from transformer_hub.training.vocabulary import (WORD_START, balanced, row_sources, spelling, transplant,
                                                 transplant_summary)

SOFTWARE = "click open save file folder menu button toolbar settings preferences document window".split()


def sentences(words, n, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) for _ in range(n)]


@pytest.fixture(scope="module")
def tokenizers():
    old = Tokenizer.train(sentences(EN, 300, 0) + sentences(DE, 300, 1), vocab_size=360, languages=["en", "de"],
                          domains=["captions"])
    new = Tokenizer.train(sentences(EN, 300, 2) + sentences(SOFTWARE, 600, 3), vocab_size=380,
                          languages=["en", "de"], domains=["captions", "software"])
    return old, new


def test_balanced_caps_each_corpus_and_language_with_a_seeded_sample():
    texts = {("en", "captions"): [f"caption {i}" for i in range(50)] * 2,
             ("en", "software"): [f"ui {i}" for i in range(60)] + ["", " "], ("de", "software"): ["Datei"]}
    chosen = balanced(texts, per_corpus=20, seed=1)
    assert len(chosen) == 41  # 20 distinct captions, 20 of the 60 software lines, the one German line; no blanks
    assert sum(t.startswith("caption") for t in chosen) == 20 and "Datei" in chosen
    assert chosen == balanced(texts, per_corpus=20, seed=1)
    assert chosen != balanced(texts, per_corpus=20, seed=2)
    assert len(balanced(texts, per_corpus=0)) == 111


def test_a_piece_both_vocabularies_have_keeps_its_row(tokenizers):
    old, new = tokenizers
    table = torch.randn(old.tgt_vocab_size, 8)
    moved = transplant({"embed": table, "other": torch.ones(3)}, old, new)["embed"]
    assert moved.shape == (new.tgt_vocab_size, 8)
    shared = [i for i in range(new.source.GetPieceSize())
              if old.source.IdToPiece(old.source.PieceToId(new.source.IdToPiece(i))) == new.source.IdToPiece(i)
              and not new.source.IsUnknown(i) and old.source.PieceToId(new.source.IdToPiece(i)) != old.source.unk_id()]
    assert len(shared) > 20
    for i in shared:  # the special pieces, the language tags, <domain:captions>, the bytes, the common words
        torch.testing.assert_close(moved[i], table[old.source.PieceToId(new.source.IdToPiece(i))], rtol=0, atol=0)


def test_a_new_piece_starts_as_the_mean_of_the_old_pieces_that_spell_it(tokenizers):
    old, new = tokenizers
    table = torch.randn(old.tgt_vocab_size, 8, dtype=torch.float64)
    moved = transplant({"embed": table}, old, new)["embed"]
    new_words = [i for i, ids in enumerate(row_sources(old, new)) if ids is not None and len(ids) > 1]
    assert new_words, "the software words are new pieces the old vocabulary spells in several"
    for i in new_words:
        ids = spelling(old, new.source.IdToPiece(i))
        assert old.decode(ids).replace(" ", "") == new.source.IdToPiece(i).replace(WORD_START, "")
        torch.testing.assert_close(moved[i], table[ids].mean(dim=0))


def test_tags_the_old_vocabulary_lacks_start_as_the_mean_row(tokenizers):
    old, new = tokenizers
    table = torch.randn(old.tgt_vocab_size, 4)
    moved = transplant({"embed": table, "bias": torch.arange(old.tgt_vocab_size, dtype=torch.float32)}, old, new)
    tag = new.domain_tag_id("software")
    torch.testing.assert_close(moved["embed"][tag], table.mean(dim=0))
    assert moved["bias"].shape == (new.tgt_vocab_size,)
    summary = transplant_summary(old, new)
    assert summary["pieces"] == new.tgt_vocab_size
    assert summary["kept"] + summary["spelled"] + summary["mean"] == summary["pieces"]
    assert summary["mean"] >= 1 and summary["spelled"] >= 1


def test_tensors_of_other_sizes_pass_unchanged(tokenizers):
    old, new = tokenizers
    other = torch.randn(5, 3)
    assert transplant({"layer": other}, old, new)["layer"] is other


@pytest.mark.slow
def test_a_warm_start_onto_a_new_vocabulary_keeps_the_shared_rows(tmp_path):
    from helpers.training import args_for
    from safetensors.torch import load_file
    from transformer_hub import Transformer
    from transformer_hub.training.trainer import main

    assert main(args_for(tmp_path, "base", "--max-updates", "2", "--average-last", "1")) == 0
    base = Transformer.from_pretrained(str(tmp_path / "base" / "final"))
    moved = tmp_path / "moved"
    args = args_for(tmp_path, "moved", "--init-from", str(tmp_path / "base" / "final"), "--new-vocabulary",
                    "--tokenizer-lines", "150", "--max-updates", "1", "--average-last", "1")
    args[args.index("--vocab-size") + 1] = "330"
    args[args.index("--peak-lr") + 1] = "1e-9"  # one update that moves no weight by more than ~1e-9
    del args[args.index("--preset"):args.index("--preset") + 2]  # the architecture is the model's
    assert main(args) == 0
    new = Transformer.from_pretrained(str(moved / "final"))
    assert new.config.tgt_vocab_size == new.tokenizer.tgt_vocab_size != base.config.tgt_vocab_size
    old_table, new_table = base.state_dict()["body.src_embed.lut.weight"], new.state_dict()["body.src_embed.lut.weight"]
    for i, ids in enumerate(row_sources(base.tokenizer, new.tokenizer)):
        if ids is not None and len(ids) == 1:
            torch.testing.assert_close(new_table[i], old_table[ids[0]], rtol=0, atol=1e-6)
    assert load_file(str(moved / "final" / "model.safetensors"))  # a plain save_pretrained folder
