"""Where LibreOffice's help is read from: Debian's ``libreoffice-help-*`` packages (.deb files, read without
installing them, or fetched with ``apt-get download``), or a tree they were unpacked into (``dpkg -x``, or an
installed system's ``/``).  Each gives the help's pages per language, the packages' versions and their
``copyright`` files."""
from __future__ import annotations

import gzip
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from .debian import PackageError, apt_download, deb_files, find_debs

HELP_ROOT = "usr/share/libreoffice/help"
HELP_DIRS = {"en": "en-US", "de": "de", "fr": "fr", "cs": "cs"}  # language -> its folder under help/


def package_name(lang: str) -> str:
    """The Debian package of a language's help: ``libreoffice-help-en-us``, ``libreoffice-help-de``, ..."""
    return f"libreoffice-help-{HELP_DIRS[lang].lower()}"


class NotHelpError(PackageError):
    """A folder or package that holds no LibreOffice help in a language asked for."""


@dataclass
class HelpSource:
    """The help of ``langs``: ``pages()`` yields ``(lang, page, html)``; ``packages``: each package's name ->
    version (and the .deb's sha256 when read from one); ``copyright``: each package's copyright file, if found."""

    kind: str  # "debs" or "tree"
    langs: Tuple[str, ...]
    packages: Dict[str, Dict[str, Optional[str]]]
    copyright: Dict[str, str]
    _debs: Optional[Dict[str, object]] = None
    _help: Optional[Path] = None

    def pages(self) -> Iterator[Tuple[str, str, str]]:
        """``(lang, page, html)`` for every ``text/**.html`` page, ``page`` relative to ``text/``, in order."""
        for lang in self.langs:
            if self._debs is not None:
                prefix = f"{HELP_ROOT}/{HELP_DIRS[lang]}/text/"
                files = sorted((path, data) for path, data in deb_files(self._debs[lang], [prefix])
                               if path.endswith(".html"))
                for path, data in files:
                    yield lang, path[len(prefix):], data.decode("utf-8", errors="replace")
            else:
                base = self._help / HELP_DIRS[lang] / "text"
                for path in sorted(base.rglob("*.html")):
                    yield lang, path.relative_to(base).as_posix(), path.read_text("utf-8", errors="replace")


def from_debs(paths: Sequence[Path], langs: Sequence[str]) -> HelpSource:
    """The help in the packages among ``paths`` (.deb files or folders of them)."""
    names = [package_name(lang) for lang in langs]
    debs = find_debs(paths, names)
    packages, copyright = {}, {}
    for name, deb in debs.items():
        packages[name] = {"version": deb.version, "sha256": hashlib.sha256(deb.path.read_bytes()).hexdigest()}
        for _, data in deb_files(deb, [f"usr/share/doc/{name}/copyright"]):
            copyright[name] = data.decode("utf-8", errors="replace")
    return HelpSource("debs", tuple(langs), packages, copyright,
                      _debs={lang: debs[package_name(lang)] for lang in langs})


def downloaded(dest: Path, langs: Sequence[str]) -> HelpSource:
    """The help of ``langs`` from packages ``apt-get download`` puts into ``dest`` (ones already there are kept)."""
    return from_debs(apt_download([package_name(lang) for lang in langs], dest), langs)


def help_folder(tree: Path) -> Path:
    """The ``help`` folder of a tree: ``TREE/usr/share/libreoffice/help``, or ``TREE`` itself."""
    for candidate in (tree / HELP_ROOT, tree / "help", tree):
        if (candidate / HELP_DIRS["en"] / "text").is_dir():
            return candidate
    raise NotHelpError(f"{tree} is not LibreOffice help: no {HELP_ROOT}/en-US/text (nor en-US/text) in it; "
                       "unpack the packages with `dpkg -x FILE.deb DIR` and pass DIR, or pass the .deb files")


def from_tree(tree: Path, langs: Sequence[str]) -> HelpSource:
    """The help unpacked under ``tree``; versions and copyright from ``usr/share/doc/PACKAGE`` when there."""
    if not tree.is_dir():
        raise NotHelpError(f"--tree {tree}: no such folder")
    help_dir = help_folder(tree)
    missing = [lang for lang in langs if not any((help_dir / HELP_DIRS[lang] / "text").rglob("*.html"))]
    if missing:
        raise NotHelpError(f"{help_dir} has no help pages for {', '.join(missing)}: unpack "
                           f"{' '.join(package_name(lang) for lang in missing)} there too")
    docs = help_dir.parents[1] / "doc" if len(help_dir.parents) > 1 else help_dir / "doc"
    packages, copyright = {}, {}
    for lang in langs:
        name = package_name(lang)
        packages[name] = {"version": _changelog_version(docs / name / "changelog.Debian.gz")}
        if (docs / name / "copyright").is_file():
            copyright[name] = (docs / name / "copyright").read_text("utf-8", errors="replace")
    return HelpSource("tree", tuple(langs), packages, copyright, _help=help_dir)


def _changelog_version(path: Path) -> Optional[str]:
    """The version on a Debian changelog's first line (``libreoffice (4:7.4.7-1+deb12u14) bookworm; ...``)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
            found = re.match(r"\S+ \(([^)]+)\)", fh.readline())
    except OSError:
        return None
    return found.group(1) if found else None


def licence(copyright: Dict[str, str]) -> Dict[str, object]:
    """What the copyright files (Debian's machine-readable format) say of the files the help comes from (the
    ``Files: *`` stanza: the help's text is not among the files the others name), and whether they agree."""
    found: List[Dict[str, object]] = []
    for name in sorted(copyright):
        fields = _stanza(copyright[name], "*")
        found.append({"package": name, **fields})
    distinct = {(str(f.get("license")), str(f.get("copyright"))) for f in found}
    first = found[0] if found else {}
    return {"license": first.get("license"), "copyright": first.get("copyright"),
            "upstream": first.get("upstream"), "stanza": "Files: *",
            "packages": [f["package"] for f in found], "agree": len(distinct) == 1 if found else None}


def _stanza(text: str, files: str) -> Dict[str, object]:
    """The ``License`` (its short name) and ``Copyright`` lines of the stanza ``Files: files``, and the
    header's ``Upstream-Name``."""
    upstream = re.search(r"^Upstream-Name:\s*(.+)$", text, re.MULTILINE)
    for block in re.split(r"\n\s*\n", text):
        if re.search(rf"^Files:\s*{re.escape(files)}\s*$", block, re.MULTILINE):
            lic = re.search(r"^License:\s*(.+)$", block, re.MULTILINE)
            holder = re.search(r"^Copyright:((?:.*\n?)(?:[ \t].*\n?)*)", block, re.MULTILINE)
            lines = [line.strip() for line in holder.group(1).splitlines() if line.strip()] if holder else []
            return {"license": lic.group(1).strip() if lic else None, "copyright": lines,
                    "upstream": upstream.group(1).strip() if upstream else None}
    return {"license": None, "copyright": [], "upstream": upstream.group(1).strip() if upstream else None}
