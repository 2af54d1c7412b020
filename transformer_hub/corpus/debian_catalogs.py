"""Debian's message catalogs (German, French, Czech) as a parallel corpus in the Multi30k layout.

The packages are those the archive's Contents index lists with a ``.mo`` catalog in every language
(``contents.py``); ``apt-get download`` fetches them into a cache a later run reuses (``debian.fetch_debs``), and
their catalogs are read in Python (``mo.py``) and cleaned into rows (``catalog_rows.py``).  Rows whose text, in
any language, is in another corpus's val or test split (``held_out``: LibreOffice's help, Multi30k) go nowhere.
Val and test are whole packages (``splits.split_by_page``, a package for a page): no val or test text, in any
language, is in train.  In train a text many packages share is merged: a row whose translations another row of
the same English already has counts for that one, and one English text keeps at most ``cap`` rows, the most
frequent.  The files: ``{split}.{en,de,fr,cs}.gz``, one row a line, "" where a language lacks the entry (the
loader skips such pairs), ``{split}.ids.gz`` (``package#n``) and ``{split}.raw.gz`` (a JSON object per row:
catalog, msgctxt, plural form, the original texts with their accelerator marks), and ``manifest.json``.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from tqdm.auto import tqdm

from .catalog_rows import DETECT_CONFIDENCE, DETECT_LETTERS, Entry, package_entries
from .contents import CATALOG_DIR, ContentsError, apt_contents_files, read_catalog_index
from .debian import PackageError, deb_files, fetch_debs, read_deb
from .help_source import licence
from .mo import CatalogError, read_mo
from .rows import LENGTH_RATIO, LENGTH_SLACK, Row
from .splits import SPLITS, Splits, page_order, split_by_page, write_layout

LANGS = ("en", "de", "fr", "cs")
NAME = "debian-catalogs"
MANIFEST = "manifest.json"
CAP = 3  # rows one English text keeps in train (its most frequent translations)
BATCH = 20  # packages per apt-get download


def select_packages(langs: Sequence[str], contents: Optional[Sequence[Path]] = None,
                    packages: Optional[Sequence[str]] = None, limit: Optional[int] = None,
                    seed: int = 1) -> Tuple[List[str], Dict[str, object]]:
    """The packages with a catalog in every language of ``langs`` (English aside), narrowed to ``packages`` and
    to ``limit`` of them (chosen by ``seed``); and what the Contents index says (packages per language)."""
    index = read_catalog_index(list(contents) if contents else apt_contents_files(), langs[1:])
    shipping = index.shipping_all(langs[1:])
    if not shipping:
        raise ContentsError(f"the Contents index lists no package with catalogs in {', '.join(langs[1:])}")
    chosen = shipping
    if packages:
        unknown = sorted(set(packages) - set(shipping))
        if unknown:
            raise ContentsError(f"{', '.join(unknown)}: no catalog in each of {', '.join(langs[1:])} "
                                "per the Contents index")
        chosen = sorted(set(packages))
    if limit is not None:
        chosen = sorted(page_order(chosen, seed)[:limit])
    return chosen, {"packages_per_language": index.counts(), "packages_with_all": len(shipping)}


def read_package(path: Path, langs: Sequence[str], dropped: Counter) -> Tuple[Dict[str, object], List[Entry]]:
    """One downloaded package: its record (version, sha256, licence, catalogs) and its rows."""
    deb = read_deb(path)
    prefixes = {CATALOG_DIR.format(lang=lang): lang for lang in langs[1:]}
    catalogs: Dict[str, Dict[str, object]] = {}
    copyright = None
    for inner, data in deb_files(deb, [*prefixes, f"usr/share/doc/{deb.name}/copyright"]):
        if inner.endswith("/copyright"):
            copyright = data.decode("utf-8", errors="replace")
            continue
        lang = next((lang for prefix, lang in prefixes.items() if inner.startswith(prefix)), None)
        if lang is None or not inner.endswith(".mo") or "/" in inner[len(CATALOG_DIR.format(lang=lang)):]:
            continue
        try:
            catalogs.setdefault(lang, {})[inner.rsplit("/", 1)[1][:-3]] = read_mo(data, f"{path.name}:{inner}")
        except CatalogError:
            dropped["catalog: unreadable .mo"] += 1
    found = licence({deb.name: copyright} if copyright else {})
    record = {"version": deb.version, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
              "license": found["license"], "upstream": found["upstream"],
              "catalogs": {lang: sorted(catalogs.get(lang, {})) for lang in langs[1:]}}
    return record, package_entries(deb.name, catalogs, langs, dropped)


def held_out_texts(folders: Sequence[Path], langs: Sequence[str]) -> Set[Tuple[int, str]]:
    """(language index, text) of every line of every split but train of the corpora in ``folders``."""
    texts: Set[Tuple[int, str]] = set()
    for folder in map(Path, folders):
        files = [path for path in sorted(folder.glob("*.gz")) if len(path.name.split(".")) == 3]
        if not files:
            raise PackageError(f"--held-out {folder}: no corpus there ({{split}}.{{lang}}.gz files)")
        for path in files:
            split, lang, _ = path.name.split(".")
            if split != "train" and lang in langs:
                lines = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace").splitlines()
                texts.update((langs.index(lang), line.strip()) for line in lines if line.strip())
    return texts


def merged_train(rows: Sequence[Row], cap: int, dropped: Counter, shared: Dict[Tuple[str, str], int]) -> List[Row]:
    """Train's rows with the repeats across packages merged and each English text capped (module docstring);
    ``shared`` gets each kept row's (package, key) -> how many rows it stands for."""
    variants: Dict[str, Counter] = {}
    first: Dict[Tuple[str, ...], Row] = {}
    for row in rows:
        variants.setdefault(row.texts[0], Counter())[row.texts] += 1
        first.setdefault(row.texts, row)
    kept: List[Row] = []
    for counts in variants.values():
        groups: List[List] = []  # [texts, count]
        for texts in sorted(counts, key=lambda t: (-sum(map(bool, t)), -counts[t], t)):
            home = next((g for g in groups if all(not a or a == b for a, b in zip(texts, g[0]))), None)
            if home is None:
                groups.append([texts, counts[texts]])
            else:
                home[1] += counts[texts]
        groups.sort(key=lambda g: (-g[1], g[0]))
        dropped["train: a repeat, merged"] += sum(counts.values()) - len(groups)
        dropped["train: over the cap per English text"] += max(0, len(groups) - cap)
        for texts, count in groups[:cap]:
            kept.append(first[texts])
            shared[(first[texts].page, first[texts].key)] = count
    order = {id(row): n for n, row in enumerate(rows)}
    return sorted(kept, key=lambda row: order[id(row)])


