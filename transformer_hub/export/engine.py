"""The CTranslate2 engine behind ``generate(..., engine="ctranslate2")`` (registered in ``decoding.engines.ENGINES``).

``generate`` tokenizes, adds language tags and eos, truncates and computes each
sentence's length cap as always, then hands the id lists to an engine's
``decode``; the results are the same :class:`Hypothesis` objects either way
(text, tokens, per-token log-probabilities, score, GNMT-normalised score, n-best).

The CTranslate2 engine converts the model once (:mod:`.ctranslate2`, ~0.1 s for
the shipped model) and keeps the converted files and the ``ctranslate2.Translator``
in memory, keyed by a BLAKE2 digest of the config, weights and vocabulary (and
optionally in ``cache_dir``).  Whether the weights changed is checked cheaply
at every call (each tensor's version counter and storage, as PyTorch tracks
in-place updates); only when that changes is the digest recomputed, and a new
digest means a new conversion.  (Like any use of version counters, writes
through ``tensor.data`` are invisible: call :meth:`CTranslate2Engine.clear` after those.)

What it maps, and what it refuses (``ValueError``):

* greedy: exactly our search; float32 gives our tokens (the parity tests check it);
* beam: CTranslate2 prunes with its own length penalty ``score / |Y| ** alpha`` (no GNMT form);
  the engine asks for all ``beam_size`` finished hypotheses and re-ranks them by GNMT's
  ``score / ((5 + |Y|) / 6) ** alpha`` (our ``normalized_score``), so the penalty is *mapped*:
  the same alpha, and our ranking of what the search found; on a few sentences in a hundred
  the search itself finds a different best;
* sample: CTranslate2's sampler (temperature, top-k, top-p; a ``seed`` makes the samples
  reproducible, through a fresh translator per call): the same distribution as ours, not the same draws;
* per-token log-probabilities are the model's own (temperature 1, unfiltered): from the
  logits CTranslate2 returns (greedy, sample) or one ``score_batch`` pass (beam);
* refused: ``return_attention`` (CTranslate2 returns no per-layer maps), ``workers`` other
  than 1 (CTranslate2 has its own threads: ``torch.get_num_threads()`` of them), strategies
  other than greedy / beam / sample, and any other decoding option not at its default.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..decoding.config import DecodingConfig, length_penalty
from ..caching import WeakVersionCache
from ..decoding.engines import ENGINES, get_engine
from ..decoding.results import Hypothesis
from .common import PathLike, check_exportable, require, vocabulary

CHOICES = ("auto", "pytorch", "ctranslate2")  # what a caller may ask for: "auto" resolves with choose_engine
# DecodingConfig fields the CTranslate2 engine maps; any other field must keep its default value.
MAPPED = {"strategy", "beam_size", "length_penalty", "n_best", "max_len_offset", "max_length", "min_len",
          "temperature", "top_k", "top_p", "seed", "batch_size", "use_cache", "return_attention"}
COMPUTE_TYPES = ("float32", "int8", "int8_float32", "int16", "float16", "bfloat16", "int8_float16",
                 "int8_bfloat16", "default", "auto")


def engine_available(name: str) -> bool:
    """Whether ``generate(..., engine=name)`` can run here (registered, and its package installed)."""
    if name not in ENGINES:
        return False
    if name == "ctranslate2":
        try:
            require("ctranslate2", "engine='ctranslate2'")
        except ImportError:
            return False
    return True


def choose_engine(engine: str, config: DecodingConfig, model_config=None, constrained: bool = False) -> str:
    """The engine that runs a call: ``"auto"`` is CTranslate2 (float32) when it is installed, converts the model
    (``model_config``: its ``TransformerConfig``, when known) and honours every option of ``config``; else PyTorch.

    Float32 CTranslate2 gives our greedy tokens and nearly our beam output (docs/space.md), at a fraction of the time;
    what only PyTorch gives (attention maps, per-token alternatives, the search trace, other strategies) falls
    back to PyTorch, and so does a call with ``constrained`` (constraints or a glossary: CTranslate2 has no
    constrained search).  Any other name is returned as it is.
    """
    if engine != "auto":
        return engine
    if constrained or not engine_available("ctranslate2"):
        return "pytorch"
    try:
        if model_config is not None:
            check_exportable(model_config, "ctranslate2")
        get_engine("ctranslate2").check(config)
    except ValueError:  # UnsupportedModelError included
        return "pytorch"
    return "ctranslate2"


_DEFAULT: Dict[str, "CTranslate2Engine"] = {}


@ENGINES.register("ctranslate2")
def default_engine() -> "CTranslate2Engine":
    """The shared float32 engine behind ``engine="ctranslate2"`` (fails here when ctranslate2 is not installed)."""
    require("ctranslate2", "engine='ctranslate2'")
    return _DEFAULT.setdefault("ctranslate2", CTranslate2Engine())


def conversion_digest(model) -> str:
    """BLAKE2 digest of what a conversion reads: the config, every weight (bytes, shape, dtype), the vocabulary."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(model.config.to_dict(), sort_keys=True).encode())
    for name, tensor in model.state_dict().items():
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None:
        for side in (tokenizer.source, tokenizer.target):
            h.update(side.serialized_model_proto())
    return h.hexdigest()


