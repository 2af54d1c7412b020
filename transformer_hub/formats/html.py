"""HTML (``.html`` files and ``format=html`` texts), parsed by BeautifulSoup with lxml.

The inline content of each block (a paragraph, a heading, a list item, a cell: the text with its inline tags such
as ``<b>``, ``<a>``, ``<span>``) is one text, translated sentence by sentence; its inline tags are put back
around the corresponding part of the translation (see ``layout``), so a tag never leaves its sentence and nothing
is translated word by word. Never touched: ``<script>``, ``<style>``, ``<code>`` and the other elements in
``KEPT`` (kept as they are, in place), ``<pre>``, ``<textarea>``, ``<svg>`` ... (``SKIPPED``), comments,
attributes. Runs of whitespace inside a translated text become one space (as a browser shows them); characters
are written back with the minimal escaping (``&amp;``, ``&lt;``, ``&gt;``, and ``&nbsp;`` so it stays visible).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from bs4.builder import LXMLTreeBuilderForXML
from bs4.dammit import EntitySubstitution
from bs4.element import PreformattedString
from bs4.formatter import HTMLFormatter

from .budget import Budget, scan_tree
from .layout import Document, DocumentError, Translate, Translated, register_format, translate_document_texts

INLINE = frozenset("a abbr b bdi bdo big cite data del dfn em font i ins label mark q s small span strike strong "
                   "sub sup time tt u".split())
KEPT = frozenset("br img wbr input area embed source track code kbd samp var script style template noscript".split())
SKIPPED = frozenset("pre textarea svg math iframe object canvas select".split())
BREAK = "\n"
_SPACES = re.compile(r"[ \t\n\r\f]+")  # HTML's whitespace; a no-break space is text
_DOCUMENT = re.compile(r"<\s*(!doctype|html|head|body)\b", re.IGNORECASE)
FORMATTER = HTMLFormatter(entity_substitution=lambda s: EntitySubstitution.substitute_xml(s).replace("\xa0", "&nbsp;"),
                          void_element_close_prefix=None)


@dataclass
class _Mark:
    """An inline tag (``start`` < ``end`` around its text) or a kept node (an atom: ``start`` == ``end``)."""

    node: PageElement
    start: int
    end: int
    atom: bool
    children: List["_Mark"] = field(default_factory=list)
    space_after: bool = False  # an atom between two spaces, which the text keeps as one (before the atom)


@dataclass
class _Unit:
    nodes: List[PageElement]  # the run of sibling nodes the translation replaces
    text: str
    marks: List[_Mark]


def _is_text(node: PageElement) -> bool:
    return isinstance(node, NavigableString) and not isinstance(node, PreformattedString)  # not a comment, CDATA..


def _inline(node: PageElement) -> bool:
    if isinstance(node, NavigableString):
        return True
    if node.name in KEPT:
        return True
    return node.name in INLINE and all(d.name in INLINE or d.name in KEPT for d in node.find_all(True))


class _Collector:
    """Walks the tree; each run of inline siblings with some text becomes a ``_Unit``."""

    def __init__(self) -> None:
        self.units: List[_Unit] = []

    def visit(self, element: Tag) -> None:
        run: List[PageElement] = []
        for child in list(element.children):
            if _inline(child):
                run.append(child)
                continue
            self._flush(run)
            run = []
            if isinstance(child, Tag) and child.name not in SKIPPED:
                self.visit(child)
        self._flush(run)

    def _flush(self, run: List[PageElement]) -> None:
        parts: List[str] = []
        self._atoms: dict = {}
        marks = self._marks(run, parts)
        text = "".join(parts)
        if text.strip():
            self.units.append(_Unit(run, text, marks))

    def _marks(self, nodes: List[PageElement], parts: List[str]) -> List[_Mark]:
        marks = []
        for node in nodes:
            at = sum(map(len, parts))
            if _is_text(node):
                piece = _SPACES.sub(" ", str(node))
                if piece.startswith(" ") and parts and parts[-1].endswith(" "):
                    piece = piece[1:]
                    if at in self._atoms:
                        self._atoms[at].space_after = True
                parts.append(piece)
            elif isinstance(node, Tag) and node.name in INLINE:
                children = self._marks(list(node.children), parts)
                marks.append(_Mark(node, at, sum(map(len, parts)), False, children))
            else:  # a kept element, a comment: stays where it is, as it is; a <br> also ends a sentence
                width = len(BREAK) if isinstance(node, Tag) and node.name == "br" else 0
                if width:
                    parts.append(BREAK)
                marks.append(_Mark(node, at, at + width, True))
                self._atoms[at] = marks[-1]
        return marks


def _build(marks: List[_Mark], done: Translated, lo: int, hi: int) -> List[PageElement]:
    """The nodes of ``done.target[lo:hi]`` with ``marks`` (inline tags, atoms) put at their mapped places."""
    out: List[PageElement] = []
    pos = lo
    for mark in marks:
        start = min(max(done.position(mark.start), pos), hi)
        if start > pos:
            out.append(NavigableString(done.target[pos:start]))
        pos = start
        if mark.atom and mark.space_after and pos < hi and not done.target[pos].isspace():
            out += [mark.node, NavigableString(" ")]
            continue
        end = min(max(done.position(mark.end), start), hi)
        if not mark.atom:
            for child in list(mark.node.contents):
                child.extract()
            for child in _build(mark.children, done, start, end):
                mark.node.append(child)
        pos = end  # an inline tag's text, or the line break a <br> stands for
        out.append(mark.node)
    if hi > pos:
        out.append(NavigableString(done.target[pos:hi]))
    return out


def _replace(unit: _Unit, done: Translated, soup: BeautifulSoup) -> None:
    marker = soup.new_string("")
    unit.nodes[0].insert_before(marker)
    for node in unit.nodes:
        node.extract()
    nodes = _build(unit.marks, done, 0, len(done.target))
    if nodes:
        marker.replace_with(*nodes)
    else:
        marker.extract()


class _NamespacedXML(LXMLTreeBuilderForXML):
    """BeautifulSoup's XML builder, told each element's namespace declarations also by lxml's ``start_ns`` events:
    lxml 6.2 hands a parser target an empty ``nsmap``, and the builder would drop every ``xmlns`` and prefix."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._declared: dict = {}

    def start_ns(self, prefix: str, uri: str) -> None:
        self._declared[prefix or None] = uri  # lxml's nsmap names the default namespace None

    def start(self, tag, attrib, nsmap={}) -> None:  # noqa: B006 - the signature lxml calls
        declared, self._declared = self._declared, {}
        super().start(tag, attrib, nsmap or declared)


