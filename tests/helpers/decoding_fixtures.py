"""Small models and a tokenizer for the decoding and CLI tests (no data files, no network).

* ``tiny_tokenizer()``: a joint SentencePiece vocabulary (~300 pieces, byte
  fallback) trained on a synthetic English -> "German" word-by-word corpus.
* ``random_model(**overrides)``: a random-init ``tiny`` model over it, with
  the eos row of the output layer scaled up so random models do stop before
  their length cap now and then (outputs of many lengths).
* ``trained_model()``: the ``tiny`` model trained for a few seconds on the
  synthetic corpus, so it produces eos-terminated outputs with real
  preferences (for beam-versus-greedy checks).

Everything is cached per process and built with one intra-op thread: on a
busy 2-core machine, thread synchronisation dominates such small matmuls.
"""
from __future__ import annotations

import contextlib
import functools
import random
from typing import Iterator, List, Tuple

import torch

from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.decoding import TranslationResult

from .tolerances import exactly, f32, f32_close, score

LEXICON = {
    "a": "ein", "the": "der", "man": "mann", "woman": "frau", "dog": "hund", "child": "kind", "runs": "rennt",
    "plays": "spielt", "sits": "sitzt", "in": "im", "on": "auf", "park": "park", "street": "strasse",
    "with": "mit", "red": "rot", "blue": "blau", "ball": "ball", "bench": "bank", "two": "zwei",
    "people": "leute", "water": "wasser", "green": "gruen", "shirt": "hemd", "small": "klein", "big": "gross",
}
WORDS = sorted(LEXICON)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def synthetic_pairs(n: int, seed: int = 0, min_words: int = 1, max_words: int = 12) -> List[Tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(min_words, max_words))]
        pairs.append((" ".join(words) + " .", " ".join(LEXICON[w] for w in words) + " ."))
    return pairs


@functools.lru_cache(maxsize=None)
def tiny_tokenizer() -> Tokenizer:
    pairs = synthetic_pairs(400, seed=1)
    extra = ["Ein Hund rennt im Park.", "Zwei Leute sitzen auf einer Bank.", "A man in a blue shirt."]
    return Tokenizer.train([s for s, _ in pairs] + extra, [t for _, t in pairs], vocab_size=320)


def tiny_config(**overrides) -> TransformerConfig:
    tok = tiny_tokenizer()
    if overrides.get("layout") == "decoder-only":
        overrides.setdefault("n_encoder_layers", 0)
    return TransformerConfig.preset("tiny", src_vocab_size=tok.src_vocab_size, tgt_vocab_size=tok.tgt_vocab_size,
                                    **overrides)


def _generator(model: Transformer) -> torch.nn.Linear:
    return model.body.generator


def random_model(seed: int = 0, eos_boost: float = 3.0, **overrides) -> Transformer:
    """A random-init tiny model with the tokenizer attached; ``eos_boost`` scales eos's output row."""
    torch.manual_seed(seed)
    model = Transformer(tiny_config(**overrides))
    model.tokenizer = tiny_tokenizer()
    with torch.no_grad():
        _generator(model).weight[model.config.eos_id] *= eos_boost
    return model.eval()


@functools.lru_cache(maxsize=None)
def trained_model(steps: int = 160) -> Transformer:
    """The tiny model after ``steps`` Adam updates on the synthetic corpus (a few seconds on one thread)."""
    tok = tiny_tokenizer()
    torch.manual_seed(0)
    model = Transformer(tiny_config())
    model.tokenizer = tok
    cfg = model.config
    pairs = synthetic_pairs(2000, seed=2, max_words=10)
    src = [tok.encode(s) + [cfg.eos_id] for s, _ in pairs]
    tgt = [[cfg.bos_id] + tok.encode(t, side="target") + [cfg.eos_id] for _, t in pairs]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=cfg.pad_id)
    rng = random.Random(0)
    model.train()
    with one_thread():
        for _ in range(steps):
            idx = rng.sample(range(len(pairs)), 48)
            s = _pad([src[i] for i in idx], cfg.pad_id)
            t = _pad([tgt[i] for i in idx], cfg.pad_id)
            logits = model(s, t[:, :-1])
            loss = loss_fn(logits.reshape(-1, logits.size(-1)), t[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.final_loss = float(loss)
    return model.eval()


def _pad(rows: List[List[int]], pad: int) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out


def pad_ids(rows: List[List[int]], pad: int = 0) -> torch.Tensor:
    return _pad(rows, pad)


STRATEGY_OPTIONS = {
    "greedy": {},
    "beam": {"beam_size": 3, "n_best": 3},
    "sample": {"n_best": 2, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7},
}


def same_hypotheses(a, b, exact=False, attention=True):
    """Same tokens and texts; scores, log-probabilities and attention equal bit for bit (``exact``: the same code
    path) or within float32's tolerance for other kernels (another batch, thread count or process)."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        ha_list = ra.hypotheses if isinstance(ra, TranslationResult) else ra
        hb_list = rb.hypotheses if isinstance(rb, TranslationResult) else rb
        assert [h.tokens for h in ha_list] == [h.tokens for h in hb_list]
        for ha, hb in zip(ha_list, hb_list):
            assert ha.finished == hb.finished and ha.text == hb.text
            n = len(hb.token_logprobs)
            if exact:
                assert (ha.score, ha.normalized_score, ha.token_logprobs) == \
                    exactly((hb.score, hb.normalized_score, hb.token_logprobs))
            else:
                assert ha.score == score(hb.score, n) and ha.normalized_score == score(hb.normalized_score, n)
                assert ha.token_logprobs == f32(hb.token_logprobs)
            if attention and ha.attention is not None:  # probabilities: scale 1
                assert torch.equal(ha.attention, hb.attention) if exact else f32_close(ha.attention, hb.attention)
