"""The text of one LibreOffice help page: every paragraph and heading with an id, as plain text.

The help (``help/<lang>/text/**.html``, made from the ``.xhp`` sources by the help's XSLT) gives each paragraph
and heading an id that is the same in every language (``par_id3149569``, ``hd_id3147274``, ``par_idN1056A``).
Inline markup (menu items, key names, links) becomes plain text; a block boundary inside a paragraph (a line
break, a list item, a table cell) becomes a space.  An inline switch (``<span class="switchinline">``) holds one
variant per system or module, all hidden until the page's script shows one: the ``default`` variant is kept (the
text a Linux user sees), the others (``MAC``, ``WIN``, ``CALC``, ...) are dropped.  Images are dropped with their
alt text (icon names such as "Icon Save" are not part of the sentence).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Dict, List, Optional, Tuple

ID_PATTERN = re.compile(r"(?:par|hd)_id\w+")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCK = {"br", "p", "div", "li", "ul", "ol", "table", "tr", "td", "th", "pre", "h1", "h2", "h3", "h4", "h5", "h6",
          "dl", "dt", "dd", "blockquote", "section", "header", "footer", "nav", "aside"}
_UNREAD = {"script", "style", "noscript", "head", "title", "button", "label", "nav"}  # images: void, no text
_SPACES = re.compile(r"\s+")
# The XSLT indents its output, and a dropped image leaves its surroundings apart: "the icon <img>." read as
# "the icon ." and "<a>IMCSC</a>\n ," as "IMCSC ,".  No language puts a space before these marks when they end a
# word (".odt" after a space is a file name, and stays); French's space before ":;!?" is kept.
_SPACE_BEFORE = re.compile(r"\s+([,.)\]])(?=\s|$)")
_SPACE_AFTER = re.compile(r"([(\[])\s+")


def plain(text: str) -> str:
    """``text`` with every run of whitespace (no-break spaces and line breaks included) one space, trimmed, and
    no space before a closing mark or after an opening one."""
    text = _SPACES.sub(" ", text).strip()
    return _SPACE_AFTER.sub(r"\1", _SPACE_BEFORE.sub(r"\1", text))


class _PageParser(HTMLParser):
    """Collects the text of each element whose id is a paragraph or heading id, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: List[str] = []  # the ids, in the order their elements start
        self.texts: Dict[str, List[str]] = {}  # id -> the texts of its elements (one unless a snippet repeats)
        self.tags: List[str] = []  # the open elements (void elements never are)
        self.open: List[Tuple[int, str, List[str]]] = []  # (depth, id, pieces) of the paragraphs being read
        self.skip_depth: Optional[int] = None  # inside an element whose text is not read, from this depth on
        self.switch_depths: List[int] = []  # depths of the open inline switches

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag in _BLOCK:
            self._add(" ")
        if tag in _VOID:
            return
        depth = len(self.tags)
        self.tags.append(tag)
        if self.skip_depth is not None:
            return
        if tag in _UNREAD or self._other_variant(values, depth):
            self.skip_depth = depth
            return
        if "switchinline" in values.get("class", "").split():
            self.switch_depths.append(depth)
        if ID_PATTERN.fullmatch(values.get("id", "")):
            self.open.append((depth, values["id"], []))
            self.starts.append(values["id"])

    def _other_variant(self, values: Dict[str, str], depth: int) -> bool:
        """A child of an inline switch that is not its ``default`` variant."""
        return bool(self.switch_depths) and self.switch_depths[-1] == depth - 1 \
            and not values.get("id", "").startswith("default")

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK:
            self._add(" ")
        if tag in _VOID or tag not in self.tags:
            return  # a stray end tag closes nothing
        while self.tags:  # an end tag closes the elements left open inside it too
            depth = len(self.tags) - 1
            closed = self.tags.pop()
            self._close(depth)
            if closed == tag:
                break

    def _close(self, depth: int) -> None:
        if self.skip_depth is not None:
            if depth == self.skip_depth:
                self.skip_depth = None
            return
        if self.switch_depths and self.switch_depths[-1] == depth:
            self.switch_depths.pop()
        if self.open and self.open[-1][0] == depth:
            _, element_id, pieces = self.open.pop()
            self.texts.setdefault(element_id, []).append(plain("".join(pieces)))

    def handle_data(self, data: str) -> None:
        self._add(data)

    def _add(self, text: str) -> None:
        if self.skip_depth is None:
            for _, _, pieces in self.open:  # a paragraph inside another one is part of its text too
                pieces.append(text)


def page_paragraphs(html: str) -> Dict[str, str]:
    """``{id: plain text}`` of a help page's paragraphs and headings, in document order; an id seen twice on a
    page (a snippet embedded twice) keeps its first text."""
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    while parser.tags:  # elements the file never closed end with it
        parser.handle_endtag(parser.tags[-1])
    return {element_id: parser.texts[element_id][0] for element_id in dict.fromkeys(parser.starts)}
