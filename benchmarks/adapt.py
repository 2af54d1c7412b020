"""The adaptation measured: ``python -m benchmarks adapt [--packages NAME...] [--minutes 30] [--threads 2]``.

Each package of the Debian catalogs corpus's ``projects`` split (``--data-dir``, built by ``python -m transformer_hub
corpus debian-catalogs --projects ...``: packages no model here was trained on, docs/debian-catalogs.md) stands for
a localizer's own project.  Its rows are written as real ``.po`` files, one per catalog and language (the original
texts of ``projects.raw.gz``: msgctxt, English msgids, translations with their accelerator marks; a row's language
only where the corpus kept it; a plural entry's two forms as two entries, which give adapt the same pairs), and
``python -m transformer_hub adapt`` runs once on all of them: en-de, en-fr and en-cs in one run under one project
tag, 20 % of the package's source sentences held out (seeded, the same in every direction), ``--minutes`` of
training on ``--threads``, from ``--model`` (the shipped v4 unless told), replaying the base corpora (``--replay-data``:
captions and software, the folders v4 was trained on) in each direction.

Per package and direction: the held-out BLEU and chrF before and after, each base domain's val BLEU before and
after, the minutes and updates; the targets (``TARGETS``: held-out gain at least 8 BLEU, no base val falling by
more than 0.5) checked.  Writes ``OUT/adapt_results.json`` and the table into ``--doc`` (between its
``<!-- adapt-results -->`` markers); ``--table FILE`` prints a results file's table again.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shlex
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence

import polib

from .recorded import shown, shown_word
from transformer_hub.training.adapt import AdaptConfig, adapt
from transformer_hub.training.data import default_data_dir

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "space" / "models" / "multilingual-v4"
LANGS = ("en", "de", "fr", "cs")
SPLIT = "projects"
TARGETS = {"held_out_gain": 8.0, "val_fall": 0.5}  # BLEU points
START, END = "<!-- adapt-results -->", "<!-- /adapt-results -->"
TUNED = ("replay_share", "peak_lr", "warmup", "max_tokens", "eval_every", "eval_limit", "val_limit", "holdout", "seed")
DEFAULTS = AdaptConfig(base="", data=["-"], out="")
# Where the measurement departs from adapt's defaults: the held-out curve on 200 pairs per direction every 100
# updates (its decoding is inside the time budget).  The val change is scored on adapt's 300 pairs of each replayed
# folder per direction (v4's three folders in full would take longer than the training, before and after).
MEASURED = {"eval_every": 100, "eval_limit": 200}


# --------------------------------------------------------------------------- the packages as .po files
def read_projects(data_dir: Path) -> Dict[str, List[dict]]:
    """The split's rows by package (in the corpus's order): catalog, msgctxt, the raw texts, and the languages
    the corpus kept for the row (``langs``)."""
    def lines(name: str) -> List[str]:
        with gzip.open(data_dir / f"{SPLIT}.{name}.gz", "rt", encoding="utf-8") as f:
            return f.read().split("\n")[:-1]

    ids, raws = lines("ids"), lines("raw")
    texts = {lang: lines(lang) for lang in LANGS}
    if any(len(found) != len(ids) for found in [raws, *texts.values()]):
        raise SystemExit(f"benchmark: error: the {SPLIT} files of {data_dir} are not aligned")
    packages: Dict[str, List[dict]] = defaultdict(list)
    for k, (row_id, raw) in enumerate(zip(ids, raws)):
        row = json.loads(raw)
        row["langs"] = [lang for lang in LANGS[1:] if texts[lang][k].strip()]
        packages[row_id.split("#")[0]].append(row)
    return dict(packages)


def write_catalogs(rows: Sequence[dict], folder: Path) -> List[Path]:
    """One ``.po`` per language and catalog (``folder/LANG/CATALOG.po``) of ``rows``; the paths, German's first."""
    paths = []
    for lang in LANGS[1:]:
        by_catalog: Dict[str, polib.POFile] = {}
        seen = set()
        for row in rows:
            key = (row["catalog"], row["context"], row["raw"]["en"])
            if lang not in row["langs"] or key in seen:
                continue
            seen.add(key)
            catalog = by_catalog.setdefault(row["catalog"], new_catalog(row["catalog"], lang))
            catalog.append(polib.POEntry(msgctxt=row["context"], msgid=row["raw"]["en"], msgstr=row["raw"][lang]))
        for name, catalog in sorted(by_catalog.items()):
            path = folder / lang / f"{name}.po"
            path.parent.mkdir(parents=True, exist_ok=True)
            catalog.save(str(path))
            paths.append(path)
    return paths


