"""What a document may cost to read, counted while it is parsed, before any format's library builds its tree.

A packaged document (.docx .pptx .odt .odp .epub) is small on the wire and large inside: a 75 KB upload can
unpack to millions of empty elements, and the libraries (python-docx, python-pptx, odfpy, BeautifulSoup) build
one Python object per element and walk them recursively. So every XML member is streamed through lxml's
``iterparse`` first, its elements cleared as they end (memory stays flat), counting elements, nesting depth and
text units across the whole document, and the scan stops at the first limit passed: the ``DocumentError`` names
the limit in words. A parsed HTML tree (bounded by the upload's own bytes) gets the same count, iteratively.

    scan_xml(stream, budget, "word/document.xml")   # raises DocumentError("... more than 200,000 elements ...")
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from lxml import etree

from .layout import DocumentError

MAX_ELEMENTS = 200_000  # XML elements of one document (all its members together)
MAX_DEPTH = 128         # elements nested in one another (real documents stay under 40; Python walks recurse)
MAX_TEXT_UNITS = 50_000  # text nodes with some text (paragraph runs, cells, cues' pieces) of one document


@dataclass
class Budget:
    """The running count of one document against its limits (``what``: "The Word (.docx) document")."""

    what: str = "The document"
    max_elements: int = MAX_ELEMENTS
    max_depth: int = MAX_DEPTH
    max_text_units: int = MAX_TEXT_UNITS
    elements: int = 0
    text_units: int = 0

    def element(self, depth: int, where: str) -> None:
        """One more element, at ``depth`` (the root is 1)."""
        self.elements += 1
        if self.elements > self.max_elements:
            raise DocumentError(f"{self.what} has more than {self.max_elements:,} elements (in {where}), the "
                                "limit: it is too complex to translate here; split it into smaller documents.")
        if depth > self.max_depth:
            raise DocumentError(f"{self.what} nests elements more than {self.max_depth} deep (in {where}), the "
                                "limit: no real document needs that; simplify its structure.")

    def texts(self, count: int, where: str) -> None:
        """``count`` more text units."""
        self.text_units += count
        if self.text_units > self.max_text_units:
            raise DocumentError(f"{self.what} has more than {self.max_text_units:,} pieces of text (in {where}), "
                                "the limit: split it into smaller documents.")


def _has_text(value: Any) -> int:
    return 1 if isinstance(value, str) and value.strip() else 0


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is libxml2 failing an allocation (a memory cap reached mid-parse), which lxml reports as a
    syntax error ("unknown error", line 0): the budget's doing, never the visitor's malformed file."""
    return isinstance(exc, etree.XMLSyntaxError) and exc.code == etree.ErrorTypes.ERR_NO_MEMORY


def scan_xml(stream: IO[bytes], budget: Budget, where: str) -> None:
    """Stream the XML in ``stream`` through ``budget`` (its name ``where`` for the messages); a malformed one is
    a ``DocumentError``. Entities are never resolved, no DTD or network is read; each element is cleared as it
    ends, so the scan keeps only the open path in memory."""
    depth = 0
    events = etree.iterparse(stream, events=("start", "end"), resolve_entities=False, no_network=True,
                             load_dtd=False, huge_tree=False, remove_comments=True, remove_pis=True)
    try:
        for event, element in events:
            if event == "start":
                depth += 1
                budget.element(depth, where)
                continue
            depth -= 1
            budget.texts(_has_text(element.text) + _has_text(element.tail), where)
            element.clear(keep_tail=False)
            parent = element.getparent()
            while parent is not None and element.getprevious() is not None:  # the siblings already counted
                del parent[0]
    except etree.XMLSyntaxError as exc:
        if out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        if "Excessive depth" in str(exc):  # libxml2 parses ahead of the events: its own depth cap came first
            budget.element(budget.max_depth + 1, where)
        raise DocumentError(f"{budget.what} is not readable: {where} is not well-formed XML ({exc}).") from None


def scan_tree(root: Any, budget: Budget, where: str,
              children: Any = lambda node: getattr(node, "contents", None)) -> None:
    """The same count over a tree already built (BeautifulSoup's: ``children(node)`` lists a node's children, None
    for a text), walked with a stack, so a tree of any depth is measured without recursion."""
    stack: list = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        kids = children(node)
        if kids is None:
            budget.texts(_has_text(str(node)), where)
            continue
        if depth:
            budget.element(depth, where)
        stack.extend((kid, depth + 1) for kid in reversed(kids))
