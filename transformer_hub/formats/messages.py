"""JSON message files (``.json``, i18next style): every message translated, the keys, their nesting and order kept.

A message file is one JSON object whose values are messages (strings), objects of more keys (nested keys:
``{"menu": {"open": "Open"}}``) or lists of them; flat keys (``{"menu.open": "Open"}``) are keys like any other.
Numbers, booleans, null and blank strings stay as they are. Interpolations (``{{count}}``, ``{{value, number}}``),
nesting (``$t(key)``) and markup are the text pipeline's pieces (``text.placeholders``): they come back unchanged,
and a message whose translation would lose one stays as it was.

Plurals are i18next's (JSON v4, the CLDR categories as ``Intl.PluralRules`` names them): the keys ``NAME_one``,
``NAME_other`` (and ``_zero``, ``_two``, ``_few``, ``_many``) of one object, ``_other`` among them, are one
message. The output has the target language's categories (Czech: one, few, many, other; French: one, many, other),
each translated from the source's same category where it has it, else from ``_other`` (as a catalog's plural forms
are filled); ``_zero``, which i18next reads for a count of 0 in every language, stays where the source has it.

The output is UTF-8, characters unescaped, laid out as ``json.dumps`` lays out JSON with the input's indentation
(that of its first indented line: spaces or a tab; none: one line), with the input's line ends and final newline. A file is refused with one line when it is not UTF-8
JSON, not an object, defines a key twice in one object, or nests or holds more than a document may
(``budget.Budget``).
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..text.placeholders import same_pieces
from .budget import Budget
from .layout import Document, DocumentError, Translated, register_format

CATEGORIES = ("zero", "one", "two", "few", "many", "other")  # CLDR's order
PLURALS = {"en": ("one", "other"), "de": ("one", "other"), "fr": ("one", "many", "other"),
           "cs": ("one", "few", "many", "other")}  # each language's categories (cardinal), as Intl.PluralRules
_PLURAL_KEY = re.compile(r"^(.+)_(zero|one|two|few|many|other)$", re.DOTALL)
_INDENT = re.compile(r"\n([ \t]+)\S")


def read(data: bytes, tgt_lang: Optional[str] = None) -> Document:
    """The file's messages, in order, and how to write it back with their translations (and ``tgt_lang``'s
    plural categories)."""
    root = _parse(data)
    texts: List[str] = []
    _walk(root, texts, Budget("The JSON file"), 1)
    indent, newline = _indent(data), "\r\n" if b"\r\n" in data else "\n"

    def write(done: List[Translated]) -> bytes:
        out = _rebuild(root, iter(done), PLURALS.get(tgt_lang or ""))
        text = json.dumps(out, ensure_ascii=False, indent=indent) + ("\n" if data.endswith(b"\n") else "")
        return text.replace("\n", newline).encode("utf-8")  # a JSON string holds no raw line break: only layout

    return Document(texts, write)


def _parse(data: bytes) -> Dict[str, Any]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"The JSON file is not UTF-8 (byte 0x{data[exc.start]:02x} at position {exc.start}): "
                            "save it as UTF-8 and send it again.") from None
    try:
        root = json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"The file is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).") \
            from None
    except RecursionError:
        raise DocumentError("The JSON file nests its values too deep to read: no message file needs that.") from None
    if not isinstance(root, dict):
        raise DocumentError(f"The JSON file holds {type(root).__name__ if root is not None else 'null'}, not an "
                            "object of messages ({\"key\": \"message\", ...}): nothing to translate.")
    return root


def _unique(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """A JSON object's pairs as a dict; a key defined twice is an error (which message would be meant?)."""
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DocumentError(f"The JSON file defines the key {key[:60]!r} twice in one object: keep one and send "
                                "it again.")
        out[key] = value
    return out


def _walk(node: Any, texts: List[str], budget: Budget, depth: int) -> None:
    """Every message under ``node`` into ``texts``, in document order (``_rebuild`` walks the same order)."""
    if isinstance(node, str):
        if node.strip():
            budget.texts(1, "its messages")
            texts.append(node)
    elif isinstance(node, (dict, list)):
        budget.element(depth, "its objects and lists")
        for value in node.values() if isinstance(node, dict) else node:
            _walk(value, texts, budget, depth + 1)


def _rebuild(node: Any, translations: Iterator[Translated], categories: Optional[Tuple[str, ...]]) -> Any:
    """``node`` with every message replaced by its translation (kept where that lost a piece), plurals given the
    target's ``categories``."""
    if isinstance(node, str):
        if not node.strip():
            return node
        target = next(translations).target
        return target if target.strip() and same_pieces(node, target) else node
    if isinstance(node, list):
        return [_rebuild(value, translations, categories) for value in node]
    if isinstance(node, dict):
        done = {key: _rebuild(value, translations, categories) for key, value in node.items()}
        return _plurals(done, categories) if categories else done
    return node


def _plurals(node: Dict[str, Any], categories: Tuple[str, ...]) -> Dict[str, Any]:
    """``node`` with each plural message (``NAME_other`` and its siblings, strings) in ``categories`` (and
    ``_zero`` where it was), in CLDR's order where its first key was."""
    groups: Dict[str, Dict[str, str]] = {}
    for key, value in node.items():
        found = _PLURAL_KEY.match(key)
        if found and isinstance(value, str):
            groups.setdefault(found.group(1), {})[found.group(2)] = key
    groups = {base: forms for base, forms in groups.items() if "other" in forms}
    if not groups:
        return node
    out: Dict[str, Any] = {}
    for key, value in node.items():
        found = _PLURAL_KEY.match(key)
        forms = groups.get(found.group(1)) if found else None
        if forms is None or found.group(2) not in forms or forms[found.group(2)] != key:
            out[key] = value
            continue
        if any(f"{found.group(1)}_{c}" in out for c in CATEGORIES):
            continue  # the group is out already, from its first key
        wanted = [c for c in CATEGORIES if c in categories or (c == "zero" and "zero" in forms)]
        for category in wanted:
            out[f"{found.group(1)}_{category}"] = node[forms.get(category, forms["other"])]
    return out


def _indent(data: bytes) -> Optional[str]:
    """The indentation of the input's first indented line (None: the file is one line)."""
    found = _INDENT.search(data[:4096].decode("utf-8", "replace"))
    return found.group(1) if found else None


FORMAT = register_format("json", "i18next JSON", (".json",), read, order=95, options=("tgt_lang",))