def language_size(rows: Sequence[Row]) -> int:
    """The fewest rows any translation language has among ``rows`` (val's and test's size)."""
    return min(sum(1 for row in rows if row.texts[k]) for k in range(1, len(LANGS)))


def counts(splits: Splits, langs: Sequence[str]) -> Dict[str, Dict[str, object]]:
    """Per split: packages, rows, and per language its rows and their words (English's and its own)."""
    out = {}
    for split, rows in splits.rows.items():
        per = {lang: {"rows": sum(1 for r in rows if r.texts[k]),
                      "words_en": sum(len(r.texts[0].split()) for r in rows if r.texts[k]),
                      "words": sum(len(r.texts[k].split()) for r in rows if r.texts[k])}
               for k, lang in enumerate(langs) if k}
        out[split] = {"packages": len(splits.pages[split]), "rows": len(rows), "languages": per}
    return out


def read_packages(debs: Dict[str, Path], held: Set[Tuple[int, str]], dropped: Counter, failed: Dict[str, str],
                  progress: bool) -> Tuple[Dict[str, Dict[str, object]], List[Row], Dict[Tuple[str, str], Entry]]:
    """Every package's record, its rows (less those with a ``held`` text) and each row's entry by (package, key);
    a package that cannot be read goes into ``failed``."""
    records: Dict[str, Dict[str, object]] = {}
    rows: List[Row] = []
    entries: Dict[Tuple[str, str], Entry] = {}
    for name in tqdm(sorted(debs), desc="reading catalogs", unit=" packages", disable=not progress):
        try:
            records[name], found = read_package(debs[name], LANGS, dropped)
        except PackageError as exc:
            failed[name] = str(exc)
            continue
        for number, entry in enumerate(found):
            if any((k, text) in held for k, text in enumerate(entry.texts) if text):
                dropped["entry: in another corpus's val or test"] += 1
                continue
            rows.append(Row(name, str(number), entry.texts))
            entries[(name, str(number))] = entry
    return records, rows, entries


