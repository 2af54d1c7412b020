"""``python -m transformer_hub suggestions export`` and ``python -m transformer_hub keys add|list|remove``: the
server's SQLite file (``transformer_hub.store``) from the command line.

    python -m transformer_hub suggestions export --out feedback/     # feedback/en-de/train.en + train.de ...
    python -m transformer_hub keys add 60 [--key KEY] [--char-limit 2000]
    python -m transformer_hub keys list
    python -m transformer_hub keys remove KEY

The file is ``--db``, else ``$SPACE_SUGGESTIONS_DB``, else ``db/suggestions.db`` (where the server keeps it).
"""
from __future__ import annotations

from pathlib import Path
from typing import List

from ..errors import Parser, UserError
from ..store import DB_ENV, DEFAULT_DB, Store, database_path
from .commands import PROG, command


def _open(path: str, create: bool) -> Store:
    if not create and not Path(path).is_file():
        raise UserError(f"no database at {path}: the server creates it when started with SPACE_SUGGESTIONS=1 or "
                        f"SPACE_API_KEYS=1 (or pass --db PATH)")
    try:
        return Store(path)
    except (ValueError, OSError) as exc:
        raise UserError(f"cannot open {path}: {exc}") from None


def _db_argument(parser: Parser) -> None:
    parser.add_argument("--db", default=str(database_path()),
                        help=f"the SQLite file (default: ${DB_ENV} or {DEFAULT_DB}; now %(default)s)")


@command("suggestions", "export users' suggested translations (the server's /suggest) as training files")
def suggestions_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} suggestions", description="Users' suggested translations, sent to the server's "
                    "/suggest (SPACE_SUGGESTIONS=1), as aligned training files.")
    sub = parser.add_subparsers(dest="action", required=True, parser_class=Parser)
    export = sub.add_parser("export", help="write OUT/{src}-{tgt}/train.{src} and train.{tgt}")
    export.add_argument("--out", required=True, help="the folder to write (one folder per direction inside)")
    _db_argument(export)
    args = parser.parse_args(argv)
    store = _open(args.db, create=False)
    try:
        written = store.export(args.out)
    except OSError as exc:
        raise UserError(f"cannot write to {args.out}: {exc.strerror or exc}; choose another --out") from None
    finally:
        store.close()
    if not written:
        print(f"{args.db} holds no suggestions yet: nothing written")
        return 0
    for (source, target), count in written.items():
        folder = Path(args.out) / f"{source}-{target}"
        print(f"{count} pair(s) {source}->{target} in {folder}; fine-tune with `python -m {PROG} train --init-from "
              f"MODEL --train-src {folder / f'train.{source}'} --train-tgt {folder / f'train.{target}'} "
              f"--valid-src VAL.{source} --valid-tgt VAL.{target} --out runs/NAME`")
    return 0


@command("keys", "add, list or remove the server's API keys (add REQ_LIMIT [--key K] [--char-limit N])")
def keys_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} keys", description="API keys of the server (used when it runs with "
                    "SPACE_API_KEYS=1): each with its requests per minute and, optionally, characters per text.")
    sub = parser.add_subparsers(dest="action", required=True, parser_class=Parser)
    add = sub.add_parser("add", help="add a key (a random one unless --key) and print it")
    add.add_argument("req_limit", type=int, help="requests per minute")
    add.add_argument("--key", default=None, help="the key itself (default: a random one)")
    add.add_argument("--char-limit", type=int, default=None, help="characters per text (default: the server's)")
    listing = sub.add_parser("list", help="the keys and their limits")
    remove = sub.add_parser("remove", help="remove a key")
    remove.add_argument("key")
    for p in (add, listing, remove):
        _db_argument(p)
    args = parser.parse_args(argv)
    store = _open(args.db, create=args.action == "add")
    try:
        if args.action == "add":
            try:
                print(store.add_key(args.req_limit, args.key, args.char_limit))
            except ValueError as exc:
                raise UserError(str(exc)) from None
        elif args.action == "list":
            keys = store.keys()
            for key, limits in keys:
                chars = "server's" if limits.char_limit is None else f"{limits.char_limit:,}"
                print(f"{key}\t{limits.req_limit} requests/minute\t{chars} characters/text")
            if not keys:
                print(f"no API keys in {args.db}")
        elif not store.remove_key(args.key):
            raise UserError(f"no key {args.key!r} in {args.db} (see `python -m {PROG} keys list`)")
        else:
            print(f"removed {args.key}")
    finally:
        store.close()
    return 0
