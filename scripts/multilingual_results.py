"""The multilingual model's results table: every direction, direct and pivoting through English, beside the bilingual model.

    python -m scripts.multilingual_results --model space/models/multilingual --bilingual space/models/en-de

For each test split and each direction the model serves (where Multi30k has both files: no Czech for the 2017
tests), beam search (default 5) is scored with sacreBLEU cased and lowercased (13a) and chrF. Beside them: the
bilingual model on its own direction, and for every direction between two non-English languages the same
multilingual model pivoting through English (X -> en -> Y, beam search both ways). Writes ``results.json``
(``--out``, default ``<model>/multilingual_results.json``, in the library's ``results.json`` schema: models
``multilingual``, ``multilingual via en`` and ``bilingual``) and prints a Markdown table; ``--card`` also puts the
direct scores into the model's card (README.md) as model-index results.
"""
from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tqdm.auto import tqdm

from transformer_hub import Transformer
from transformer_hub.hub import results as results_json
from transformer_hub.training.data import default_data_dir, DataError, corpus_file, read_lines
from transformer_hub.decoding import DecodingPool
from transformer_hub.hub import save_card
from transformer_hub.training.metrics import score

SPLITS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
PIVOT = "en"
# Lowercased sacreBLEU targets on test_2016_flickr, set before training; between two non-English languages: the
# pivot through English plus PIVOT_MARGIN (a direct direction must earn its place against translating twice).
TARGETS = {"en-de": 42.0, "en-fr": 60.0, "en-cs": 33.5, "de-en": 45.0, "fr-en": 56.0, "cs-en": 43.0}
PIVOT_MARGIN = 0.5
# Published text-only systems trained on Multi30k alone (test_2016_flickr), with the metric each reports.
ANCHORS = {"en-de": (41.02, "Wu et al. 2021, tokenized"),
           "en-fr": (59.7, "Helcl et al. 2018, lowercased"),
           "en-cs": (30.9, "Helcl et al. 2018, lowercased")}


def split_lines(data_dir: Path, split: str, lang: str) -> Optional[List[str]]:
    try:
        return read_lines(corpus_file(data_dir, split, lang))
    except DataError:
        return None


