"""``.srt`` subtitles: each cue's text translated as one text, its numbering and timing lines kept byte for byte.

The file is validated by the ``srt`` package (a malformed file is refused with its parser's reason); the cues are
then rewritten in place, so nothing but their text changes (not the timestamps' format, not the line ends). A cue
of several lines is translated as one text (its lines are usually one sentence broken for the screen) and broken
again into as many lines, at the word boundaries nearest the original breaks.
"""
from __future__ import annotations

import re
from typing import List, Tuple

import srt

from .layout import Document, DocumentError, Translated, register_format

_TIMING = re.compile(r"^\s*\d+:\d+:\d+[,.]\d+\s*-->\s*\d+:\d+:\d+[,.]\d+")


def _cues(lines: List[str]) -> List[Tuple[int, int]]:
    """The (first, end) line numbers of every cue's text, in order."""
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip().isdigit() and i + 1 < len(lines) and _TIMING.match(lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].strip():
                j += 1
            found.append((i + 2, j))
            i = j
        else:
            i += 1
    return found


def read(data: bytes) -> Document:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"The subtitles are not UTF-8 text (byte 0x{data[exc.start]:02x} at position "
                            f"{exc.start}): save them as UTF-8 and send them again.") from None
    try:
        parsed = list(srt.parse(text))
    except srt.SRTParseError as exc:
        raise DocumentError(f"The file is not valid SRT: {exc}") from None
    except (OverflowError, ValueError) as exc:  # a timestamp of more hours than a date can hold
        raise DocumentError(f"The file is not valid SRT: a timestamp is out of range ({exc}).") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cues = _cues(lines)
    if len(cues) != len(parsed):
        raise DocumentError(f"The SRT file's layout is unusual ({len(parsed)} cues parsed, {len(cues)} found line "
                            "by line): write each cue as its number, its timing line and its text.")
    texts = [[line.strip() for line in lines[a:b]] for a, b in cues]

    def write(done: List[Translated]) -> bytes:
        out = list(lines)
        for (a, b), mine, translated in reversed(list(zip(cues, texts, done))):
            if a < b:  # a cue without text stays without
                out[a:b] = _rebreak(mine, translated)
        return (newline.join(out)).encode("utf-8")

    return Document([" ".join(t) for t in texts], write)


def _rebreak(lines: List[str], done: Translated) -> List[str]:
    """``done.target`` in as many lines as the cue had, broken where its lines were."""
    bounds, at = [0], 0
    for line in lines[:-1]:
        at += len(line) + 1
        bounds.append(at)
    bounds.append(len(done.source))
    broken = [piece.strip() for piece in done.pieces(bounds)]
    return [piece for piece in broken if piece] or [""]


FORMAT = register_format("subtitles", "SubRip subtitles", (".srt",), read, order=30)
