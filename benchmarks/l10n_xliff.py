"""The localization benchmark's XLIFF part (``python -m benchmarks l10n``): the entries as XLIFF 1.2 and 2.0 files,
translated through the document path, each output validated against the OASIS schema of its version.

The schemas are the ones Debian's ``php-symfony-translation`` package ships (``xliff-core-1.2-strict.xsd``,
``xliff-core-2.0.xsd`` and the ``xml.xsd`` they import), fetched once with ``apt-get download`` into a cache
folder and read from there (never from the network while validating).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from lxml import etree

from transformer_hub.formats.xliff import NS12, NS20
from transformer_hub.text.placeholders import same_pieces

PACKAGE = "php-symfony-translation"
PACKAGE_FOLDER = "usr/share/php/Symfony/Component/Translation/Resources/schemas/"
SCHEMAS = {"1.2": "xliff-core-1.2-strict.xsd", "2.0": "xliff-core-2.0.xsd"}
VERSIONS = tuple(SCHEMAS)


def fetch_schemas(folder: Path) -> Path:
    """``folder`` holding both schemas and ``xml.xsd`` (downloaded from Debian's archive when it does not yet);
    ``SystemExit`` saying why when apt cannot fetch them."""
    from transformer_hub.corpus.debian import PackageError, apt_download, deb_files, read_deb

    wanted = (*SCHEMAS.values(), "xml.xsd")
    if all((folder / name).is_file() for name in wanted):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    try:
        deb = next(d for d in apt_download([PACKAGE], folder) if d.name.startswith(f"{PACKAGE}_"))
    except (PackageError, ValueError) as exc:
        raise SystemExit(f"benchmark: error: the XLIFF schemas come from Debian's {PACKAGE}, which apt-get could "
                         f"not download ({exc}); pass --schemas DIR holding {', '.join(wanted)}") from None
    for name, data in deb_files(read_deb(deb), [PACKAGE_FOLDER]):
        (folder / Path(name).name).write_bytes(data)
    return folder


def load_schemas(folder: Path) -> Dict[str, etree.XMLSchema]:
    """The two schemas by version, ``xml.xsd`` read from ``folder`` instead of the W3C's site."""
    class Local(etree.Resolver):
        def resolve(self, url, pubid, context):
            return self.resolve_filename(str(folder / "xml.xsd"), context) if url.endswith("xml.xsd") else None

    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(Local())
    return {version: etree.XMLSchema(etree.parse(str(folder / name), parser)) for version, name in SCHEMAS.items()}


def build_xliff(texts: Sequence[str], version: str, name: str) -> bytes:
    """An XLIFF ``version`` file of ``texts`` (one unit each, without a target), its file named ``name``."""
    if version == "1.2":
        root = etree.Element(f"{{{NS12}}}xliff", nsmap={None: NS12}, version="1.2")
        body = etree.SubElement(etree.SubElement(root, f"{{{NS12}}}file", {
            "source-language": "en", "datatype": "po", "original": name}), f"{{{NS12}}}body")
        for i, text in enumerate(texts, 1):
            unit = etree.SubElement(body, f"{{{NS12}}}trans-unit", id=str(i))
            etree.SubElement(unit, f"{{{NS12}}}source").text = text
    else:
        root = etree.Element(f"{{{NS20}}}xliff", nsmap={None: NS20}, version="2.0", srcLang="en")
        file = etree.SubElement(root, f"{{{NS20}}}file", id=name)
        for i, text in enumerate(texts, 1):
            segment = etree.SubElement(etree.SubElement(file, f"{{{NS20}}}unit", id=f"u{i}"), f"{{{NS20}}}segment")
            etree.SubElement(segment, f"{{{NS20}}}source").text = text
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def check_xliff(texts: Sequence[str], output: bytes, schema: etree.XMLSchema) -> dict:
    """Whether ``output`` is valid against ``schema`` (the first error when not), how many of its units have a
    target, and how many of those hold exactly their source's pieces."""
    root = etree.fromstring(output)
    valid = schema.validate(root)
    ns = etree.QName(root).namespace
    targets: List[Optional[str]] = []
    for source in root.iter(f"{{{ns}}}source"):
        target = source.getparent().find(f"{{{ns}}}target")
        targets.append(None if target is None else "".join(target.itertext()))
    written = [(s, t) for s, t in zip(texts, targets) if t is not None]
    return {"valid": bool(valid), "error": None if valid else str(schema.error_log.last_error)[:200],
            "units": len(texts), "targets": len(written), "same_pieces": sum(same_pieces(s, t) for s, t in written)}


def xliff_files(groups: Dict[str, List[str]], translate: Callable[[bytes, str], bytes],
                schemas: Dict[str, etree.XMLSchema]) -> dict:
    """Per version: ``groups`` (package -> its texts) as one file each through ``translate(data, suffix)``,
    each output checked; the counts summed and the files that failed named."""
    out = {}
    for version in VERSIONS:
        files = {name: check_xliff(texts, translate(build_xliff(texts, version, name), ".xlf"), schemas[version])
                 for name, texts in sorted(groups.items())}
        out[version] = {"files": len(files), "valid": sum(f["valid"] for f in files.values()),
                        "units": sum(f["units"] for f in files.values()),
                        "targets": sum(f["targets"] for f in files.values()),
                        "targets_same_pieces": sum(f["same_pieces"] for f in files.values()),
                        "invalid": {name: f["error"] for name, f in files.items() if not f["valid"]}}
    return out
