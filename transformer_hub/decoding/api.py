"""The decoding calls: text -> ids -> an engine -> results in input order.

``generate`` is the rich call (n-best lists with scores and attention; ``model.translate`` gives the strings),
``decode_ids`` the tokenizer-free one (padded id tensors in, hypotheses out).  Both share the same input
handling (``batching.py``): empty sources give empty outputs without running the model,
over-long sources are truncated with a warning, and every sentence gets its
own length cap.  The engine (``engines.py``: PyTorch in this process, with ``workers`` threads;
CTranslate2; a ``DecodingPool``'s processes) decodes; what a sentence's tokens may depend on is
stated in ``strategies.py``.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Union

import torch

from ..tokenizer import source_tags
from .alignment import inner_tokens
from .anchoring import decode_anchored
from .batching import prepare_sources
from .config import DecodingConfig, one_per_text
from .constraints import Anchoring, Constraints, constraints_for_texts
from .engines import get_engine
from .prefix import Prefix, PrefixArg, check_prefix_lengths, prefixes_for_ids, prefixes_for_texts
from .results import Hypothesis, TranslationResult

Tensor = torch.Tensor


def resolve_config(config: Optional[DecodingConfig], overrides: dict) -> DecodingConfig:
    """``config`` (None: the defaults) with ``overrides`` of its fields."""
    if config is None:
        config = DecodingConfig()
    elif not isinstance(config, DecodingConfig):
        raise TypeError(f"config must be a DecodingConfig, got {type(config).__name__}")
    return config.replace(**overrides) if overrides else config


def _run(model, sources: List[List[int]], config: DecodingConfig, progress: bool, workers: int, engine,
         prefixes: Optional[List[Optional[Prefix]]] = None, constraints: Optional[List[Optional[Constraints]]] = None,
         anchoring: Optional[Anchoring] = None):
    """Decode id lists (each ending in eos); returns (hypotheses per sentence, truncated indices, sources used,
    output caps)."""
    runner = get_engine(engine)
    runner.check(config, workers)
    if constraints is not None:
        if config.strategy != "beam":
            raise ValueError(f"constraints need beam search: use strategy='beam' (got {config.strategy!r})")
        if not getattr(runner, "constrains", False):
            raise ValueError(f"constraints need the PyTorch engine (engine='pytorch'): "
                             f"{type(runner).__name__} has no constrained search")
    sources, caps, truncated = prepare_sources(model, sources, config)
    check_prefix_lengths(prefixes, sources, caps)
    if constraints is None:
        hyps = runner.decode(model, sources, caps, config, progress=progress, prefixes=prefixes, workers=workers)
        return hyps, truncated, sources, caps

    def decode(index: List[int], cfg: DecodingConfig, specs) -> List[List[Hypothesis]]:
        pick = lambda values: [values[i] for i in index] if values is not None else None  # noqa: E731
        return runner.decode(model, pick(sources), pick(caps), cfg, progress=progress, prefixes=pick(prefixes),
                             workers=workers, **({"constraints": pick(specs)} if specs is not None else {}))

    tokenizer, skip = model.tokenizer, 1 if getattr(model.config, "decoder_tags", False) else 0
    hyps = decode_anchored(decode, len(sources), list(constraints), config,
                           lambda i: tokenizer.pieces(sources[i][skip:], side="source"),
                           lambda ids: tokenizer.pieces(ids, side="target"), _inner_tokens(tokenizer),
                           anchoring or Anchoring())
    return hyps, truncated, sources, caps


def _inner_tokens(tokenizer) -> Tensor:
    """The target ids that continue a word (``alignment.inner_tokens``), worked out once per tokenizer."""
    found = getattr(tokenizer, "_inner_target_tokens", None)
    if found is None:
        found = inner_tokens(tokenizer.pieces(list(range(tokenizer.tgt_vocab_size)), side="target"))
        tokenizer._inner_target_tokens = found  # a cache on the object: the vocabulary never changes
    return found


def _constraint_warnings(spec: Optional[Constraints], hyps: List[Hypothesis], cap: int) -> List[str]:
    """What to tell about phrases the best output lacks: only a length budget too short can cause that."""
    met = hyps[0].constraints_met if spec is not None and hyps else None
    if met is None or all(met):
        return []
    missing = ", ".join(repr(p.text) for p, ok in zip(spec.phrases, met) if not ok)
    return [f"the constraint{'s' if met.count(False) > 1 else ''} {missing} could not be placed within the {cap} "
            f"output tokens this sentence may have (it needs at least {spec.needed + 1}): raise max_len_offset "
            f"or max_length, or shorten the phrases"]


def _fill_text(model, results: List[List[Hypothesis]]) -> None:
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        return
    for hyps in results:
        for hyp in hyps:
            if hyp.tokens:
                hyp.text = tokenizer.decode(hyp.tokens, side="target")


def check_texts(texts: Sequence[str]) -> List[str]:
    """``texts`` as a list, lone surrogates replaced (they cannot be encoded as UTF-8: the tokenizer would fail);
    ``TypeError`` for a single string or an item that is not one."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings; wrap a single sentence in a list")
    texts = list(texts)
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"expected strings to translate, got {type(text).__name__}")
    return [text.encode("utf-8", errors="replace").decode("utf-8") for text in texts]


