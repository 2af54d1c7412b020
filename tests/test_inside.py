"""transformer_hub.inside: the numbers each view of "Inside the Transformer" shows, checked against the model.

Attention against what the attention modules compute by other routes (the encoder's own ``need_weights``,
equation 1 on the decoder's projections, decoding's ``return_attention``); positions against the paper's
formula; steps against a forward pass per prefix; teacher forcing against the scoring paths; the schedule
and the smoothed target against the trainer's and the loss's own functions and the shipped model's log.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from helpers.tolerances import f32, f32_close, f64, score, sum_close
from helpers.decoding_fixtures import random_model, trained_model
from transformer_hub.decoding import decode_ids, generate
from transformer_hub.hub import card_data_from_file
from transformer_hub.inside import (attention_maps, positional_encoding, smoothed_target, step_by_step,
                                     teacher_forcing, training_recipe)
from transformer_hub.model import no_dropout
from transformer_hub.model.losses import label_smoothed_cross_entropy, smoothed_targets
from transformer_hub.training.metrics import MetricsLog
from transformer_hub.model import causal_mask
from transformer_hub.training.schedule import noam_lr

SHIPPED = Path(__file__).resolve().parent.parent / "space" / "models" / "multilingual"
TEXT = "a man with a red ball sits on the bench ."
TARGET = "ein mann mit ein rot ball sitzt auf der bank ."
VARIANTS = [dict(), dict(positional="rope", norm="pre", feed_forward="swiglu"), dict(attention="sdpa"),
            dict(positional="learned")]


@pytest.mark.parametrize("overrides", VARIANTS, ids=["paper", "modern", "sdpa", "learned"])
def test_three_kinds_have_their_shapes_and_rows_sum_to_one(overrides):
    model = random_model(**overrides)
    maps = attention_maps(model, TEXT, target=TARGET)
    c, S, T = model.config, len(maps.source_pieces), len(maps.target_pieces)
    assert T == len(model.tokenizer.encode(TARGET, side="target")) + 1 == len(maps.output_pieces)
    assert maps.encoder_self.shape == (c.n_encoder_layers, c.n_heads, S, S)
    assert maps.decoder_self.shape == (c.n_decoder_layers, c.n_heads, T, T)
    assert maps.cross.shape == (c.n_decoder_layers, c.n_heads, T, S)
    for kind in ("encoder_self", "decoder_self", "cross"):  # float32 softmax over <= 20 keys: sums within 1e-5
        rows = getattr(maps, kind).sum(dim=-1)
        assert sum_close(rows, torch.ones_like(rows), terms=getattr(maps, kind).size(-1)), kind
    assert torch.equal(maps.decoder_self.triu(1), torch.zeros_like(maps.decoder_self))  # the causal mask: exactly 0
    lower = torch.ones(T, T, dtype=torch.bool).tril()
    assert maps.decoder_self[..., lower].gt(0).all()  # and nothing on or below it is masked
    assert maps.target_pieces[0] == "<s>" and maps.output_pieces[-1] == "</s>"


def test_encoder_self_attention_is_what_the_layers_return_when_asked():
    model = random_model(positional="rope", norm="pre")
    maps = attention_maps(model, TEXT, target=TARGET)
    body, src = model.body, torch.tensor([maps.source_ids])
    positions = torch.arange(src.size(1))[None]
    with torch.no_grad():  # the encoder loop by hand, each layer asked for its weights
        x, rotate, expected = body.embed(body.src_embed, src, positions), body.positional.rotation(positions), []
        for layer in body.encoder:
            x, w = layer(x, None, rotate, need_weights=True)
            expected.append(w[0])
    assert f32_close(maps.encoder_self, torch.stack(expected))  # probabilities: scale 1


def test_the_maps_are_what_encode_and_decode_return_and_no_hook_is_involved(monkeypatch):
    """The views ask ``encode``/``decode`` for their weights: no module hook rewrites any argument."""
    def refuse(*args, **kwargs):
        raise AssertionError("a module hook was registered")

    monkeypatch.setattr(torch.nn.Module, "register_forward_pre_hook", refuse)
    monkeypatch.setattr(torch.nn.Module, "register_forward_hook", refuse)
    model = random_model()
    maps = attention_maps(model, TEXT, target=TARGET)
    c = model.config
    with torch.no_grad():
        state = model.encode(torch.tensor([maps.source_ids]), need_weights=True)
        out = model.decode(torch.tensor([[c.bos_id] + maps.target_ids]), state, need_weights=True)
    assert torch.equal(maps.encoder_self, torch.stack([w[0] for w in state.self_attention]))
    assert torch.equal(maps.decoder_self, torch.stack([w[0] for w in out.self_attention]))
    assert torch.equal(maps.cross, torch.stack([w[0] for w in out.cross_attention]))


@pytest.mark.parametrize("overrides", VARIANTS[:2], ids=["paper", "modern"])
def test_decoder_self_attention_is_equation_1_on_the_modules_projections(overrides):
    model = random_model(**overrides)
    inputs = {}

    def keep(i):
        return lambda module, args, kwargs, out: inputs.__setitem__(i, (args[0], kwargs.get("rotate")))

    handles = [layer.self_attn.register_forward_hook(keep(i), with_kwargs=True)
               for i, layer in enumerate(model.body.decoder)]
    try:
        maps = attention_maps(model, TEXT, target=TARGET)
    finally:
        for h in handles:
            h.remove()
    T = maps.decoder_self.size(-1)
    for i, layer in enumerate(model.body.decoder):
        attn, (x, rotate) = layer.self_attn, inputs[i]
        with torch.no_grad():
            qkv = attn._heads(attn.in_proj(x), 3)
            q, k = (qkv[:2] if rotate is None else rotate(qkv[:2])).unbind(0)
            scores = (q @ k.transpose(-2, -1) / math.sqrt(attn.d_k)).masked_fill(~causal_mask(T, 0, x.device),
                                                                                   float("-inf"))
        assert f32_close(maps.decoder_self[i], scores.softmax(-1)[0])


def test_cross_attention_equals_decodings_return_attention_on_its_own_translation():
    model = trained_model()
    result = generate(model, [TEXT], strategy="greedy", return_attention=True)[0]
    maps = attention_maps(model, TEXT)  # teacher-forced on the model's own greedy output
    assert maps.target_ids == result.best.tokens and maps.target == result.text
    assert maps.output_pieces == result.target_pieces(model.tokenizer)
    # incremental decoding (a cache, one query at a time) against one pass: float32 rounding only
    assert f32_close(maps.cross, result.best.attention.float())


def test_an_output_cut_at_max_len_is_shown_without_eos_and_as_decoding_attended():
    model = random_model(eos_boost=-5.0, max_len=12)  # eos never wins: greedy runs to the model's max_len
    result = generate(model, ["a man"], strategy="greedy", return_attention=True)[0]
    assert not result.best.finished and len(result.best.tokens) == model.config.max_len
    maps = attention_maps(model, "a man")
    assert maps.target_ids == result.best.tokens
    assert maps.output_pieces == result.target_pieces(model.tokenizer)  # no eos: the cap cut it
    assert maps.target_pieces[0] == model.tokenizer.pieces([model.config.bos_id], side="target")[0]
    assert maps.cross.shape[2] == len(maps.output_pieces) == len(maps.target_pieces) == model.config.max_len
    assert f32_close(maps.cross, result.best.attention.float())


def test_bad_requests_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="decoder-only layout has no encoder and decoder"):
        attention_maps(random_model(layout="decoder-only"), TEXT)
    with pytest.raises(ValueError, match="the text is empty"):
        attention_maps(random_model(), "   ")
    with pytest.raises(ValueError, match="target is empty"):
        attention_maps(random_model(), TEXT, target="")
    with pytest.raises(ValueError, match="length must be an integer between 2 and max_len"):
        positional_encoding(random_model(), length=1)
    with pytest.raises(ValueError, match=r"dims \[9999\] are outside"):
        positional_encoding(random_model(), dims=(9999,))


def test_sinusoids_are_the_papers_formula_and_their_dot_products():
    model = random_model()
    view = positional_encoding(model, length=20, dims=(0, 1, 6))
    d = model.config.d_model
    for pos in (0, 3, 19):
        for i in (0, 3, d // 2 - 1):  # PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)
            angle = pos / 10000 ** (2 * i / d)
            scale = max(1.0, angle)  # float32 angles: their error grows with them
            assert view.encoding[pos, 2 * i].item() == f32(math.sin(angle), scale)
            assert view.encoding[pos, 2 * i + 1].item() == f32(math.cos(angle), scale)
    assert view.kind == "added" and list(view.curves) == [0, 1, 6]
    assert view.curves[1] == view.encoding[:, 1].tolist()
    assert sum_close(view.similarity, view.encoding @ view.encoding.T, terms=d)  # dot products of d terms <= 1
    assert sum_close(view.similarity[0, 0], torch.tensor(d / 2), terms=d)  # sin^2 + cos^2 per pair


def test_learned_positions_are_the_embedding_rows():
    model = random_model(positional="learned")
    view = positional_encoding(model, length=12)
    assert torch.equal(view.encoding, model.body.positional.embedding.weight[:12].detach())


def test_rotary_score_by_distance_is_the_sum_of_cosines():
    model = random_model(positional="rope")
    view = positional_encoding(model, length=16)
    d_k = model.config.d_model // model.config.n_heads
    theta = [10000 ** (-2 * i / d_k) for i in range(d_k // 2)]
    for dist in range(16):  # ones rotated by m and n: each pair contributes 2 cos((m - n) theta_i), over d_k
        expected = 2 * sum(math.cos(dist * t) for t in theta) / d_k
        assert view.by_distance[dist] == f32(expected)  # a mean of cosines: scale 1
        assert view.similarity[5, 5 + dist if dist < 11 else 5].item() == f32(
            expected if dist < 11 else 1.0)  # depends on the distance only
    assert view.kind == "rotary" and view.encoding is None


def next_token_probs(model, src, prefix):
    with torch.no_grad(), no_dropout():
        state = model.encode(torch.tensor([src]))
        logits = model.decode(torch.tensor([[model.config.bos_id] + prefix]), state).logits
    return logits[0, -1].float().softmax(-1)


def test_step_top_k_is_the_next_token_distribution_given_the_prefix():
    model = trained_model()
    view = step_by_step(model, TEXT, k=4, beam_size=3)
    src = generate(model, [TEXT])[0].source_ids
    greedy_ids = model.tokenizer.encode(view.greedy, side="target")
    assert len(view.top) == len(greedy_ids) + 1 == len(view.greedy_pieces)
    for t, top in enumerate(view.top):
        probs, ids = next_token_probs(model, src, greedy_ids[:t]).topk(4)
        assert [i for i, _, _ in top] == ids.tolist()
        assert [p for _, _, p in top] == f32(probs.tolist())
        assert top[0][1] == view.greedy_pieces[t]  # greedy takes the first


def test_steps_show_the_beams_of_the_search_trace():
    model = trained_model()
    view = step_by_step(model, TEXT, k=3, beam_size=3)
    result = generate(model, [TEXT], strategy="beam", beam_size=3, return_search=True)[0]
    assert view.beam == result.text and len(view.beams) == len(result.search.steps)
    for shown, step in zip(view.beams, result.search.steps):
        assert [b["pieces"] for b in shown["kept"]] == [model.tokenizer.pieces(n.tokens) for n in step.beams]
        assert [b["score"] for b in shown["kept"]] == [n.score for n in step.beams]
        best_pruned = sorted((n.score for n in step.pruned), reverse=True)[:3]
        assert [b["score"] for b in shown["pruned"]] == best_pruned


def test_teacher_forced_probabilities_equal_the_scoring_paths():
    model = trained_model()
    view = teacher_forcing(model, TEXT, TARGET)
    ref = model.tokenizer.encode(TARGET, side="target")
    src = generate(model, [TEXT])[0].source_ids
    assert len(view.forced_probs) == len(ref) + 1 and view.reference_pieces[-1] == "</s>"
    # 1. the validation loss (no smoothing, summed): one teacher-forced pass of the trainer's loss
    c = model.config
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([[c.bos_id] + ref]))
        nll = label_smoothed_cross_entropy(logits, torch.tensor([ref + [c.eos_id]]), c.pad_id, 0.0, reduction="sum")
    assert -view.forced_logprob == score(nll.item(), len(ref) + 1)
    # 2. decoding with the reference forced as a prefix (incremental, with a cache): the same per-token numbers
    hyp = decode_ids(model, torch.tensor([src]), prefix=[ref], strategy="greedy")[0][0]
    assert hyp.tokens[:len(ref)] == ref
    assert [math.log(p) for p in view.forced_probs[:len(ref)]] == f32(hyp.token_logprobs[:len(ref)])


def test_where_greedy_leaves_the_reference():
    model = trained_model()
    own = generate(model, [TEXT], strategy="greedy")[0].text
    assert teacher_forcing(model, TEXT, own).leaves_at is None
    words = own.split()
    assert len(words) >= 2, own
    other = " ".join(words[:1] + ["wasser" if words[1] != "wasser" else "hund"] + words[2:])  # another 2nd word
    view = teacher_forcing(model, TEXT, other)
    first = len(model.tokenizer.encode(words[0], side="target"))
    assert view.leaves_at == first and view.greedy_pieces[:first] == view.reference_pieces[:first]


def shipped_recipe():
    card = card_data_from_file(str(SHIPPED / "README.md"))
    from transformer_hub import TransformerConfig

    config = TransformerConfig.from_json_file(str(SHIPPED / "config.json"))
    return training_recipe(config, card["training"], MetricsLog(SHIPPED / "metrics.jsonl").read()), card, config


def test_the_schedule_drawn_is_the_trainers_and_matches_the_shipped_models_log():
    view, card, config = shipped_recipe()
    facts = card["training"]
    assert (view.warmup, view.peak_lr, view.d_model) == (facts["warmup"], facts["peak_lr"], config.d_model)
    assert view.lr == [noam_lr(s, config.d_model, view.warmup, view.factor) for s in view.steps]
    assert max(view.lr) == f64(facts["peak_lr"], scale=facts["peak_lr"]) and view.steps[-1] >= facts["updates"]
    logged = view.logged["train"]
    assert len(logged["step"]) > 100 and len(view.logged["val"]["val_loss"]) > 0
    for step, lr in zip(logged["step"], logged["lr"]):  # the rate the trainer used at each logged step
        assert noam_lr(step, config.d_model, view.warmup, view.factor) == f64(lr, scale=lr)


def test_a_card_without_a_schedule_gives_the_logged_curves_alone():
    """A card that records no warm-up (the variant study's) has no schedule to draw: the view says what is
    missing and keeps the logged curves, from the first update."""
    records = [{"kind": "train", "step": s, "loss": 9.0 - s / 100, "lr": 1e-4 * s} for s in (10, 20, 30)]
    records.append({"kind": "val", "step": 30, "val_loss": 7.5})
    view = training_recipe(random_model().config, {"peak_lr": 0.001, "updates": 30}, records)
    assert view.missing == ["warm-up"] and view.steps == [] and view.lr == [] and view.factor is None
    assert view.logged["train"]["step"] == [10, 20, 30] and view.logged["val"]["val_loss"] == [7.5]
    assert view.updates == 30 and view.label_smoothing is None


def test_a_card_with_a_cooldown_draws_the_rate_falling_to_its_last_update():
    config = random_model().config
    view = training_recipe(config, {"warmup": 10, "peak_lr": 0.002, "updates": 100, "cooldown_updates": 40})
    cooled = {s: lr for s, lr in zip(view.steps, view.lr)}
    assert cooled[10] == f64(0.002, scale=0.002)  # the peak is untouched: the cool-down starts at update 61
    assert cooled[100] == f64(noam_lr(100, config.d_model, 10, view.factor) / 40, scale=1e-5)
    assert all(a > b for a, b in zip(view.lr[view.steps.index(61):], view.lr[view.steps.index(61) + 1:]))

def test_smoothed_target_sums_to_one_and_is_what_the_loss_uses():
    eps, vocab = 0.1, 16000
    target = smoothed_target(7, vocab, eps)
    assert target.distribution.double().sum().item() == f32(1.0)  # float32 terms, an exact float64 sum
    assert target.on_target == f32(1 - eps + eps / vocab)
    assert target.distribution[8].item() == f32(eps / vocab, scale=eps / vocab)
    logits = torch.randn(5, 300, generator=torch.Generator().manual_seed(0))
    tokens = torch.tensor([3, 7, 0, 299, 12])
    cross_entropy = -(smoothed_targets(tokens, 300, eps) * logits.log_softmax(-1)).sum(-1).mean()
    expected = label_smoothed_cross_entropy(logits, tokens, -1, eps).item()
    assert cross_entropy.item() == f32(expected, scale=abs(expected))
    with pytest.raises(ValueError, match=r"token must be an id in \[0, 300\)"):
        smoothed_target(300, 300, eps)
