#!/usr/bin/env python
"""Localization files measured: ``python -m benchmarks l10n [--limit N] [--speed-entries N] [--out docs]``.

On the Debian catalogs corpus's test split (``--data-dir``, built by ``python -m transformer_hub corpus
debian-catalogs``; its ``test.raw.gz`` keeps each entry's original texts, accelerator marks included), English into
German, French and Czech with ``--model`` (the shipped v4 unless told; docs/l10n_results.json is v3's), domain "software":

* (a) the entries whose English holds placeholders, tags or accelerators (``find_pieces``, ``strip_accelerator``
  with the catalog's marker; a seeded sample of ``--limit``): the accelerator taken off, each through the text path
  (``translate_texts``); the share of outputs holding exactly the source's pieces (``same_pieces``) and how many
  were left untranslated with a warning;
* (b) the same entries as one ``.po`` per package (msgctxt kept, ``c-format`` where the English has a printf
  directive), each through the document path ``translate-file`` uses (``read_document``,
  ``translate_document_texts``, ``Document.write``); on every output ``msgfmt --check --use-fuzzy`` and
  translate-toolkit's ``pofilter`` (``printf``, ``variables``, ``xmltags``, ``accelerators``; ``--gnome`` for ``_``
  catalogs, ``--kde`` for ``&`` ones) and, after polib parses both, the same entries in the same order; and the
  same entries (their accelerator taken off) as one XLIFF 1.2 and one XLIFF 2.0 file per package through the same
  path, each output validated against its OASIS schema (``l10n_xliff``; ``--schemas``);
* (c) sacreBLEU (cased) of (a)'s outputs against the references (their accelerators taken off), counted on the
  words: the pieces taken out of both (a piece is copied, so its characters would count as matched n-grams, and
  tags and links are long), beside the same with the pieces left in; against the BLEU of as many entries with
  neither placeholders nor accelerators, each drawn to have the words (outside the pieces) of one entry of (a),
  from its package where one has, so that both sides are strings of the same length from the same programs; the gap
  with a 95 % bootstrap interval (100 short strings a side: a few BLEU either way is noise);
* (d) speed: ``--speed-entries`` test entries (distinct msgids, German) as one ``.po`` through the document path
  against the same strings through the call ``POST /translate`` makes (``translate_texts`` with the texts as one
  list, ``keep_target_language``), after one untimed call of each, ``--rounds`` times, alternately first, in one
  run; the ratio of the summed seconds, each round's, and the ratio of the process's CPU seconds (decoding runs in
  this process: its threads are counted, the machine's other load is not), with the load average after each
  round.

Writes ``OUT/l10n_results.json`` (the figures, the sizes, the command).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import polib
import sacrebleu

from transformer_hub import Transformer
from transformer_hub.decoding import DecodingConfig
from transformer_hub.formats import read_document, translate_document_texts
from transformer_hub.text.pipeline import Models, OneModel, translate_texts
from transformer_hub.text.placeholders import accelerator_marker, find_pieces, same_pieces, strip_accelerator

from . import l10n_xliff

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "space" / "models" / "multilingual-v4"
TARGETS = ("de", "fr", "cs")
DOMAIN = "software"
POFILTER = shutil.which("pofilter", path=str(Path(sys.executable).parent)) or shutil.which("pofilter")
UNTRANSLATED = "kept untranslated"  # the start of the pipeline's warning for an entry that could not keep its pieces
WARMUP = 50  # entries of (d)'s untimed first call of each side
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # characters no XML file may hold


# --------------------------------------------------------------------------- the entries
def read_rows(data_dir: Path, split: str = "test") -> List[dict]:
    """The split's rows (``SPLIT.raw.gz``), each with its catalog's accelerator marker as ``marker``."""
    with gzip.open(data_dir / f"{split}.raw.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    by_catalog: Dict[str, List[dict]] = defaultdict(list)
    for row in rows:
        by_catalog[row["catalog"]].append(row)
    for catalog_rows in by_catalog.values():
        marker = accelerator_marker([r["raw"]["en"] for r in catalog_rows])
        for row in catalog_rows:
            row["marker"] = marker
    return rows


def stripped(row: dict, lang: str) -> str:
    """The row's ``lang`` text without its accelerator mark."""
    text = row["raw"].get(lang) or ""
    return strip_accelerator(text, row["marker"])[0] if row["marker"] else text


def protected(row: dict) -> bool:
    """Whether the row's English holds a placeholder, tag, escape, link or accelerator."""
    english = row["raw"]["en"]
    return bool(find_pieces(english)) or bool(row["marker"] and strip_accelerator(english, row["marker"])[1])