def _version_key(model) -> Optional[tuple]:
    """Cheap identity of the current weights (None when a tensor has no version counter: inference tensors)."""
    key = [id(getattr(model, "tokenizer", None))]
    for tensor in model.state_dict(keep_vars=True).values():
        if tensor.is_inference():
            return None
        key.append((id(tensor), tensor._version, tensor.data_ptr()))
    return tuple(key)


class _Converted:
    """One conversion: the files, the vocabularies, and the translators made from them."""

    def __init__(self, files: Dict[str, bytes], model) -> None:
        self.files = files
        self.source = vocabulary(model, "source")
        self.target = vocabulary(model, "target")
        self.target_index = {piece: i for i, piece in enumerate(self.target)}
        self.translators: Dict[tuple, object] = {}


class CTranslate2Engine:
    """``generate(model, texts, engine=CTranslate2Engine(compute_type="int8"))``; ``engine="ctranslate2"`` is float32.

    ``compute_type`` as ``ctranslate2.Translator`` takes it (float32 gives our greedy
    tokens; int8 is faster and changes some outputs); ``intra_threads`` defaults to 1:
    CTranslate2's OpenMP threads share the process with PyTorch's, whose workers keep
    spinning for a while after each PyTorch call, and two threads were many times slower
    than one on a 2-core CPU, batched too (``docs/benchmarks.md``); ``cache_dir`` also keeps conversions on
    disk (one folder per digest), so another process skips the conversion.
    """

    name = "ctranslate2"

    def __init__(self, compute_type: str = "float32", device: str = "cpu", intra_threads: Optional[int] = 1,
                 cache_dir: Optional[PathLike] = None, max_models: int = 4) -> None:
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {', '.join(COMPUTE_TYPES)}, got {compute_type!r}")
        if intra_threads is not None and (isinstance(intra_threads, bool) or intra_threads < 0):
            raise ValueError(f"intra_threads must be >= 0 (0: CTranslate2's choice), got {intra_threads!r}")
        self.compute_type, self.device, self.intra_threads = compute_type, device, intra_threads
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.max_models = max_models
        self.conversions = 0  # how many times a model was converted (the cache tests read it)
        self._digests: WeakVersionCache[str] = WeakVersionCache(_version_key)  # a model's digest while unchanged
        self._converted: "OrderedDict[str, _Converted]" = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CTranslate2Engine(compute_type={self.compute_type!r}, device={self.device!r})"

    def clear(self) -> None:
        """Forget every conversion (the next call converts again)."""
        with self._lock:
            self._digests.clear()
            self._converted.clear()

    # ----------------------------------------------------------------- conversion and cache
    def _files(self, model, digest: str) -> Dict[str, bytes]:
        folder = self.cache_dir / digest if self.cache_dir is not None else None
        if folder is not None and (folder / "model.bin").is_file():
            return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        from .ctranslate2 import convert_to_files

        files = convert_to_files(model)
        self.conversions += 1
        if folder is not None:
            tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}-{threading.get_ident()}")
            tmp.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            if folder.exists():  # another process wrote the same digest first: same contents
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.replace(folder)
        return files

    def _new_translator(self, converted: _Converted, threads: int):
        ct2 = require("ctranslate2", "engine='ctranslate2'")
        torch_threads = torch.get_num_threads()
        translator = ct2.Translator("transformer_hub", device=self.device, compute_type=self.compute_type,
                                    intra_threads=threads, files=converted.files)
        torch.set_num_threads(torch_threads)  # both use the process's OpenMP runtime: CTranslate2 just set it
        return translator

    def prepare(self, model, seed: Optional[int] = None) -> Tuple[object, _Converted]:
        """The ``ctranslate2.Translator`` for the model's current weights (converted now if needed).

        With a ``seed`` the translator is a new one, made after seeding CTranslate2: its worker
        thread seeds its random generator when it starts, so only a fresh one reproduces samples.
        """
        ct2 = require("ctranslate2", "engine='ctranslate2'")
        with self._lock:
            digest = self._digests.get(model, conversion_digest)
            converted = self._converted.get(digest)
            if converted is None:
                converted = _Converted(self._files(model, digest), model)
                self._converted[digest] = converted
                while len(self._converted) > self.max_models:
                    self._converted.popitem(last=False)
            self._converted.move_to_end(digest)
            threads = self.intra_threads if self.intra_threads is not None else torch.get_num_threads()
            if seed is not None:
                ct2.set_random_seed(int(seed) % 2 ** 32)
                return self._new_translator(converted, threads), converted
            key = (self.compute_type, self.device, threads)
            if key not in converted.translators:
                converted.translators[key] = self._new_translator(converted, threads)
            return converted.translators[key], converted

    # ----------------------------------------------------------------- decoding
    def check(self, config: DecodingConfig, workers=1) -> None:
        """``ValueError`` for an option this engine cannot honour (before any work)."""
        if config.return_attention:
            raise ValueError("engine='ctranslate2' cannot return attention maps (CTranslate2 gives no per-layer, "
                             "per-head cross-attention): use engine='pytorch' with return_attention=True")
        if config.strategy not in ("greedy", "beam", "sample"):
            raise ValueError(f"engine='ctranslate2' decodes with greedy, beam or sample, not {config.strategy!r}")
        if workers != 1:
            raise ValueError("engine='ctranslate2' runs on CTranslate2's own threads (torch.get_num_threads() of "
                             "them): pass workers=1")
        defaults = DecodingConfig()
        for field in config.to_dict():
            if field not in MAPPED and getattr(config, field) != getattr(defaults, field):
                raise ValueError(f"engine='ctranslate2' does not support the decoding option {field}="
                                 f"{getattr(config, field)!r}: use engine='pytorch'")

    def decode(self, model, sources: Sequence[List[int]], caps: Sequence[int], config: DecodingConfig,
               progress: bool = False, prefixes: Optional[Sequence] = None, workers: int = 1) -> List[List[Hypothesis]]:
        """Id lists (each ending in eos; empty ones give an empty hypothesis) and their caps -> n-best lists.

        ``prefixes`` (``decoding.prefix.Prefix`` or None, one per sentence) go to CTranslate2's ``target_prefix``,
        tokenized as a whole: unlike the PyTorch engine, a last word without a space after it is forced as
        tokenized rather than left open for the model to complete.  A model with decoder-start tags
        (``tag_position="decoder"``) gets each source's first id, its tag, as the start of ``target_prefix``
        instead; the tag is then dropped from the output and from the scores.
        """
        self.check(config, workers)
        translator, converted = self.prepare(model, config.seed if config.strategy == "sample" else None)
        results: List[List[Hypothesis]] = [[] for _ in sources]
        decoder_tags = bool(getattr(model.config, "decoder_tags", False))
        todo = sorted((i for i, ids in enumerate(sources) if ids), key=lambda i: -len(sources[i]))
        for i, ids in enumerate(sources):
            if not ids:
                results[i] = [Hypothesis(text="", tokens=[], token_logprobs=[], score=0.0, normalized_score=0.0)]
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), unit="sent", desc=f"decoding ({config.strategy}, ctranslate2)", leave=False)
        try:
            for start in range(0, len(todo), config.batch_size):
                chunk = todo[start: start + config.batch_size]
                tags = [[converted.target[sources[i][0]]] if decoder_tags else [] for i in chunk]
                tokens = [[converted.source[t] for t in sources[i][len(tag):]] for i, tag in zip(chunk, tags)]
                forced = _target_prefix(prefixes, chunk, converted, tags)
                options = _options(config, max(caps[i] for i in chunk) + int(decoder_tags),
                                   rescore=forced is not None)
                out = translator.translate_batch(tokens, target_prefix=forced, **options)
                hyps = [_hypotheses(r, converted, model.config.eos_id, caps[i], config, skip=int(decoder_tags))
                        for i, r in zip(chunk, out)]
                if config.strategy == "beam" or forced is not None:
                    _score_beams(translator, tokens, hyps, converted, config.length_penalty, tags)
                for i, h in zip(chunk, hyps):
                    results[i] = h
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        return results


