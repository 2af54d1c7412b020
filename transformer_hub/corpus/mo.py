"""GNU gettext message catalogs (``.mo``) read and written in Python.

A ``.mo`` file is a header (magic number, revision, count, two table offsets) and two tables of (length, offset)
pairs: the original strings and their translations, in the same order.  An original is ``msgid``, or
``msgctxt EOT msgid`` with a context, and ``msgid NUL msgid_plural`` for a plural entry, whose translation is its
forms joined by NUL.  The entry with the empty msgid is the header (``Content-Type: ...; charset=UTF-8``,
``Plural-Forms: ...``), and the charset decodes every string.

    from transformer_hub.corpus.mo import read_mo
    catalog = read_mo(Path("de.mo").read_bytes())
    for message in catalog.messages: print(message.context, message.msgid, message.msgstr)
"""
from __future__ import annotations

import codecs
import re
import struct
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from ..errors import UserError

MAGIC = 0x950412DE
_CONTEXT, _PLURAL = "\x04", "\x00"


class CatalogError(UserError):
    """Bytes that are not a readable ``.mo`` catalog; the message says where it breaks."""


@dataclass(frozen=True)
class Message:
    """One entry: ``msgstr`` holds one form, or one per plural form when ``msgid_plural`` is set."""

    msgid: str
    msgstr: Tuple[str, ...]
    context: Optional[str] = None
    msgid_plural: Optional[str] = None


@dataclass(frozen=True)
class Catalog:
    """A catalog's header fields (``Content-Type``, ``Plural-Forms``, ...) and its messages, header excluded."""

    headers: Dict[str, str]
    messages: Tuple[Message, ...]

    @property
    def plural_count(self) -> Optional[int]:
        """``nplurals`` of the ``Plural-Forms`` header, or None without one."""
        found = re.search(r"nplurals\s*=\s*(\d+)", self.headers.get("Plural-Forms", ""))
        return int(found.group(1)) if found else None


def _charset(header: bytes) -> str:
    found = re.search(rb"charset=([-\w.:]+)", header)
    name = found.group(1).decode("ascii") if found else "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:  # "CHARSET" (a template's placeholder) or an unknown name: UTF-8 is gettext's default
        return "utf-8"


def read_mo(data: bytes, name: str = "catalog") -> Catalog:
    """The catalog in ``data`` (either byte order); ``name`` is what errors call it."""
    if len(data) < 28:
        raise CatalogError(f"{name} is not a .mo catalog: {len(data)} bytes is shorter than its header")
    for order in ("<", ">"):
        if struct.unpack(order + "I", data[:4])[0] == MAGIC:
            break
    else:
        raise CatalogError(f"{name} is not a .mo catalog: wrong magic number")
    revision, count, originals, translations = struct.unpack(order + "4I", data[4:20])
    if revision >> 16 > 1:
        raise CatalogError(f"{name}: .mo revision {revision >> 16} is not one this reader knows (0 or 1)")

    def string(table: int, index: int) -> bytes:
        at = table + 8 * index
        if at + 8 > len(data):
            raise CatalogError(f"{name}: truncated (its string table runs past the end)")
        length, offset = struct.unpack(order + "2I", data[at:at + 8])
        if offset + length > len(data):
            raise CatalogError(f"{name}: truncated (string {index} runs past the end)")
        return data[offset:offset + length]

    pairs = [(string(originals, i), string(translations, i)) for i in range(count)]
    header = next((text for original, text in pairs if original == b""), b"")
    charset = _charset(header)
    headers = dict(line.split(":", 1) for line in header.decode(charset, errors="replace").splitlines() if ":" in line)
    messages = []
    for original, text in pairs:
        if original == b"":
            continue
        key, forms = original.decode(charset, errors="replace"), text.decode(charset, errors="replace")
        context, _, key = key.rpartition(_CONTEXT) if _CONTEXT in key else (None, "", key)
        msgid, _, plural = key.partition(_PLURAL)
        messages.append(Message(msgid, tuple(forms.split(_PLURAL)), context, plural if _PLURAL in key else None))
    return Catalog({k.strip(): v.strip() for k, v in headers.items()}, tuple(messages))


def write_mo(messages: Sequence[Message], headers: Optional[Dict[str, str]] = None) -> bytes:
    """``messages`` as a little-endian UTF-8 ``.mo`` catalog (originals sorted, as msgfmt writes them), with a
    header entry made of ``headers`` (``Content-Type`` defaults to UTF-8)."""
    fields = {"Content-Type": "text/plain; charset=UTF-8", **(headers or {})}
    entries = {b"": "".join(f"{k}: {v}\n" for k, v in fields.items()).encode("utf-8")}
    for m in messages:
        key = (f"{m.context}{_CONTEXT}" if m.context is not None else "") + m.msgid + \
            (f"{_PLURAL}{m.msgid_plural}" if m.msgid_plural is not None else "")
        entries[key.encode("utf-8")] = _PLURAL.join(m.msgstr).encode("utf-8")
    keys = sorted(entries)
    start = 28 + 16 * len(keys)  # the header, then two tables of (length, offset) pairs
    blob, offsets = b"", []
    for payload in keys + [entries[k] for k in keys]:
        offsets.append((len(payload), start + len(blob)))
        blob += payload + b"\x00"
    head = struct.pack("<7I", MAGIC, 0, len(keys), 28, 28 + 8 * len(keys), 0, start)
    return head + b"".join(struct.pack("<2I", *pair) for pair in offsets) + blob
