"""A tiny LibreOffice help in four languages, laid out as Debian's libreoffice-help-* packages unpack it (the
markup of the 7.4 help: ids on paragraphs and headings, inline switches, icons, embedded snippets, indented
XSLT output), and .deb files made from it without dpkg."""
from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import Dict

LANGS = ("en", "de", "fr", "cs")
DIRS = {"en": "en-US", "de": "de", "fr": "fr", "cs": "cs"}
PACKAGES = {lang: f"libreoffice-help-{DIRS[lang].lower()}" for lang in LANGS}
VERSION = "4:7.4.7-1+deb12u14"

_ACTIONS = [("Click", "Klicken Sie auf", "Cliquez sur", "Klepněte na"),
            ("Select", "Wählen Sie", "Sélectionnez", "Vyberte"),
            ("Open", "Öffnen Sie", "Ouvrez", "Otevřete")]
_OBJECTS = [("the Save button", "die Schaltfläche Speichern", "le bouton Enregistrer", "tlačítko Uložit"),
            ("the Format menu", "das Menü Format", "le menu Format", "nabídku Formát"),
            ("a new spreadsheet", "eine neue Tabelle", "un nouveau classeur", "nový sešit"),
            ("the Styles deck", "das Fenster Formatvorlagen", "le volet Styles", "panel Styly")]
_ENDS = [("in the sidebar", "in der Seitenleiste", "dans le volet latéral", "v postranní liště"),
         ("of the current document", "des aktuellen Dokuments", "du document actif", "aktuálního dokumentu"),
         ("to change the page layout", "um das Seitenlayout zu ändern", "pour modifier la mise en page",
          "pro změnu rozvržení stránky")]
COPYRIGHT = """Format: http://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: LibreOffice
Source: http://download.documentfoundation.org/libreoffice/src

Files: *
Copyright: Copyright 2000, 2010 Oracle and/or its affiliates.
           Copyright (c) 2000, 2010 LibreOffice contributors and/or their affiliates.
License: MPL-2.0
 On Debian systems the full text of the MPL-2.0 can be found in
 /usr/share/common-licenses/MPL-2.0.

Files: helpcontent2/help3xsl/prism.js
Copyright: 2012 Lea Verou
License: MIT
"""


