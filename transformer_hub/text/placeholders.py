"""What a translation must give back unchanged: placeholders, markup, escapes, links; and menu accelerators.

Software strings are full of pieces a program fills in or reads: printf directives (``%s``, ``%1$s``,
``%(size)s``, ``%-10.3f``, ``%%``), braces (``{0}``, ``{name}``, ``{{person.name}}``, ICU arguments),
``$(ARG1)``, ``${var}``, ``$Username``, i18next's ``$t(key)``, ``%PRODUCTNAME``, HTML/XML tags and entities,
``\\n`` escapes, URLs, e-mail addresses and paths.  A translation that drops or mangles one crashes the program
("%: %" where "%s: %s" was).  So they are masked before the model sees the string and put back after:

    masked = mask("Could not open file %s: %s")
    masked.text                                  # 'Could not open file #1: #2'
    masked.unmask("Datei #1 konnte nicht geöffnet werden: #2")   # 'Datei %s konnte nicht geöffnet werden: %s'
    mask_pair("Open %s", "%s öffnen")            # ('Open #1', '#1 öffnen'): a training pair as the model sees it

``unmask`` repairs what the model did to the marks (a mark lost is put back at the same relative place, an
unknown or doubled one removed) and returns None when the result would still not hold exactly the source's
pieces, in an order every printf directive without a position can take: then the caller keeps the source.
Accelerators (``_File``, ``&File``, ``~File``) are a marker before one letter: taken off before translation,
put back on a letter of the translation (``strip_accelerator``, ``place_accelerator``).

Every pattern here is linear in the text: none can restart a scan inside a run it already read.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

# ``name`` comes before ``printf``: "%APPNAME" is one name, not "%A" (a printf hex float) and "PPNAME".
# Each alternative starts at a character that cannot occur inside the run it matches, or is anchored by a
# look-behind to the start of its run, so a failed match costs the run's length once, not once per start.
_PATTERNS = [
    ("block", r"<(?P<blocktag>style|script)\b[^<>]{0,1000}>[^<]{0,20000}</(?P=blocktag)\s*>|<!--[\s\S]{0,5000}?-->"
              r"|<![A-Za-z][^<>]{0,1000}>"),  # a style sheet, a script, a comment, a DOCTYPE: none of it is text
    ("name", r"\$t\([^()]{1,200}\)|%[A-Z][A-Z0-9_]+%?|\$\([^()\s]{1,64}\)|\$\{[^{}\s]{1,64}\}"
             r"|(?<![\w$])\$[A-Za-z_]\w{0,64}"),  # i18next's $t(key), %APPNAME%, $(ARG), ${var}, $Username
    ("printf", r"%(?:\d+\$)?[-+#0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspnm]"
               r"|%\([A-Za-z_][\w.-]{0,64}\)[-+#0]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa]|%%|%\d{1,2}(?![\d$])"),  # Qt: %1
    ("tag", r"</?[A-Za-z][\w:.-]{0,64}(?:\s[^<>]{0,1000})?/?>|&(?:[A-Za-z]{2,10}|#\d{1,7}|#x[0-9A-Fa-f]{1,6});"),
    ("escape", r"\\[ntr\\\"']"),
    ("url", r"(?<![\w+.-])(?:[A-Za-z][A-Za-z0-9+.-]{0,30}://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)]"),
    ("email", r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+"),
    ("path", r"(?<!\S)(?:~|\.\.?)?/[\w.+-]{1,255}(?:/[\w.+-]{1,255})*/?"),
]
_FIND = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _PATTERNS))
# Marks the model sees instead: "#1", "#2", ...: plain ASCII that every model here copies (measured on v3 in all
# English->X directions: "#N" and "%N" came back whole in 8 of 8 test strings, marks of rarer characters such as
# "‹1›" or "§1" in none: their byte pieces come back torn); "%N" is itself a Qt placeholder, so "#N".
_MARK = re.compile(r"#(\d{1,4})(?!\d)")
_SPACED_MARK = re.compile(f"( ?){_MARK.pattern}")
_POSITIONAL = re.compile(r"%\d+\$|%\(|%\d+$")  # %1$s, %(name)s, Qt's %1: each names its argument
_WORD_START = re.compile(r"(?<![^\W_])[^\W\d_]")  # a letter after no letter or digit
_ACCELERATED = {"_": re.compile(r"_(?=[^\W_])"), "&": re.compile(r"&(?=[^\W_])(?![A-Za-z]{2,10};|#\d)"),
                "~": re.compile(r"~(?=[^\W_])")}


@dataclass(frozen=True)
class Piece:
    """One protected piece: its text, its kind (printf, name, brace, tag, escape, url, email, path), its span."""

    text: str
    kind: str
    start: int
    end: int


def find_pieces(text: str) -> List[Piece]:
    """The protected pieces of ``text``, left to right, none overlapping."""
    pieces = [Piece(m.group(), m.lastgroup or "", m.start(), m.end()) for m in _FIND.finditer(text)]
    return sorted(pieces + _braces(text, pieces), key=lambda p: p.start)


def _braces(text: str, taken: Sequence[Piece]) -> List[Piece]:
    """Balanced ``{...}`` groups (``{0}``, ``{{name}}``, a whole ICU argument), found by one scan with a depth
    count; a group without words inside it (``{0}``) or one of identifiers (``{{person.name}}``) or an ICU
    argument is one piece.  Unbalanced braces are text."""
    busy = [False] * (len(text) + 1)
    for piece in taken:
        busy[piece.start:piece.end] = [True] * (piece.end - piece.start)
    found, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if busy[i]:
            continue
        if ch == "{":
            start = i if depth == 0 else start
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0 and i - start <= 1000:
                found.append(Piece(text[start:i + 1], "brace", start, i + 1))
    return found


@dataclass(frozen=True)
class Masked:
    """A string with its pieces replaced by numbered marks (``text``: ``#first``, ``#first+1``, ...), and how to
    put them back."""

    source: str
    text: str
    pieces: Tuple[Piece, ...]
    first: int = 1

    def unmask(self, translation: str) -> Optional[str]:
        """``translation`` of ``text`` with the marks turned back into the pieces, repaired; None when the result
        cannot hold exactly the source's pieces."""
        if not self.pieces:
            return translation
        numbers = range(self.first, self.first + len(self.pieces))
        places = {n: self.text.find(_mark(n)) / max(len(self.text), 1) for n in numbers}
        repaired = _repair(translation, places, self.source)
        result = _MARK.sub(lambda m: self.pieces[int(m.group(1)) - self.first].text
                           if int(m.group(1)) in places else m.group(), repaired)
        return result if same_pieces(self.source, result) else None


def _mark(number: int) -> str:
    return f"#{number}"


def mask(text: str) -> Masked:
    """``text`` with each protected piece replaced by a mark ``#N``, numbered up from the first N whose marks the
    text does not hold already."""
    pieces = tuple(find_pieces(text))
    used = {int(n) for n in _MARK.findall(text)}
    first = 1
    while used.intersection(range(first, first + len(pieces))):
        first = max(used) + 1
    out, previous = [], 0
    for number, piece in enumerate(pieces, first):
        out += [text[previous:piece.start], _mark(number)]
        previous = piece.end
    out.append(text[previous:])
    return Masked(text, "".join(out), pieces, first)


def mask_pair(source: str, target: str) -> Tuple[str, str]:
    """A training pair as the model sees it when it serves: the source ``mask``-ed, and in the target each piece
    the source holds replaced by the source's mark for it (the k-th occurrence of a piece by the k-th mark of that
    text: ``%s: %s`` -> ``#1: #2`` on both sides, ``%2$s ... %1$s`` -> ``#2 ... #1``); a piece the source does
    not hold stays text.  ``Masked.unmask`` of the target's marks gives the target back."""
    masked = mask(source)
    marks: Dict[str, List[str]] = {}
    for number, piece in enumerate(masked.pieces, masked.first):
        marks.setdefault(piece.text, []).append(_mark(number))
    if not marks:
        return source, target
    out, previous = [], 0
    for piece in find_pieces(target):
        waiting = marks.get(piece.text)
        if waiting:
            out += [target[previous:piece.start], waiting.pop(0)]
            previous = piece.end
    out.append(target[previous:])
    return masked.text, "".join(out)


def _repair(translation: str, places: Dict[int, float], source: str) -> str:
    """Each mark of ``places`` exactly once in ``translation``: repeated ones and marks the model invented (not in
    the source's text) dropped, missing ones put at the word boundary nearest to the place they had in the source
    (``places``: mark number -> fraction of the masked source's length)."""
    seen = set()
    own = {int(n) for n in _MARK.findall(source)}  # "#5" in the source's own text is text

    def keep(match: "re.Match[str]") -> str:  # a mark dropped takes the space before it along
        number = int(match.group(2))
        if number in own and number not in places:
            return match.group()
        if number in places and number not in seen:
            seen.add(number)
            return match.group()
        return ""

    text = _SPACED_MARK.sub(keep, translation)
    for number, place in places.items():
        if number not in seen:
            where = _boundary_near(text, place * len(text))
            text = " ".join(part for part in (text[:where].rstrip(), _mark(number), text[where:].lstrip()) if part)
    return text


def _boundary_near(text: str, where: float) -> int:
    """The word boundary of ``text`` (a space, its start or its end) nearest to ``where``."""
    bounds = [0, len(text)] + [i for i, ch in enumerate(text) if ch == " "]
    return min(bounds, key=lambda i: abs(i - where))


def same_pieces(source: str, translation: str, keep_order: bool = False) -> bool:
    """True when ``translation`` holds exactly ``source``'s pieces (as many of each), and its printf
    directives without a position in the source's order (what ``msgfmt --check`` asks of a c-format string).
    ``keep_order``: every variable and tag (``ordered``) in the source's order too, as translate-toolkit's
    ``pofilter`` asks of a catalog: its printf test reads Qt's ``%1`` as a directive without a position, its
    variables test compares the sequence of ``%`` and ``$(...)`` variables, its xmltags test that of the tags."""
    ours, theirs = find_pieces(source), find_pieces(translation)
    if Counter(p.text for p in ours) != Counter(p.text for p in theirs):
        return False
    if keep_order:
        return [p.text for p in ours if ordered(p)] == [p.text for p in theirs if ordered(p)]
    plain = [p.text for p in ours if p.kind == "printf" and p.text != "%%" and not _POSITIONAL.match(p.text)]
    return plain == [p.text for p in theirs if p.kind == "printf" and p.text != "%%"
                     and not _POSITIONAL.match(p.text)]


def ordered(piece: Piece) -> bool:
    """Whether a catalog's checks want ``piece`` where the source has it among the others: a printf directive
    (positional ones and Qt's ``%1`` too), a named variable, a tag (not an entity), a style sheet or comment."""
    return piece.kind in ("printf", "name", "block") or (piece.kind == "tag" and piece.text.startswith("<"))


# --------------------------------------------------------------------------- accelerators
def strip_accelerator(text: str, marker: str) -> Tuple[str, Optional[str]]:
    """``text`` without its accelerator marker (``_`` ``&`` or ``~`` before a letter) and the marked letter (None:
    none).  A doubled marker (``&&``, ``__``) is a literal character, kept, and so is one inside a piece
    (``%(file_name)s``, ``{user_name}``, a URL): it is the program's, not a mark."""
    pattern, pieces = _ACCELERATED[marker], None
    for match in pattern.finditer(text):
        if match.start() > 0 and text[match.start() - 1] == marker:
            continue
        pieces = find_pieces(text) if pieces is None else pieces
        if any(p.start <= match.start() < p.end for p in pieces):
            continue
        return text[:match.start()] + text[match.end():], text[match.end()]
    return text, None


def place_accelerator(text: str, marker: str, letter: Optional[str]) -> str:
    """``text`` with ``marker`` before one letter outside its pieces, without a diacritic where there is one (a
    key on every keyboard; ``pofilter`` refuses "_Č"): ``letter`` at a word start if it has one, else anywhere,
    else the first such letter at a word start, else the first anywhere; ``text`` as it is when ``letter`` is None
    or there is no letter."""
    if letter is None:
        return text
    pieces = find_pieces(text)
    letters = [m.start() for m in re.finditer(r"[^\W\d_]", text)
               if not any(p.start <= m.start() < p.end for p in pieces)]
    plain = [i for i in letters if not unicodedata.decomposition(text[i])] or letters
    starts = [i for i in plain if _WORD_START.match(text, i)]
    same = [i for i in plain if text[i].lower() == letter.lower()]
    where = next(iter([i for i in same if i in starts] + same + starts + plain), None)
    return text if where is None else text[:where] + marker + text[where:]


def accelerator_marker(texts: Sequence[str]) -> Optional[str]:
    """The marker most of ``texts`` use (``_`` for gettext/GTK, ``&`` for Qt/KDE/Windows, ``~`` for LibreOffice),
    or None when none is used."""
    counts = Counter(marker for text in texts for marker in _ACCELERATED if strip_accelerator(text, marker)[1])
    return counts.most_common(1)[0][0] if counts else None


def unmask_result(masked: Masked, result: Any) -> None:
    """``result`` (a ``TranslationResult`` of ``masked.text``) back in the source's terms, in place: its source and
    every hypothesis unmasked; a hypothesis that cannot hold the source's pieces becomes the source itself (left
    untranslated: a broken format string is worse), with a warning when it is the best one."""
    if not masked.pieces:
        return
    result.source = masked.source
    for rank, hyp in enumerate(result.hypotheses):
        text = masked.unmask(hyp.text)
        if text is None:
            text = masked.source
            if rank == 0:
                pieces = ", ".join(dict.fromkeys(p.text for p in masked.pieces))
                result.warnings.append(f"kept untranslated: the translation did not keep {pieces} in an order the "
                                       "program can use")
        hyp.text = text
