"""Both domains' results table: every direction of each model on each domain's test split, side by side.

    python -m scripts.domain_results --model v2=space/models/multilingual --model v3=space/retired/multilingual-v3 \
        --data-dir captions=data/multi30k --data-dir software=data/libreoffice-help --out docs/domain_results.json

``--cache DIR`` keeps every (model, domain, direction) output as it is made, keyed by the weights, the
settings and the sources, so an interrupted run picks up where it stopped and a second run with one more model
decodes only that model (``--workers N``: N decoding processes for the beam rows).

For each domain (``--data-dir NAME=DIR``: captions is Multi30k, scored on test_2016_flickr; any other domain on
its ``test`` split, ``--split NAME=SPLIT`` to change it, ``NAME=A,B,C`` for several, e.g. Multi30k's three test
splits; directions without both files are skipped), each model and each direction the model serves (a bilingual
model beside a multilingual one: its own direction), beam search (default 5) is scored with sacreBLEU cased and
lowercased (13a) and chrF. ``--quality fast,best`` adds the reranked n-best of models with tuned weights (``rerank.json``); as it costs a multiple of the beam, it is
scored on the first ``--slice`` sentences alone when a slice is given, beside the beam's scores on them (its time
against the beam's: ``python -m benchmarks quality``). A model
trained with domain tags reads each test set with its domain's tag; one without reads it as it is. Between two
non-English languages the last model also pivots through English (X -> en -> Y, its own X -> en output reused).
A corpus named in ``--read-as CORPUS=DOMAIN`` is read with that domain's tag (Debian's catalogs, ``catalogs``, are
``software``); one named in ``--by-words`` (``catalogs``) is also scored on its entries of 3+ English words and of
1-2 words apart (splits ``SPLIT:3+words``, ``SPLIT:1-2words``).
Writes a ``results.json`` (models named as given, ``NAME via en`` for pivots; splits ``DOMAIN/SPLIT``, slices
``DOMAIN/SPLIT[:N]``) and prints a Markdown table with the targets (``--targets v3`` or ``v4``:
``scripts/results_table.py``) and the gap to them; ``--card NAME`` also
writes NAME's scores into its model card as model-index results. ``--table FILE`` prints the tables of a results
file again, as the run printed them.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tqdm.auto import tqdm

from transformer_hub import Transformer
from transformer_hub.decoding import DecodingConfig, DecodingPool
from transformer_hub.hub import save_card
from transformer_hub.hub import results as results_json
from transformer_hub.hub.selection import DOMAIN_SPLITS
from transformer_hub.text.models import OneModel
from transformer_hub.text.pipeline import translate_texts
from transformer_hub.training.data import DataError, corpus_file, read_lines
from transformer_hub.training.metrics import score
from transformer_hub.training.warm_start import weights_digest

from .pieces_per_word import file_digests
from .results_table import PIVOT, TARGET_SETS, beam_names, markdown

DATASETS = {"captions": ("Multi30k", "multi30k"), "software": ("LibreOffice help", "libreoffice-help"),
            "catalogs": ("Debian message catalogs", "debian-catalogs")}
READ_AS = {"catalogs": "software"}  # a corpus read with another domain's tag (the model knows no catalogs domain)
WORD_BUCKETS = (("3+words", lambda n: n >= 3), ("1-2words", lambda n: n <= 2))


def split_lines(data_dir: Path, split: str, lang: str) -> Optional[List[str]]:
    """The lines of ``split`` in ``lang`` (None: no such file)."""
    try:
        return read_lines(corpus_file(data_dir, split, lang))
    except DataError:
        return None


def rounded(scores: Dict[str, float]) -> Dict[str, float]:
    return {k: round(v, 2) for k, v in scores.items()}


@dataclass
class Scorer:
    """One model (``name``) at one quality: translates a test set of one domain (cached in ``cache``)."""

    name: str
    models: OneModel
    quality: str
    config: DecodingConfig
    engine: object
    weights: str = ""
    cache: Optional[Path] = None

    def __call__(self, sources: List[str], src: str, tgt: str, domain: str) -> List[str]:
        tagged = domain in (self.models.model.config.domains or ())
        key = hashlib.sha256(json.dumps([self.weights, self.quality, self.config.beam_size, self.config.strategy,
                                         str(self.engine) if isinstance(self.engine, str) else "pytorch",
                                         domain if tagged else None, src, tgt, sources]).encode()).hexdigest()
        path = self.cache / f"{key[:32]}.txt.gz" if self.cache and self.weights else None
        if path is not None and path.is_file():
            outputs = json.loads(gzip.decompress(path.read_bytes()))
            if len(outputs) == len(sources):
                return outputs
        results = translate_texts(self.models, sources, self.config, src_lang=src, tgt_lang=tgt,
                                  split_sentences=False, quality=self.quality, engine=self.engine,
                                  domain=domain if tagged else None)
        outputs = [r.text for r in results]
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".part")
            partial.write_bytes(gzip.compress(json.dumps(outputs, ensure_ascii=False).encode(), mtime=0))
            partial.replace(path)
        return outputs


def scorers(args: argparse.Namespace, stack: contextlib.ExitStack) -> List[Scorer]:
    """Each model at "fast", and at "best" too where asked and the folder has tuned weights."""
    config = DecodingConfig(strategy="beam", beam_size=args.beam, batch_size=args.batch_size)
    found = []
    for name, folder in args.model:
        model = Transformer.from_pretrained(folder)
        weights = weights_digest(folder)
        engine = args.engine
        if args.workers > 1 and args.engine == "pytorch":
            engine = stack.enter_context(DecodingPool(model, processes=args.workers, threads=1, wait=False))
        found.append(Scorer(name, OneModel(model, name), "fast", config, engine, weights, args.cache))
        if "best" in args.quality and (Path(folder) / "rerank.json").is_file():
            from transformer_hub.rerank import RerankedModel

            tuned = hashlib.sha256((Path(folder) / "rerank.json").read_bytes()).hexdigest()
            found.append(Scorer(f"{name} best", RerankedModel.from_pretrained(folder, model=model), "best", config,
                                "pytorch", f"{weights} {tuned}", args.cache))
    return found


def evaluate(args: argparse.Namespace, models: List[Scorer]) -> List[Dict]:
    """One row per domain, split and direction: each scorer's scores, and the last model's pivot through English
    (``--by-words`` corpora: also rows of their entries by the English side's length, split ``SPLIT:BUCKET``)."""
    last = next(m for m in reversed(models) if m.quality == "fast")
    rows = [row for domain, folder in args.data_dir for split in splits_of(args, domain)
            for row in score_split(args, models, last, (domain, Path(folder), split))]
    order = [f"{s}-{t}" for s, t in last.models.model.config.pairs()]
    domains = [d for d, _ in args.data_dir]
    buckets = [""] + [name for name, _ in WORD_BUCKETS]

    def key(r: Dict):
        split, _, bucket = r["split"].partition(":")
        return (domains.index(r["domain"]), splits_of(args, r["domain"]).index(split), buckets.index(bucket),
                order.index(r["direction"]))
    return sorted(rows, key=key)


def splits_of(args: argparse.Namespace, domain: str) -> List[str]:
    """The splits ``domain`` is scored on: ``--split DOMAIN=A,B``, else its default (captions: test_2016_flickr)."""
    return (args.split.get(domain) or DOMAIN_SPLITS.get(domain, "test")).split(",")


def score_split(args: argparse.Namespace, models: List[Scorer], last: Scorer,
                test_set: Tuple[str, Path, str]) -> List[Dict]:
    """The rows of one domain's split (``test_set``: the domain, its folder, the split); directions without both
    files are skipped (Multi30k has no Czech for its 2017 tests)."""
    domain, folder, split = test_set
    tag = args.read_as.get(domain, domain)
    into_english = sorted(last.models.model.config.pairs(), key=lambda p: p[1] != PIVOT)  # pivots find their first half done
    done: Dict[Tuple[str, str], List[str]] = {}
    english = split_lines(folder, split, PIVOT) if domain in args.by_words else None  # read once, for every direction
    rows = []
    for src, tgt in tqdm(into_english, desc=f"{domain} {split}", unit="set"):
        found = both_sides(folder, split, src, tgt, english)
        if found is None:
            continue
        sources, references, english_side = (side[: args.limit or None] for side in found)
        row = {"domain": domain, "split": split, "direction": f"{src}-{tgt}", "sentences": len(sources)}
        outputs = {}
        for m in models:
            if (src, tgt) in m.models.model.config.pairs() and domain in args.only.get(m.name.split(" ")[0], [domain]):
                score_model(args, m, row, sources, references, tag)
                outputs[m.name] = row.pop("output", None)
        done[src, tgt] = outputs[last.name]
        if args.pivot and PIVOT not in (src, tgt) and (src, PIVOT) in done:
            outputs[f"{last.name} via en"] = last(done[src, PIVOT], PIVOT, tgt, tag)
            row[f"{last.name} via en"] = rounded(score(outputs[f"{last.name} via en"], references))
        rows.append(row)
        if english is not None:
            rows += bucket_rows(row, outputs, references, english_side)
    return rows


def both_sides(folder: Path, split: str, src: str, tgt: str,
               english: Optional[List[str]]) -> Optional[Tuple[List[str], List[str], List[str]]]:
    """The rows of ``split`` translated in both languages (a catalog entry may lack one: its line is empty) as
    sources, references and the English of the same rows (empty when ``english`` is None); None: a file is missing."""
    sources, references = split_lines(folder, split, src), split_lines(folder, split, tgt)
    if sources is None or references is None:
        return None
    kept = [i for i, (s, t) in enumerate(zip(sources, references)) if s.strip() and t.strip()]
    return ([sources[i] for i in kept], [references[i] for i in kept],
            [english[i] for i in kept] if english is not None else [])


def bucket_rows(row: Dict, outputs: Dict[str, Optional[List[str]]], references: List[str],
                english: Optional[List[str]]) -> List[Dict]:
    """``row``'s beam and pivot outputs scored again on each of ``WORD_BUCKETS``: the entries whose English text
    has that many words."""
    rows = []
    for name, keep in WORD_BUCKETS if english else ():
        picked = [i for i, text in enumerate(english) if keep(len(text.split()))]
        if not picked:
            continue
        sub = {"domain": row["domain"], "split": f"{row['split']}:{name}", "direction": row["direction"],
               "sentences": len(picked)}
        for model, output in outputs.items():
            if output is not None:
                sub[model] = rounded(score([output[i] for i in picked], [references[i] for i in picked]))
        rows.append(sub)
    return rows


def score_model(args: argparse.Namespace, model: Scorer, row: Dict, sources: List[str], references: List[str],
                domain: str) -> None:
    """``model``'s scores into ``row``: the beam on every sentence (and on the first ``--slice`` of them, under
    ``slices``); the quality mode, whose n-best reranking costs a multiple of the beam, on that slice alone when
    one is given.  Leaves the beam's output in ``row["output"]``."""
    n = args.slice or None
    if model.quality == "best" and n:
        row.setdefault("slices", {})[model.name] = rounded(score(model(sources[:n], *row["direction"].split("-"),
                                                                       domain), references[:n]))
        return
    output = model(sources, *row["direction"].split("-"), domain)
    row[model.name], row["output"] = rounded(score(output, references)), output
    if n and model.quality == "fast":
        row.setdefault("slices", {})[model.name] = rounded(score(output[:n], references[:n]))


def test_files(rows: List[Dict], args: argparse.Namespace) -> Dict[str, str]:
    """sha256 of every test file the rows read (``DOMAIN/FILE``): a later check knows whether it has the same data."""
    folders = dict(args.data_dir)
    langs: Dict[Tuple[str, str], set] = {}
    for r in rows:
        langs.setdefault((r["domain"], r["split"].partition(":")[0]), set()).update(r["direction"].split("-"))
    return {f"{domain}/{name}": digest for (domain, split), used in sorted(langs.items())
            for name, digest in sorted(file_digests(Path(folders[domain]), split, sorted(used)).items())}


def as_results(rows: List[Dict], args: argparse.Namespace, names: List[str], out: Path,
               command: str) -> results_json.Results:
    """The rows in the ``results.json`` schema (splits ``DOMAIN/SPLIT``; paths relative to the file's folder)."""
    kinds = names + [f"{beam_names(names)[-1]} via en"]
    scores = [results_json.Score(model=kind, split=f"{row['domain']}/{row['split']}", metric=metric, value=value,
                                 direction=row["direction"])
              for row in rows for kind in kinds if kind in row for metric, value in row[kind].items()]
    scores += [results_json.Score(model=kind, split=f"{row['domain']}/{row['split']}[:{args.slice}]", metric=metric,
                                  value=value, direction=row["direction"])
               for row in rows for kind, found in row.get("slices", {}).items() for metric, value in found.items()]
    folders = dict(args.model)
    models = [results_json.ModelResult(name=k, path=results_json.relative_path(folders[k.split(" ")[0]], out.parent))
              for k in kinds if any(s.model == k for s in scores)]
    return results_json.Results(models=models, results=scores,
                                settings={"command": command, "beam": args.beam, "limit": args.limit,
                                           "slice": args.slice, "targets": args.targets,
                                           "test_files": test_files(rows, args)})


def rows_from(saved: results_json.Results) -> Tuple[List[Dict], List[str]]:
    """The rows and model names a results file was written from (``markdown`` prints the same tables again)."""
    rows: Dict[Tuple[str, str], Dict] = {}
    for s in saved.results:
        split, _, sliced = s.split.partition("[:")
        domain, _, name = split.partition("/")
        row = rows.setdefault((split, s.direction), {"domain": domain, "split": name, "direction": s.direction})
        target = row.setdefault("slices", {}) if sliced else row
        target.setdefault(s.model, {})[s.metric] = s.value
    names = [m.name for m in saved.models if not m.name.endswith(" via en")]
    return list(rows.values()), names


def card_entries(name: str, rows: List[Dict], first: int) -> List[Dict]:
    """``name``'s scores as model-card results: each split, and the first ``first`` sentences of it (its beam and
    its quality mode, "quality best" in the metric's name) where the rows have that slice."""
    entries = []
    for r in rows:
        dataset = DATASETS.get(r["domain"], (r["domain"], r["domain"]))
        found = [(r["split"], r.get(name), "")] + [
            (f"{r['split']}[:{first}]", r.get("slices", {}).get(kind), said)
            for kind, said in ((name, ""), (f"{name} best", ", quality best"))]
        entries += [{"dataset_name": dataset[0], "dataset_type": dataset[1], "split": split, "direction": r["direction"],
                     "metric": "bleu" if metric.startswith("bleu") else "chrf",
                     "metric_name": results_json.METRICS[metric] + said, "value": value}
                    for split, scores, said in found if scores for metric, value in scores.items()]
    return entries


def write_card(folder: Path, name: str, rows: List[Dict], command: str, first: int = 0) -> None:
    """Replace the card's results of these domains' splits with ``name``'s scores (weights untouched)."""
    model = Transformer.from_pretrained(folder)
    fresh = card_entries(name, rows, first)
    replaced = {(e["dataset_type"], e["split"]) for e in fresh}
    kept = [r for r in model.card_data.get("results", []) if (r.get("dataset_type"), r.get("split")) not in replaced]
    model.card_data["results"] = kept + fresh
    said = (f"The results below (beam search; `[:{first}]`: the first {first} sentences of the split, beam and "
            "quality mode; sacreBLEU 13a on detokenized output) come from " if first else
            "The results below (beam search, sacreBLEU 13a on detokenized output) come from ") + f"`{command}`."
    before = (model.card_data.get("provenance") or "").split(" The results below")[0]
    model.card_data["provenance"] = " ".join(filter(None, (before, said)))
    save_card(model, folder)


def named(kind: str):
    """argparse type of NAME=VALUE."""
    def parse(text: str) -> Tuple[str, str]:
        name, sep, value = text.partition("=")
        if not sep or not name or not value:
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE ({kind}), got {text!r}")
        return name, value
    return parse


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=named("a name and a model folder"), action="append", required=True,
                   help="NAME=FOLDER, in the table's order (the last is the one the targets are for)")
    p.add_argument("--data-dir", type=named("a domain and its corpus folder"), action="append", required=True,
                   help="DOMAIN=DIR in Multi30k's layout (captions=data/multi30k, software=data/libreoffice-help)")
    p.add_argument("--split", type=named("a domain and a split"), action="append", default=[],
                   help="DOMAIN=SPLIT or DOMAIN=SPLIT,SPLIT (default: test_2016_flickr for captions, test for the others)")
    p.add_argument("--read-as", type=named("a corpus and the domain whose tag it is read with"), action="append",
                   default=[], help="CORPUS=DOMAIN (catalogs=software is always in)")
    p.add_argument("--by-words", action="append", default=["catalogs"],
                   help="a corpus whose rows are also scored by the English side's length (catalogs always is)")
    p.add_argument("--only", type=named("a model and the corpora it is scored on"), action="append", default=[],
                   help="NAME=CORPUS[,CORPUS]: score that model on these corpora alone (default: on every one)")
    p.add_argument("--targets", choices=sorted(TARGET_SETS), default="v3",
                   help="the targets the last model is measured against (scripts/results_table.py)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--engine", default="pytorch", help="pytorch, ctranslate2 or auto (the fast rows)")
    p.add_argument("--quality", type=lambda s: s.split(","), default=["fast"], help="fast, or fast,best")
    p.add_argument("--no-pivot", dest="pivot", action="store_false",
                   help="skip the last model's pivot through English (e.g. filling the cache with an older model)")
    p.add_argument("--slice", type=int, default=0,
                   help="also record each beam row's scores on the first N sentences (split DOMAIN/SPLIT[:N]), "
                   "which a test can recompute quickly")
    p.add_argument("--workers", type=int, default=1, help="decoding processes for the beam rows (one thread each)")
    p.add_argument("--cache", type=Path, default=None,
                   help="folder keeping each output as it is made: a rerun reuses what its weights and settings made")
    p.add_argument("--limit", type=int, default=0, help="score only the first N sentences of each test set (0 = all)")
    p.add_argument("--out", type=Path, required=True, help="the results JSON")
    p.add_argument("--card", default=None, help="NAME: also write that model's scores into its card")
    args = p.parse_args(argv)
    args.split = dict(args.split)
    args.read_as = {**READ_AS, **dict(args.read_as)}
    args.only = {name: corpora.split(",") for name, corpora in args.only}
    return args