def words(text: str) -> str:
    """``text`` without its pieces, its spaces collapsed: the words a model translated."""
    pieces, out, at = find_pieces(text), [], 0
    for piece in pieces:
        out.append(text[at:piece.start])
        at = piece.end
    return " ".join(" ".join(out + [text[at:]]).split())


def samples(rows: Sequence[dict], limit: int, seed: int = 0) -> Dict[str, List[dict]]:
    """Seeded samples of ``limit`` distinct singular rows that have every target: with pieces, and as many without,
    each of those drawn for one with pieces (``matched``)."""
    usable = [r for r in rows if r["form"] == "singular" and all(r["raw"].get(t) for t in TARGETS + ("en",))]
    usable = list({(r["catalog"], r["context"], r["raw"]["en"]): r for r in usable}.values())  # distinct msgids
    rng = random.Random(seed)
    pieces = [r for r in usable if protected(r)]
    pieces = rng.sample(pieces, min(limit, len(pieces)))
    return {"pieces": pieces, "plain": matched(pieces, [r for r in usable if not protected(r)], rng)}


def matched(pieces: Sequence[dict], plain: Sequence[dict], rng: random.Random) -> List[dict]:
    """One row of ``plain`` per row of ``pieces`` (while any is left), each not taken before: of the word count
    nearest to the words of its English outside the pieces, from its package when one of that count is there."""
    left = list(plain)
    rng.shuffle(left)
    chosen = []
    for row in pieces:
        if not left:
            break
        size = len(words(stripped(row, "en")).split())
        best = min(range(len(left)), key=lambda i: (abs(len(left[i]["raw"]["en"].split()) - size),
                                                  left[i]["catalog"] != row["catalog"]))
        chosen.append(left.pop(best))
    return chosen


# --------------------------------------------------------------------------- (a) and (c): the text path
def text_path(models: Models, rows: Sequence[dict], tgt: str, config: DecodingConfig, engine: str) -> dict:
    sources = [stripped(r, "en") for r in rows]
    results = translate_texts(models, sources, config, src_lang="en", tgt_lang=tgt, domain=DOMAIN, engine=engine)
    outputs = [r.text for r in results]
    return {"entries": len(rows), "outputs": outputs, "references": [stripped(r, tgt) for r in rows],
            "same_pieces": sum(same_pieces(s, o) for s, o in zip(sources, outputs)),
            "untranslated_with_warning": sum(any(w.startswith(UNTRANSLATED) for w in r.warnings) for r in results),
            "words_per_entry": round(sum(len(words(s).split()) for s in sources) / max(len(rows), 1), 2)}


def bleu(outputs: List[str], references: List[str]) -> float:
    return round(sacrebleu.corpus_bleu(outputs, [references]).score, 2)


def bleu_row(with_pieces: dict, without: dict, resamples: int = 1000) -> dict:
    """(c): BLEU on the words of the entries with pieces, the same with the pieces in, and on those without; the
    gap (without - with) and its 95 % bootstrap interval (each sample's entries drawn again, ``resamples`` times)."""
    ours = ([words(o) for o in with_pieces["outputs"]], [words(r) for r in with_pieces["references"]])
    theirs = (without["outputs"], without["references"])
    row = {"bleu_with_pieces": bleu(*ours), "bleu_with_pieces_kept_in": bleu(with_pieces["outputs"],
                                                                             with_pieces["references"]),
           "bleu_without": bleu(*theirs), "entries_without": without["entries"],
           "words_per_entry": {"with_pieces": with_pieces["words_per_entry"], "without": without["words_per_entry"]}}
    row["bleu_gap"] = round(row["bleu_without"] - row["bleu_with_pieces"], 2)
    rng = random.Random(0)

    def drawn(side) -> float:
        picks = [rng.randrange(len(side[0])) for _ in side[0]]
        return sacrebleu.corpus_bleu([side[0][i] for i in picks], [[side[1][i] for i in picks]]).score

    if ours[0] and theirs[0]:
        gaps = sorted(drawn(theirs) - drawn(ours) for _ in range(resamples))
        row["bleu_gap_95"] = [round(gaps[int(0.025 * resamples)], 2), round(gaps[int(0.975 * resamples) - 1], 2)]
    return row


