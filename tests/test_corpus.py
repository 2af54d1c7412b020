"""The corpus builder on a tiny LibreOffice help built here: alignment by id, markup to text, the filters, the split
by page, byte-identical rebuilds, the .deb reader, its errors, and training reading the result like Multi30k."""
import gzip
import json
import subprocess
import sys

import pytest

from helpers.help_tree import LANGS, MARKUP, PACKAGES, SPECIAL, VERSION, build_help_tree, make_deb, sentence
from transformer_hub.corpus import NotHelpError, PackageError, SplitError, build_libreoffice_help
from transformer_hub.corpus.debian import read_deb
from transformer_hub.corpus.helphtml import page_paragraphs
from transformer_hub.corpus.splits import page_order

SIZES = {"val_paragraphs": 4, "test_paragraphs": 4, "progress": False}


def lines(folder, split, name):
    return gzip.decompress((folder / f"{split}.{name}.gz").read_bytes()).decode("utf-8").splitlines()


def rows(folder, split):
    """{id: (en, de, fr, cs)} of one split."""
    columns = [lines(folder, split, lang) for lang in LANGS]
    return dict(zip(lines(folder, split, "ids"), zip(*columns)))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("help")
    return root, build_help_tree(root)


@pytest.fixture(scope="module")
def built(tree, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    return out, build_libreoffice_help(out, tree=tree[0], **SIZES)


def all_rows(folder):
    return {key: row for split in ("train", "val", "test") for key, row in rows(folder, split).items()}


def test_paragraphs_are_aligned_by_id_not_position(built):
    found = all_rows(built[0])
    assert found["module0/p00.html#par_id00"] == tuple(sentence(0, k) for k in range(4))  # German reversed there
    for j in range(1, 3):  # also in a two-sentence paragraph of page 1: kept once, from either page
        assert [row for row in found.values() if row[0] == sentence(j, 0)] == [tuple(sentence(j, k) for k in range(4))]


def test_inline_markup_becomes_spaced_plain_text(built):
    row = all_rows(built[0])["module0/p00.html#par_id777"]
    assert row == tuple(MARKUP[lang][1] for lang in LANGS)  # one row: English has two sentences, German one


def test_html_reader_keeps_default_variants_and_skips_unidentified_text():
    html = ('<p id="par_id1">A <span class="switchinline"><span id="MACx" class="MAC">Cmd</span>'
            '<span id="defaultx">Ctrl</span></span> key</p><p>no id</p><h3 id="hd_id2">Head<script>x()</script>'
            '</h3><p id="DEBUG">debug</p><p id="par_id1">again</p>')
    assert page_paragraphs(html) == {"par_id1": "A Ctrl key", "hd_id2": "Head"}


def test_filters_drop_missing_untranslated_absurd_and_wordless(built):
    folder, manifest = built
    texts = {row[0] for row in all_rows(folder).values()}
    for pid in ("par_id888", "par_id555", "par_id444"):
        assert SPECIAL[pid]["en"] not in texts
    dropped = dict(manifest["dropped"])
    repeats = dropped.pop("row: a repeat, or its text in train (or val, for test)")
    assert dropped == {"paragraph: length ratio": 1, "paragraph: missing in a language": 1,
                       "paragraph: untranslated": 1}
    assert repeats == manifest["rows_before_split"] - sum(c["rows"] for c in manifest["counts"].values()) > 11
    assert "Page 0" in texts  # short and the same in French ("Page 0"): a translation, kept


def test_sentences_only_where_every_language_has_as_many(built):
    found = all_rows(built[0])
    assert found["module0/p00.html#par_id999"][0] == "Insert a table. Then fill it."  # German: one sentence
    cut = [key for key in found if key.endswith(":1") or key.endswith(":2")]
    assert cut and all(found[key][0].count(".") == 1 for key in cut)


def test_split_by_page_no_page_and_no_text_in_two_splits(built):
    folder, manifest = built
    pages = {split: {key.split("#")[0] for key in rows(folder, split)} for split in ("train", "val", "test")}
    assert not (pages["train"] & pages["val"]) and not (pages["train"] & pages["test"])
    assert not (pages["val"] & pages["test"])
    assert pages["val"] <= set(manifest["pages"]["val"]) and pages["test"] <= set(manifest["pages"]["test"])
    train = rows(folder, "train").values()
    for split in ("val", "test"):
        for row in rows(folder, split).values():
            assert all(row[k] not in {r[k] for r in train} for k in range(4))
    assert manifest["counts"]["test"]["paragraphs"] >= SIZES["test_paragraphs"]
    assert manifest["counts"]["val"]["paragraphs"] >= SIZES["val_paragraphs"]
    heading = [row for row in all_rows(folder).values() if row[0] == "Example"]
    assert len(heading) == 1  # on every page, kept once


def test_page_order_is_fixed_by_the_seed_alone():
    pages = [f"p{i}.html" for i in range(50)]
    assert page_order(pages, 1) == page_order(list(reversed(pages)), 1) != page_order(pages, 2)
    assert [p for p in page_order(pages + ["new.html"], 1) if p != "new.html"] == page_order(pages, 1)


def test_the_same_input_gives_the_same_bytes(tree, built, tmp_path):
    again = tmp_path / "again"
    build_libreoffice_help(again, tree=tree[0], **SIZES)
    names = sorted(p.name for p in built[0].iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (again / name).read_bytes() == (built[0] / name).read_bytes(), name


def test_manifest_records_versions_licence_and_hashes(built):
    import hashlib

    folder, manifest = built
    assert json.loads((folder / "manifest.json").read_text()) == {k: v for k, v in manifest.items()
                                                                  if k != "manifest_sha256"}
    assert manifest["source"]["packages"] == {PACKAGES[lang]: {"version": VERSION} for lang in LANGS}
    assert manifest["licence"]["license"] == "MPL-2.0" and manifest["licence"]["agree"] is True
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
    assert manifest["seed"] == 1 and manifest["split"]["by"] == "page"


def test_debs_give_the_same_corpus_as_the_tree(tree, built, tmp_path):
    debs = [make_deb(tree[0], lang, tmp_path / "debs") for lang in LANGS]
    assert read_deb(debs[1]).name == PACKAGES["de"] and read_deb(debs[1]).version == VERSION
    out = tmp_path / "from-debs"
    manifest = build_libreoffice_help(out, debs=[tmp_path / "debs"], **SIZES)
    for name in built[1]["files"]:
        assert (out / name).read_bytes() == (built[0] / name).read_bytes(), name
    assert manifest["source"]["kind"] == "debs"
    assert {p["version"] for p in manifest["source"]["packages"].values()} == {VERSION}
    assert manifest["licence"]["license"] == "MPL-2.0"


def test_errors_say_what_is_missing(tree, tmp_path):
    debs = tmp_path / "debs"
    for lang in ("en", "de", "fr"):
        make_deb(tree[0], lang, debs)
    with pytest.raises(PackageError, match=r"package libreoffice-help-cs not found in .*debs: `apt-get download "
                       r"libreoffice-help-cs` fetches it"):
        build_libreoffice_help(tmp_path / "out", debs=[debs], **SIZES)
    (tmp_path / "fake.deb").write_bytes(b"not an archive")
    with pytest.raises(PackageError, match=r"fake.deb is not a Debian package \(.deb\): it is not an ar archive"):
        build_libreoffice_help(tmp_path / "out", debs=[tmp_path / "fake.deb"], **SIZES)
    (tmp_path / "site" / "en-US").mkdir(parents=True)
    with pytest.raises(NotHelpError, match=r"site is not LibreOffice help: no usr/share/libreoffice/help/en-US/text"):
        build_libreoffice_help(tmp_path / "out", tree=tmp_path / "site", **SIZES)
    with pytest.raises(SplitError, match=r"too few pages for 500 test and 4 val paragraphs \(12 pages\)"):
        build_libreoffice_help(tmp_path / "out", tree=tree[0], **{**SIZES, "test_paragraphs": 500})


def test_cli_builds_and_reports_errors_in_one_line(tree, tmp_path):
    from transformer_hub.cli import main

    out = tmp_path / "cli"
    assert main(["corpus", "libreoffice-help", "--out", str(out), "--tree", str(tree[0]), "--val-paragraphs",
                 "4", "--test-paragraphs", "4", "--no-progress"]) == 0
    assert (out / "train.cs.gz").is_file() and (out / "manifest.json").is_file()
    done = subprocess.run([sys.executable, "-m", "transformer_hub", "corpus", "libreoffice-help", "--out",
                           str(tmp_path / "x"), "--tree", str(tmp_path / "nothing")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "corpus: error: --tree " in done.stderr and "nothing: no such folder" in done.stderr


def test_training_reads_the_corpus_through_the_multi30k_loader(built, tmp_path):
    """The same options as for Multi30k (--data-dir, --langs), with the corpus's own test split scored."""
    from transformer_hub.training.options import parse_config
    from transformer_hub.training.data import Track
    from transformer_hub.training.run import load_data
    from transformer_hub.training.trainer import main as train_main

    folder = built[0]
    args = parse_config(["--out", str(tmp_path / "run"), "--data-dir", str(folder),
                                      "--langs", "en,de,fr,cs"])
    train_sets, valid_sets = load_data(args, list(LANGS))
    assert len(train_sets) == 12
    expected = list(rows(folder, "train").values())
    assert train_sets[Track("de", "cs")] == [(row[1], row[3]) for row in expected]
    assert valid_sets[Track("en", "fr")] == [(row[0], row[2]) for row in rows(folder, "val").values()]
    assert train_main(["--out", str(tmp_path / "run"), "--data-dir", str(folder), "--langs", "en,de,fr,cs",
                       "--directions", "en-de,de-en", "--preset", "tiny", "--vocab-size", "360", "--max-tokens",
                       "400", "--max-updates", "2", "--final-beam", "1", "--threads", "1", "--bleu-every", "1000",
                       "--average-last", "1", "--test-splits", "test"]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())["results"]
    assert {(r["split"], r["direction"]) for r in results} == {
        (split, d) for split in ("val", "test") for d in ("en-de", "de-en")}


def test_a_split_the_corpus_lacks_is_named_with_the_ones_it_has(built):
    from transformer_hub.training.data import DataError, load_split

    with pytest.raises(DataError, match=r"no test_2016_flickr.en.gz: this corpus has the splits test, train, val "):
        load_split(built[0], "test_2016_flickr", "en", "de")


def test_packages_are_fetched_with_apt_get_download(tree, built, tmp_path, monkeypatch):
    """A stand-in apt-get on PATH: it has three of the packages; the fourth is an apt-style error, in one line."""
    store = tmp_path / "store"
    for lang in LANGS:
        make_deb(tree[0], lang, store)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(f"""#!/bin/sh
[ "$1" = update ] && exit 0
shift
for name in "$@"; do
  [ -e {tmp_path}/offline-$name ] && {{ echo "E: Unable to locate package $name" >&2; exit 100; }}
  cp {store}/"$name"_*.deb . || exit 100
done
""")
    (bin_dir / "apt-get").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    out = tmp_path / "out"
    build_libreoffice_help(out, download_dir=tmp_path / "debs", **SIZES)
    assert sorted(p.name.split("_")[0] for p in (tmp_path / "debs").glob("*.deb")) == sorted(PACKAGES.values())
    assert (out / "test.de.gz").read_bytes() == (built[0] / "test.de.gz").read_bytes()
    (tmp_path / "offline-libreoffice-help-fr").touch()
    with pytest.raises(PackageError, match=r"^apt-get download libreoffice-help-en-us libreoffice-help-de "
                       r"libreoffice-help-fr libreoffice-help-cs failed: E: Unable to locate package "
                       r"libreoffice-help-fr$"):
        build_libreoffice_help(out, download_dir=tmp_path / "other", **SIZES)