def sentence(i: int, lang: int) -> str:
    """Sentence ``i`` of the phrase tables in language ``lang`` (0 en ... 3 cs): 36 different ones."""
    a, o, e = _ACTIONS[i % 3][lang], _OBJECTS[(i // 3) % 4][lang], _ENDS[(i // 12) % 3][lang]
    return f"{a} {o} {e}."


def page_html(lang: str, paragraphs: Dict[str, str]) -> str:
    """A help page as the 7.4 XSLT writes it: a header, scripts, the display area with id'd elements."""
    body = "\n".join(f'<h2 id="{pid}" dir="auto"><a name="top"></a>{text}\n</h2>' if pid.startswith("hd_") else
                     f'  <p id="{pid}" class="paragraph" dir="auto">{text}</p>' for pid, text in paragraphs.items())
    return f"""<!DOCTYPE html>
<html lang="{DIRS[lang]}" dir="ltr">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>Help</title>
<script type="text/javascript" src="help2.js" defer></script>
</head>
<body>
<header id="TopLeftHeader"><a class="logo" href="x.html"><p dir="auto">LibreOffice 7.4 Help</p></a></header>
<div id="DisplayArea" itemprop="softwareHelp">
{body}
<div class="embedded"><p class="embedded" dir="auto"><a name="x"></a>An embedded note without an id.</p></div>
</div>
<footer><p id="DEBUG" class="debug">text/page.xhp</p></footer>
</body>
</html>
"""


def build_help_tree(root: Path, pages: int = 12, per_page: int = 3) -> Dict[str, Dict[str, Dict[str, str]]]:
    """Write ``pages`` pages into ``root/usr/share/libreoffice/help``; returns {page: {lang: {id: html}}}.

    Every page has a title, a heading "Example" (the same on every page), ``per_page`` one-sentence paragraphs
    and a two-sentence one made of other pages' sentences; page ``module0/p00.html`` also has the special cases
    (``SPECIAL``) and its German paragraphs in another order."""
    written: Dict[str, Dict[str, Dict[str, str]]] = {}
    for number in range(pages):
        page = f"module{number % 3}/p{number:02d}.html"
        content: Dict[str, Dict[str, str]] = {lang: {} for lang in LANGS}
        for k, lang in enumerate(LANGS):
            content[lang]["hd_id100"] = f"{('Page', 'Seite', 'Page', 'Stránka')[k]} {number}"
            content[lang]["hd_id200"] = ("Example", "Beispiel", "Exemple", "Příklad")[k]
            for j in range(per_page):
                content[lang][f"par_id{number}{j}"] = sentence(number * per_page + j, k)
            content[lang][f"par_id{number}9"] = f"{sentence(number + 1, k)} {sentence(number + 2, k)}"
        if number == 0:
            for pid, texts in SPECIAL.items():
                for lang, text in texts.items():
                    content[lang][pid] = text
            content["de"] = dict(reversed(list(content["de"].items())))  # aligned by id, not by position
        written[page] = content
        for lang in LANGS:
            folder = root / "usr/share/libreoffice/help" / DIRS[lang] / "text" / page
            folder.parent.mkdir(parents=True, exist_ok=True)
            folder.write_text(page_html(lang, content[lang]), encoding="utf-8")
    for lang in LANGS:
        doc = root / "usr/share/doc" / PACKAGES[lang]
        doc.mkdir(parents=True, exist_ok=True)
        (doc / "copyright").write_text(COPYRIGHT, encoding="utf-8")
        (doc / "changelog.Debian.gz").write_bytes(gzip.compress(
            f"libreoffice ({VERSION}) bookworm; urgency=medium\n\n  * x\n".encode(), mtime=0))
    return written


MARKUP = {  # the markup case: each language's html, and the plain text expected from it
    "en": ('Choose <span id="swlnsys1" class="switchinline"><span hidden="true" id="MAC1" class="MAC">'
           '<span class="emph">LibreOffice - Preferences</span></span><span hidden="true" id="default1">'
           '<span class="emph">Tools - Options</span></span></span><span class="emph"> - Load/Save</span>, then '
           'click the <span class="menuitem">Direct Cursor</span> icon \n<img src="i.svg" class="iconimage" '
           'alt="Icon">.<br>Press <span class="keycode">Ctrl</span><span class="keycode"> + F</span> &amp; go.',
           "Choose Tools - Options - Load/Save, then click the Direct Cursor icon. Press Ctrl + F & go."),
    "de": ('Wählen Sie <span class="switchinline"><span hidden="true" id="MAC1" class="MAC">LibreOffice - '
           'Einstellungen</span><span hidden="true" id="default1">Extras - Optionen</span></span> - '
           'Laden/Speichern, dann klicken Sie auf das Symbol <img alt="Symbol">\n .',
           "Wählen Sie Extras - Optionen - Laden/Speichern, dann klicken Sie auf das Symbol."),
    "fr": ('Choisissez <a href="x.html">Outils\n      - Options</a>\u00a0: cliquez sur <span>Curseur direct</span>'
           '<br/>et\tvalidez.', "Choisissez Outils - Options : cliquez sur Curseur direct et validez."),
    "cs": ('Zvolte <span class="menuitem">Nástroje</span> - <span class="menuitem">Možnosti</span> (<span>'
           ' Uložit </span>) a pak klepněte.', "Zvolte Nástroje - Možnosti (Uložit) a pak klepněte."),
}


SPECIAL = {  # page module0/p00.html's special paragraphs: id -> {lang: html}
    "par_id777": {lang: html for lang, (html, _) in MARKUP.items()},
    "par_id888": {"en": "Only three languages have this paragraph.", "de": "Nur drei Sprachen haben ihn.",
                  "cs": "Jen tři jazyky ho mají."},  # French lacks it: dropped
    "par_id555": {"en": "This sentence was left untranslated in French.", "de": "Dieser Satz blieb unübersetzt.",
                  "fr": "This sentence was left untranslated in French.", "cs": "Tato věta zůstala nepřeložená."},
    "par_id999": {"en": "Insert a table. Then fill it.", "de": "Fügen Sie eine Tabelle ein und füllen Sie sie.",
                  "fr": "Insérez un tableau. Puis remplissez-le.", "cs": "Vložte tabulku. Pak ji vyplňte."},
    "par_id444": {"en": "Press Enter.", "de": "Drücken Sie die Eingabetaste, um die Eingabe in der Zelle zu "
                  "bestätigen und zur nächsten Zeile zu gehen.", "fr": "Appuyez sur Entrée.",
                  "cs": "Stiskněte Enter."},  # German says much more: the length ratio drops it
}


def make_deb(tree: Path, lang: str, dest: Path, version: str = VERSION) -> Path:
    """A .deb of ``lang``'s files of ``tree`` (``pack_deb``)."""
    name = PACKAGES[lang]
    prefixes = [f"usr/share/libreoffice/help/{DIRS[lang]}/", f"usr/share/doc/{name}/"]
    files = sorted(p for p in tree.rglob("*") if p.is_file() and
                   p.relative_to(tree).as_posix().startswith(tuple(prefixes)))
    return pack_deb(name, version, {p.relative_to(tree).as_posix(): p.read_bytes() for p in files}, dest)


def pack_deb(name: str, version: str, files: Dict[str, bytes], dest: Path, arch: str = "all") -> Path:
    """A .deb holding ``files`` ({path: content}) as apt names it (ar of debian-binary, control.tar.xz,
    data.tar.xz), made without dpkg."""
    data = _tar_xz({f"./{path}": payload for path, payload in sorted(files.items())})
    control = _tar_xz({"./control": f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\n".encode()})
    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", control), ("data.tar.xz", data)]
    out = io.BytesIO()
    out.write(b"!<arch>\n")
    for member, payload in members:
        out.write(f"{member:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(payload):<10}`\n".encode())
        out.write(payload + (b"\n" if len(payload) % 2 else b""))
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{name}_{version.split(':')[-1]}_{arch}.deb"
    path.write_bytes(out.getvalue())
    return path


def _tar_xz(files: Dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        for name, payload in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()

