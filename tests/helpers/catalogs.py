"""A tiny Debian archive of message catalogs built here: packages with .mo files in German, French and Czech (and
one with German only), their .deb files, the Contents index that lists them, and a stand-in ``apt-get`` that
"downloads" from that store and logs what it was asked for."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

from helpers.help_tree import pack_deb, sentence
from transformer_hub.corpus.mo import Message, write_mo

TARGETS = ("de", "fr", "cs")
VERSION = "1.2-3"
PACKAGES = [f"app{n:02d}" for n in range(12)]
GERMAN_ONLY = "germanonly"
COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: {name}

Files: *
Copyright: 2020 The {name} authors
License: GPL-2+
"""
PLURAL_FORMS = {"de": "nplurals=2; plural=(n != 1);", "fr": "nplurals=2; plural=(n > 1);",
                "cs": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;"}
# app00's special entries: (context, msgid, msgid_plural, {lang: msgstr forms})
SPECIAL = [
    (None, "%d file was deleted", "%d files were deleted",
     {"de": ("%d Datei wurde gelöscht", "%d Dateien wurden gelöscht"),
      "fr": ("%d fichier a été supprimé", "%d fichiers ont été supprimés"),
      "cs": ("%d soubor byl smazán", "%d soubory byly smazány", "%d souborů bylo smazáno")}),
    ("menu", "Print", None, {"de": ("Drucken",), "fr": ("Imprimer",), "cs": ("Tisk",)}),
    ("button", "Print", None, {"de": ("Jetzt drucken",), "fr": ("Imprimer maintenant",), "cs": ("Vytisknout",)}),
    (None, "_Save the Document", None, {"de": ("Dokument _speichern",), "fr": ("_Enregistrer le document",),
                                        "cs": ("_Uložit dokument",)}),
    (None, "&Quit the Program", None, {"de": ("Programm &beenden",), "fr": ("&Quitter le programme",),
                                       "cs": ("&Ukončit program",)}),
    (None, "Delete %(name)s from the project?", None,
     {"de": ("%(name)s aus dem Projekt löschen?",), "fr": ("Supprimer %(name)s du projet ?",),
      "cs": ("Smazat %(name)s z projektu?",)}),
    (None, "The document could not be saved to the disk", None,  # German's is French: dropped for German only
     {"de": ("Le document n'a pas pu être enregistré sur le disque",),
      "fr": ("Le document n'a pas pu être enregistré sur le disque",),
      "cs": ("Dokument nebylo možné uložit na disk",)}),
    (None, "Version", None, {"de": ("Version",), "fr": ("Version",), "cs": ("Verze",)}),
    (None, "<b>%s</b>", None, {"de": ("<b>%s</b>",), "fr": ("<b>%s</b>",), "cs": ("<b>%s</b>",)}),
    (None, "Show the hidden files", None, {"de": ("Versteckte Dateien anzeigen",),
                                           "fr": ("Afficher les fichiers cachés",)}),
]
# "Cancel" is in every package; German's translation varies (four ways, the first the most frequent)
CANCEL_DE = ["Abbrechen", "Abbrechen", "Abbrechen", "Abbrechen", "Verwerfen", "Verwerfen", "Abbruch",
             "Abbrechen", "Stornieren", "Abbrechen", "Verwerfen", "Abbruch"]


def package_messages(n: int) -> Dict[str, List[Message]]:
    """Package ``n``'s messages per language: three sentences of its own, "Cancel", and app00's specials."""
    messages: Dict[str, List[Message]] = {lang: [] for lang in TARGETS}
    for i in range(3 * n, 3 * n + 3):
        for k, lang in enumerate(TARGETS, start=1):
            messages[lang].append(Message(sentence(i, 0), (sentence(i, k),)))
    for lang, cancel in zip(TARGETS, (CANCEL_DE[n], "Annuler", "Zrušit")):
        messages[lang].append(Message("Cancel", (cancel,)))
    if n == 0:
        for context, msgid, plural, forms in SPECIAL:
            for lang, msgstr in forms.items():
                messages[lang].append(Message(msgid, msgstr, context, plural))
    return messages


def build_archive(root: Path) -> Tuple[Path, Path]:
    """The packages' .deb files in ``root/store`` and a Contents index ``root/Contents-all`` listing them (with a
    package that ships German only, and other files); returns (Contents file, store)."""
    store, lines = root / "store", ["usr/bin/app00    utils/app00", "usr/share/doc/README    doc/app00"]
    for n, name in enumerate(PACKAGES + [GERMAN_ONLY]):
        files = {f"usr/share/doc/{name}/copyright": COPYRIGHT.format(name=name).encode()}
        for lang, messages in package_messages(n if name != GERMAN_ONLY else 1).items():
            if name == GERMAN_ONLY and lang != "de":
                continue
            path = f"usr/share/locale/{lang}/LC_MESSAGES/{name}.mo"
            files[path] = write_mo(messages, {"Language": lang, "Plural-Forms": PLURAL_FORMS[lang]})
            lines.append(f"{path}    x11/{name},gnome/{name}-extra" if n == 3 else f"{path}\tx11/{name}")
        pack_deb(name, VERSION, files, store)
    contents = root / "Contents-all"
    contents.write_text("\n".join(sorted(lines)) + "\n")
    return contents, store


def fake_apt(root: Path, store: Path) -> Path:
    """A folder with an ``apt-get`` that copies packages from ``store`` (logging each call to ``root/apt.log``),
    and fails as apt does for one that is not there."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "apt-get").write_text(f"""#!/bin/sh
echo "$@" >> {root}/apt.log
[ "$1" = update ] && exit 0
shift
for name in "$@"; do
  ls {store}/"$name"_*.deb >/dev/null 2>&1 || {{ echo "E: Unable to locate package $name" >&2; exit 100; }}
  cp {store}/"$name"_*.deb .
done
""")
    (bin_dir / "apt-get").chmod(0o755)
    return bin_dir
