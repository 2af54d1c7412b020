"""Which Debian packages ship message catalogs, from the archive's Contents index.

The archive lists every file of every package in ``Contents-ARCH`` (and ``Contents-all`` for packages of any
architecture): one line per path, ``PATH  SECTION/PACKAGE[,SECTION/PACKAGE...]``.  ``apt-file update`` fetches
them into apt's lists (compressed as apt keeps them: lz4, gzip, xz); ``apt-get indextargets`` names the files and
``apt-helper cat-file`` decompresses any of them.
"""
from __future__ import annotations

import gzip
import lzma
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Sequence, Set

from .debian import PackageError

APT_HELPER = Path("/usr/lib/apt/apt-helper")
CATALOG_DIR = "usr/share/locale/{lang}/LC_MESSAGES/"
_CATALOG = re.compile(r"usr/share/locale/([^/]+)/LC_MESSAGES/([^/]+)\.mo$")


class ContentsError(PackageError):
    """No Contents index to read, or one that cannot be read."""


@dataclass(frozen=True)
class CatalogIndex:
    """The packages shipping catalogs: ``by_lang`` {language: {package: its catalog names (domains)}}."""

    by_lang: Dict[str, Dict[str, Set[str]]]

    def shipping_all(self, langs: Sequence[str]) -> List[str]:
        """The packages with a catalog in every language of ``langs``, sorted."""
        sets = [set(self.by_lang.get(lang, {})) for lang in langs]
        return sorted(set.intersection(*sets)) if sets else []

    def counts(self) -> Dict[str, int]:
        """Packages per language."""
        return {lang: len(packages) for lang, packages in sorted(self.by_lang.items())}


def apt_contents_files() -> List[Path]:
    """The Contents files apt has fetched (``apt-get indextargets``, identifier ``Contents-deb``)."""
    if shutil.which("apt-get") is None:
        raise ContentsError("apt-get is not installed: pass the archive's Contents-ARCH files with --contents")
    done = subprocess.run(["apt-get", "indextargets", "--format", "$(FILENAME)", "Identifier: Contents-deb"],
                          capture_output=True, text=True, check=False)
    files = [Path(line) for line in done.stdout.split() if Path(line).is_file()]
    if done.returncode or not files:
        raise ContentsError("apt has no Contents index: `apt-get install apt-file && apt-file update` fetches it "
                            "(or pass Contents-ARCH files with --contents)")
    return sorted(files)


def contents_lines(path: Path) -> Iterator[str]:
    """The lines of one Contents file, decompressed by ``apt-helper cat-file`` (any compression apt keeps) or,
    for plain, gzip and xz files, in Python."""
    path = Path(path)
    if not path.is_file():
        raise ContentsError(f"--contents {path}: no such file")
    if path.suffix not in (".gz", ".xz", "") and not APT_HELPER.is_file():
        raise ContentsError(f"cannot read {path}: apt's {APT_HELPER} decompresses {path.suffix} files; "
                            "decompress it yourself, or pass a plain, .gz or .xz Contents file")
    if path.suffix in (".gz", ".xz", ""):
        opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
        try:
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
                yield from fh
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise ContentsError(f"cannot read {path}: {exc}") from exc
        return
    with subprocess.Popen([str(APT_HELPER), "cat-file", str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace") as proc:
        yield from proc.stdout
        stderr = proc.stderr.read()
    if proc.returncode:
        raise ContentsError(f"apt-helper cannot read {path}: {stderr.strip() or proc.returncode}")


def catalog_index(lines: Iterable[str], langs: Sequence[str]) -> CatalogIndex:
    """Every ``usr/share/locale/LANG/LC_MESSAGES/*.mo`` of ``langs`` in Contents ``lines``."""
    wanted = set(langs)
    by_lang: Dict[str, Dict[str, Set[str]]] = {lang: {} for lang in langs}
    for line in lines:
        if not line.startswith("usr/share/locale/"):
            continue
        parts = line.rsplit(None, 1)  # paths may hold spaces; the package list does not
        found = _CATALOG.match(parts[0]) if len(parts) == 2 else None
        if not found or found.group(1) not in wanted:
            continue
        for qualified in parts[1].split(","):
            package = qualified.rsplit("/", 1)[-1].strip()
            if package:
                by_lang[found.group(1)].setdefault(package, set()).add(found.group(2))
    return CatalogIndex(by_lang)


def read_catalog_index(paths: Sequence[Path], langs: Sequence[str]) -> CatalogIndex:
    """The catalogs of ``langs`` in the Contents files ``paths``, merged."""
    return catalog_index((line for path in paths for line in contents_lines(path)), langs)
