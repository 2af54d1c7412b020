"""Tune the reranker per direction on val (only val is read) and write ``rerank.json`` beside the model.

    python -m scripts.tune_rerank --model space/models/multilingual --helper space/models/en-de --workers 2
    python -m scripts.tune_rerank --model runs/multilingual-v3/final --data-dir captions=data/multi30k \
        --data-dir software=data/libreoffice-help --limit 200 --workers 2

For each direction the model serves: beam search's n-best lists of the val sentences (once per search
setting; the lists and their features are cached in ``--cache`` as JSON), then a coordinate search over the
reranker's weights and length penalty on lowercased corpus BLEU (``transformer_hub/rerank/tuning.py``).
``--limit N`` tunes on a fixed, seeded sample of N val sentences per direction instead of all of them.

``--data-dir DIR`` is one corpus (Multi30k by default); ``--data-dir NAME=DIR`` once per domain reads each
domain's val, a model trained with domain tags reading each with its domain's tag (as ``generate(...,
domain=NAME)``), ``--limit N`` sentences per domain and direction, and tunes each direction's weights on all the
domains' lists together; ``rerank.json`` names the domains and each direction's sentences per domain.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import shlex
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tqdm.auto import tqdm

from transformer_hub import Transformer
from transformer_hub.hub import results as results_json
from transformer_hub.training.data import (DataError, DataSource, corpus_file, default_data_dir, parse_data_dirs,
                                           read_lines)
from transformer_hub.rerank import RERANK_FILE, NBestList, RerankFile, SearchSettings, collect
from transformer_hub.rerank.tuning import tune

SPLIT = "val"  # tuning reads this split and no other


def val_sample(data_dir: Path, src: str, tgt: str, limit: int, seed: int) -> Tuple[List[str], List[str]]:
    """The val sources and references of a direction, or a fixed seeded sample of ``limit`` of them."""
    sources, references = read_lines(corpus_file(data_dir, SPLIT, src)), read_lines(corpus_file(data_dir, SPLIT, tgt))
    if len(sources) != len(references):
        raise DataError(f"{SPLIT}.{src} has {len(sources)} lines but {SPLIT}.{tgt} has {len(references)}")
    index = list(range(len(sources)))
    if limit and limit < len(index):
        index = sorted(random.Random(seed).sample(index, limit))
    return [sources[i] for i in index], [references[i] for i in index]


def cache_path(args: argparse.Namespace, source: DataSource, direction: str) -> Optional[Path]:
    if args.cache is None:
        return None
    key = f"{direction}.beam{args.beam}.lp{args.length_penalty}.n{args.limit or 'all'}.seed{args.seed}"
    return args.cache / (f"{source.domain}.{key}.json" if source.domain else f"{key}.json")


_MODELS: Dict[str, Transformer] = {}


def _model(path: Path) -> Transformer:
    """A model loaded once per process."""
    key = str(path.resolve())
    if key not in _MODELS:
        _MODELS[key] = Transformer.from_pretrained(path)
    return _MODELS[key]


def domain_tag(model, source: DataSource) -> Optional[str]:
    """The domain a corpus's sources are read as: its name for a model trained with domain tags (an unnamed
    corpus: the model's default), none for a model without them."""
    return (source.domain or None) if model.config.domains else None


Job = Tuple[argparse.Namespace, DataSource, str, str]


def lists_for(job: Job) -> Tuple[str, str, List[dict], List[str]]:
    """One domain's and direction's n-best lists (from the cache when there) and references; runs in a worker
    process."""
    args, source, src, tgt = job
    import torch

    torch.set_num_threads(1)
    direction = f"{src}-{tgt}"
    sources, references = val_sample(source.path, src, tgt, args.limit, args.seed)
    cached = cache_path(args, source, direction)
    if cached is not None and cached.is_file():
        return direction, source.domain, json.loads(cached.read_text(encoding="utf-8")), references
    model, helpers = _model(args.model), [_model(h) for h in args.helper]
    lists = collect(model, sources, src, tgt, search_settings(args, model, helpers, src, tgt), helpers,
                    domain=domain_tag(model, source))
    rows = [n.to_dict() for n in lists]
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(rows), encoding="utf-8")
    return direction, source.domain, rows, references


def search_settings(args: argparse.Namespace, model, helpers, src: str, tgt: str) -> SearchSettings:
    """Helpers that serve the direction add their n-best (the candidates of two models)."""
    union = any((src, tgt) in h.config.pairs() for h in helpers)
    return SearchSettings(args.beam, args.length_penalty, union)