def new_catalog(name: str, lang: str) -> polib.POFile:
    catalog = polib.POFile(wrapwidth=0)
    catalog.metadata = {"Project-Id-Version": name, "Language": lang, "MIME-Version": "1.0",
                        "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    return catalog


# --------------------------------------------------------------------------- one package adapted
def adapt_package(args: argparse.Namespace, package: str, rows: Sequence[dict]) -> dict:
    """``package``'s catalogs written and adapted to; its figures (``summary``)."""
    folder = args.work / package
    files = write_catalogs(rows, folder / "po")
    tuned = {name: getattr(args, name) for name in TUNED if getattr(args, name) is not None}
    config = AdaptConfig(base=str(args.model), data=[str(f) for f in files], out=str(folder / "model"),
                         domain=package.split("-")[0].replace(".", "_").lower(), minutes=args.minutes,
                         threads=args.threads, max_updates=args.max_updates, replay_data=args.replay_data, **tuned)
    start = time.perf_counter()
    out = adapt(config, command=adapt_command(config, folder))
    seconds = time.perf_counter() - start
    record = json.loads((out / "adapt.json").read_text(encoding="utf-8"))
    found = summary(record)
    found["entries"] = {lang: sum(lang in row["langs"] for row in rows) for lang in LANGS[1:]}
    found["files"] = [str(path.relative_to(folder)) for path in files]
    found["wall_minutes"] = round(seconds / 60, 2)
    return found


def adapt_command(config: AdaptConfig, folder: Path) -> str:
    """The ``adapt`` command line of ``config``, the package's files relative to its folder."""
    options = ["--from", shown(Path(config.base)), "--out", "model", "--domain", config.domain or "",
               "--minutes", f"{config.minutes:g}", "--threads", str(config.threads)]
    options += [part for f in config.data for part in ("--data", str(Path(f).relative_to(folder)))]
    options += [part for r in config.replay_data for part in ("--replay-data", shown_replay(r))]
    options += [part for name in TUNED + ("max_updates",) if getattr(config, name) != getattr(DEFAULTS, name)
                for part in (f"--{name.replace('_', '-')}", f"{getattr(config, name):g}")]
    return "python -m transformer_hub adapt " + " ".join(map(shlex.quote, options))


def summary(record: dict) -> dict:
    """A package's figures from its ``adapt.json``: per direction the pairs, the held-out BLEU/chrF before and
    after and the gain, each replayed val's BLEU before and after and the change; the run's minutes and updates;
    whether the targets are met."""
    directions = {}
    for name in record["directions"]:
        before, after = record["before"][name], record["after"][name]
        row = {"train": record["pairs"][name]["train"], "held_out": record["pairs"][name]["held_out"]}
        for metric in ("bleu", "chrf"):
            row[f"{metric}_before"] = round(before["held_out"][metric], 2)
            row[f"{metric}_after"] = round(after["held_out"][metric], 2)
        row["gain"] = round(row["bleu_after"] - row["bleu_before"], 2)
        row["val"] = {key.split("/", 1)[1]: {"bleu_before": round(before[key]["bleu"], 2),
                                             "bleu_after": round(after[key]["bleu"], 2),
                                             "change": round(after[key]["bleu"] - before[key]["bleu"], 2)}
                      for key in before if key.startswith("val/")}
        row["met"] = row["gain"] >= TARGETS["held_out_gain"] and all(
            v["change"] >= -TARGETS["val_fall"] for v in row["val"].values())
        directions[name] = row
    training = record["training"]
    return {"domain": record["domain"], "train_minutes": training["train_minutes"], "updates": training["updates"],
            "stopped_by": training["stopped_by"], "directions": directions,
            "met": all(row["met"] for row in directions.values())}


# --------------------------------------------------------------------------- the table
def table(results: dict) -> str:
    """The Markdown table of a results file: a row per package and direction."""
    domains = sorted({domain for found in results["packages"].values() for row in found["directions"].values()
                      for domain in row["val"]})
    head = ["package", "direction", "entries (train / held out)", "held-out BLEU before → after", "gain",
            "held-out chrF before → after", *[f"{d} val BLEU change" for d in domains], "minutes", "updates", "target"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for package, found in results["packages"].items():
        for name, row in found["directions"].items():
            cells = [package, name, f"{row['train']} / {row['held_out']}",
                     f"{row['bleu_before']:.2f} → {row['bleu_after']:.2f}", f"{row['gain']:+.2f}",
                     f"{row['chrf_before']:.2f} → {row['chrf_after']:.2f}",
                     *[f"{row['val'][d]['change']:+.2f}" for d in domains],
                     f"{found['train_minutes']:.1f}", str(found["updates"]), "met" if row["met"] else "missed"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_doc(path: Path, text: str) -> None:
    """``text`` into ``path`` between its markers (``START``, ``END``), the rest of the page as it was."""
    page = path.read_text(encoding="utf-8")
    if START not in page or END not in page:
        raise SystemExit(f"benchmark: error: {path} has no {START} ... {END} markers for the table")
    before, rest = page.split(START, 1)
    path.write_text(before + START + "\n" + text + "\n" + END + rest.split(END, 1)[1], encoding="utf-8")


# --------------------------------------------------------------------------- the command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "debian-catalogs-projects",
                        help="a catalogs corpus with a projects split")
    parser.add_argument("--packages", nargs="+", default=None, help="the packages to adapt to (default: all)")
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--replay-data", action="append", default=None, metavar="NAME=DIR",
                        help="the base corpora replayed and scored (default: v4's own: captions = Multi30k, "
                             "software = data/libreoffice-help and --data-dir's train and val)")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-updates", type=int, default=0, help="stop after this many updates too (0: none)")
    for name in TUNED:  # adapt's own defaults unless given here or in MEASURED
        parser.add_argument(f"--{name.replace('_', '-')}", type=float if name in ("replay_share", "peak_lr",
                                                                                   "holdout") else int,
                            default=MEASURED.get(name), help=f"adapt's --{name.replace('_', '-')} (default "
                            f"{MEASURED.get(name, getattr(DEFAULTS, name))})")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "adapt-projects",
                        help="where the .po files and the adapted models go")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where adapt_results.json goes")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "adapt.md", help="the page the table goes into")
    parser.add_argument("--table", type=Path, default=None, help="print this results file's table and stop")


