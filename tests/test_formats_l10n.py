"""Localization files: gettext catalogs and XLIFF 1.2 / 2.0, read and written back (formats/gettext.py, xliff.py),
checked by tools that are not ours: GNU gettext's ``msgfmt --check``, translate-toolkit's ``pofilter`` and the
OASIS schemas (as Debian's php-symfony-translation package ships them)."""
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from lxml import etree

from benchmarks.l10n_xliff import fetch_schemas
from helpers.corpus import cache_folder
from transformer_hub.formats import gettext, xliff
from transformer_hub.formats.layout import DocumentError, translate_document_texts

PO = r'''# Demo catalog.
msgid ""
msgstr ""
"Project-Id-Version: demo 1.0\n"
"Language: \n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\n"

#. A menu item
#: src/main.c:10
msgctxt "menu"
msgid "_Open Recent"
msgstr ""

#: src/main.c:20
#, c-format
msgid "Could not open file %s: %s"
msgstr ""

#: src/main.c:30
#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

msgid "Save"
msgstr "Uložit"

#, fuzzy
msgid "Quit"
msgstr "Konec"

#, c-format
msgid "%d of %s"
msgstr ""

msgid "Name files like _1 or _2"
msgstr ""

msgid "Hello {{person.name}}, you have {count} new messages."
msgstr ""

msgid "Welcome, $Username! Press <b><i>Enter</i></b>."
msgstr ""

#, python-format
msgid "Downloaded %(size)s of %(total)s"
msgstr ""

#~ msgid "Old entry"
#~ msgstr "Starý záznam"
'''


def fake(sentences):
    """A translator that keeps what it is given, behind a Czech word: pieces and accelerators stay as they came."""
    return [f"Přeloženo {s}" for s in sentences]


def translate_po(data: bytes, tgt_lang="cs", translate=fake, **options) -> bytes:
    document = gettext.read(data, tgt_lang, **options)
    return document.write(translate_document_texts(document.texts, translate, lang="en"))


def test_a_catalog_is_filled_for_the_targets_plural_forms_and_marked_for_review():
    out = polib.pofile(translate_po(PO.encode()).decode() + "\n")
    entries = {(e.msgctxt, e.msgid): e for e in out}
    opened = entries[("menu", "_Open Recent")]
    assert opened.msgstr == "Přeloženo _Open Recent" and opened.flags == ["fuzzy"]
    assert opened.comment == "A menu item" and opened.occurrences == [("src/main.c", "10")]
    plural = entries[(None, "%d file")]
    assert plural.msgstr_plural == {0: "Přeloženo %d file", 1: "Přeloženo %d files", 2: "Přeloženo %d files"}
    assert plural.flags == ["fuzzy", "c-format"]
    assert entries[(None, "Save")].msgstr == "Uložit" and not entries[(None, "Save")].fuzzy  # kept
    assert entries[(None, "Quit")].msgstr == "Konec"  # a translator's fuzzy entry is theirs to review
    assert [e.msgid for e in out.obsolete_entries()] == ["Old entry"]
    assert out.metadata["Language"] == "cs" and out.metadata["Plural-Forms"].startswith("nplurals=3;")
    assert out.metadata["X-Generator"] == gettext.GENERATOR
    assert [(e.msgctxt, e.msgid) for e in out] == [(e.msgctxt, e.msgid) for e in polib.pofile(PO)]  # nothing lost


def test_the_accelerator_is_taken_off_before_translation_and_put_back():
    document = gettext.read(PO.encode(), "cs")
    assert "Open Recent" in document.texts and "_Open Recent" not in document.texts
    assert not any("_1 or" in t or "1 or 2" in t for t in document.texts)  # two marks: left to a translator
    out = polib.pofile(translate_po(PO.encode(), translate=lambda s: ["Otevřít nedávné" if x == "Open Recent"
                                                                      else x for x in s]).decode() + "\n")
    assert out.find("_Open Recent", msgctxt="menu").msgstr == "_Otevřít nedávné"