def run(args: argparse.Namespace, command: str) -> RerankFile:
    """Every domain's lists of every direction, then each direction tuned on its lists of all the domains."""
    model = Transformer.from_pretrained(args.model)
    pairs = model.config.pairs()
    if args.directions:
        pairs = [tuple(d.split("-")) for d in args.directions]
    jobs = [(args, source, s, t) for source in args.data_dir for s, t in pairs]
    found: Dict[Tuple[str, str], Tuple[List[dict], List[str]]] = {}
    with process_pool(args.workers) as pool:
        for direction, domain, rows, references in tqdm(pool.imap_unordered(lists_for, jobs), total=len(jobs),
                                                        desc="n-best lists", unit="set"):
            found[direction, domain] = rows, references
    helpers = [Transformer.from_pretrained(h) for h in args.helper]
    names = [source.domain for source in args.data_dir]
    tuned = {}
    for src, tgt in pairs:
        direction = f"{src}-{tgt}"
        parts = [found[direction, name] for name in names]  # in the order given: the same union every run
        lists = [NBestList.from_dict(r) for rows, _ in parts for r in rows]
        tuned[direction] = tune(lists, [ref for _, refs in parts for ref in refs],
                                search_settings(args, model, helpers, src, tgt))
        if any(names):
            tuned[direction].val["domains"] = {name: len(rows) for name, (rows, _) in zip(names, parts)}
    out = args.out or args.model / RERANK_FILE
    return RerankFile(tuned, [results_json.relative_path(h, out.parent) for h in args.helper], command,
                      describe_data(args), [n for n in names if n])


def describe_data(args: argparse.Namespace) -> str:
    """Which val sentences tuning read, in words (rerank.json's ``data``)."""
    named = [s.domain for s in args.data_dir if s.domain]
    corpora = f"{SPLIT} of " + ", ".join(named) if named else f"Multi30k {SPLIT}"
    per = "per domain and direction" if named else "per direction"
    return f"{corpora}: " + (f"a fixed sample of {args.limit} sentences {per} (seed {args.seed})" if args.limit
                             else "every sentence")


def process_pool(workers: int):
    """``workers`` spawned processes (one model copy each), or this process alone when ``workers`` is 1."""
    return multiprocessing.get_context("spawn").Pool(workers) if workers > 1 else _InProcess()


class _InProcess:
    """``Pool``'s interface for one process."""

    def __enter__(self) -> "_InProcess":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def imap_unordered(self, fn, jobs):
        return map(fn, jobs)


def check(args: argparse.Namespace, domains: Optional[List[str]]) -> Optional[str]:
    """What is wrong with the corpora for this model (its ``config.domains``), in one line (None: nothing)."""
    for source in args.data_dir:
        if not source.path.is_dir():
            what = f"{source.domain}={source.path}" if source.domain else f"{source.path}"
            return f"no corpus at {what}: pass --data-dir DIR, or NAME=DIR once per domain"
        if domains and source.domain and source.domain not in domains:
            return (f"--data-dir {source.domain}=...: the model was trained with the domains {', '.join(domains)}, "
                    f"not {source.domain}")
    return None


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="the model folder (rerank.json is written there)")
    p.add_argument("--helper", type=Path, action="append", default=[],
                   help="another model folder whose scores (and n-best, where it serves the direction) are features")
    p.add_argument("--data-dir", action="append", default=None,
                   help="DIR (default: Multi30k), or NAME=DIR once per domain (captions=data/multi30k "
                   "software=data/libreoffice-help): each domain's val, read with its domain's tag")
    p.add_argument("--directions", type=lambda s: s.split(","), default=None, help="e.g. en-de,de-en (default: all)")
    p.add_argument("--beam", type=int, default=5, help="beam size; the n-best list has this many candidates")
    p.add_argument("--length-penalty", type=float, default=0.6, help="the beam's length penalty")
    p.add_argument("--limit", type=int, default=0,
                   help="tune on a seeded sample of N val sentences per domain and direction (0 = all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="n-best lists made at once, one process each")
    p.add_argument("--cache", type=Path, default=None, help="folder for the n-best lists and features (JSON)")
    p.add_argument("--out", type=Path, default=None, help=f"default: <model>/{RERANK_FILE}")
    args = p.parse_args(argv)
    try:
        args.data_dir = parse_data_dirs(args.data_dir or [str(default_data_dir())])
        problem = check(args, read_domains(args.model))
        if problem:
            raise DataError(problem)
        command = shlex.join(["python", "-m", "scripts.tune_rerank", *(argv if argv is not None else sys.argv[1:])])
        tuned = run(args, command)
    except DataError as err:
        print(f"tune_rerank: {err}", file=sys.stderr)
        return 2
    tuned.save(args.out or args.model / RERANK_FILE)
    for direction, w in sorted(tuned.directions.items()):
        print(f"{direction}: val BLEU (lc) {w.val['beam_bleu_lowercase']:.2f} -> {w.val['reranked_bleu_lowercase']:.2f}"
              f"  alpha {w.alpha}  weights {w.weights}")
    return 0


def read_domains(folder: Path) -> Optional[List[str]]:
    """The model's ``config.domains`` (None: trained without domain tags), read without loading its weights."""
    from transformer_hub.hub.loading import read_config

    path = folder / "config.json"
    return read_config(str(path)).domains if path.is_file() else None  # no folder: loading the model says so


if __name__ == "__main__":
    raise SystemExit(main())
