"""``python -m transformer_hub corpus NAME --out DIR``: build a parallel corpus in the Multi30k layout."""
from __future__ import annotations

from pathlib import Path
from typing import List

from ..errors import Parser
from .commands import PROG, CLIError, command

CORPORA = ("libreoffice-help",)


@command("corpus", "build a parallel corpus in the Multi30k layout (libreoffice-help: LibreOffice's help, "
         "four-way)")
def corpus_command(argv: List[str]) -> int:
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

    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot write to {out}: {exc.strerror or exc}; choose another --out")
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
