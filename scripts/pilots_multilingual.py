#!/usr/bin/env python
"""The stage-2 pilots: one named change to the multilingual recipe, trained for a fixed wall time, scored on val.

    python -m scripts.pilots_multilingual NAME [extra train options]     # e.g. baseline, vocab8k, deep-enc
    python -m scripts.pilots_multilingual --list                         # the pilots and their changes
    python -m scripts.pilots_multilingual shipped --score-model space/models/multilingual   # a reference row
    python -m scripts.pilot_table                                        # docs/multilingual-pilots.md

A pilot runs exactly the options of ``scripts/train_multilingual.sh`` (read from that file, so the two cannot
drift apart), then the pilot's changes (``PILOTS``), then ``PILOT_OPTIONS`` and any extra options, into
``runs/pilots/NAME`` with ``--max-minutes $PILOT_MINUTES`` (default 15; wall time summed over resumes) and
``--resume``: rerunning the same command continues an interrupted pilot.  ``THREADS`` sets torch's threads
(default 2).  The pilot's ``final/`` model then translates the first ``PILOT_SENTENCES`` (200) val sentences of
every direction it serves (beam ``PILOT_BEAM``, default 4; 1 is greedy), scored with sacreBLEU cased and
lowercased and chrF (``transformer_hub.training.metrics.score``), into ``runs/pilots/NAME/pilot.json``.

``PILOT_OPTIONS``: a pilot lasts a few hundred updates, so its warm-up is 200 updates (the recipe's 1,000 would
not end inside a pilot) and the final model averages the last 2 checkpoints (the long run's ``--average-last 6``
would reach back into the warm-up); it is named after the pilot.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent

if TYPE_CHECKING:
    from transformer_hub import Transformer

RECIPE = ROOT / "scripts" / "train_multilingual.sh"
PILOTS_DIR = Path("runs") / "pilots"
# name: (what changes against train_multilingual.sh, the train options that make the change)
PILOTS: Dict[str, tuple] = {
    "baseline": ("today's recipe: joint 16k vocabulary, tag at the source start, 4+4 layers, fresh start", []),
    "vocab8k": ("joint 8k SentencePiece vocabulary (4,182,400 parameters)", ["--vocab-size", "8000"]),
    "sampling": ("SentencePiece sampling of the training sources (alpha 0.1, nbest -1), re-drawn every epoch",
                 ["--subword-sampling-alpha", "0.1"]),  # --subword-sampling-side source is the default
    "sampling-both": ("SentencePiece sampling of training sources and targets (alpha 0.1, nbest -1)",
                      ["--subword-sampling-alpha", "0.1", "--subword-sampling-side", "both"]),
    "tag-decoder": ("target-language tag at the decoder start (after bos), not the source start",
                    ["--tag-position", "decoder"]),
    "continue": ("continues space/models/multilingual's weights (fresh optimizer, warm-up 200)",
                 ["--init-from", "space/models/multilingual"]),
    # continue re-warmed to the recipe's peak of 0.004 and lost ground; the first run had decayed to 0.0019.
    "continue-lr2": ("continues space/models/multilingual's weights at peak lr 0.002 (where the first run had decayed to)",
                     ["--init-from", "space/models/multilingual", "--peak-lr", "0.002"]),
    # 6+2 layers at d_ff 728 (SwiGLU hidden 488): 5,470,720 parameters against the 4+4 baseline's 5,462,400.
    "deep-enc": ("6 encoder + 2 decoder layers, d_ff 728 (5,470,720 parameters; baseline 5,462,400)",
                 ["--n-encoder-layers", "6", "--n-decoder-layers", "2", "--d-ff", "728"]),
}
PILOT_OPTIONS = ["--warmup", "200", "--average-last", "2"]


def recipe_options(recipe: Path = RECIPE) -> List[str]:
    """The train options of a recipe script (between ``train`` and ``--resume``), ``$out`` left out, with its
    ``${NAME:-default}`` words read from the environment as the shell would."""
    text = recipe.read_text().replace("\\\n", " ")
    line = next(row for row in text.splitlines() if "-m transformer_hub train" in row)
    words = shlex.split(line)
    options = words[words.index("train") + 1: words.index("--resume")]
    out = options.index("--out")
    del options[out: out + 2]
    return [re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: os.environ.get(m.group(1)) or m.group(2), word)
            for word in options]


def train_options(name: str, minutes: float, extra: List[str]) -> List[str]:
    """Every option of the pilot's training run (later options win over the recipe's)."""
    return ["--out", str(PILOTS_DIR / name), *recipe_options(), *PILOTS[name][1], *PILOT_OPTIONS,
            "--name", f"transformer_hub multilingual pilot {name}", "--max-minutes", f"{minutes:g}", *extra,
            "--resume"]


def score_model(model: "Transformer", data_dir: Path, sentences: int, beam: int, batch_size: int = 100,
                domain: Optional[str] = None) -> Dict:
    """{direction: {bleu, bleu_lowercase, chrf}} on the first ``sentences`` val lines of every direction (with
    ``domain``'s tag for a model trained with domain tags)."""
    import torch
    from .multilingual_results import rounded, split_lines
    from transformer_hub.decoding import translate
    from transformer_hub.training.metrics import score

    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    decoding = {"strategy": "beam", "beam_size": beam} if beam > 1 else {"strategy": "greedy"}
    scores = {}
    for src, tgt in model.config.pairs():
        sources, references = split_lines(data_dir, "val", src), split_lines(data_dir, "val", tgt)
        if sources is None or references is None:
            raise SystemExit(f"no val.{src} or val.{tgt} in {data_dir}")
        tagged = {"domain": domain} if domain and model.config.domains else {}
        hypotheses = translate(model, sources[:sentences], src_lang=src, tgt_lang=tgt, batch_size=batch_size,
                               **decoding, **tagged)
        scores[f"{src}-{tgt}"] = rounded(score(hypotheses, references[:sentences]))
    return scores


def summary(name: str, model: "Transformer", scores: Dict, sentences: int, beam: int, command: str,
            model_dir: Optional[Path] = None) -> Dict:
    """pilot.json: the change, the training facts of the model's card, the scores and their means."""
    metrics = sorted({m for row in scores.values() for m in row})
    change = (PILOTS[name][0] if name in PILOTS else
              f"(no training: {model_dir} as it is)" if model_dir else "(not a named pilot)")
    return {"pilot": name, "change": change, "command": command,
            "parameters": model.num_parameters(), "training": model.card_data.get("training", {}),
            "scored": {"split": "val", "sentences_per_direction": sentences,
                       "decoding": f"beam {beam}" if beam > 1 else "greedy", "metrics": "sacreBLEU 13a, chrF"},
            "mean": {m: round(sum(row[m] for row in scores.values()) / len(scores), 2) for m in metrics},
            "directions": scores}


def train(name: str, extra: List[str]) -> Tuple[str, int]:
    """Train (or continue) the pilot ``name``: its command and exit status (non-zero: no final model yet)."""
    minutes = float(os.environ.get("PILOT_MINUTES", "15"))
    options = train_options(name, minutes, extra)
    command = "python -m transformer_hub train " + shlex.join(options)
    print(command, flush=True)
    started = time.time()
    status = subprocess.call([sys.executable, "-m", "transformer_hub", "train", *options])
    if status != 0 or not (PILOTS_DIR / name / "final" / "model.safetensors").is_file():
        print(f"training stopped before a final model (status {status}): rerun the same command to continue",
              file=sys.stderr)
        return command, status or 1
    print(f"trained in {(time.time() - started) / 60:.1f} min (this call); scoring", flush=True)
    return command, 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("name", nargs="?", help="the pilot: " + ", ".join(PILOTS))
    p.add_argument("--list", action="store_true", help="print the pilots and their changes")
    p.add_argument("--score-model", type=Path, default=None, metavar="DIR",
                   help="no training: score this model folder the same way, as the row NAME (e.g. the shipped model)")
    args, extra = p.parse_known_args(argv)
    if args.list or not args.name:
        print("\n".join(f"{name:14} {change}" for name, (change, _) in PILOTS.items()))
        return 0 if args.list else 2
    if args.name not in PILOTS and args.score_model is None:
        print(f"unknown pilot {args.name!r}; pilots: {', '.join(PILOTS)}", file=sys.stderr)
        return 2
    if args.score_model is not None and not (args.score_model / "config.json").is_file():
        print(f"--score-model {args.score_model}: not a save_pretrained folder (no config.json)", file=sys.stderr)
        return 2
    os.chdir(ROOT)
    from transformer_hub import Transformer
    from transformer_hub.training.data import default_data_dir

    if args.score_model is None:
        command, status = train(args.name, extra)
        if status:
            return status
        model_dir = PILOTS_DIR / args.name / "final"
    else:
        command, model_dir = "python -m scripts.pilots_multilingual " + shlex.join(argv or sys.argv[1:]), args.score_model
    sentences, beam = int(os.environ.get("PILOT_SENTENCES", "200")), int(os.environ.get("PILOT_BEAM", "4"))
    data_dir = Path(extra[extra.index("--data-dir") + 1]) if "--data-dir" in extra[:-1] else default_data_dir()
    model = Transformer.from_pretrained(model_dir)
    scores = score_model(model, data_dir, sentences, beam)
    record = summary(args.name, model, scores, sentences, beam, command, model_dir)
    out = PILOTS_DIR / args.name / "pilot.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["mean"]), f"-> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
