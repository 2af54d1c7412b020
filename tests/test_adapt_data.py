"""The project's translations as pairs for ``adapt``: each reader on files built here, the one direction they
settle on, the seeded hold-out, and one-line refusals of what cannot be read."""
import pytest

from helpers.cli import run
from transformer_hub.store import Store
from transformer_hub.training.data import DataError
from transformer_hub.training.user_data import (hold_out, hold_out_directions, language_code, read_directions,
                                                read_po, read_suggestions, read_tmx, read_tsv, read_user_data)

TMX = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE tmx [<!ENTITY secret SYSTEM "file:///etc/hostname">]>
<tmx version="1.4">
  <header srclang="en-US" datatype="plaintext" segtype="sentence" adminlang="en" o-tmf="test" creationtool="test"
          creationtoolversion="1"/>
  <body>
    <tu><tuv xml:lang="en-US"><seg>Save the file.</seg></tuv><tuv xml:lang="de-DE"><seg>Datei speichern.</seg></tuv>
        <tuv xml:lang="fr-FR"><seg>Enregistrer le fichier.</seg></tuv></tu>
    <tu><tuv xml:lang="en"><seg>Click <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept>.</seg></tuv>
        <tuv xml:lang="de"><seg>Klicken Sie auf <bpt i="1">&lt;b&gt;</bpt>OK<ept i="1">&lt;/b&gt;</ept>.</seg></tuv></tu>
    <tu><tuv xml:lang="en"><seg>Only French here.</seg></tuv><tuv xml:lang="fr"><seg>Seulement.</seg></tuv></tu>
    <tu><tuv xml:lang="en"><seg>Hello &secret;world</seg></tuv><tuv xml:lang="de"><seg>Hallo Welt</seg></tuv></tu>
  </body>
