"""``python -m transformer_hub download``: the Multi30k task-1 splits, into the folder ``train --data-dir`` reads."""
from __future__ import annotations

from typing import List

from ..errors import Parser
from ..training.data import MULTI30K_LANGS, default_data_dir, download_multi30k
from .commands import PROG, CLIError, command


@command("download", "download Multi30k (task 1, raw text) from the dataset's official GitHub files")
def download_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} download", description="Fetch the Multi30k task-1 splits (train, val, test "
                    "2016/2017) into a folder `train --data-dir` reads; files already there are kept.")
    parser.add_argument("--langs", default=",".join(MULTI30K_LANGS),
                        help=f"comma-separated languages among {','.join(MULTI30K_LANGS)} (default: all four)")
    parser.add_argument("--dest", default=str(default_data_dir()), help="the folder to fill (default: %(default)s)")
    args = parser.parse_args(argv)
    langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
    unknown = [lang for lang in langs if lang not in MULTI30K_LANGS]
    if unknown or not langs:
        raise CLIError(f"--langs {args.langs}: Multi30k has {', '.join(MULTI30K_LANGS)}")
    try:
        written = download_multi30k(args.dest, langs)
    except OSError as exc:  # the folder cannot be created or written
        raise CLIError(f"cannot write to {args.dest}: {exc.strerror or exc}; choose another --dest")
    print(f"{len(written)} new file(s) in {args.dest} ({', '.join(langs)}); train with "
          f"`python -m {PROG} train --data-dir {args.dest} --out runs/NAME`")
    return 0