def check(args: argparse.Namespace) -> Optional[str]:
    """What is wrong with the arguments, in one line (None: nothing)."""
    for name, folder in args.model:
        if not (Path(folder) / "config.json").is_file():
            return f"--model {name}={folder}: not a model folder (no config.json)"
    for domain, folder in args.data_dir:
        if not Path(folder).is_dir():
            return f"--data-dir {domain}={folder}: no such folder"
    unknown = set(args.only) - set(dict(args.model))
    if unknown:
        return f"--only {sorted(unknown)[0]}: not one of the --model names ({', '.join(n for n, _ in args.model)})"
    if args.card is not None and args.card not in dict(args.model):
        return f"--card {args.card}: not one of the --model names ({', '.join(n for n, _ in args.model)})"
    if args.workers < 1:
        return f"--workers {args.workers}: at least 1"
    unknown = set(args.quality) - {"fast", "best"}
    return f"--quality: unknown {', '.join(sorted(unknown))} (fast, best)" if unknown else None


def main(argv: Optional[List[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--table"] and len(argv) == 2:  # print a results file's tables again (the docs quote them)
        saved = results_json.load(argv[1])
        print(markdown(*rows_from(saved), saved.settings.get("slice", 0), saved.settings.get("targets", "v3")))
        return 0
    args = parse_args(argv)
    problem = check(args)
    if problem:
        print(f"domain_results: {problem}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        models = scorers(args, stack)
        rows = evaluate(args, models)
    command = shlex.join(["python", "-m", "scripts.domain_results", *argv])
    names = [m.name for m in models]
    results_json.save(as_results(rows, args, names, args.out, command), args.out)
    print(markdown(rows, names, args.slice, args.targets))
    if args.card:
        write_card(Path(dict(args.model)[args.card]), args.card, rows, command, args.slice)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
