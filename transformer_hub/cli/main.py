"""The entry point: ``main(argv)`` picks the command, and every error ends as one line on stderr."""
from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import List, Optional, Sequence

from ..errors import UserError
from . import (adapt, corpus, database, download, evaluate, export, train, translate,  # noqa: F401  (each
               translate_corpus, translate_file)  # registers its command)
from .commands import COMMANDS, DEBUG_ENV, PROG


def usage() -> str:
    names = COMMANDS.names()
    width = max(map(len, names))
    lines = [f"usage: python -m {PROG} [--debug] COMMAND [options]   (COMMAND --help for its options)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {getattr(COMMANDS.get(name), 'help', '')}" for name in names]
    lines += ["", f"--debug (or {DEBUG_ENV}=1) shows the traceback of an error"]
    return "\n".join(lines)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run a command; returns the exit status (0 ok, 2 user error, 1 anything unexpected)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes"}
    argv = [arg for arg in argv if arg != "--debug"]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from .. import __version__

        print(f"{PROG} {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"{PROG}: error: unknown command {name!r}: use one of {', '.join(COMMANDS.names())} "
              f"(python -m {PROG} --help)", file=sys.stderr)
        return 2
    previous = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        return run_command(name, rest, debug)
    finally:
        warnings.showwarning = previous


def run_command(name: str, argv: List[str], debug: bool = False) -> int:
    """Run one registered command; every error ends as one line on stderr (and its traceback with ``debug``)."""
    try:
        status = COMMANDS.get(name)(argv)
    except SystemExit as exc:  # argparse's --help, or a forwarded command's own exit
        if isinstance(exc.code, str):
            print(f"{PROG} {name}: error: {exc.code}", file=sys.stderr)
            return 2
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG} {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `... | head`: the reader went away
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - reported in one line; --debug shows where it came from
        if debug:
            traceback.print_exc()
        if isinstance(exc, UserError):
            print(f"{PROG} {name}: error: {exc}", file=sys.stderr)
            return 2
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"{PROG} {name}: error: {type(exc).__name__}: {text} (unexpected; rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 1
    return int(status or 0)

