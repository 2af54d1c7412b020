""""Best for the direction" in the Inside tab's handlers: which model it is, and what follows that model.

The Inside tab opens on "Best for the direction" (``AUTO``), as every tab.  Its views need one concrete model: the
one the views' handlers pick for the direction (``space.page.inside.resolve_model``, ``pick_model``: the models'
cards, on captions).  The line under the picker names it, and the layer and head sliders, each view's button and
its why-not note follow it as the model or a language changes (the tab's ``_follow``).  The views themselves
(``attention_all``, ``positions``, ``steps``, ``recipe``) run on that model, for each direction.

Stores: the shipped models; two shipped variants (the decoder-only one is then the default and the best for
en->de: no card scores them, so the default wins); the shipped en-de beside an untrained four-language model
of other sizes (the only one serving en->fr).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch

from space.page import inside
from space.page.tabs.inside import _follow
from space.serving.choice import AUTO, AUTO_LABEL
from space.serving.context import SpaceContext
from space.serving.model_store import ModelStore
from transformer_hub import Transformer, TransformerConfig
from transformer_hub.tokenizer import Tokenizer

MODELS = Path(__file__).resolve().parent.parent / "space" / "models"
TEXT = "A man in a blue shirt is sitting on a bench."
# sizes unlike the shipped models' 4, 4, 4; max_len above the greedy cap (the source's length + 50), as the shipped
# models': an untrained model never ends its output, and the attention view feeds it back behind a start token
FOUR = {"n_encoder_layers": 2, "n_decoder_layers": 3, "n_heads": 2, "max_len": 256}
VIEWS_OF_FOLLOW = slice(3, None)  # _follow's updates: the picker, the layer and head sliders, then (button, note)s


def context(*folders: Path) -> SpaceContext:
    """A Space context over ``folders`` (no shipped models folder), its worker started on first use."""
    return SpaceContext(store=ModelStore(tempfile.mkdtemp(prefix="inside_best_"), [str(f) for f in folders]))


@pytest.fixture(scope="module")
def shipped():
    ctx = SpaceContext(store=ModelStore(MODELS))
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def four_way(tmp_path_factory):
    """The shipped en-de beside ``tiny-four``: untrained (seeded), en/de/fr/cs, with the sizes of ``FOUR``."""
    tokenizer = Tokenizer.from_directory(MODELS / "multilingual")
    torch.manual_seed(0)
    config = TransformerConfig.preset("tiny", src_vocab_size=tokenizer.src_vocab_size, share_embeddings=True,
                                      tgt_vocab_size=tokenizer.tgt_vocab_size, languages=["en", "de", "fr", "cs"],
                                      **FOUR)
    model = Transformer(config).eval()
    model.tokenizer = tokenizer
    folder = tmp_path_factory.mktemp("models") / "tiny-four"
    model.save_pretrained(folder)
    ctx = context(MODELS / "en-de", folder)
    yield ctx
    ctx.close()


def test_best_is_the_model_the_views_pick_for_each_direction(shipped):
    pairs = shipped.chooser.pairs()
    assert len(pairs) == 12  # en, de, fr and cs, both ways
    for src, tgt in pairs:
        best = shipped.chooser.best(src, tgt)
        for name in (AUTO, None, ""):
            assert inside.resolve_model(shipped, name, src, tgt) == best, (name, src, tgt)
        assert inside.best_note(shipped, AUTO, src, tgt).endswith(f": {best}")
    english_german = shipped.chooser.best("en", "de")
    assert inside.best_note(shipped, AUTO, "en", "de") == f"Best for English → German: {english_german}"
    assert inside.resolve_model(shipped, "multilingual", "en", "de") == "multilingual"  # a named model is itself
    assert inside.best_note(shipped, "multilingual", "en", "de") == ""  # and the picker shows its name
    assert inside.resolve_model(shipped, "no-such-model", "en", "de") is None  # the view's call names the mistake


def test_a_best_that_is_decoder_only_turns_the_attention_view_off_and_says_why():
    """Before: "Best for the direction" was never asked about, so the attention button stayed on for a decoder-only
    best model and its call failed."""
    ctx = context(MODELS / "variants" / "decoder-only", MODELS / "variants" / "paper")
    try:
        assert inside.resolve_model(ctx, AUTO, "en", "de") == ctx.chooser.best("en", "de") == "decoder-only"
        reason = inside.why_not(ctx, AUTO, "attention", "en", "de")
        assert reason.startswith(f"{AUTO_LABEL} is decoder-only here. This model is decoder-only: it has no encoder")
        assert [inside.why_not(ctx, AUTO, view, "en", "de") for view in ("positions", "steps", "recipe")] == [None] * 3
        assert inside.sizes(ctx, AUTO, "en", "de") == (10, 4)  # 0 encoder and 10 decoder layers, 4 heads
        updates = _follow(ctx, AUTO, "en", "de", 1, 1)
        (button, note), others = updates[VIEWS_OF_FOLLOW][:2], updates[VIEWS_OF_FOLLOW][2:]
        assert button["interactive"] is False and note["visible"] is True and note["value"] == reason
        assert [u.get("interactive", u.get("visible")) for u in others] == [True, False] * 3
        assert inside.why_not(ctx, "paper", "attention", "en", "de") is None
    finally:
        ctx.close()


def test_the_line_and_the_sliders_follow_best_into_another_direction(four_way):
    """Before: the sliders were sized to en->de's best model whatever the direction (en->fr's has 3 layers and 2
    heads, not 4 and 4), and nothing named the model "Best for the direction" was."""
    assert four_way.chooser.best("en", "fr") == "tiny-four" and four_way.chooser.best("en", "de") == "en-de"
    info, layer, head = _follow(four_way, AUTO, "en", "fr", 4, 3)[:3]
    assert info["info"] == "Best for English → French: tiny-four"
    assert (layer["maximum"], layer["value"], head["maximum"], head["value"]) == (3, 3, 2, 2)  # values kept within
    info, layer, head = _follow(four_way, AUTO, "en", "de", 2, 2)[:3]
    assert info["info"] == "Best for English → German: en-de"
    assert (layer["maximum"], layer["value"], head["maximum"], head["value"]) == (4, 2, 4, 2)
    info, layer, head = _follow(four_way, "tiny-four", "en", "de", 4, 4)[:3]  # a named model: no line, its sizes
    assert info["info"] == "" and (layer["maximum"], head["maximum"]) == (3, 2)
    # the model changed and the languages not yet: the pair the pickers settle on (en-de serves en->de only)
    assert _follow(four_way, "en-de", "en", "fr", 1, 1)[1]["maximum"] == 4
    assert all(update["interactive"] for update in _follow(four_way, AUTO, "en", "fr", 1, 1)[VIEWS_OF_FOLLOW][::2])


@pytest.mark.slow  # the decoding worker loads both models
def test_every_view_on_best_runs_the_model_it_is_for_the_direction(four_way):
    for (src, tgt), name in ((("en", "fr"), "tiny-four"), (("en", "de"), "en-de")):
        config = four_way.store.config(name)
        data = inside.attention_all(four_way, TEXT, AUTO, src, tgt)[2]
        assert data["model"] == name
        assert data["shapes"]["cross"][:2] == [config.n_decoder_layers, config.n_heads]
        assert data["shapes"]["encoder_self"][:2] == [config.n_encoder_layers, config.n_heads]
        assert inside.positions(four_way, TEXT, AUTO, src, tgt)[1]["model"] == name
        steps = inside.steps(four_way, TEXT, AUTO, src, tgt)[2]
        assert steps["model"] == name and steps["steps"] >= 1 and steps["top"][0]
        assert inside.recipe(four_way, TEXT, AUTO, src, tgt)[1]["model"] == name