# --------------------------------------------------------------------------- (b) catalogs through the document path
def build_po(rows: Sequence[dict]) -> bytes:
    """A ``.po`` of ``rows`` (English msgids as the catalog had them, accelerators included), untranslated."""
    catalog = polib.POFile()
    catalog.metadata = {"Project-Id-Version": "l10n benchmark", "MIME-Version": "1.0",
                        "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    for row in rows:
        english = row["raw"]["en"]
        flags = ["c-format"] if any(p.kind == "printf" for p in find_pieces(english)) else []
        catalog.append(polib.POEntry(msgid=english, msgstr="", msgctxt=row["context"], flags=flags))
    return str(catalog).encode("utf-8")


def document_path(models: Models, data: bytes, tgt: str, config: DecodingConfig, engine: str,
                  suffix: str = ".po") -> bytes:
    """``data`` (a ``.po``, or the file ``suffix`` names) translated as ``translate-file`` does it."""
    document = read_document(data, suffix, tgt_lang=tgt)
    done = translate_document_texts(document.texts, models, "en", tgt_lang=tgt, config=config,
                                    domain=DOMAIN, engine=engine)
    return document.write(done)


def keys(catalog: polib.POFile) -> List[tuple]:
    return [(e.msgctxt, e.msgid, e.msgid_plural) for e in catalog]


def check_po(source: bytes, output: bytes, marker, folder: Path) -> dict:
    """msgfmt, pofilter and polib on one output file."""
    path, failures = folder / "out.po", folder / "failures.po"
    path.write_bytes(output)
    failures.unlink(missing_ok=True)
    msgfmt = subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", "/dev/null", str(path)],
                            capture_output=True, text=True)
    style = "--kde" if marker == "&" else "--gnome"
    subprocess.run([POFILTER, style, "-t", "printf", "-t", "variables", "-t", "xmltags", "-t", "accelerators",
                    str(path), str(failures)], capture_output=True, text=True, check=True)
    failed = [e for e in polib.pofile(str(failures))] if failures.exists() else []
    before, after = polib.pofile(source.decode("utf-8")), polib.pofile(output.decode("utf-8"))
    errors = msgfmt.stderr.replace(str(path), path.name).strip().splitlines() if msgfmt.returncode else []
    return {"msgfmt": msgfmt.returncode == 0, "msgfmt_errors": errors[:3],
            "pofilter": not failed, "pofilter_failures": [[e.msgid, e.msgstr, e.tcomment] for e in failed][:5],
            "same_entries": keys(before) == keys(after), "entries": len(before),
            "translated": sum(bool(e.msgstr) for e in after), "fuzzy": sum("fuzzy" in e.flags for e in after)}


def catalogs(models: Models, rows: Sequence[dict], tgt: str, config: DecodingConfig, engine: str,
             schemas: dict) -> dict:
    """(b): one ``.po`` per package through the document path, checked; the same entries as XLIFF files."""
    by_catalog: Dict[str, List[dict]] = defaultdict(list)
    for row in rows:
        by_catalog[row["catalog"]].append(row)
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, catalog_rows in sorted(by_catalog.items()):
            source = build_po(catalog_rows)
            output = document_path(models, source, tgt, config, engine)
            files[name] = check_po(source, output, catalog_rows[0]["marker"], Path(tmp))
    count = len(files)
    out = {"files": count, "entries": sum(f["entries"] for f in files.values()),
           "translated": sum(f["translated"] for f in files.values())}
    for check in ("msgfmt", "pofilter", "same_entries"):
        out[f"{check}_passed"] = sum(f[check] for f in files.values())
        out[f"{check}_pass_pct"] = round(100 * out[f"{check}_passed"] / count, 2)
    groups = {name: [stripped(r, "en") for r in group if not _NOT_XML.search(r["raw"]["en"])]
              for name, group in by_catalog.items()}
    out["xliff"] = l10n_xliff.xliff_files(
        {name: texts for name, texts in groups.items() if texts},
        lambda data, suffix: document_path(models, data, tgt, config, engine, suffix), schemas)
    out["per_file"] = files
    return out


# --------------------------------------------------------------------------- (d) speed
def speed(models: Models, rows: Sequence[dict], entries: int, rounds: int, config: DecodingConfig, engine: str) -> dict:
    """Seconds of one ``.po`` of ``entries`` rows through the document path and of the same strings through the
    pipeline call ``POST /translate`` makes, ``rounds`` times, alternately first, after one untimed call of each."""
    distinct = list({(r["context"], r["raw"]["en"]): r for r in rows if r["form"] == "singular"}.values())[:entries]
    data = build_po(distinct)
    texts = read_document(data, ".po", tgt_lang="de").texts  # the strings the document path decodes

    def run(path: str, po: bytes, strings: List[str]) -> None:
        if path == "document":
            document_path(models, po, "de", config, engine)
        else:  # as /translate: its texts in one list, none refused for being in the target language already
            translate_texts(models, strings, config, src_lang="en", tgt_lang="de", keep_target_language=True,
                            domain=DOMAIN, engine=engine)

    run("document", build_po(distinct[:WARMUP]), [])
    run("text", b"", texts[:WARMUP])
    seconds: Dict[str, List[float]] = {"document": [], "text": []}
    cpu: Dict[str, List[float]] = {"document": [], "text": []}
    load = [round(os.getloadavg()[0], 2)]
    for r in range(rounds):
        for path in (("document", "text") if r % 2 == 0 else ("text", "document")):
            start, start_cpu = time.perf_counter(), time.process_time()
            run(path, data, texts)
            seconds[path].append(round(time.perf_counter() - start, 6))  # microseconds: a fast path is not 0
            cpu[path].append(round(time.process_time() - start_cpu, 6))
        load.append(round(os.getloadavg()[0], 2))
    return {"entries": len(distinct), "texts": len(texts), "rounds": rounds, "seconds": seconds,
            "round_ratios": [_ratio(d, t) for d, t in zip(seconds["document"], seconds["text"])],
            "ratio": _ratio(sum(seconds["document"]), sum(seconds["text"])),
            "cpu_seconds": cpu, "cpu_ratio": _ratio(sum(cpu["document"]), sum(cpu["text"])),
            "load_average": load}


