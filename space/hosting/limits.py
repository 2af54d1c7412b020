"""Server-side limits and input cleaning.

``gr.Textbox(max_length=...)`` is only a browser hint: a ``gradio_client``
caller sends whatever it likes.  Every handler therefore passes its text and
numbers through these checks, which raise ``RequestError`` with a message a
visitor can act on (never a stack trace): the page shows it as Gradio's error, the REST API answers 400 with it.  The limits can be changed with
environment variables (``SPACE_MAX_CHARS``, ``SPACE_MAX_LINES``, ``SPACE_MAX_SENTENCES``,
``SPACE_MAX_OUTPUT_TOKENS``, ``SPACE_MAX_BEAM``, ``SPACE_MAX_MODELS``, ``SPACE_DECODE_PART_SECONDS``, and for uploaded
documents ``SPACE_MAX_FILE_BYTES``, ``SPACE_MAX_FILE_SENTENCES``, ``SPACE_DOCUMENT_CHUNK``, ``SPACE_DOCUMENT_SECONDS``,
``SPACE_DOCUMENT_MEMORY_MB``; a playground run's time budget
``SPACE_PLAYGROUND_SECONDS``).
"""
from __future__ import annotations

import math
import os
import unicodedata
from dataclasses import dataclass, fields
from typing import List, Optional, Tuple

import gradio as gr


class RequestError(Exception):
    """A request the Space refuses, with one line the visitor can act on: the page shows it as Gradio's error
    (``space/page/tabs/_common.py``'s ``handler``), the REST API answers 400 ``Invalid request: ...``
    (``space/rest/input.py``'s ``refusal``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Limits:
    max_chars: int = 1000         # characters per line (a paragraph of several sentences is one line)
    max_lines: int = 16           # lines per request
    max_sentences: int = 48       # sentences per request (a line is split into its sentences)
    max_output_tokens: int = 160  # cap on the output length of every hypothesis
    max_beam: int = 8             # beam size (and n-best) upper bound
    max_models: int = 5           # models translated side by side in the variants tab
    max_file_bytes: int = 100_000  # an uploaded .txt document
    max_file_sentences: int = 1000  # sentences of an uploaded document
    document_chunk: int = 16      # sentences of a document decoded per step of its progress bar
    decode_part_seconds: int = 2  # about how long one part of a request holds the shared decoder: between its
                                  # parts, the requests that came meanwhile go first (space/serving/batching.py)
    document_seconds: int = 10    # a document's worker: seconds to read it and to write it back (space/hosting/
    document_memory_mb: int = 512  # sandbox.py), and the memory it may add; past either it is killed
    playground_seconds: int = 60  # the time budget of one playground training run

    @classmethod
    def from_env(cls) -> "Limits":
        values = {}
        for f in fields(cls):
            raw = os.environ.get(f"SPACE_{f.name.upper()}")
            if raw:
                try:
                    values[f.name] = max(1, int(raw))
                except ValueError:
                    raise ValueError(f"SPACE_{f.name.upper()} must be an integer, got {raw!r}") from None
        return cls(**values)


def _is_control(ch: str) -> bool:
    # Cc: C0/C1 controls (NUL, ESC, DEL ...); Cs: lone surrogates; Co/Cn: private use / unassigned.
    # Cf (zero-width joiner, right-to-left marks) stays: emoji sequences and RTL text need it.
    return ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn")


@dataclass
class CleanText:
    lines: List[str]          # every input line, stripped ("" for blank lines inside the text)
    removed_controls: int     # control characters dropped

    @property
    def sentences(self) -> List[str]:
        return [line for line in self.lines if line]


def clean_text(text: Optional[str], limits: Limits, *, single: bool = False,
               what: str = "a sentence to translate") -> CleanText:
    """Validate and normalise the user's text (``what`` it is, for the messages); one sentence per line.

    Raises ``RequestError`` for empty input, too many lines, or an over-long line.
    With ``single=True`` only the first non-empty line is kept (with a warning
    if there were more).
    """
    if text is None or (isinstance(text, str) and not text.strip()):
        raise RequestError(f"Please enter {what} (the input is empty).")
    if not isinstance(text, str):
        raise RequestError(f"The input must be text, got {type(text).__name__}.")
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    removed = sum(1 for ch in text if _is_control(ch))
    if removed:
        text = "".join(ch for ch in text if not _is_control(ch))
        gr.Warning(f"Removed {removed} control character(s) from the input.")
    lines = [" ".join(line.replace("\t", " ").split()) for line in text.strip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        raise RequestError(f"Please enter {what} (the input is empty once control characters are removed).")
    if single:
        if len([line for line in lines if line]) > 1:
            gr.Warning("This tab looks at one sentence: only the first line is used.")
        lines = lines[:1]
    if len(lines) > limits.max_lines:
        raise RequestError(f"Too many lines: {len(lines)}. Send at most {limits.max_lines} lines per request, or "
                       "upload the text as a .txt file.")
    for number, line in enumerate(lines, 1):
        if len(line) > limits.max_chars:
            raise RequestError(f"Line {number} is too long: {len(line)} characters, the limit is {limits.max_chars}. "
                           "Split it into shorter lines, or upload the text as a .txt file.")
    return CleanText(lines, removed)


def int_option(name: str, value, low: int, high: int) -> int:
    """An integer option from the UI or the API, range-checked (floats with no fraction are accepted)."""
    if isinstance(value, bool) or value is None:
        raise RequestError(f"{name} must be a whole number between {low} and {high}, got {value!r}.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RequestError(f"{name} must be a whole number between {low} and {high}, got {value!r}.") from None
    if not math.isfinite(number) or number != int(number) or not low <= number <= high:
        raise RequestError(f"{name} must be a whole number between {low} and {high}, got {value!r}.")
    return int(number)


def float_option(name: str, value, low: float, high: float, *, low_open: bool = False) -> float:
    """A float option, range-checked; ``low_open`` excludes ``low`` itself."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number > high or number < low or \
            (low_open and number == low):
        bound = f"({low}, {high}]" if low_open else f"[{low}, {high}]"
        raise RequestError(f"{name} must be a number in {bound}, got {value!r}.")
    return number


def choice_option(name: str, value, choices: Tuple[str, ...]) -> str:
    if value not in choices:
        raise RequestError(f"{name} must be one of {', '.join(choices)}; got {value!r}.")
    return value
