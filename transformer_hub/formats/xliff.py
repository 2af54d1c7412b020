"""XLIFF 1.2 and 2.0: each unit's source translated into its target, inline elements kept and placed.

A unit's source is mixed content: text and inline elements. Elements that hold translatable text (1.2's ``<g>``
and ``<mrk>``, 2.0's ``<pc>`` and ``<mrk>``) become a pair of marks ``<tN>…</tN>`` around their text; the others
(``<x/>``, ``<ph>``, ``<bpt>``/``<ept>``, ``<it>``, ``<bx/>``/``<ex/>``; 2.0's ``<ph/>``, ``<sc/>``/``<ec/>``,
``<sm/>``/``<em/>``, ``<cp/>``) carry native code and become one mark ``<tN/>``. The text pipeline keeps every tag
(``text.placeholders``), and the translation is turned back into elements: copies of the source's, with their
attributes untouched, each where its mark landed. A translation whose marks do not nest as the source's did is not
written (the unit stays as it was). Units marked ``translate="no"`` and targets that hold text (unless
``overwrite``) are kept; a written target is marked for review: 1.2's ``state="needs-review-translation"``
(``state-qualifier="mt-suggestion"``), 2.0's segment ``state="translated"``.
"""
from __future__ import annotations

import copy
import io
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from lxml import etree

from .budget import Budget, scan_xml
from .layout import Document, DocumentError, Translated, register_format

NS12 = "urn:oasis:names:tc:xliff:document:1.2"
NS20 = "urn:oasis:names:tc:xliff:document:2.0"
_PAIRED = {"g", "mrk", "pc"}  # inline elements whose content is text to translate
_MARKS = re.compile(r"<(/?)t(\d{1,5})(/?)>")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


@dataclass
class _Unit:
    """A source to translate: the element, its text with marks, the inline elements by mark number, and where
    its target goes."""

    source: etree._Element
    text: str
    inline: Dict[int, etree._Element]
    owner: etree._Element  # 1.2: the trans-unit; 2.0: the segment


def parse(data: bytes) -> Tuple[etree._Element, str]:
    """The XLIFF document's root (scanned against the document budget first) and its namespace."""
    scan_xml(io.BytesIO(data), Budget("The XLIFF file"), "the file")
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise DocumentError(f"The XLIFF file is not well-formed XML ({exc}).") from None
    namespace = etree.QName(root).namespace
    if etree.QName(root).localname != "xliff" or namespace not in (NS12, NS20):
        raise DocumentError("The file is not XLIFF 1.2 or 2.0: its root must be <xliff> in the OASIS namespace "
                            f"({NS12} or {NS20}).")
    return root, namespace


def read(data: bytes, tgt_lang: Optional[str] = None, overwrite: bool = False) -> Document:
    """The sources to translate, and how to write the file back with their targets."""
    root, ns = parse(data)
    units = [_unit(source, owner) for source, owner in _sources(root, ns, overwrite)]

    def write(done: List[Translated]) -> bytes:
        for unit, translated in zip(units, done):
            target = _target(unit, translated.target) if translated.target != unit.text else None
            if target is not None:
                _place(unit, target, ns)
        if tgt_lang:
            _set_target_language(root, ns, tgt_lang)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8")

    return Document([unit.text for unit in units], write)


def _sources(root: etree._Element, ns: str, overwrite: bool):
    """(source, owner) of every unit or segment to translate, in document order."""
    owners = root.iter(f"{{{ns}}}trans-unit") if ns == NS12 else root.iter(f"{{{ns}}}segment")
    for owner in owners:
        unit = owner if ns == NS12 else owner.getparent()
        if unit.get("translate") == "no":
            continue
        source, target = owner.find(f"{{{ns}}}source"), owner.find(f"{{{ns}}}target")
        if source is None or not "".join(source.itertext()).strip():
            continue
        if target is not None and "".join(target.itertext()).strip() and not overwrite:
            continue
        yield source, owner


def _unit(source: etree._Element, owner: etree._Element) -> _Unit:
    inline: Dict[int, etree._Element] = {}

    def render(element: etree._Element) -> str:
        parts = [element.text or ""]
        for child in element:
            if not isinstance(child.tag, str):  # a comment or processing instruction: dropped from the text
                parts.append(child.tail or "")
                continue
            number = len(inline) + 1
            inline[number] = child
            if etree.QName(child).localname in _PAIRED:
                parts.append(f"<t{number}>{render(child)}</t{number}>")
            else:
                parts.append(f"<t{number}/>")
            parts.append(child.tail or "")
        return "".join(parts)

    return _Unit(source, render(source), inline, owner)


def _target(unit: _Unit, translation: str) -> Optional[etree._Element]:
    """The target element built from ``translation`` (None when its marks are not the source's, nested)."""
    target = etree.Element(etree.QName(etree.QName(unit.source).namespace, "target"))
    stack: List[etree._Element] = [target]
    seen = set()
    at = 0
    for match in _MARKS.finditer(translation):
        _append_text(stack[-1], translation[at:match.start()])
        at = match.end()
        closing, number, empty = match.group(1), int(match.group(2)), match.group(3)
        original = unit.inline.get(number)
        if original is None or (closing and empty):
            return None
        paired = etree.QName(original).localname in _PAIRED
        if closing:
            if len(stack) < 2 or stack[-1].get("{urn:transformer_hub}mark") != str(number):
                return None
            stack.pop().attrib.pop("{urn:transformer_hub}mark")
            continue
        if number in seen or paired == bool(empty):
            return None
        seen.add(number)
        element = copy.deepcopy(original) if not paired else _shallow(original)
        element.tail = None
        stack[-1].append(element)
        if paired:
            element.set("{urn:transformer_hub}mark", str(number))
            stack.append(element)
    _append_text(stack[-1], translation[at:])
    return target if len(stack) == 1 and seen == set(unit.inline) else None


def _shallow(element: etree._Element) -> etree._Element:
    copied = etree.Element(element.tag, attrib=dict(element.attrib), nsmap=element.nsmap)
    return copied


def _append_text(parent: etree._Element, text: str) -> None:
    if not text:
        return
    if len(parent):
        parent[-1].tail = (parent[-1].tail or "") + text
    else:
        parent.text = (parent.text or "") + text


def _place(unit: _Unit, target: etree._Element, ns: str) -> None:
    """``target`` into the unit after its source (replacing an old target), marked for review."""
    old = unit.owner.find(f"{{{ns}}}target")
    if old is not None:
        for name, value in old.attrib.items():  # xml:lang and the like stay
            target.set(name, value)
        unit.owner.replace(old, target)
    else:
        after = unit.owner.find(f"{{{ns}}}seg-source") if ns == NS12 else None
        (after if after is not None else unit.source).addnext(target)
    target.tail = unit.source.tail
    if unit.owner.text is not None and not unit.owner.text.strip():  # the source's own indentation before target
        unit.source.tail = unit.owner.text
    etree.cleanup_namespaces(target, top_nsmap={None: ns})
    if ns == NS12:
        target.set("state", "needs-review-translation")
        target.set("state-qualifier", "mt-suggestion")
    else:
        unit.owner.set("state", "translated")


def _set_target_language(root: etree._Element, ns: str, tgt_lang: str) -> None:
    if ns == NS12:
        for file in root.iter(f"{{{ns}}}file"):
            file.set("target-language", tgt_lang)
    else:
        root.set("trgLang", tgt_lang)


FORMAT = register_format("xliff", "XLIFF", (".xlf", ".xliff"), read, order=90, options=("tgt_lang", "overwrite"))
