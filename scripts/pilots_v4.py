"""The v4 pilots: the v4 recipe with one change each, trained for the same wall time on the same threads, then
scored on every domain's val.

    python -m scripts.pilots_v4 run NAME [--minutes 30] [--threads 1]   # trains runs/v4-pilots/NAME
    python -m scripts.pilots_v4 score NAME [--rows 200]                  # writes runs/v4-pilots/NAME/pilot.json
    python -m scripts.pilots_v4 table                                    # docs/multilingual-v4-pilots.{json,md}

Equal compute: pilots compared with each other run at the same time, one thread each, for the same minutes of
training (``--max-minutes``: wall time, so a slower model or longer sequences see fewer sentences, which is the
point); the table records where and beside which pilot each ran.  Scores: greedy decoding of ``--rows`` val rows
per direction (a seeded sample, the same rows for every pilot) of the six English-side directions on each
domain's val: Multi30k (captions), LibreOffice's help and Debian's catalogs (software); sacreBLEU cased, chrF.
Corpora: ``MULTI30K``, ``LIBREOFFICE_HELP`` and ``DEBIAN_CATALOGS`` in the environment (defaults: data/...).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

V3 = "space/retired/multilingual-v3"
RUNS = Path("runs/v4-pilots")
DOCS = Path("docs")
ENGLISH_SIDE = ("en-de", "en-fr", "en-cs", "de-en", "fr-en", "cs-en")
NEW_VOCABULARY = ["--vocab-size", "16000", "--tokenizer-lines", "100000"]
WARM_NEW_VOCABULARY = ["--init-from", V3, "--new-vocabulary", *NEW_VOCABULARY]  # v3 moved onto the joint tokenizer
V3_SHAPE = ["--d-model", "160", "--n-heads", "4", "--d-ff", "640", "--n-encoder-layers", "4",
            "--n-decoder-layers", "4", "--feed-forward", "swiglu", "--positional", "rope", "--norm", "pre",
            "--dropout", "0.2"]
PILOTS: Dict[str, Dict] = {
    "v3": {"about": "v3 as shipped, before any pilot's training (scored only)", "args": []},
    "warm": {"about": "v3's weights and tokenizer (the baseline)", "args": ["--init-from", V3]},
    "warm-new-vocabulary": {"about": "v3's weights moved onto a new joint tokenizer of all three corpora",
                            "args": WARM_NEW_VOCABULARY},
    "fresh-new-vocabulary": {"about": "v3's shape (5.5M), fresh weights, the new joint tokenizer",
                             "args": [*V3_SHAPE, *NEW_VOCABULARY, "--warmup", "400"]},
    "deep-encoder": {"about": "6 encoder + 2 decoder layers, d_model 256 (~13M), fresh, the new joint tokenizer",
                     "args": [*V3_SHAPE, "--d-model", "256", "--d-ff", "1024", "--n-encoder-layers", "6",
                              "--n-decoder-layers", "2", *NEW_VOCABULARY, "--warmup", "400"]},
    "warm-new-vocabulary-float32": {"about": "warm-new-vocabulary in float32, the twin of the bf16 pilot (equal "
                                             "updates, run beside it)",
                                    "args": [*WARM_NEW_VOCABULARY,
                                             "--precision", "float32"]},
    "warm-new-vocabulary-bf16": {"about": "warm-new-vocabulary in bf16 autocast (float32 weights and optimizer), "
                                          "on a CPU with bf16 units",
                                 "args": [*WARM_NEW_VOCABULARY, "--precision", "bf16"]},
    "upsample-captions": {"about": "warm-new-vocabulary with Multi30k's pairs 4 times in every epoch",
                          "args": [*WARM_NEW_VOCABULARY, "--upsample", "captions=4"]},
    "english-centric": {"about": "warm-new-vocabulary on the six English-side directions only (the others pivot)",
                        "args": [*WARM_NEW_VOCABULARY,
                                 "--directions", ",".join(ENGLISH_SIDE)]},
    "warm-new-vocabulary-beside": {"about": "warm-new-vocabulary again, the baseline run beside english-centric",
                                   "args": WARM_NEW_VOCABULARY},
}


def corpora() -> Dict[str, str]:
    return {"captions": os.environ.get("MULTI30K", "data/multi30k"),
            "help": os.environ.get("LIBREOFFICE_HELP", "data/libreoffice-help"),
            "catalogs": os.environ.get("DEBIAN_CATALOGS", "data/debian-catalogs")}


def recipe(name: str, minutes: float, threads: int, updates: int = 0) -> List[str]:
    """The train command of pilot ``name``: the v4 recipe's data and schedule, then the pilot's change (``updates``:
    stop there too, for comparisons at equal updates)."""
    c = corpora()
    return [sys.executable, "-m", "transformer_hub", "train", "--out", str(RUNS / name), "--langs", "en,de,fr,cs",
            "--data-dir", f"captions={c['captions']}", "--data-dir", f"software={c['help']}",
            "--data-dir", f"software={c['catalogs']}", "--domain-tags", "--max-tokens", "8192", "--peak-lr", "0.002",
            "--warmup", "100", "--valid-every", "0", "--valid-limit", "300", "--save-every", "100", "--keep-last", "1", "--average-last", "1",
            "--final-beam", "0", "--seed", "1", "--max-minutes", str(minutes), "--threads", str(threads), "--resume",
            "--precision", "auto",
            *(["--max-updates", str(updates)] if updates else []), "--name", f"v4 pilot {name}",
            *PILOTS[name]["args"]]


def run(name: str, minutes: float, threads: int, updates: int = 0, beside: str = "") -> None:
    RUNS.joinpath(name).mkdir(parents=True, exist_ok=True)
    command = recipe(name, minutes, threads, updates)
    started = time.time()
    subprocess.run(command, check=True)
    shown = " ".join(command[1:])
    for variable, (_, folder) in zip(("$MULTI30K", "$LIBREOFFICE_HELP", "$DEBIAN_CATALOGS"), corpora().items()):
        shown = shown.replace(f"={folder} ", f"={variable} ")  # where the corpora lie here is no one's business
    record = {"name": name, "about": PILOTS[name]["about"], "command": shown, "minutes": minutes,
              "max_updates": updates or None, "threads": threads, "beside": beside or None,
              "wall_seconds": round(time.time() - started), "cpu": cpu_name(),
              "started": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started))}
    (RUNS / name / "pilot_run.json").write_text(json.dumps(record, indent=1) + "\n")


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def val_rows(rows: int) -> Dict[str, Dict[str, list]]:
    """{domain: {direction: [(source, reference)]}}: ``rows`` seeded val rows per direction."""
    from transformer_hub.training.data import load_directions
    pairs = [tuple(d.split("-")) for d in ENGLISH_SIDE]
    found = {}
    for domain, folder in corpora().items():
        by_direction = load_directions(folder, "val", pairs)
        found[domain] = {}
        for (s, t), items in by_direction.items():
            items = [p for p in items if p[0].strip() and p[1].strip()]
            random.Random(f"v4-pilots:{domain}:{s}-{t}").shuffle(items)
            found[domain][f"{s}-{t}"] = items[:rows]
    return found


def score(name: str, rows: int) -> None:
    from transformer_hub import Transformer
    from transformer_hub.training.evaluation import translation_scores
    folder = RUNS / name
    model = Transformer.from_pretrained(V3 if name == "v3" else str(folder / "final"))
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "metrics.jsonl"
    metrics = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    steps = [m for m in metrics if m.get("kind") == "train"]
    result = {"name": name, "about": PILOTS[name]["about"], "parameters": sum(p.numel() for p in model.parameters()),
              "rows": rows, "scores": {}}
    if steps:
        rates = [m["tokens_per_s"] for m in steps if m.get("tokens_per_s")]
        result.update(updates=max(m["step"] for m in steps), last_loss=round(steps[-1]["loss"], 3),
                      tokens_per_s=round(sum(rates) / len(rates)) if rates else None)
    checks = [m for m in metrics if m.get("kind") == "val" and "val_loss" in m]
    if checks:  # the run's last validation: every direction's val loss at its last update
        result.update(val_loss=round(checks[-1]["val_loss"], 4), val_loss_step=checks[-1]["step"])
    for domain, by_direction in val_rows(rows).items():
        tag = "captions" if domain == "captions" else "software"
        for direction, pairs in by_direction.items():
            s, t = direction.split("-")
            scores = translation_scores(model, pairs, s, t, domain=tag, strategy="greedy")
            result["scores"][f"{domain}/{direction}"] = {k: round(v, 2) for k, v in scores.items()}
            print(f"{name} {domain} {direction}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()), flush=True)
    run_record = folder / "pilot_run.json"
    if run_record.exists():
        result.update(json.loads(run_record.read_text()))
    (folder / "pilot.json").write_text(json.dumps(result, indent=1) + "\n")


def write_table() -> None:
    """docs/multilingual-v4-pilots.json (every pilot.json) and .md (``table_page``)."""
    found = {p["name"]: p for p in (json.loads(f.read_text()) for f in sorted(RUNS.glob("*/pilot.json")))}
    recorded = DOCS / "multilingual-v4-pilots.json"  # pilots scored in earlier sessions, their runs gone since
    earlier = json.loads(recorded.read_text())["pilots"] if recorded.exists() else []
    pilots = list({**{p["name"]: p for p in earlier}, **found}.values())
    if not pilots:
        raise SystemExit(f"no pilot.json under {RUNS}: run `python -m scripts.pilots_v4 score NAME` first")
    pilots.sort(key=lambda p: list(PILOTS).index(p["name"]))
    (DOCS / "multilingual-v4-pilots.json").write_text(json.dumps(
        {"command": "python -m scripts.pilots_v4 table", "pilots": pilots}, indent=1) + "\n")
    (DOCS / "multilingual-v4-pilots.md").write_text(table_page(pilots))
    print(table_page(pilots))


def table_page(pilots: List[Dict]) -> str:
    """The pilots' page: a row per pilot with its mean BLEU on each domain's val."""
    domains = ("captions", "help", "catalogs")
    lines = ["# The v4 pilots", "", f"Written by `python -m scripts.pilots_v4 table` from the runs' pilot.json files "
             "([multilingual-v4-pilots.json](multilingual-v4-pilots.json)); how they ran: `scripts/pilots_v4.py`.",
             "", "| pilot | what changes | parameters | minutes x threads | updates | target tokens/s | val loss | "
             + " | ".join(f"{d} BLEU" for d in domains) + " |", "|" + "---|" * (7 + len(domains))]
    for p in pilots:
        means = [mean_bleu(p, d) for d in domains]
        budget = f"{p['minutes']:g} x {p['threads']}" if "minutes" in p else "-"
        budget += f" (at most {p['max_updates']} updates)" if p.get("max_updates") else ""
        budget += f", beside {p['beside']}" if p.get("beside") else ""
        lines.append(f"| {p['name']} | {p['about']} | {p['parameters'] / 1e6:.1f}M | {budget} | "
                     f"{p.get('updates', '-')} | {p.get('tokens_per_s', '-')} | {p.get('val_loss', '-')} | "
                     + " | ".join(f"{m:.2f}" for m in means) + " |")
    lines += ["", "BLEU: the mean over the six English-side directions of each domain's val (greedy, "
              f"{pilots[0]['rows']} seeded rows per direction, sacreBLEU cased); captions: Multi30k, help: "
              "LibreOffice's help, catalogs: Debian's message catalogs. Val loss: the run's last validation (cross-entropy "
              "per target token over every direction's val, 300 rows each), where it recorded one. Per direction, the "
              "CPU and the date each ran: the JSON file."]
    return "\n".join(lines) + "\n"


def mean_bleu(pilot: Dict, domain: str) -> float:
    values = [v["bleu"] for k, v in pilot["scores"].items() if k.startswith(domain + "/")]
    return sum(values) / len(values) if values else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("name", choices=sorted(set(PILOTS) - {"v3"}))
    r.add_argument("--minutes", type=float, default=30)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--updates", type=int, default=0, help="stop at this many updates too (equal-updates pairs)")
    r.add_argument("--beside", default="", help="the pilots run at the same time, for the record (CPU shared)")
    s = sub.add_parser("score")
    s.add_argument("name", choices=sorted(PILOTS))
    s.add_argument("--rows", type=int, default=200)
    sub.add_parser("table")
    args = parser.parse_args(argv)
    if args.what == "run":
        run(args.name, args.minutes, args.threads, args.updates, args.beside)
    elif args.what == "score":
        score(args.name, args.rows)
    else:
        write_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
