"""The command registry: ``COMMANDS`` (name -> function taking the remaining argv and returning an exit
status); add one with ``@command("name", "one-line help")``.  ``CLIError``: a user's mistake, one line, exit 2."""
from __future__ import annotations

from typing import Callable, List, Optional

from ..errors import UserError
from ..registry import Registry

PROG = "transformer_hub"
DEBUG_ENV = "TRANSFORMER_HUB_DEBUG"


class CLIError(UserError):
    """A user error: printed as one line, exit status 2."""


Command = Callable[[List[str]], Optional[int]]
COMMANDS: Registry = Registry("command")


def command(name: str, help: str) -> Callable[[Command], Command]:
    """Register ``fn(argv) -> exit status`` as ``python -m transformer_hub NAME``; ``help`` is its line in usage."""

    def add(fn: Command) -> Command:
        fn.help = help  # type: ignore[attr-defined]
        return COMMANDS.register(name)(fn)

    return add