def _parse(markup, parser: str = "lxml", what: str = "The HTML document") -> tuple:
    soup = BeautifulSoup(markup, builder=_NamespacedXML()) if parser == "xml" else BeautifulSoup(markup, parser)
    # counted before the collector's walk (which recurses once per level) and before anything is translated
    scan_tree(soup, Budget(what), "its markup", lambda node: node.contents if isinstance(node, Tag) else None)
    collector = _Collector()
    collector.visit(soup)
    return soup, collector.units


def _serialize(soup: BeautifulSoup, whole: bool) -> str:
    if whole:
        return soup.decode(formatter=FORMATTER)
    parts = [soup.head, soup.body] if soup.html is not None else [soup]
    return "".join(child.decode(formatter=FORMATTER) if isinstance(child, Tag) else child.output_ready(FORMATTER)
                   for part in parts if part is not None for child in part.contents)


def read_markup(markup: str) -> Document:
    """HTML given as text (a fragment or a whole page); ``write`` gives back the same kind, as UTF-8 bytes."""
    soup, units = _parse(markup, what="The HTML text")
    whole = bool(_DOCUMENT.search(markup))

    def write(done: List[Translated]) -> bytes:
        for unit, translated in zip(units, done):
            _replace(unit, translated, soup)
        return _serialize(soup, whole).encode("utf-8")

    return Document([u.text for u in units], write)


def translate_html(markup: str, translate: Translate, lang: Optional[str] = None,
                   max_sentences: Optional[int] = None) -> str:
    """``markup`` (a fragment or a whole page) with its text translated and its markup kept; a fragment comes
    back as a fragment."""
    document = read_markup(markup)
    return document.write(translate_document_texts(document.texts, translate, lang, max_sentences)).decode("utf-8")


def read(data: bytes) -> Document:
    """An HTML file (its encoding from its BOM or ``<meta charset>``, else guessed); written back as UTF-8."""
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentError("The file is not HTML: it holds binary data (NUL bytes).")
    soup, units = _parse(data)

    def write(done: List[Translated]) -> bytes:
        for unit, translated in zip(units, done):
            _replace(unit, translated, soup)
        return soup.encode("utf-8", formatter=FORMATTER)

    return Document([u.text for u in units], write)


def read_xhtml(data: bytes) -> Document:
    """An XHTML file (an EPUB's chapter): parsed and written back as XML, so it stays well-formed XHTML.  One
    that declares entities is refused: they are never expanded (no file or URL is read), and the parser would
    otherwise drop the text that uses them."""
    if b"<!ENTITY" in data:
        raise DocumentError("A chapter declares XML entities (<!ENTITY ...>), which are not expanded here: "
                            "remove the declarations and use the characters themselves.")
    try:
        soup, units = _parse(data, "xml", "An XHTML chapter")
    except DocumentError:
        raise
    except Exception as exc:  # noqa: BLE001 - lxml's and bs4's parse errors have no common type
        raise DocumentError(f"A chapter is not readable XHTML: {exc}") from None

    def write(done: List[Translated]) -> bytes:
        for unit, translated in zip(units, done):
            _replace(unit, translated, soup)
        return soup.encode("utf-8", formatter="minimal")  # XML's own escaping (XML has no &nbsp;)

    return Document([u.text for u in units], write)


FORMAT = register_format("html", "HTML", (".html", ".htm"), read, order=20)
