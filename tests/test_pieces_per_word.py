"""scripts/pieces_per_word.py on tiny data: both tokenizers on both domains' val, counted as the tokenizer counts."""
import json

from helpers.help_tree import build_help_tree
from helpers.multilingual import four_way_corpus
from scripts import pieces_per_word
from transformer_hub import Tokenizer
from transformer_hub.corpus import build_libreoffice_help
from transformer_hub.training.data import read_lines


def test_pieces_per_word_runs_on_tiny_data(tmp_path, capsys):
    (tmp_path / "m30k").mkdir()
    captions = four_way_corpus(tmp_path / "m30k")
    build_help_tree(tmp_path / "tree")
    help_corpus = tmp_path / "help"
    build_libreoffice_help(help_corpus, tree=tmp_path / "tree", val_paragraphs=4, test_paragraphs=4, progress=False)
    shipped = Tokenizer.train(read_lines(captions / "train.en") + read_lines(captions / "train.de"), vocab_size=300,
                              languages=["en", "de", "fr", "cs"])
    shipped.save(tmp_path / "model")
    assert pieces_per_word.main(["--model", str(tmp_path / "model"), "--multi30k", str(captions), "--corpus",
                                 str(help_corpus), "--vocab-size", "420", "--out", str(tmp_path / "docs"),
                                 "--save-tokenizer", str(tmp_path / "joint")]) == 0
    record = json.loads((tmp_path / "docs" / "pieces_per_word.json").read_text())
    rows = {(r["tokenizer"], r["domain"], r["lang"]): r for r in record["results"]}
    assert set(rows) == {(t, d, lang) for t in ("shipped", "joint") for d in ("multi30k", "libreoffice-help")
                         for lang in ("en", "de", "fr", "cs", "all")}
    joint = Tokenizer.from_directory(tmp_path / "joint")
    for name, tokenizer in (("shipped", shipped), ("joint", joint)):
        lines = read_lines(help_corpus / "val.fr.gz")
        row = rows[(name, "libreoffice-help", "fr")]
        assert row["words"] == sum(len(line.split()) for line in lines)
        assert row["pieces"] == sum(len(tokenizer.encode(line)) for line in lines)
        assert abs(row["pieces_per_word"] - row["pieces"] / row["words"]) < 1e-4
        every = rows[(name, "libreoffice-help", "all")]
        assert every["pieces"] == sum(rows[(name, "libreoffice-help", lang)]["pieces"] for lang in "en de fr cs".split())
    # the captions' tokenizer never saw the help: its words break into more pieces than the joint one's
    assert rows[("shipped", "libreoffice-help", "all")]["pieces_per_word"] > \
        rows[("joint", "libreoffice-help", "all")]["pieces_per_word"]
    assert record["tokenizers"]["joint"]["vocab_size_asked"] == 420
    assert set(record["files"]["libreoffice-help"]) == {f"{s}.{lang}.gz" for s in ("val", "train")
                                                        for lang in ("en", "de", "fr", "cs")}
    assert "pieces/word" in capsys.readouterr().out


def test_a_missing_model_or_corpus_is_one_line(tmp_path, capsys):
    assert pieces_per_word.main(["--model", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pieces_per_word: cannot read tokenizer config ") and err.count("\n") == 1
    Tokenizer.train(["a b c", "d e f"], vocab_size=270).save(tmp_path / "model")
    assert pieces_per_word.main(["--model", str(tmp_path / "model"), "--multi30k", str(tmp_path / "nothing"),
                                 "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"pieces_per_word: no Multi30k at {tmp_path / 'nothing'}: run `python -m " \
        "transformer_hub download`, or pass --data-dir / --train-src\n"


def test_the_card_gets_the_results_files_figures(tmp_path, make_model, capsys):
    """--card writes docs/pieces_per_word.json's figures into a model's card (a table per tokenizer and domain),
    and a re-read card keeps them; it measures nothing."""
    from transformer_hub import Transformer
    from transformer_hub.hub import card_data_from_file

    shipped = json.loads((pieces_per_word.Path(__file__).resolve().parents[1] / "docs" / pieces_per_word.RESULTS)
                         .read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / pieces_per_word.RESULTS).write_text(json.dumps(shipped))
    folder = tmp_path / "model"
    make_model().save_pretrained(folder)
    assert pieces_per_word.main(["--out", str(docs), "--card", str(folder)]) == 0
    card = (folder / "README.md").read_text()
    row = next(r for r in shipped["results"] if (r["tokenizer"], r["domain"], r["lang"]) == ("shipped",
                                                                                              "libreoffice-help", "cs"))
    assert "## Tokenizer" in card and f"| shipped | libreoffice-help | " in card and f"{row['pieces_per_word']:.2f}" in card
    assert card_data_from_file(str(folder / "README.md"))["tokenizer"]["rows"][0] == {
        k: shipped["results"][0][k] for k in ("tokenizer", "domain", "lang", "pieces_per_word")}
    Transformer.from_pretrained(folder).save_pretrained(tmp_path / "again")  # a re-save keeps the table
    assert "## Tokenizer" in (tmp_path / "again" / "README.md").read_text()
    assert pieces_per_word.main(["--out", str(tmp_path / "nowhere"), "--card", str(folder)]) == 2
    assert capsys.readouterr().err.startswith("pieces_per_word: --card needs")