def _target_prefix(prefixes: Optional[Sequence], chunk: List[int], converted: "_Converted",
                   tags: List[List[str]]) -> Optional[List[List[str]]]:
    """CTranslate2's ``target_prefix`` for a chunk: per sentence its decoder-start tag (if any), then its prefix's
    pieces; None when there is neither."""
    if all(not tag for tag in tags) and (prefixes is None or all(prefixes[i] is None for i in chunk)):
        return None
    return [tag + ([converted.target[t] for t in prefixes[i].tokenized] if prefixes and prefixes[i] else [])
            for i, tag in zip(chunk, tags)]


def _options(config: DecodingConfig, max_steps: int, rescore: bool = False) -> dict:
    """``translate_batch`` keywords for a chunk whose longest cap is ``max_steps`` (eos included, as ours).

    ``rescore``: the token log-probabilities come from a teacher-forced pass afterwards, not from the logits.
    """
    options = dict(max_decoding_length=max_steps, min_decoding_length=config.min_len, max_input_length=0,
                   return_end_token=True, return_scores=True)
    if config.strategy == "beam":  # every finished beam comes back, for our GNMT re-ranking
        return dict(options, beam_size=config.beam_size, num_hypotheses=config.beam_size,
                    length_penalty=config.length_penalty)
    options.update(beam_size=1, length_penalty=0.0, return_logits_vocab=not rescore)
    if config.strategy == "sample":
        options.update(num_hypotheses=config.n_best, sampling_topk=config.top_k, sampling_topp=config.top_p,
                       sampling_temperature=config.temperature)
    return options