def run(args: argparse.Namespace) -> dict:
    if args.table is not None:
        results = json.loads(args.table.read_text(encoding="utf-8"))
        print(table(results))
        return results
    if not (args.data_dir / f"{SPLIT}.raw.gz").is_file():
        raise SystemExit(f"benchmark: error: no {SPLIT} split in {args.data_dir}: build it with `python -m "
                         "transformer_hub corpus debian-catalogs --projects NAME...` (docs/debian-catalogs.md)")
    args.replay_data = args.replay_data or [f"captions={default_data_dir()}",
                                            f"software={ROOT / 'data' / 'libreoffice-help'}",
                                            f"software={args.data_dir}"]
    packages = read_projects(args.data_dir)
    chosen = args.packages or list(packages)
    unknown = [name for name in chosen if name not in packages]
    if unknown:
        raise SystemExit(f"benchmark: error: {', '.join(unknown)}: not in the {SPLIT} split (it holds "
                         f"{', '.join(packages)})")
    words = [shlex.quote(shown_word(word)) for word in getattr(args, "argv", sys.argv[1:])[1:]]
    results = {"command": " ".join(["python -m benchmarks adapt", *words]),
               "model": shown(args.model), "replay": [shown_replay(r) for r in args.replay_data],
               "minutes": args.minutes, "threads": args.threads, "targets": TARGETS, "packages": {}}
    for name in chosen:
        results["packages"][name] = adapt_package(args, name, packages[name])
        print(f"{name}: {json.dumps(results['packages'][name]['directions'])}", file=sys.stderr)
    results["met"] = all(p["met"] for p in results["packages"].values())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "adapt_results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")
    write_doc(args.doc, table(results))
    print(table(results))
    return results


def shown_replay(value: str) -> str:
    return shown_word(value if "=" in value else str(Path(value).resolve()))