Languages = Union[None, str, Sequence[Optional[str]]]


def _source_tags(model, tokenizer, n: int, src_lang: Languages, tgt_lang: Languages,
                 domain: Languages = None) -> List[List[int]]:
    """Per sentence, the ids put before its source (``tokenizer.source_tags``: the target-language tag of a
    multilingual model, the domain tag of a model trained with domains; else none).

    ``src_lang`` / ``tgt_lang`` / ``domain`` are one value for every sentence or a list with one per sentence;
    each direction is checked against the directions the model serves, each domain against the model's
    (``ValueError`` naming them).
    """
    checked: dict = {}
    tags = []
    sources = one_per_text(src_lang, n, "src_lang", "one code")
    targets = one_per_text(tgt_lang, n, "tgt_lang", "one code")
    domains = one_per_text(domain, n, "domain", "one name")
    if "auto" in sources:  # detection is the text pipeline's
        raise ValueError("src_lang='auto' detects each text's language: use transformer_hub.text.translate_texts")
    for key in zip(sources, targets, domains):
        if key not in checked:
            _, target = model.config.check_pair(*key[:2])
            checked[key] = source_tags(tokenizer, model.config, target, key[2])
        tags.append(checked[key])
    return tags


def generate(model, texts: Sequence[str], config: Optional[DecodingConfig] = None, *, src_lang: Languages = None,
             tgt_lang: Languages = None, domain: Languages = None, progress: bool = False, workers: int = 1,
             engine="pytorch", prefix: PrefixArg = None, constraints=None, anchoring: Optional[Anchoring] = None,
             **overrides) -> List[TranslationResult]:
    """Translate sentences with ``model.tokenizer``: one :class:`TranslationResult` per text, in input order (texts
    to split, detect or match against a glossary: ``transformer_hub.text.translate_texts``, which calls this).

    ``config`` (default ``DecodingConfig()``) and keyword ``overrides`` of its fields choose the strategy and its
    options; ``progress=True`` shows a tqdm bar on stderr; ``workers=2`` decodes two batches at once in threads;
    ``engine``: "pytorch", "ctranslate2" or an engine object such as a ``DecodingPool`` of this model, with the same
    results.  Empty or whitespace-only texts give an empty result.  ``src_lang`` / ``tgt_lang`` / ``domain``: one
    value or one per text (a multilingual model needs ``tgt_lang``; ``domain``: one of ``config.domains``, None
    the default); a sentence's result does not depend on the others'.  ``prefix``: the target text each output
    starts with (or one per text), forced and scored.  ``constraints`` (beam, PyTorch engine): per text the target
    phrases its output must contain; each hypothesis reports ``constraints_met``, and ``result.warnings`` names a
    phrase that cannot fit the length budget; ``anchoring`` (a ``constraints.Anchoring``) places a term's phrase
    at its source words.  ``return_alternatives=K``: each hypothesis's per-token ``alternatives``;
    ``return_search=True`` (beam): each result's ``search`` trace.
    """
    text_options = [name for name in ("split_sentences", "glossary") if name in overrides]
    if text_options:  # DecodingConfig would call them unknown: say where they belong
        raise ValueError(f"{text_options[0]} is the text pipeline's option: use transformer_hub.text.translate_texts")
    config = resolve_config(config, overrides)
    texts = check_texts(texts)
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        raise ValueError("the model has no tokenizer attached (model.tokenizer is None); "
                         "attach one or call decode_ids with token ids")
    tags = _source_tags(model, tokenizer, len(texts), src_lang, tgt_lang, domain)
    eos = model.config.eos_id
    sources = [tag + tokenizer.encode(t, side="source") + [eos] if t.strip() else [] for t, tag in zip(texts, tags)]
    prefixes = prefixes_for_texts(model, tokenizer, prefix, len(texts))
    specs = constraints_for_texts(model, tokenizer, constraints, len(texts))
    hyps, truncated, used, caps = _run(model, sources, config, progress, workers, engine, prefixes, specs, anchoring)
    _fill_text(model, hyps)
    return _results(model, texts, hyps, truncated, used, caps, specs, src_lang)