def _ids(pieces: List[str], converted: _Converted, eos: int, cap: int) -> Tuple[List[int], bool]:
    """Output pieces (eos included when finished) -> ids cut at this sentence's own cap, and whether it finished."""
    unk = converted.target_index.get("<unk>", 0)
    ids = [converted.target_index.get(p, unk) for p in pieces][:cap]  # a chunk decodes to its longest cap
    return ids, bool(ids) and ids[-1] == eos


def _hypotheses(result, converted: _Converted, eos: int, cap: int, config: DecodingConfig,
                skip: int = 0) -> List[Hypothesis]:
    """One sentence's CTranslate2 result -> our hypotheses, best first by GNMT-normalised score; the first
    ``skip`` output pieces (a decoder-start tag) are not output."""
    alpha, hyps = config.length_penalty, []
    for rank, pieces in enumerate(result.hypotheses):
        pieces = pieces[skip:]
        ids, finished = _ids(pieces, converted, eos, cap)
        if config.strategy == "beam":  # CTranslate2's score is raw / |Y| ** alpha; log-probs come later
            raw = float(result.scores[rank]) * max(len(pieces), 1) ** alpha
            logprobs: List[float] = []
        elif not result.logits:  # no logits asked for (a forced prefix): the scoring pass fills these in
            logprobs, raw = [], 0.0
        else:
            logprobs = _token_logprobs(result.logits[rank], ids)
            raw = float(np.sum(np.asarray(logprobs, dtype=np.float64)))
        hyps.append(Hypothesis(text="", tokens=ids[:-1] if finished else ids, token_logprobs=logprobs, score=raw,
                               normalized_score=raw / length_penalty(len(ids), alpha), finished=finished))
    hyps.sort(key=lambda h: h.normalized_score, reverse=True)
    return hyps[: config.n_best]


def _token_logprobs(step_logits, ids: List[int]) -> List[float]:
    """Log-softmax of each step's raw logits (float32, as our search), at the token taken."""
    if not ids:
        return []
    logits = torch.from_numpy(np.stack([np.array(v, dtype=np.float32) for v in step_logits[: len(ids)]]))
    return torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids)[:, None]).squeeze(1).tolist()


def _score_beams(translator, tokens: List[List[str]], hyps: List[List[Hypothesis]], converted: _Converted,
                 alpha: float, tags: List[List[str]]) -> None:
    """Per-token log-probabilities of the kept hypotheses: one teacher-forced ``score_batch`` pass (a sentence's
    decoder-start tag, from ``tags``, is scored too and then left out)."""
    flat = [(s, h) for s, sentence in enumerate(hyps) for h in sentence]
    if not flat:
        return
    scored = translator.score_batch([tokens[s] for s, _ in flat],
                                    [tags[s] + [converted.target[t] for t in h.tokens] for s, h in flat],
                                    max_input_length=0)
    for (s, hyp), result in zip(flat, scored):
        logprobs = list(result.log_probs)[len(tags[s]):]  # the tokens, then eos
        hyp.token_logprobs = logprobs if hyp.finished else logprobs[:-1]
        hyp.score = float(np.sum(np.asarray(hyp.token_logprobs, dtype=np.float64)))
        hyp.normalized_score = hyp.score / length_penalty(len(hyp.token_logprobs), alpha)
    for sentence in hyps:
        sentence.sort(key=lambda h: h.normalized_score, reverse=True)
