"""``python -m benchmarks versions``: two versions of a model on the same sentences through CTranslate2, in one run.

    python -m benchmarks versions --old space/retired/multilingual-v3 --new space/models/multilingual-v4 \
        --data-dir captions=data/multi30k --data-dir software=data/libreoffice-help --out docs/v4_speed.json

Sentences: the first ``--n`` val sentences of every English-side direction (en->de/fr/cs and back) of every
domain, the same for both models; a model trained with domain tags reads each with its domain's tag, one
without reads it as it is. Both are converted to CTranslate2 (float32, one thread) before the clock and decode
one sentence at a time with beam ``--beam`` as the page does. The two models alternate in ``--repeats``
rounds and each keeps its best round, so the machine's load hits them alike. Printed and written: the time
per sentence of each, per domain and over all, and the ratio new / old (target: at most ``TARGET``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Dict, List, Tuple

import torch

from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.export import CTranslate2Engine
from transformer_hub.training.data import corpus_file, parse_data_dirs, read_lines

ROOT = Path(__file__).resolve().parents[1]
PIVOT = "en"
TARGET = 1.5  # the new version may take at most this many times the old one's time per sentence
Item = Tuple[str, str, str, str]  # (domain, src, tgt, sentence)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--old", default=str(ROOT / "space" / "models" / "multilingual"), help="the reference model")
    p.add_argument("--new", default=str(ROOT / "space" / "models" / "multilingual-v4"), help="the model measured")
    p.add_argument("--data-dir", action="append", required=True, metavar="DOMAIN=DIR",
                   help="a domain's corpus in Multi30k's layout (its val split is read); repeat per domain")
    p.add_argument("--n", type=int, default=20, help="val sentences per direction and domain (default 20)")
    p.add_argument("--beam", type=int, default=4, help="beam size (default 4, the page's)")
    p.add_argument("--repeats", type=int, default=3, help="rounds; each model keeps its best (default 3)")
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON")


def sentences(data_dirs: List[str], n: int, pairs: List[Tuple[str, str]]) -> List[Item]:
    """The first ``n`` val sentences of each English-side direction in ``pairs``, of each domain."""
    items: List[Item] = []
    for source in parse_data_dirs(data_dirs):
        for src, tgt in (p for p in pairs if PIVOT in p):
            items += [(source.domain, src, tgt, s) for s in read_lines(corpus_file(source.path, "val", src))[:n]]
    return items


def timed(model: Transformer, engine: CTranslate2Engine, items: List[Item], beam: int) -> Dict[str, float]:
    """Seconds per domain, each sentence decoded alone."""
    tagged = set(model.config.domains or ())
    spent: Dict[str, float] = {}
    for domain, src, tgt, text in items:
        start = time.perf_counter()
        generate(model, [text], src_lang=src, tgt_lang=tgt, strategy="beam", beam_size=beam, engine=engine,
                 **({"domain": domain} if domain in tagged else {}))
        spent[domain] = spent.get(domain, 0.0) + time.perf_counter() - start
    return spent


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(1)
    models = {name: Transformer.from_pretrained(path).eval() for name, path in (("old", args.old), ("new", args.new))}
    both = [p for p in models["new"].config.pairs() if p in set(models["old"].config.pairs())]
    items = sentences(args.data_dir, args.n, both)
    engines = {}
    for name, model in models.items():
        engines[name] = CTranslate2Engine(compute_type="float32")
        engines[name].prepare(model)
        timed(model, engines[name], items[:4], args.beam)  # warm-up: kernels, caches
    best: Dict[str, Dict[str, float]] = {}
    for _ in range(args.repeats):
        for name, model in models.items():
            spent = timed(model, engines[name], items, args.beam)
            if name not in best or sum(spent.values()) < sum(best[name].values()):
                best[name] = spent
    count = {d: sum(1 for item in items if item[0] == d) for d in best["old"]}
    ms = {name: {**{d: 1000 * s / count[d] for d, s in spent.items()},
                 "all": 1000 * sum(spent.values()) / len(items)} for name, spent in best.items()}
    report = dict(old=args.old, new=args.new, sentences=len(items), per_domain=count, beam=args.beam,
                  engine="ctranslate2 float32, 1 thread, one sentence at a time", repeats=args.repeats,
                  ms_per_sentence=ms, ratio={k: ms["new"][k] / ms["old"][k] for k in ms["old"]}, target=TARGET)
    print(f"{len(items)} val sentences ({', '.join(f'{d}: {c}' for d, c in count.items())}), beam {args.beam}, "
          f"{report['engine']}, best of {args.repeats} interleaved rounds")
    for key in ms["old"]:
        print(f"{key:<10} old {ms['old'][key]:7.2f} ms  new {ms['new'][key]:7.2f} ms  new/old "
              f"{report['ratio'][key]:.2f}x (target <= {TARGET}x)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report