class Translator:
    """Beam search with one model, in this process or in a ``DecodingPool`` of ``workers`` processes."""

    def __init__(self, model: Transformer, args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
        self.model, self.beam, self.batch_size = model, args.beam, args.batch_size
        self.pool = (stack.enter_context(DecodingPool(model, processes=args.workers, threads=1))
                     if args.workers > 1 else None)

    def __call__(self, sources: List[str], src: str, tgt: str) -> List[str]:
        languages = {"src_lang": src, "tgt_lang": tgt} if self.model.config.pairs() else {}
        return self.model.translate(sources, strategy="beam", beam_size=self.beam, batch_size=self.batch_size,
                                     engine=self.pool or "pytorch", **languages)


def evaluate(args: argparse.Namespace) -> List[Dict]:
    with contextlib.ExitStack() as stack:
        model = Translator(Transformer.from_pretrained(args.model), args, stack)
        bilingual = Translator(Transformer.from_pretrained(args.bilingual), args, stack) if args.bilingual else None
        return score_directions(args, model, bilingual)


def score_directions(args: argparse.Namespace, model: Translator, bilingual: Optional[Translator]) -> List[Dict]:
    pairs = model.model.config.pairs()
    rows: List[Dict] = []
    done: Dict[Tuple[str, str, str], List[str]] = {}  # the X -> en half of a pivot is the direct X -> en row

    def direct(split: str, sources: List[str], src: str, tgt: str) -> List[str]:
        if (split, src, tgt) not in done:
            done[split, src, tgt] = model(sources, src, tgt)
        return done[split, src, tgt]

    # Directions into English first, so that every pivot finds its first half already translated.
    jobs = sorted(((split, s, t) for split in args.splits for s, t in pairs),
                  key=lambda job: (args.splits.index(job[0]), job[2] != PIVOT))
    for split, src, tgt in tqdm(jobs, desc="directions", unit="set"):
        sources, references = split_lines(args.data_dir, split, src), split_lines(args.data_dir, split, tgt)
        if sources is None or references is None:
            continue
        sources, references = sources[: args.limit or None], references[: args.limit or None]
        row = {"split": split, "direction": f"{src}-{tgt}", "sentences": len(sources)}
        row["multilingual"] = rounded(score(direct(split, sources, src, tgt), references))
        if bilingual is not None and (src, tgt) in bilingual.model.config.pairs():
            row["bilingual"] = rounded(score(bilingual(sources, src, tgt), references))
        if PIVOT not in (src, tgt) and (src, PIVOT) in pairs and (PIVOT, tgt) in pairs:
            row["pivot"] = rounded(score(model(direct(split, sources, src, PIVOT), PIVOT, tgt), references))
        rows.append(row)
    order = [f"{s}-{t}" for s, t in pairs]
    return sorted(rows, key=lambda row: (args.splits.index(row["split"]), order.index(row["direction"])))


def as_results(rows: List[Dict], args: argparse.Namespace, out: Path, command: str) -> results_json.Results:
    """The rows in the ``results.json`` schema (paths relative to the file's folder)."""
    names = {"multilingual": "multilingual", "pivot": "multilingual via en", "bilingual": "bilingual"}
    paths = {"multilingual": results_json.relative_path(args.model, out.parent),
             "bilingual": results_json.relative_path(args.bilingual, out.parent) if args.bilingual else None}
    scores = [results_json.Score(model=names[kind], split=row["split"], metric=metric, value=value,
                                 direction=row["direction"])
              for row in rows for kind in names if kind in row for metric, value in row[kind].items()]
    used = {s.model for s in scores}
    models = [results_json.ModelResult(name=names[k], path=paths.get(k)) for k in names if names[k] in used]
    return results_json.Results(models=models, results=scores, settings={"command": command, "beam": args.beam})


def rounded(scores: Dict[str, float]) -> Dict[str, float]:
    return {k: round(v, 2) for k, v in scores.items()}


def target_of(row: Dict) -> Optional[float]:
    if row["split"] != "test_2016_flickr":
        return None
    if row["direction"] in TARGETS:
        return TARGETS[row["direction"]]
    return round(row["pivot"]["bleu_lowercase"] + PIVOT_MARGIN, 2) if "pivot" in row else None


def verdict(row: Dict) -> str:
    """'42.00 (missed by 1.23)' or '41.94 (met, +0.52)': the target and the gap to it; empty without a target."""
    target = target_of(row)
    if target is None:
        return ""
    gap = row["multilingual"]["bleu_lowercase"] - target
    return f"{target:.2f} ({f'met, +{gap:.2f}' if gap >= 0 else f'missed by {-gap:.2f}'})"


def anchor(row: Dict) -> str:
    found = ANCHORS.get(row["direction"]) if row["split"] == "test_2016_flickr" else None
    return f"{found[0]:.2f} ({found[1]})" if found else ""


def lowercased(row: Dict, kind: str) -> str:
    return f"{row[kind]['bleu_lowercase']:.2f}" if kind in row else ""


def markdown(rows: List[Dict]) -> str:
    """One line per split and direction: direct scores, the pivot's and the bilingual model's, the target."""
    lines = ["| split | direction | BLEU | BLEU (lc) | chrF | pivot via en BLEU (lc) | bilingual BLEU (lc) "
             "| target (lc) | published |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        m = row["multilingual"]
        lines.append(f"| {row['split']} | {row['direction']} | {m['bleu']:.2f} | {m['bleu_lowercase']:.2f} "
                     f"| {m['chrf']:.2f} | {lowercased(row, 'pivot')} | {lowercased(row, 'bilingual')} "
                     f"| {verdict(row)} | {anchor(row)} |")
    return "\n".join(lines)


def write_card(model_dir: Path, rows: List[Dict], args: argparse.Namespace, command: str) -> None:
    """Replace the card's results with these direct scores and say how the folder was made (weights untouched)."""
    model = Transformer.from_pretrained(model_dir)
    training = model.card_data.get("training", {})
    averaged, init = training.get("averaged_checkpoints"), training.get("init_from")
    model.card_data["provenance"] = " ".join(filter(None, (
        f"`{args.trained_by}`, continued after each stop by running the same command again; this folder is the "
        f"run's `final/`{f', the average of its last {averaged} checkpoints' if averaged else ''}.",
        init and f"The run started from the weights of `{init}` with a fresh optimizer and schedule, so the Training "
                 "table counts this run's updates only.",
        args.history,
        f"The results below (beam search, sacreBLEU 13a on detokenized output) come from `{command}`.")))
    kept = [r for r in model.card_data.get("results", []) if r.get("split") not in {row["split"] for row in rows}]
    model.card_data["results"] = kept + [
        {"dataset_name": "Multi30k", "dataset_type": "multi30k", "split": row["split"], "direction": row["direction"],
         "metric": "bleu" if metric.startswith("bleu") else "chrf", "metric_name": results_json.METRICS[metric], "value": value}
        for row in rows for metric, value in row["multilingual"].items()]
    save_card(model, model_dir)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="the multilingual model folder")
    p.add_argument("--bilingual", type=Path, default=None, help="a bilingual model to score on its own direction")
    p.add_argument("--data-dir", type=Path, default=default_data_dir())
    p.add_argument("--splits", type=lambda s: s.split(","), default=list(SPLITS))
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=1, help="decoding processes (one torch thread each)")
    p.add_argument("--limit", type=int, default=0, help="score only the first N sentences of each split (0 = all)")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default: <model>/multilingual_results.json)")
    p.add_argument("--card", action="store_true", help="also write the direct scores into the model card")
    p.add_argument("--trained-by", default="python -m transformer_hub train --out RUN_DIR ...",
                   help="the training command, as the card states it (the shipped card's: its recorded command)")
    p.add_argument("--history", default="", help="with --card: a sentence on earlier stages (a run --init-from another)")
    args = p.parse_args(argv)
    if not args.data_dir.is_dir():
        print(f"no Multi30k at {args.data_dir}: pass --data-dir", file=sys.stderr)
        return 2
    rows = evaluate(args)
    out = args.out or args.model / "multilingual_results.json"
    command = shlex.join(["python", "-m", "scripts.multilingual_results", *(argv if argv is not None else sys.argv[1:])])
    results_json.save(as_results(rows, args, out, command), out)
    print(markdown(rows))
    if args.card:
        write_card(args.model, rows, args, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
