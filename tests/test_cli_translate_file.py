"""``python -m transformer_hub translate-file``: a catalog through the command line, the same as through the library."""
import polib

from helpers.cli import run
from test_formats_l10n import PO
from transformer_hub import Transformer
from transformer_hub.formats import read_document, translate_document_texts
from transformer_hub.text.pipeline import OneModel


def test_a_catalog_is_translated_as_the_library_translates_it(make_model, tmp_path, monkeypatch, capsys):
    model_dir = tmp_path / "en-de"
    make_model().save_pretrained(model_dir)  # an English -> German model: the catalog's languages
    source = tmp_path / "app.po"
    source.write_text(PO)
    status, _, err = run(["translate-file", str(source), "--model", str(model_dir), "--src-lang", "en",
                          "--tgt-lang", "de", "--strategy", "greedy"], monkeypatch=monkeypatch, capsys=capsys)
    assert status == 0, err
    written = polib.pofile(str(tmp_path / "app.de.po"))
    document = read_document(PO.encode(), ".po", tgt_lang="de")
    done = translate_document_texts(document.texts, OneModel(Transformer.from_pretrained(model_dir)), "en",
                                    tgt_lang="de", strategy="greedy")
    expected = polib.pofile(document.write(done).decode() + "\n")
    assert [(e.msgid, e.msgstr, e.msgstr_plural, e.flags) for e in written] == \
        [(e.msgid, e.msgstr, e.msgstr_plural, e.flags) for e in expected]
    assert written.metadata["Language"] == "de" and "app.de.po" in err


def test_mistakes_are_one_line(model_dir, tmp_path, monkeypatch, capsys):
    for argv, message in ((["translate-file", str(tmp_path / "none.po"), "--tgt-lang", "de"], "cannot read"),
                          (["translate-file", str(tmp_path / "a.pdf"), "--tgt-lang", "de"], "not a format"),
                          (["translate-file", str(tmp_path / "a.po")], "give --tgt-lang")):
        status, _, err = run(argv + ["--model", str(model_dir)], monkeypatch=monkeypatch, capsys=capsys)
        assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err
