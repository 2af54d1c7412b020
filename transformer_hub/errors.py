"""Mistakes a user can fix, shared by the library and the command line: one exception, one argument parser."""
import argparse


class UserError(Exception):
    """A missing file, a bad option, data that is not where it was looked for.

    The message names what is wrong and what to do, in one line: the command line prints it alone and exits
    with status 2 (``--debug`` shows the traceback).
    """


class Parser(argparse.ArgumentParser):
    """argparse whose errors are a ``UserError`` (one line: ``... (see prog --help)``), not usage text + exit."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise UserError(f"{message} (see {self.prog} --help)")