def _results(model, texts: List[str], hyps: List[List[Hypothesis]], truncated, used: List[List[int]],
             caps: List[int], specs: Optional[List[Optional[Constraints]]], src_lang: Languages
             ) -> List[TranslationResult]:
    """Per text its result: the hypotheses, the source the encoder read, and the constraints asked and missed."""
    if getattr(model.config, "decoder_tags", False):  # the tag went to the decoder: give what the encoder read
        used = [ids[1:] for ids in used]
    langs = one_per_text(src_lang, len(texts), "src_lang", "one code")
    results = [TranslationResult(source=text, hypotheses=h, source_pieces=model.tokenizer.pieces(ids, side="source"),
                                 source_ids=ids, truncated=i in truncated, search=getattr(h, "search", None),
                                 src_lang=lang if lang is not None else model.config.src_lang)
               for i, (text, h, ids, lang) in enumerate(zip(texts, hyps, used, langs))]
    for result, spec, h, cap in zip(results, specs or [], hyps, caps):
        if spec is not None:
            result.constraints = [p.text for p in spec.phrases]
            result.warnings += _constraint_warnings(spec, h, cap)
    return results


def decode_ids(model, src_ids: Tensor, config: Optional[DecodingConfig] = None, *, workers: int = 1,
               engine="pytorch", prefix=None, **overrides) -> List[List[Hypothesis]]:
    """Decode a (B, S) LongTensor of source ids (each ending in eos, padded with pad_id); no tokenizer needed.

    Returns the n-best hypotheses of every row; their ``tokens`` exclude bos and
    eos, and ``text`` is filled in only when ``model.tokenizer`` is attached.  A multilingual row starts with
    its target-language tag wherever the model reads it (with decoder-start tags it is moved to the decoder).
    A row of only padding gives one empty hypothesis.  ``prefix``: per row, target ids the output must start
    with (forced; they count in the scores).  With ``return_search=True`` each row's list has a ``search``.
    """
    config = resolve_config(config, overrides)
    if not isinstance(src_ids, torch.Tensor) or src_ids.dim() != 2:
        raise ValueError("src_ids must be a (batch, length) tensor of token ids")
    if src_ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise ValueError(f"src_ids must hold integer token ids, got dtype {src_ids.dtype}")
    vocab, pad = model.config.src_vocab_size, model.config.pad_id
    if src_ids.numel() and (int(src_ids.min()) < 0 or int(src_ids.max()) >= vocab):
        raise ValueError(f"src_ids holds ids outside the source vocabulary [0, {vocab})")
    sources = [[i for i in row if i != pad] for row in src_ids.tolist()]
    prefixes = prefixes_for_ids(model, prefix, len(sources))
    hyps, _, _, _ = _run(model, sources, config, False, workers, engine, prefixes)
    _fill_text(model, hyps)
    return hyps
