"""LibreOffice's help as a four-way parallel corpus in the Multi30k layout.

Each page of the help exists in every language, and each of its paragraphs and headings carries an id that is
the same in all of them: a paragraph is aligned by (page, id).  The rows (``rows.py``) are split by page
(``splits.py``) and written as ``{train,val,test}.{en,de,fr,cs}.gz`` beside ``manifest.json`` (the packages'
versions, the seed, the counts, each file's sha256 and the licence), so that ``train --data-dir``, ``evaluate``
and the scripts read it as they read Multi30k.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from tqdm.auto import tqdm

from .help_source import HELP_DIRS, HelpSource, NotHelpError, downloaded, from_debs, from_tree, licence
from .helphtml import page_paragraphs
from .rows import LENGTH_RATIO, LENGTH_SLACK, UNTRANSLATED_WORDS, Row, paragraph_rows, rejection
from .splits import Splits, split_by_page, write_layout

LANGS = ("en", "de", "fr", "cs")
NAME = "libreoffice-help"
MANIFEST = "manifest.json"


def read_help(source: HelpSource, progress: bool = True) -> Dict[str, Dict[str, Dict[str, str]]]:
    """``{page: {lang: {id: text}}}`` of every page of the help."""
    pages: Dict[str, Dict[str, Dict[str, str]]] = {}
    seen: Counter = Counter()
    with tqdm(desc="reading help pages", unit=" pages", disable=not progress) as bar:
        for lang, page, html in source.pages():
            pages.setdefault(page, {})[lang] = page_paragraphs(html)
            seen[lang] += 1
            bar.update()
    empty = [lang for lang in source.langs if not seen[lang]]
    if empty:
        raise NotHelpError(f"no help pages for {', '.join(empty)} under help/"
                           f"{'|'.join(HELP_DIRS[lang] for lang in empty)}/text: this is not LibreOffice help")
    return pages


def aligned_rows(pages: Dict[str, Dict[str, Dict[str, str]]], langs: Sequence[str], dropped: Counter,
                 progress: bool = True) -> List[Row]:
    """Every row of the help in page order: each English paragraph with the same page and id in the other
    languages, kept or dropped (``rows.rejection``), then cut into sentences where all languages agree."""
    rows: List[Row] = []
    for page in tqdm(sorted(pages), desc="aligning and cutting", unit=" pages", disable=not progress):
        found = pages[page]
        for key, english in found.get(langs[0], {}).items():
            texts = [english] + [found.get(lang, {}).get(key) for lang in langs[1:]]
            reason = rejection(texts)
            if reason is not None:
                dropped[f"paragraph: {reason}"] += 1
                continue
            rows += paragraph_rows(page, key, texts, langs, dropped)
    return rows


def counts(splits: Splits, langs: Sequence[str]) -> Dict[str, Dict[str, object]]:
    """Pages, paragraphs, rows and words (whitespace-separated, per language) of each split."""
    return {split: {"pages": len(splits.pages[split]), "paragraphs": len({r.paragraph for r in rows}),
                    "rows": len(rows),
                    "words": {lang: sum(len(r.texts[k].split()) for r in rows) for k, lang in enumerate(langs)}}
            for split, rows in splits.rows.items()}


def build_libreoffice_help(out: Path, debs: Optional[Sequence[Path]] = None, tree: Optional[Path] = None,
                           download_dir: Optional[Path] = None, seed: int = 1, val_paragraphs: int = 1000,
                           test_paragraphs: int = 2000, progress: bool = True) -> Dict[str, object]:
    """Build the corpus into ``out`` from ``debs`` (.deb files or folders), an unpacked ``tree``, or packages
    fetched with ``apt-get download`` into ``download_dir``; returns the manifest (also ``out/manifest.json``)."""
    if debs and tree:
        raise NotHelpError("give the packages (--debs) or an unpacked tree (--tree), not both")
    if tree is not None:
        source = from_tree(Path(tree), LANGS)
    elif debs:
        source = from_debs([Path(p) for p in debs], LANGS)
    else:
        source = downloaded(Path(download_dir or Path(out) / "debs"), LANGS)
    dropped: Counter = Counter()
    pages = read_help(source, progress)
    rows = aligned_rows(pages, LANGS, dropped, progress)
    splits = split_by_page(rows, seed, val_paragraphs, test_paragraphs)
    dropped["row: a repeat, or its text in train (or val, for test)"] = len(rows) - sum(map(len, splits.rows.values()))
    digests = write_layout(Path(out), splits, LANGS)
    manifest = {
        "corpus": NAME, "languages": list(LANGS),
        "source": {"kind": source.kind, "packages": source.packages},
        "licence": licence(source.copyright),
        "seed": seed, "split": {"by": "page", "val_paragraphs": val_paragraphs, "test_paragraphs": test_paragraphs},
        "filters": {"untranslated_words": UNTRANSLATED_WORDS, "length_ratio": LENGTH_RATIO,
                    "length_slack": LENGTH_SLACK},
        "pages_read": len(pages), "rows_before_split": len(rows),
        "counts": counts(splits, LANGS), "dropped": dict(sorted(dropped.items())),
        "pages": {split: splits.pages[split] for split in ("val", "test")},
        "files": digests,
    }
    text = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    (Path(out) / MANIFEST).write_text(text, encoding="utf-8")
    manifest["manifest_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return manifest
