"""The decoding driver: text -> ids -> length-sorted batches -> a strategy -> results in input order.

``generate`` is the rich call (n-best lists with scores and attention),
``translate`` the plain one (strings), ``decode_ids`` the tokenizer-free one
(padded id tensors in, hypotheses out).  All three share the same input
handling: empty sources give empty outputs without running the model,
over-long sources are truncated with a warning, and every sentence gets its
own length cap, so results do not depend on the batch a sentence lands in.
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, List, Optional, Protocol, Sequence, Union, runtime_checkable

import torch
from torch import nn

from ..kernels import no_dropout
from ..model import EncoderState
from .config import DecodingConfig, one_per_text
from .prefix import Prefix, PrefixArg, check_prefix_lengths, prefixes_for_ids, prefixes_for_texts
from .results import Hypothesis, TranslationResult
from .strategies import STRATEGIES, Batch

Tensor = torch.Tensor
MAX_WORKERS = 64


def _resolve(config: Optional[DecodingConfig], overrides: dict) -> DecodingConfig:
    if config is None:
        config = DecodingConfig()
    elif not isinstance(config, DecodingConfig):
        raise TypeError(f"config must be a DecodingConfig, got {type(config).__name__}")
    return config.replace(**overrides) if overrides else config


def _empty_hypothesis() -> Hypothesis:
    return Hypothesis(text="", tokens=[], token_logprobs=[], score=0.0, normalized_score=0.0)


def _light_state(length: int, eos_id: int) -> EncoderState:
    """A memory-less state with one source of ``length`` tokens: enough to ask ``target_budget``."""
    src = torch.full((1, length), eos_id, dtype=torch.long)
    return EncoderState(src, torch.ones(1, length, dtype=torch.bool))


class _Budget:
    """``model.target_budget`` as a function of the (padded) source length, memoised."""

    def __init__(self, model) -> None:
        self.model, self.eos, self.cache = model, model.config.eos_id, {}

    def __call__(self, length: int) -> int:
        if length not in self.cache:
            self.cache[length] = int(self.model.target_budget(_light_state(length, self.eos)))
        return self.cache[length]

    def max_source(self, room: int) -> int:
        """The longest source (<= max_len) that leaves ``room`` target positions (budget non-increasing in length)."""
        low, high = 1, self.model.config.max_len
        if self(high) >= room:
            return high
        while low < high:  # largest length with budget >= room
            mid = (low + high + 1) // 2
            if self(mid) >= room:
                low = mid
            else:
                high = mid - 1
        return low


def _prepare(model, sources: List[List[int]], config: DecodingConfig):
    """Truncate over-long sources (warning once) and compute each sentence's output cap."""
    budget = _Budget(model)
    eos = model.config.eos_id
    # target room a source must leave (only the decoder-only layout shares positions with the source)
    room = config.max_len_offset if config.max_length is None else min(config.max_len_offset, config.max_length)
    room = min(max(room, 1), max(1, model.config.max_len // 2))
    limit = budget.max_source(room)
    truncated = []
    for i, ids in enumerate(sources):
        if len(ids) > limit:
            keep_eos = ids[-1] == eos
            sources[i] = ids[: limit - 1] + [eos] if keep_eos and limit > 1 else ids[:limit]
            truncated.append(i)
    if truncated:
        warnings.warn(f"{len(truncated)} source sentence(s) longer than the model accepts were truncated to "
                      f"{limit} tokens (model max_len={model.config.max_len})", stacklevel=4)
    caps = []
    for ids in sources:
        cap = len(ids) + config.max_len_offset
        if config.max_length is not None:
            cap = min(cap, config.max_length)
        caps.append(max(1, min(cap, budget(len(ids))) if ids else 0))
    return sources, caps, set(truncated), budget


def _batches(order: List[int], lengths: List[int], caps: List[int], size: int, budget: _Budget):
    """Split length-sorted (longest first) sentences into batches of at most ``size``.

    A batch is also cut where its padded length would leave a sentence less
    target room than it has alone (the decoder-only layout shares max_len
    between source and target), so every sentence keeps its own cap.
    """
    batch: List[int] = []
    for i in order:
        if batch and (len(batch) >= size or caps[i] > budget(lengths[batch[0]])):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _device(model) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


@runtime_checkable
class WorkerPool(Protocol):
    """What ``workers=`` accepts besides a thread count: worker processes holding ``model`` (``DecodingPool``).

    Recognised by its shape, not its class, so this module never imports the pool (the pool's workers
    import this module to decode): imports stay one-way, ``api`` <- ``pool``.
    """

    model: Any  # the model the workers hold (None: loaded from a source, not from a model in this process)

    def map(self, rows: List[List[List[int]]], caps: List[List[int]], config: DecodingConfig,
            prefixes: Optional[List[Optional[List[Optional[Prefix]]]]] = None) -> Iterator[List[List[Hypothesis]]]:
        """Decode batches (id rows, their caps, their prefixes) in the workers, in order."""


def _check_workers(workers) -> None:
    if isinstance(workers, WorkerPool):
        return
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be an integer between 1 and {MAX_WORKERS} or a DecodingPool, got {workers!r}")


def _check_no_foreign_dropout(model) -> None:
    """Refuse modules in training mode that ``no_dropout`` cannot switch off (torch's dropout and batch norm)."""
    for name, module in model.named_modules():
        if module.training and isinstance(module, (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)):
            raise ValueError(f"module {name} ({type(module).__name__}) is in training mode and would change decoding: "
                             "call model.eval() first, or use transformer_hub.kernels.Dropout")


def decode_batch(model, rows: List[List[int]], caps: List[int], config: DecodingConfig,
                 prefixes: Optional[List[Optional[Prefix]]] = None) -> List[List[Hypothesis]]:
    """Decode one batch: id lists (each ending in eos, longest first), each one's output cap and forced prefix.

    A model with decoder-start tags (``config.tag_position == "decoder"``) receives each row's first id, its
    target-language tag, after bos in the decoder instead of in the source; the tag takes one target position."""
    starts = None
    if getattr(model.config, "decoder_tags", False):  # (a duck-typed config without the field: source tags)
        starts = torch.tensor([ids[:1] for ids in rows], dtype=torch.long, device=_device(model))
        rows = [ids[1:] for ids in rows]
        caps = [max(1, min(cap, model.config.max_len - 1)) for cap in caps]  # bos and tag take 2 positions, not 1
    lengths = [len(ids) for ids in rows]
    device, pad = _device(model), model.config.pad_id
    src = torch.full((len(rows), max(lengths)), pad, dtype=torch.long)
    for row, ids in enumerate(rows):
        src[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    batch = Batch(src.to(device), torch.tensor(lengths, device=device), torch.tensor(caps, device=device),
                  seed=config.seed or 0, prefixes=prefixes, starts=starts)
    # both thread-local, entered in the thread that decodes: dropout is off here whatever the modules' flags,
    # which stay untouched (another thread may be training the same model)
    with torch.inference_mode(), no_dropout():
        out = STRATEGIES.get(config.strategy)(model, batch, config)
        for n, hyps in zip(lengths, out):
            for hyp in hyps:
                if hyp.attention is not None:  # drop the padded source columns; own the memory
                    hyp.attention = hyp.attention[..., :n].clone().cpu()
    return out


def _run(model, sources: List[List[int]], config: DecodingConfig, progress: bool = False, workers=1,
         prefixes: Optional[List[Optional[Prefix]]] = None):
    """Decode id lists (each ending in eos); returns (hypotheses per sentence, truncated indices, sources used).

    With ``workers > 1`` that many threads decode different batches at once,
    each with an equal share of torch's intra-op threads (restored afterwards);
    with a ``DecodingPool``, its worker processes do.
    """
    _check_workers(workers)
    pool = workers if isinstance(workers, WorkerPool) else None
    if pool is not None and pool.model is not model:
        raise ValueError("this DecodingPool holds a different model: build the pool from the model you decode with")
    if config.strategy == "sample" and config.seed is None:
        config = config.replace(seed=int(torch.randint(0, 2 ** 62, (1,))))
    STRATEGIES.get(config.strategy)  # an unknown name fails here, before any work
    sources = [list(map(int, ids)) for ids in sources]
    sources, caps, truncated, budget = _prepare(model, sources, config)
    check_prefix_lengths(prefixes, sources, caps)
    results: List[List[Hypothesis]] = [[_empty_hypothesis()] if not ids else [] for ids in sources]
    todo = [i for i, ids in enumerate(sources) if ids]
    lengths = [len(ids) for ids in sources]
    order = sorted(todo, key=lambda i: -lengths[i])
    batches = list(_batches(order, lengths, caps, config.batch_size, budget))
    threads = 1 if pool is not None else min(workers, len(batches)) or 1
    rows = [[sources[i] for i in index] for index in batches]
    batch_caps = [[caps[i] for i in index] for index in batches]
    batch_prefixes = [[prefixes[i] for i in index] if prefixes else None for index in batches]
    def decode(batch_rows, batch_caps, batch_prefixes):  # one batch -> hypotheses, in this process
        return decode_batch(model, batch_rows, batch_caps, config, batch_prefixes)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), unit="sent", desc=f"decoding ({config.strategy})", leave=False)
    _check_no_foreign_dropout(model)
    with contextlib.ExitStack() as stack:
        if bar is not None:
            stack.callback(bar.close)
        if pool is not None:
            done = pool.map(rows, batch_caps, config, batch_prefixes)
        elif threads == 1:
            done = map(decode, rows, batch_caps, batch_prefixes)
        else:  # batches are independent: decode several at once, each thread with its share of the cores
            stack.enter_context(shared_intra_op_threads(threads))
            executor = ThreadPoolExecutor(threads, thread_name_prefix="transformer_hub-decode")
            stack.callback(executor.shutdown, wait=True, cancel_futures=True)
            done = executor.map(decode, rows, batch_caps, batch_prefixes)
        for index, hyps_of in zip(batches, done):
            for i, hyps in zip(index, hyps_of):
                results[i] = hyps
            if bar is not None:
                bar.update(len(index))
    return results, truncated, sources


_THREADS_LOCK = threading.Lock()
_THREADS_STATE = {"calls": 0, "intra_op": 1}  # calls inside shared_intra_op_threads; the count to restore


@contextlib.contextmanager
def shared_intra_op_threads(threads: int) -> Iterator[None]:
    """Give each of ``threads`` decoding threads its share of torch's (process-wide) intra-op threads.

    Calls that overlap share one saved count: the last one out restores it, whatever order they end in."""
    with _THREADS_LOCK:
        if _THREADS_STATE["calls"] == 0:
            _THREADS_STATE["intra_op"] = torch.get_num_threads()
        _THREADS_STATE["calls"] += 1
        torch.set_num_threads(max(1, _THREADS_STATE["intra_op"] // threads))
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_STATE["calls"] -= 1
            if _THREADS_STATE["calls"] == 0:
                torch.set_num_threads(_THREADS_STATE["intra_op"])


def _fill_text(model, results: List[List[Hypothesis]]) -> None:
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        return
    for hyps in results:
        for hyp in hyps:
            if hyp.tokens:
                hyp.text = tokenizer.decode(hyp.tokens, side="target")


def _clean(text) -> str:
    if not isinstance(text, str):
        raise TypeError(f"expected strings to translate, got {type(text).__name__}")
    # lone surrogates cannot be encoded as UTF-8: replace them instead of crashing the tokenizer
    return text.encode("utf-8", errors="replace").decode("utf-8")


Languages = Union[None, str, Sequence[Optional[str]]]


def _language_tags(model, tokenizer, n: int, src_lang: Languages, tgt_lang: Languages) -> List[List[int]]:
    """Per sentence, the ids put before its source: ``[<2tgt>]`` for a multilingual model, else none.

    ``src_lang`` / ``tgt_lang`` are one code for every sentence or a list with one per sentence; each
    direction is checked against the directions the model serves (``ValueError`` naming them).
    """
    checked: dict = {}
    tags = []
    sources = one_per_text(src_lang, n, "src_lang", "one code")
    targets = one_per_text(tgt_lang, n, "tgt_lang", "one code")
    for pair in zip(sources, targets):
        if pair not in checked:
            _, target = model.config.check_pair(*pair)
            checked[pair] = [tokenizer.lang_tag_id(target)] if model.config.multilingual else []
        tags.append(checked[pair])
    return tags


def _run_engine(engine, model, sources: List[List[int]], config: DecodingConfig, progress: bool, workers,
                prefixes: Optional[List[Optional[Prefix]]] = None):
    """``_run`` on another runtime (``transformer_hub.export.engine``): the same truncation, length caps, prefixes."""
    from ..export.engine import get_engine

    runner = get_engine(engine)
    runner.check(config, workers)
    sources, caps, truncated, _ = _prepare(model, [list(map(int, ids)) for ids in sources], config)
    check_prefix_lengths(prefixes, sources, caps)
    return runner.decode(model, sources, caps, config, progress=progress, prefixes=prefixes), truncated, sources


def generate(model, texts: Sequence[str], config: Optional[DecodingConfig] = None, *, src_lang: Languages = None,
             tgt_lang: Languages = None, progress: bool = False, workers=1, engine="pytorch",
             prefix: PrefixArg = None, **overrides) -> List[TranslationResult]:
    """Translate ``texts`` with ``model.tokenizer``; one :class:`TranslationResult` per input, in input order.

    ``config`` (default ``DecodingConfig()``) and keyword ``overrides`` of its
    fields choose the strategy and its options; ``progress=True`` shows a tqdm
    bar on stderr.  ``workers=2`` decodes two batches at once in threads (on a
    CPU, usually faster than giving one batch two intra-op threads); a
    :class:`DecodingPool` built from this model decodes them in its worker
    processes (faster still: no shared GIL).  The results are the same either
    way.  Empty or whitespace-only texts give an empty result.  ``src_lang`` / ``tgt_lang``: a language code,
    or a list with one per text (a multilingual model needs ``tgt_lang``; a bilingual one accepts only its own
    pair); a sentence's result does not depend on the other sentences' languages.  ``engine="ctranslate2"``
    (or a ``transformer_hub.export.CTranslate2Engine``) decodes with CTranslate2 instead of PyTorch: same
    results objects; see ``transformer_hub/export/engine.py`` for what it maps and refuses.

    ``prefix``: a target text every output must start with, or a list with one per text (None or "": none).
    It is tokenized as the start of a target sentence and forced; its tokens are part of each hypothesis and
    their log-probabilities count in the scores.  A prefix ending inside a word (no space after it) lets the
    model complete that word (see ``decoding/prefix.py``).  ``return_alternatives=K`` gives each hypothesis
    its per-token ``alternatives``; ``return_search=True`` (beam) gives each result its ``search`` trace.
    """
    config = _resolve(config, overrides)
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings; wrap a single sentence in a list")
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        raise ValueError("the model has no tokenizer attached (model.tokenizer is None); "
                         "attach one or call decode_ids with token ids")
    texts = [_clean(t) for t in texts]
    eos = model.config.eos_id
    tags = _language_tags(model, tokenizer, len(texts), src_lang, tgt_lang)
    sources = [tag + tokenizer.encode(t, side="source") + [eos] if t.strip() else [] for t, tag in zip(texts, tags)]
    prefixes = prefixes_for_texts(model, tokenizer, prefix, len(texts))
    if engine == "pytorch":
        hyps, truncated, used = _run(model, sources, config, progress=progress, workers=workers, prefixes=prefixes)
    else:
        hyps, truncated, used = _run_engine(engine, model, sources, config, progress, workers, prefixes)
    _fill_text(model, hyps)
    if getattr(model.config, "decoder_tags", False):  # the tag went to the decoder: give what the encoder read
        used = [ids[1:] for ids in used]
    return [TranslationResult(source=text, hypotheses=h, source_pieces=tokenizer.pieces(ids, side="source"),
                              source_ids=ids, truncated=i in truncated, search=getattr(h, "search", None))
            for i, (text, h, ids) in enumerate(zip(texts, hyps, used))]


def translate(model, texts: Sequence[str], strategy: str = "greedy", *, workers=1, **options) -> List[str]:
    """Translate ``texts`` and return the best output string for each; ``options`` are ``DecodingConfig`` fields."""
    return [r.text for r in generate(model, texts, strategy=strategy, workers=workers, **options)]


def decode_ids(model, src_ids: Tensor, config: Optional[DecodingConfig] = None, *, workers=1,
               prefix=None, **overrides) -> List[List[Hypothesis]]:
    """Decode a (B, S) LongTensor of source ids (each ending in eos, padded with pad_id); no tokenizer needed.

    Returns the n-best hypotheses of every row; their ``tokens`` exclude bos and
    eos, and ``text`` is filled in only when ``model.tokenizer`` is attached.  A multilingual row starts with
    its target-language tag wherever the model reads it (with decoder-start tags it is moved to the decoder).
    A row of only padding gives one empty hypothesis.  ``prefix``: per row, target ids the output must start
    with (forced; they count in the scores).  With ``return_search=True`` each row's list has a ``search``.
    """
    config = _resolve(config, overrides)
    if not isinstance(src_ids, torch.Tensor) or src_ids.dim() != 2:
        raise ValueError("src_ids must be a (batch, length) tensor of token ids")
    if src_ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise ValueError(f"src_ids must hold integer token ids, got dtype {src_ids.dtype}")
    vocab, pad = model.config.src_vocab_size, model.config.pad_id
    if src_ids.numel() and (int(src_ids.min()) < 0 or int(src_ids.max()) >= vocab):
        raise ValueError(f"src_ids holds ids outside the source vocabulary [0, {vocab})")
    sources = [[i for i in row if i != pad] for row in src_ids.tolist()]
    hyps, _, _ = _run(model, sources, config, workers=workers, prefixes=prefixes_for_ids(model, prefix, len(sources)))
    _fill_text(model, hyps)
    return hyps