def project_rows(rows: Sequence[Row], splits: Splits) -> List[Row]:
    """The rows of the packages held out as projects (a user's own catalogs, for the adaptation measurement):
    those with no text, in any language, in train, val or test, each text once, so nothing of them is trained on
    or scored twice."""
    taken = {(k, text) for split in SPLITS for row in splits.rows[split] for k, text in enumerate(row.texts) if text}
    kept = []
    for row in rows:
        keys = [(k, text) for k, text in enumerate(row.texts) if text]
        if not any(key in taken for key in keys):
            taken.update(keys)
            kept.append(row)
    return kept


def _raw_line(entry: Entry, shared: int, langs: Sequence[str]) -> str:
    return json.dumps({"catalog": entry.catalog, "context": entry.context, "form": entry.form,
                       "rows_merged": shared, "raw": dict(zip(langs, entry.raw))}, ensure_ascii=False, sort_keys=True)


def build_debian_catalogs(out: Path, cache: Path, contents: Optional[Sequence[Path]] = None,
                          packages: Optional[Sequence[str]] = None, limit: Optional[int] = None,
                          held_out: Sequence[Path] = (), seed: int = 1, val_entries: int = 2000,
                          test_entries: int = 4000, cap: int = CAP, projects: Sequence[str] = (),
                          progress: bool = True) -> Dict[str, object]:
    """Build the corpus into ``out`` from packages downloaded into (or found in) ``cache``; returns the manifest
    (also ``out/manifest.json``).  Val and test hold at least ``val_entries`` and ``test_entries`` rows in each
    translation language; the packages named in ``projects`` are the ``projects`` split (``project_rows``)."""
    chosen, index = select_packages(LANGS, contents, packages, limit, seed)
    missing = sorted(set(projects) - set(chosen))
    if missing:
        raise ContentsError(f"--projects {' '.join(missing)}: not among the packages chosen (each must ship "
                            f"catalogs in {', '.join(LANGS[1:])})")
    debs, failed = fetch_debs(chosen, Path(cache), batch=BATCH, progress=progress)
    dropped: Counter = Counter()
    held = held_out_texts(held_out, LANGS)
    records, rows, entries = read_packages(debs, held, dropped, failed, progress)
    own = [r for r in rows if r.page in set(projects)]
    rows = [r for r in rows if r.page not in set(projects)]
    splits = split_by_page(rows, seed, val_entries, test_entries, size=language_size)
    held_apart = set(splits.pages["val"] + splits.pages["test"])
    shared: Dict[Tuple[str, str], int] = {}
    train = merged_train([r for r in rows if r.page not in held_apart], cap, dropped, shared)
    dropped["val/test: a text in train, or repeated"] = sum(r.page in held_apart for r in rows) - \
        len(splits.rows["val"]) - len(splits.rows["test"])
    splits = Splits({**splits.rows, "train": train}, splits.pages)
    if projects:
        splits.rows["projects"], splits.pages["projects"] = project_rows(own, splits), sorted(set(projects))
    for split in splits.rows:  # a package none of whose rows is left is in no split
        for package in splits.pages[split]:
            records[package]["split"] = split
    sides = {"ids": lambda row: f"{row.page}#{row.key}",
             "raw": lambda row: _raw_line(entries[(row.page, row.key)], shared.get((row.page, row.key), 1), LANGS)}
    digests = write_layout(Path(out), splits, LANGS, sides)
    manifest = {
        "corpus": NAME, "languages": list(LANGS), "contents": index,
        "packages_chosen": len(chosen), "packages_read": len(records),
        "failed": dict(sorted(failed.items())),
        "licences": dict(Counter(str(r["license"]) for r in records.values()).most_common()),
        "seed": seed, "split": {"by": "package", "val_entries": val_entries, "test_entries": test_entries,
                                "projects": sorted(projects)},
        "filters": {"length_ratio": LENGTH_RATIO, "length_slack": LENGTH_SLACK, "detect_letters": DETECT_LETTERS,
                    "detect_confidence": DETECT_CONFIDENCE, "cap_per_english": cap,
                    "held_out": len(held)},
        "rows_before_split": len(rows) + len(own), "counts": counts(splits, LANGS), "dropped": dict(sorted(dropped.items())),
        "packages": dict(sorted(records.items())), "files": digests,
    }
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    (Path(out) / MANIFEST).write_text(text, encoding="utf-8")
    manifest["manifest_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return manifest
