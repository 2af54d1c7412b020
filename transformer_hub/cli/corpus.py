"""``python -m transformer_hub corpus NAME --out DIR``: build a parallel corpus in the Multi30k layout."""
from __future__ import annotations

from pathlib import Path
from typing import List

from ..errors import Parser
from .commands import PROG, CLIError, command

CORPORA = ("libreoffice-help", "debian-catalogs")


@command("corpus", "build a parallel corpus in the Multi30k layout (libreoffice-help: LibreOffice's help, "
         "four-way; debian-catalogs: Debian's message catalogs, de, fr, cs)")
def corpus_command(argv: List[str]) -> int:
    if argv[:1] == ["debian-catalogs"]:
        return catalogs_command(argv[1:])
    parser = Parser(prog=f"{PROG} corpus", description="Build LibreOffice's help (Debian's libreoffice-help-en-us, "
                    "-de, -fr, -cs) into {train,val,test}.{en,de,fr,cs}.gz and manifest.json: paragraphs aligned "
                    "by their ids, split by page. Without --debs or --tree the packages are fetched with "
                    "`apt-get download`.")
    parser.add_argument("name", choices=CORPORA, help="the corpus to build")
    parser.add_argument("--out", required=True, help="the folder to write (train --data-dir reads it)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--debs", nargs="+", metavar="F", help="the four .deb files, or folders holding them")
    source.add_argument("--tree", metavar="DIR", help="a tree they were unpacked into (dpkg -x), or an installed /")
    parser.add_argument("--download-dir", metavar="DIR", default=None,
                        help="where apt-get download puts the packages (default: OUT/debs; ones there are kept)")
    parser.add_argument("--seed", type=int, default=1, help="fixes which pages are val and test (default: 1)")
    parser.add_argument("--val-paragraphs", type=int, default=1000, help="val's size in paragraphs (default: 1000)")
    parser.add_argument("--test-paragraphs", type=int, default=2000,
                        help="test's size in paragraphs (default: 2000)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.val_paragraphs < 1 or args.test_paragraphs < 1:
        raise CLIError("--val-paragraphs and --test-paragraphs must be at least 1")
    if args.download_dir and (args.debs or args.tree):
        raise CLIError("--download-dir is where packages are downloaded to: leave it out with --debs or --tree")
    from ..corpus import build_libreoffice_help

    out = _writable(Path(args.out))
    manifest = build_libreoffice_help(out, debs=[Path(p) for p in args.debs] if args.debs else None,
                                      tree=Path(args.tree) if args.tree else None,
                                      download_dir=Path(args.download_dir) if args.download_dir else None,
                                      seed=args.seed, val_paragraphs=args.val_paragraphs,
                                      test_paragraphs=args.test_paragraphs, progress=not args.no_progress)
    sizes = ", ".join(f"{split} {c['rows']} rows ({c['paragraphs']} paragraphs, {c['pages']} pages)"
                      for split, c in manifest["counts"].items())
    print(f"{out}: {sizes}; train with `python -m {PROG} train --data-dir {out} --langs en,de,fr,cs "
          "--test-splits test --out runs/NAME`")
    return 0


def _writable(out: Path) -> Path:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot write to {out}: {exc.strerror or exc}; choose another --out")
    return out


def catalogs_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} corpus debian-catalogs", description="Build Debian's message catalogs into "
                    "{train,val,test}.{en,de,fr,cs}.gz (an empty line: no translation in that language) and "
                    "manifest.json: every package the archive's Contents index lists with a .mo catalog in German, "
                    "French and Czech, fetched with `apt-get download`; entries aligned by their English msgid, "
                    "val and test by package. The index comes from `apt-file update`.")
    parser.add_argument("--out", required=True, help="the folder to write (train --data-dir reads it)")
    parser.add_argument("--cache", metavar="DIR", default=None,
                        help="where the packages are downloaded (default: OUT/debs); a later run reuses them")
    parser.add_argument("--packages", nargs="+", metavar="NAME", help="only these packages")
    parser.add_argument("--limit", type=int, default=None, help="only N of the packages, chosen by --seed")
    parser.add_argument("--contents", nargs="+", metavar="FILE",
                        help="the archive's Contents-ARCH files (default: those apt-file update fetched)")
    parser.add_argument("--held-out", nargs="+", metavar="DIR", default=[],
                        help="corpora whose val and test texts must not be in this one (e.g. data/libreoffice-help)")
    parser.add_argument("--seed", type=int, default=1, help="fixes which packages are val and test (default: 1)")
    parser.add_argument("--val-entries", type=int, default=2000,
                        help="val's size: rows in each of de, fr, cs at least (default: 2000)")
    parser.add_argument("--test-entries", type=int, default=4000,
                        help="test's size: rows in each of de, fr, cs at least (default: 4000)")
    parser.add_argument("--projects", nargs="+", metavar="NAME", default=[],
                        help="packages held out whole as the `projects` split, in no other split: a user's own "
                        "catalogs for the adaptation measurement (docs/adapt.md)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 3:
        raise CLIError("--limit must be at least 3 (a package each for train, val and test)")
    if args.val_entries < 1 or args.test_entries < 1:
        raise CLIError("--val-entries and --test-entries must be at least 1")
    from ..corpus import build_debian_catalogs

    out = _writable(Path(args.out))
    manifest = build_debian_catalogs(out, Path(args.cache) if args.cache else out / "debs",
                                     contents=[Path(p) for p in args.contents] if args.contents else None,
                                     packages=args.packages, limit=args.limit,
                                     held_out=[Path(p) for p in args.held_out], seed=args.seed,
                                     val_entries=args.val_entries, test_entries=args.test_entries,
                                     projects=args.projects, progress=not args.no_progress)
    sizes = "; ".join(f"{split} {c['packages']} packages: " + ", ".join(
        f"{lang} {n['rows']}" for lang, n in c["languages"].items()) for split, c in manifest["counts"].items())
    failed = f"; {len(manifest['failed'])} packages failed (see manifest.json)" if manifest["failed"] else ""
    print(f"{out}: {sizes}{failed}")
    return 0
