"""``.txt``: UTF-8 text, translated sentence by sentence with its lines, blank lines and line ends kept."""
from __future__ import annotations

from typing import List

from .layout import Document, DocumentError, Translated, register_format


def read(data: bytes) -> Document:
    """The text as one unit (a line break always ends a sentence, so every line and blank line stays put)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"The file is not UTF-8 text (byte 0x{data[exc.start]:02x} at position {exc.start}): "
                            "save it as UTF-8 and send it again.") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    bom = data.startswith(b"\xef\xbb\xbf")

    def write(done: List[Translated]) -> bytes:
        out = done[0].target.replace("\n", newline)
        return (b"\xef\xbb\xbf" if bom else b"") + out.encode("utf-8")

    return Document([text.replace("\r\n", "\n").replace("\r", "\n")], write)


FORMAT = register_format("plain", "Plain text", (".txt",), read, order=10)
