"""How a results file records a command line: the checkout's folders relative to it, no machine's folders."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shown(path: Path) -> str:
    """``path`` relative to the checkout when it is inside it, else its name alone."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def shown_word(word: str) -> str:
    """A word of the command line as the results file records it: an absolute path (also after ``NAME=``) as
    ``shown`` gives it, so no machine's folders are recorded."""
    name, _, folder = word.rpartition("=")
    if not Path(folder).is_absolute():
        return word
    return f"{name}={shown(Path(folder))}" if name else shown(Path(folder))