def _ratio(numerator: float, denominator: float) -> Optional[float]:
    """``numerator / denominator`` to 3 places; None where the reference took no measurable time."""
    return round(numerator / denominator, 3) if denominator > 0 else None


# --------------------------------------------------------------------------- the command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data" / "debian-catalogs")
    parser.add_argument("--model", default=str(MODEL))
    parser.add_argument("--limit", type=int, default=100, help="entries with pieces per language, (a)-(c)")
    parser.add_argument("--beam", type=int, default=5, help="beam size of (a)-(c)")
    parser.add_argument("--speed-entries", "--entries", type=int, default=2000, help="entries of (d)'s .po")
    parser.add_argument("--speed-beam", type=int, default=1, help="beam size of (d) (1: greedy, the search that "
                        "leaves the document path's own work the largest share)")
    parser.add_argument("--rounds", type=int, default=3, help="(d)'s rounds")
    parser.add_argument("--engine", default="ctranslate2", choices=["pytorch", "ctranslate2"])
    parser.add_argument("--schemas", type=Path, default=ROOT / "data" / "xliff-schemas",
                        help="the OASIS XLIFF schemas (downloaded from Debian's archive when absent)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")


def load_models(path: str) -> Models:
    return OneModel(Transformer.from_pretrained(path).eval())


def search(beam: int) -> DecodingConfig:
    return DecodingConfig(strategy="greedy") if beam == 1 else DecodingConfig(strategy="beam", beam_size=beam)


def run(args: argparse.Namespace) -> dict:
    if not (args.data_dir / "test.raw.gz").is_file():
        raise SystemExit(f"benchmark: error: no catalogs corpus in {args.data_dir}: build it with `python -m "
                         "transformer_hub corpus debian-catalogs --out DIR` (docs/debian-catalogs.md)")
    if shutil.which("msgfmt") is None or POFILTER is None:
        raise SystemExit("benchmark: error: needs msgfmt (apt-get install gettext) and pofilter (translate-toolkit)")
    schemas = l10n_xliff.load_schemas(l10n_xliff.fetch_schemas(args.schemas))
    models = load_models(args.model)
    rows = read_rows(args.data_dir)
    sample = samples(rows, args.limit)
    config = search(args.beam)
    out = {"command": " ".join(["python -m benchmarks l10n", *sys.argv[2:]]), "model": Path(args.model).name,
           "domain": DOMAIN, "engine": args.engine, "beam": args.beam, "split": "test",
           "sample": f"(a)-(c): a seeded sample of {args.limit} distinct singular test entries with placeholders, tags "
                     "or accelerators (the same for each target) and one without for each, of as many words; (b): "
                     "those entries as one .po, one XLIFF 1.2 and one XLIFF 2.0 file per package; (d): "
                     f"{args.speed_entries} test entries, beam {args.speed_beam} (1: greedy), {args.rounds} rounds",
           "directions": {}}
    for tgt in TARGETS:
        with_pieces = text_path(models, sample["pieces"], tgt, config, args.engine)
        without = text_path(models, sample["plain"], tgt, config, args.engine)
        row = {"entries": with_pieces["entries"],
               "same_pieces_pct": round(100 * with_pieces["same_pieces"] / with_pieces["entries"], 2),
               "untranslated_with_warning": with_pieces["untranslated_with_warning"],
               **bleu_row(with_pieces, without),
               "catalogs": catalogs(models, sample["pieces"], tgt, config, args.engine, schemas)}
        out["directions"][f"en-{tgt}"] = row
        print(f"en-{tgt}: {json.dumps({k: v for k, v in row.items() if k != 'catalogs'})}", file=sys.stderr)
    out["speed"] = speed(models, rows, args.speed_entries, args.rounds, search(args.speed_beam), args.engine)
    out["speed"]["beam"] = args.speed_beam
    print(f"speed: {json.dumps(out['speed'])}", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "l10n_results.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return out