def test_an_entry_that_would_lose_a_placeholder_stays_untranslated():
    swapped = translate_po(PO.encode(), translate=lambda s: [f"{x} Z" if x != "#1 of #2" else "#2 z #1" for x in s])
    entry = polib.pofile(swapped.decode() + "\n").find("%d of %s")  # "%s z %d" would crash the program
    assert entry.msgstr == "" and "fuzzy" not in entry.flags
    assert polib.pofile(swapped.decode() + "\n").find("Could not open file %s: %s").msgstr == \
        "Could not open file %s: %s Z"


def test_overwrite_translates_what_translators_wrote_too():
    out = polib.pofile(translate_po(PO.encode(), overwrite=True).decode() + "\n")
    assert out.find("Save").msgstr == "Přeloženo Save" and out.find("Save").fuzzy


def test_a_catalog_with_nothing_to_translate_comes_back_with_the_same_entries():
    done = translate_po(PO.encode())
    again = translate_po(done)
    assert [(e.msgctxt, e.msgid, e.msgstr, e.msgstr_plural, e.flags) for e in polib.pofile(again.decode() + "\n")] == \
        [(e.msgctxt, e.msgid, e.msgstr, e.msgstr_plural, e.flags) for e in polib.pofile(done.decode() + "\n")]


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed (apt-get install "
                                                          "gettext)")
def test_gnu_msgfmt_checks_the_output(tmp_path):
    path = tmp_path / "out.po"
    path.write_bytes(translate_po(PO.encode()))
    done = subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", "/dev/null", str(path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    path.write_text(path.read_text().replace('"Přeloženo Could not open file %s: %s"', '"Nelze otevřít %s"'))
    assert subprocess.run(["msgfmt", "--check", "--use-fuzzy", "-o", "/dev/null", str(path)],
                          capture_output=True).returncode != 0  # the check can fail


def pofilter_failures(path: Path, style: str = "--gnome") -> str:
    """translate-toolkit's pofilter (printf, variables, xmltags, accelerators) on ``path``: the entries it flags."""
    out = path.with_suffix(".failures.po")
    subprocess.run([sys.executable, "-m", "translate.filters.pofilter", style, "-t", "printf", "-t", "variables",
                    "-t", "xmltags", "-t", "accelerators", str(path), str(out)], capture_output=True, check=True)
    return out.read_text() if out.exists() else ""


def test_pofilter_finds_nothing_in_the_output_and_something_in_a_broken_one(tmp_path):
    pytest.importorskip("translate.filters.pofilter")
    good, bad = tmp_path / "good.po", tmp_path / "bad.po"
    good.write_bytes(translate_po(PO.encode()))
    bad.write_text(good.read_text().replace('"Přeloženo _Open Recent"', '"Přeloženo Open Recent"'))
    assert "(pofilter)" not in pofilter_failures(good)
    assert "(pofilter) accelerators" in pofilter_failures(bad)


QT_PO = '''msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Load of '%1' with '%2' failed"
msgstr ""

#, c-format
msgid "Copy %1$s to %2$s"
msgstr ""

msgid "<p>Read <a href=\\"https://example.org/\\">the guide</a>.</p>"
msgstr ""

msgid "&Edit"
msgstr ""

msgid "See https://example.org/?a=1&view=2 or &Help"
msgstr ""
'''


def swapping(sentences):
    """A model that moves the first two marks past each other (Czech word order can), else keeps everything."""
    return [s.replace("#1", "#@").replace("#2", "#1").replace("#@", "#2") for s in sentences]


def test_an_entry_whose_variables_or_tags_move_stays_untranslated_and_pofilter_passes(tmp_path):
    # Qt's %1 and gettext's %1$s may move for the program, but pofilter reads every move as an error (its printf
    # test takes %1 for a directive without a position, its variables and xmltags tests compare the sequence)
    moved = polib.pofile(translate_po(QT_PO.encode(), translate=swapping).decode() + "\n")
    assert moved.find("Load of '%1' with '%2' failed").msgstr == ""
    assert moved.find("Copy %1$s to %2$s").msgstr == ""
    assert moved.find('<p>Read <a href="https://example.org/">the guide</a>.</p>').msgstr == ""  # pofilter's xmltags
    kept = polib.pofile(translate_po(QT_PO.encode()).decode() + "\n")
    assert kept.find("Load of '%1' with '%2' failed").msgstr == "Přeloženo Load of '%1' with '%2' failed"
    if importlib.util.find_spec("translate") is not None:
        for name, data in (("moved", moved), ("kept", kept)):
            path = tmp_path / f"{name}.po"
            data.save(str(path))
            assert "(pofilter)" not in pofilter_failures(path, "--kde"), name