</tmx>
"""

PO = r'''msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Language: de_DE\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

msgid "_Open"
msgstr "Ö_ffnen"

msgid "Save _As"
msgstr "Speichern _unter"

#, fuzzy
msgid "Close"
msgstr "Schließen?"

msgid "Untranslated"
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d Datei"
msgstr[1] "%d Dateien"

#~ msgid "Old"
#~ msgstr "Alt"
'''


def test_tmx_pairs_the_two_languages_and_ignores_a_third(tmp_path):
    path = tmp_path / "memory.tmx"
    path.write_text(TMX, encoding="utf-8")
    read = read_tmx(str(path), None, "de")
    assert (read.src_lang, read.tgt_lang) == ("en", "de")
    assert read.pairs == [("Save the file.", "Datei speichern."), ("Click OK.", "Klicken Sie auf OK."),
                          ("Hello world", "Hallo Welt")]  # inline codes and the unresolved entity left out
    with pytest.raises(DataError, match=r"memory.tmx: the TMX holds the languages de, fr besides en: choose the "
                                        r"target with --tgt-lang"):
        read_tmx(str(path), None, None)
    assert read_tmx(str(path), None, "fr").pairs == [("Save the file.", "Enregistrer le fichier."),
                                                     ("Only French here.", "Seulement.")]


def test_malformed_tmx_is_refused_in_one_line(tmp_path):
    path = tmp_path / "broken.tmx"
    path.write_text("<tmx><body><tu></body></tmx>", encoding="utf-8")
    with pytest.raises(DataError, match=r"broken.tmx: not a readable TMX file") as caught:
        read_tmx(str(path), "en", "de")
    assert "\n" not in str(caught.value)


def test_po_reads_translated_entries_and_skips_fuzzy_obsolete_and_empty_ones(tmp_path):
    path = tmp_path / "project.po"
    path.write_text(PO, encoding="utf-8")
    read = read_po(str(path), None, None)
    assert (read.src_lang, read.tgt_lang) == ("en", "de")
    assert read.pairs == [("Open", "Öffnen"), ("Save As", "Speichern unter"), ("%d file", "%d Datei"),
                          ("%d files", "%d Dateien")]  # accelerators off, as when a catalog is translated


def test_tsv_reports_a_bad_line_by_its_number(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("Open\tÖffnen\n\nSave\tSpeichern\nbroken\tline\twith three\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"pairs.tsv:4: expected source<TAB>target, found 3 field\(s\)$"):
        read_tsv(str(path), None, None)
    path.write_text("Open\tÖffnen\n\nSave\tSpeichern\n", encoding="utf-8")
    assert read_tsv(str(path), None, None).pairs == [("Open", "Öffnen"), ("Save", "Speichern")]
    path.write_text("Open\tÖffnen\nSave\t \n", encoding="utf-8")
    with pytest.raises(DataError, match=r"pairs.tsv:2: expected source<TAB>target, found 2 field\(s\) with an empty"):
        read_tsv(str(path), None, None)


def test_parallel_files_take_their_languages_from_their_suffixes(tmp_path):
    (tmp_path / "corpus.en").write_text("Open\nSave\n", encoding="utf-8")
    (tmp_path / "corpus.de").write_text("Öffnen\nSpeichern\n", encoding="utf-8")
    data = read_user_data([f"{tmp_path / 'corpus.en'},{tmp_path / 'corpus.de'}"])
    assert (data.src_lang, data.tgt_lang, data.pairs) == ("en", "de", [("Open", "Öffnen"), ("Save", "Speichern")])
    (tmp_path / "corpus.de").write_text("Öffnen\n", encoding="utf-8")
    with pytest.raises(DataError, match="has 2 lines but .*corpus.de has 1: the files are not aligned"):
        read_user_data([f"{tmp_path / 'corpus.en'},{tmp_path / 'corpus.de'}"])


def test_the_suggestions_export_is_data(tmp_path):
    store = Store(tmp_path / "suggestions.db")
    store.add_suggestion("Open the file.", "Öffne die Datei.", "en", "de")
    store.add_suggestion("A dog.", "Un chien.", "en", "fr")
    store.export(tmp_path / "export")
    store.close()
    read = read_suggestions(str(tmp_path / "export"), None, "de")
    assert (read.src_lang, read.tgt_lang, read.pairs) == ("en", "de", [("Open the file.", "Öffne die Datei.")])
    assert read_user_data([str(tmp_path / "export" / "en-fr")]).pairs == [("A dog.", "Un chien.")]
    with pytest.raises(DataError, match=r"export: not one suggestions export for the direction \(it holds en-de, "
                                        r"en-fr\)"):
        read_suggestions(str(tmp_path / "export"), None, None)


def test_files_settle_one_direction(tmp_path):
    po, tsv = tmp_path / "a.po", tmp_path / "b.tsv"
    po.write_text(PO, encoding="utf-8")
    tsv.write_text("Save\tSpeichern\n", encoding="utf-8")
    data = read_user_data([str(po), str(tsv)])
    assert (data.src_lang, data.tgt_lang, len(data.pairs)) == ("en", "de", 5)
    with pytest.raises(DataError, match=r"a.po is in de, but --tgt-lang says fr"):
        read_user_data([str(po)], tgt_lang="fr")
    with pytest.raises(DataError, match=r"no file says its source language: give --src-lang"):
        read_user_data([str(tsv)])
    (tmp_path / "a.docx").write_bytes(b"PK")
    with pytest.raises(DataError, match=r"a.docx: not a format adapt reads: give .po, .tmx, .tsv"):
        read_user_data([str(tmp_path / "a.docx")])
    assert language_code("pt_BR") == "pt" and language_code("DE-at") == "de" and language_code("") is None


def test_catalogs_of_several_languages_are_one_direction_each(tmp_path):
    de, fr, tsv = tmp_path / "de.po", tmp_path / "fr.po", tmp_path / "more.tsv"
    de.write_text(PO, encoding="utf-8")
    fr.write_text(PO.replace("Language: de_DE", "Language: fr").replace("Ö_ffnen", "_Ouvrir"), encoding="utf-8")
    tsv.write_text("Save\tSpeichern\n", encoding="utf-8")
    found = read_directions([str(de), str(fr)])
    assert [(d.name, [f.path for f in d.files]) for d in found] == [("en-de", [str(de)]), ("en-fr", [str(fr)])]
    assert found[1].pairs[0] == ("Open", "Ouvrir")
    assert [d.name for d in read_directions([str(de), str(tsv)])] == ["en-de"]  # the TSV takes the one target
    with pytest.raises(DataError, match=r"more.tsv does not say its target language and the other files are in "
                                        r"several \(de, fr\): adapt it in a run of its own, with --tgt-lang"):
        read_directions([str(de), str(fr), str(tsv)])
    with pytest.raises(DataError, match=r"fr.po is in fr, but --tgt-lang says de"):
        read_directions([str(de), str(fr)], tgt_lang="de")
    with pytest.raises(DataError, match=r"in several directions \(en-de, en-fr\): this reads one direction"):
        read_user_data([str(de), str(fr)])


def test_a_source_held_out_in_one_direction_is_held_out_in_all():
    sources = [f"s{i}" for i in range(50)]
    de = [(s, f"de {s}") for s in sources]
    fr = [(s, f"fr {s}") for s in sources[10:]] + [("only in fr", "seulement")]
    (de_train, de_held), (fr_train, fr_held) = hold_out_directions([de, fr], 0.2, seed=3)
    assert hold_out_directions([de, fr], 0.2, seed=3) == [(de_train, de_held), (fr_train, fr_held)]
    held = {s for s, _ in de_held + fr_held}
    assert len(held) == 11  # 20 % of the 51 distinct sources of both directions, rounded up
    assert not held & {s for s, _ in de_train + fr_train}  # trained on in no direction
    assert {s for s, _ in de_held} == held & set(sources) and {s for s, _ in fr_held} == held & {s for s, _ in fr}
    assert hold_out_directions([de], 0.2, seed=3) == [hold_out(de, 0.2, seed=3)]  # one direction: hold_out
    with pytest.raises(DataError, match=r"^en-cs: 1 distinct source sentence\(s\) \(of 50 in 2 directions\): too "
                                        r"few to hold out 20% and train on the rest$"):
        hold_out_directions([de, [("s1", "x")]], 0.2, seed=3, names=["en-de", "en-cs"])


def test_hold_out_is_seeded_and_never_shares_a_source_with_training():
    pairs = [(f"s{i % 40}", f"t{i}") for i in range(60)] + [("s1", "t61")] * 3
    train, held = hold_out(pairs, 0.2, seed=7)
    assert (train, held) == hold_out(pairs, 0.2, seed=7)
    assert hold_out(pairs, 0.2, seed=8) != (train, held)
    assert not {s for s, _ in train} & {s for s, _ in held}
    assert len({s for s, _ in held}) == 8 and len(train) + len(held) == 61  # duplicates once
    with pytest.raises(DataError, match="1 distinct source sentence"):
        hold_out([("a", "b")], 0.2, seed=1)


def test_the_command_refuses_what_it_cannot_read_in_one_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "pairs.tsv"
    bad.write_text("Open\tÖffnen\nno tab here\n", encoding="utf-8")
    status, _, err = run(["adapt", "--from", str(tmp_path), "--data", str(bad), "--out", str(tmp_path / "o"),
                          "--src-lang", "en", "--tgt-lang", "de"], monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("transformer_hub adapt: error: ") and "pairs.tsv:2: expected source<TAB>target" in err
    status, _, err = run(["adapt", "--from", str(tmp_path), "--data", str(bad), "--out", "o", "--minutes", "0"],
                         monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2 and err == "transformer_hub adapt: error: --minutes must be > 0 and < inf, got 0.0\n"


def test_a_classifier_extended_by_a_domain_keeps_the_old_counts_and_tells_the_new_one():
    from transformer_hub.text.domain import DomainClassifier

    base = DomainClassifier.train({"captions": ["a dog runs in the park"] * 3, "software": ["click the menu"] * 3})
    grown = base.with_domain("project", ["commit the branch", "merge the branch"])
    assert grown.domains == ["captions", "software", "project"]
    assert grown.vocabulary[:len(base.vocabulary)] == base.vocabulary
    for domain in base.domains:  # the old rows: the same counts, zeros for the features new to the vocabulary
        assert grown.counts[domain] == base.counts[domain] + [0] * (len(grown.vocabulary) - len(base.vocabulary))
        assert grown.totals[domain] == base.totals[domain]
    assert [d for d, _ in grown.predict(["merge a branch", "click", "a dog"])] == ["project", "software", "captions"]
