"""``.epub`` e-books: every XHTML chapter translated as HTML (``html.read_xhtml``: blocks' text, inline tags kept),
the archive written back with every other member (the package file, styles, images, fonts) byte for byte, in
its order and with its compression (the ``mimetype`` member stays first and stored, as EPUB requires)."""
from __future__ import annotations

import io
import zipfile
from typing import Dict, List

from .html import read_xhtml
from .layout import Document, Translated, register_format
from .office import check_archive

CHAPTERS = (".xhtml", ".html", ".htm")


def read(data: bytes) -> Document:
    check_archive(data, FORMAT.title, "META-INF/container.xml")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        contents: Dict[str, bytes] = {m.filename: archive.read(m) for m in members}
    names = [m.filename for m in members if m.filename.lower().endswith(CHAPTERS)]
    chapters = [read_xhtml(contents[name]) for name in names]

    def write(done: List[Translated]) -> bytes:
        start = 0
        for name, chapter in zip(names, chapters):
            contents[name] = chapter.write(done[start:start + len(chapter.texts)])
            start += len(chapter.texts)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for member in members:  # each with its own compression and date
                archive.writestr(member, contents[member.filename])
        return out.getvalue()

    return Document([text for chapter in chapters for text in chapter.texts], write)


FORMAT = register_format("ebook", "EPUB", (".epub",), read, order=70)