@pytest.mark.parametrize("catalog, style", [(QT_PO, "--kde"), (QT_PO.replace("&Edit", "_Edit").replace(
    "&Help", "_Help").replace("?a=1&view=2", "%(file_name)s"), "--gnome")])
def test_the_accelerator_goes_on_a_plain_letter_outside_the_placeholders(tmp_path, catalog, style):
    marker = style == "--kde" and "&" or "_"
    czech = {"Edit": "Úpravy", "See #1 or Help": "Viz #1 nebo Nápověda"}  # no "h" outside the URL
    out = polib.pofile(translate_po(catalog.encode(), translate=lambda s: [czech.get(x, x) for x in s]).decode()
                       + "\n")
    # before "Ú" the mark would be on a letter no keyboard has a key of its own for: pofilter calls it invalid
    assert out.find(f"{marker}Edit").msgstr == f"Ú{marker}pravy"
    # the "&" of the URL's query, the "_" of %(file_name)s are the program's: "Help"'s is the mark; and it goes
    # back outside the pieces (not on the "h" of "https", a word's first letter as "Help"'s is)
    source = next(e.msgid for e in out if e.msgid.startswith("See"))
    piece = source.split()[1]
    assert gettext.read(catalog.encode(), "cs").texts[-1] == f"See {piece} or Help"
    assert out.find(source).msgstr == f"{marker}Viz {piece} nebo Nápověda"
    if importlib.util.find_spec("translate") is not None:
        path = tmp_path / "out.po"
        out.save(str(path))
        assert "(pofilter)" not in pofilter_failures(path, style)


@pytest.mark.parametrize("data, message", [
    (b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=KLINGON\\n"\n', "charset 'KLINGON'"),
    ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "Müll"\nmsgstr ""\n'
     .encode("latin-1"), "not valid UTF-8"),
    (b"".join(b'msgid "s%d"\nmsgstr ""\n\n' % i for i in range(gettext.MAX_ENTRIES + 5)), "more than 20,000 entries"),
    (b'msgid "a"\nmsgstr ""\ngarbage\n', "does not parse"),
    (b'msgid "a"\nmsgstr ""\n\nmsgid "a"\nmsgstr "b"\n', "defines the message 'a' twice"),
])
def test_a_bad_catalog_is_refused_with_one_line(data, message):
    with pytest.raises(DocumentError, match=message) as refused:
        gettext.read(data, "de")
    assert "\n" not in str(refused.value)


def test_a_one_line_upload_is_never_read_as_a_path_on_the_server(tmp_path):
    secret = tmp_path / "secret.po"
    secret.write_text('msgid "server secret"\nmsgstr ""\n')
    with pytest.raises(DocumentError, match="does not parse") as refused:  # polib alone would have read the file
        gettext.read(str(secret).encode(), "de")
    assert "secret" not in str(refused.value)


# --------------------------------------------------------------------------- XLIFF
XLIFF12 = '''<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" datatype="plaintext" original="ui.txt">
    <body>
      <trans-unit id="1">
        <source>Click <g id="1">Save</g> to keep <x id="2"/> the file.</source>
      </trans-unit>
      <trans-unit id="2">
        <source>Press <bpt id="3">&lt;b&gt;</bpt>Enter<ept id="3">&lt;/b&gt;</ept> now.</source>
        <target>Drücken</target>
      </trans-unit>
      <trans-unit id="3" translate="no">
        <source>ACME</source>
      </trans-unit>
      <trans-unit id="4">
        <source><g id="a" ctype="bold">Nested <g id="b">bold</g> text</g></source>
        <note>a note</note>
      </trans-unit>
    </body>
  </file>
</xliff>
'''.encode()
XLIFF20 = b'''<?xml version="1.0" encoding="UTF-8"?>
<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" srcLang="en">
  <file id="f1">
    <unit id="u1">
      <segment>
        <source>Hello <pc id="1">world</pc>, <ph id="2"/> is here.</source>
      </segment>
    </unit>
  </file>
</xliff>
'''


