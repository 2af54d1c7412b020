"""Debian packages read without installing them: a ``.deb`` is an ``ar`` archive of ``control.tar.*`` (the
package's name and version) and ``data.tar.*`` (its files), read here in Python (xz, gzip, bzip2 or none; zstd
through ``dpkg-deb`` when it is installed).  ``apt_download`` fetches packages with ``apt-get download``."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from email.parser import Parser as HeaderParser
from pathlib import Path
from typing import Dict, Iterator, List, Sequence, Tuple

from tqdm.auto import tqdm

from ..errors import UserError

_AR_MAGIC = b"!<arch>\n"


class PackageError(UserError):
    """A package that is missing, unreadable or not a Debian package; the message says what to do."""


@dataclass(frozen=True)
class Deb:
    """One ``.deb`` file: its path and its control fields (``Package``, ``Version``, ...)."""

    path: Path
    control: Dict[str, str]

    @property
    def name(self) -> str:
        return self.control.get("Package", "")

    @property
    def version(self) -> str:
        return self.control.get("Version", "")


def _ar_members(path: Path) -> Dict[str, bytes]:
    """The members of an ``ar`` archive by name (a ``.deb``'s three)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PackageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not data.startswith(_AR_MAGIC):
        raise PackageError(f"{path} is not a Debian package (.deb): it is not an ar archive")
    members, offset = {}, len(_AR_MAGIC)
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        try:
            name, size = header[:16].decode("ascii").strip().rstrip("/"), int(header[48:58].decode("ascii"))
        except ValueError:
            raise PackageError(f"{path}: a damaged ar header at byte {offset}") from None
        members[name] = data[offset + 60:offset + 60 + size]
        offset += 60 + size + size % 2  # members start at even offsets
    return members


def _member(members: Dict[str, bytes], stem: str, path: Path) -> Tuple[str, bytes]:
    for name, payload in members.items():
        if name == stem or name.startswith(stem + "."):
            return name, payload
    raise PackageError(f"{path} is not a Debian package (.deb): it has no {stem}.*")


def _tar(name: str, payload: bytes, path: Path) -> tarfile.TarFile:
    """A streaming tar reader over one member (``name`` says its compression)."""
    if name.endswith(".zst"):
        payload = _zstd_payload(path)
    try:
        return tarfile.open(fileobj=io.BytesIO(payload), mode="r|*")
    except tarfile.TarError as exc:
        raise PackageError(f"{path}: cannot read {name}: {exc}") from exc


def _zstd_payload(path: Path) -> bytes:
    """The data tar of a zstd-compressed package, through ``dpkg-deb`` (Python's tarfile cannot read zstd)."""
    if shutil.which("dpkg-deb") is None:
        raise PackageError(f"{path} is compressed with zstd: install dpkg (dpkg-deb), or unpack it yourself "
                           "and pass the folder with --tree")
    done = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], capture_output=True, check=False)
    if done.returncode:
        raise PackageError(f"dpkg-deb cannot read {path}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def read_deb(path: Path) -> Deb:
    """The package's control fields (from ``control.tar.*``)."""
    path = Path(path)
    members = _ar_members(path)
    name, payload = _member(members, "control.tar", path)
    if name.endswith(".zst"):
        raise PackageError(f"{path}: a zstd control archive; unpack the package yourself and pass --tree")
    with _tar(name, payload, path) as tar:
        for info in tar:
            if info.name.lstrip("./") == "control" and info.isfile():
                text = tar.extractfile(info).read().decode("utf-8", errors="replace")
                return Deb(path, {k: v.strip() for k, v in HeaderParser().parsestr(text).items()})
    raise PackageError(f"{path} is not a Debian package (.deb): its control archive has no control file")


def deb_files(deb: Deb, prefixes: Sequence[str]) -> Iterator[Tuple[str, bytes]]:
    """``(path without the leading ./, content)`` of the package's regular files under any of ``prefixes``."""
    members = _ar_members(deb.path)
    name, payload = _member(members, "data.tar", deb.path)
    with _tar(name, payload, deb.path) as tar:
        try:
            for info in tar:
                inner = info.name[2:] if info.name.startswith("./") else info.name.lstrip("/")
                if info.isfile() and inner.startswith(tuple(prefixes)):
                    yield inner, tar.extractfile(info).read()
        except (tarfile.TarError, EOFError, OSError) as exc:  # a truncated download
            raise PackageError(f"{deb.path}: the data archive is damaged ({exc}); download it again") from exc


def find_debs(paths: Sequence[Path], names: Sequence[str]) -> Dict[str, Deb]:
    """Each package of ``names`` among ``paths`` (.deb files, or folders holding them), by its control name."""
    found: Dict[str, List[Deb]] = {}
    for path in map(Path, paths):
        if path.is_dir():
            candidates = sorted(path.glob("*.deb"))
        elif path.is_file():
            candidates = [path]
        else:
            raise PackageError(f"--debs {path}: no such file or folder")
        for candidate in candidates:
            deb = read_deb(candidate)
            found.setdefault(deb.name, []).append(deb)
    chosen = {}
    for name in names:
        debs = found.get(name, [])
        if not debs:
            raise PackageError(f"package {name} not found in {', '.join(map(str, paths))}: "
                               f"`apt-get download {name}` fetches it")
        if len({d.version for d in debs}) > 1:
            raise PackageError(f"{name} is there in versions {', '.join(sorted(d.version for d in debs))}: "
                               "keep one")
        chosen[name] = debs[0]
    return chosen


def cached_debs(dest: Path) -> Dict[str, Path]:
    """The packages in ``dest`` by name, from apt's file names (``NAME_VERSION_ARCH.deb``: a name has no ``_``)."""
    return {path.name.split("_", 1)[0]: path for path in sorted(Path(dest).glob("*_*.deb"))}


def fetch_debs(names: Sequence[str], dest: Path, batch: int = 1, progress: bool = False
               ) -> Tuple[Dict[str, Path], Dict[str, str]]:
    """``apt-get download`` each package of ``names`` not already in ``dest``, ``batch`` at a time, into
    ``dest/partial`` and then ``dest`` (an interrupted run leaves only whole files behind; the next one goes on
    from there).  A batch that fails is tried again one package at a time, once after ``apt-get update`` (as
    root).  Returns ({name: .deb} of those in ``dest``, {name: apt's error} of those that failed)."""
    if shutil.which("apt-get") is None:
        raise PackageError(f"apt-get is not installed: download {' '.join(names)} (.deb) yourself and pass --debs")
    dest = Path(dest)
    partial = dest / "partial"
    partial.mkdir(parents=True, exist_ok=True)
    for leftover in partial.glob("*.deb"):  # an interrupted download's, perhaps truncated
        leftover.unlink()
    missing = [name for name in names if name not in cached_debs(dest)]
    failed: Dict[str, str] = {}
    updated = False
    with tqdm(total=len(names), initial=len(names) - len(missing), desc="apt-get download", unit=" packages",
              disable=not progress) as bar:
        for start in range(0, len(missing), batch):
            group = missing[start:start + batch]
            if _apt(["download", *group], partial).returncode:  # which one? each alone (a file left may be cut)
                for name in group:
                    for path in partial.glob(f"{name}_*.deb"):
                        path.unlink()
                    done = _apt(["download", name], partial)
                    if done.returncode and not updated and _update_allowed():
                        _apt(["update", "-qq"], partial)
                        updated = True
                        done = _apt(["download", name], partial)
                    if done.returncode:
                        failed[name] = _apt_error(done)
            for name, path in cached_debs(partial).items():
                path.replace(dest / path.name)
            bar.update(len(group))
    have = cached_debs(dest)
    return {name: have[name] for name in names if name in have}, failed


def apt_download(names: Sequence[str], dest: Path) -> List[Path]:
    """``apt-get download`` each package of ``names`` not already in ``dest`` (``fetch_debs``); any failure is a
    ``PackageError``.  Returns the .deb files of ``dest``."""
    _, failed = fetch_debs(names, dest, batch=len(names) or 1)
    if failed:
        raise PackageError(f"apt-get download {' '.join(names)} failed: {next(iter(failed.values()))}")
    return sorted(Path(dest).glob("*.deb"))


def _apt_error(done: subprocess.CompletedProcess) -> str:
    said = [line for line in done.stderr.splitlines() if line.startswith("E:")] or done.stderr.splitlines()
    return said[-1].strip() if said else f"exit status {done.returncode}"


def _apt(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["apt-get", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _update_allowed() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