def translate_xliff(data: bytes, translate=fake, tgt_lang="de") -> bytes:
    document = xliff.read(data, tgt_lang)
    return document.write(translate_document_texts(document.texts, translate, lang="en"))


@pytest.fixture(scope="module")
def schemas(request) -> Path:
    """The OASIS XLIFF 1.2 (strict) and 2.0 schemas, from Debian's php-symfony-translation (cached)."""
    folder = (cache_folder(request, "xliff-schemas") or Path(request.config.rootpath) / ".pytest_cache")
    try:
        return fetch_schemas(folder)
    except SystemExit as exc:
        pytest.skip(str(exc))


def validate(data: bytes, schema_folder: Path, name: str) -> None:
    class Local(etree.Resolver):  # the schemas import xml.xsd from the W3C's site: read the local copy instead
        def resolve(self, url, pubid, context):
            return self.resolve_filename(str(schema_folder / "xml.xsd"), context) if url.endswith("xml.xsd") else None

    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(Local())
    schema = etree.XMLSchema(etree.parse(str(schema_folder / name), parser))
    assert schema.validate(etree.fromstring(data)), schema.error_log.last_error


def test_xliff_12_targets_keep_inline_elements_and_validate(schemas):
    out = translate_xliff(XLIFF12)
    validate(out, schemas, "xliff-core-1.2-strict.xsd")
    root = etree.fromstring(out)
    ns = {"x": xliff.NS12}
    (first,) = root.xpath("//x:trans-unit[@id='1']/x:target", namespaces=ns)
    assert etree.tostring(first, encoding="unicode", with_tail=False).endswith(
        '>Přeloženo Click <g id="1">Save</g> to keep <x id="2"/> the file.</target>')
    assert first.get("state") == "needs-review-translation"
    assert root.xpath("//x:trans-unit[@id='2']/x:target/text()", namespaces=ns) == ["Drücken"]  # kept
    assert root.xpath("//x:trans-unit[@id='3']/x:target", namespaces=ns) == []  # translate="no"
    (nested,) = root.xpath("//x:trans-unit[@id='4']/x:target/x:g", namespaces=ns)
    assert nested.get("ctype") == "bold" and nested[0].get("id") == "b" and nested[0].text == "bold"
    assert root.find(".//{%s}file" % xliff.NS12).get("target-language") == "de"


def test_xliff_20_targets_validate(schemas):
    out = translate_xliff(XLIFF20)
    validate(out, schemas, "xliff-core-2.0.xsd")
    root = etree.fromstring(out)
    segment = root.find(".//{%s}segment" % xliff.NS20)
    assert segment.get("state") == "translated" and root.get("trgLang") == "de"
    target = segment.find("{%s}target" % xliff.NS20)
    assert etree.tostring(target, encoding="unicode", with_tail=False).endswith(
        '>Přeloženo Hello <pc id="1">world</pc>, <ph id="2"/> is here.</target>')


@pytest.mark.parametrize("translation", ["#2Sichern#1 #3", "#3 Klicken #2Sichern#1"])
def test_marks_that_do_not_nest_as_the_sources_leave_the_unit_untranslated(translation):
    # the pipeline masks the unit's marks as #1 (<t1>), #2 (</t1>), #3 (<t2/>): a model that reorders them
    masked = "Click #1Save#2 to keep #3 the file."
    out = translate_xliff(XLIFF12, translate=lambda s: [translation if x == masked else x for x in s])
    assert etree.fromstring(out).xpath("//x:trans-unit[@id='1']/x:target", namespaces={"x": xliff.NS12}) == []


@pytest.mark.parametrize("data, message", [
    (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
     b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file><body><trans-unit id="1">'
     b'<source>&b;</source></trans-unit></body></file></xliff>', None),
    (b"<xliff>" + b"<g>" * 200 + b"</g>" * 200 + b"</xliff>", "nests elements more than"),
    (b"<html><body>Hi</body></html>", "not XLIFF 1.2 or 2.0"),
    (b"<xliff version='1.2'", "not well-formed"),
])
def test_hostile_xliff_is_refused_or_read_without_expanding_entities(data, message):
    if message is None:
        assert "aaaaaaaaaa" not in "".join(xliff.read(data, "de").texts)  # entities never expanded
        return
    with pytest.raises(DocumentError, match=message):
        xliff.read(data, "de")
