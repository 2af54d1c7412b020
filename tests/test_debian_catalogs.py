"""The Debian catalogs builder on an archive built here (tests/helpers/catalogs.py): .mo files read and written,
the Contents index, plural and context entries, accelerators, the filters, the split by package, the merge across
packages, held-out corpora, the cache, byte-identical rebuilds, the one loader, and the CLI's one-line errors."""
import gzip
import hashlib
import json
import os
import struct
import subprocess
import sys

import pytest

from helpers.corpus import DEBIAN_CATALOGS, DEBIAN_CATALOGS_MISSING, LIBREOFFICE_HELP
from helpers.catalogs import CANCEL_DE, GERMAN_ONLY, PACKAGES, VERSION, build_archive, fake_apt
from helpers.help_tree import sentence
from transformer_hub.corpus import CatalogError, ContentsError, build_debian_catalogs
from transformer_hub.corpus.catalog_rows import accelerator_kind, without_accelerator
from transformer_hub.corpus.contents import catalog_index, read_catalog_index
from transformer_hub.corpus.mo import Message, read_mo, write_mo

LANGS = ("en", "de", "fr", "cs")
SIZES = {"val_entries": 2, "test_entries": 2, "progress": False}


def lines(folder, split, name):
    return gzip.decompress((folder / f"{split}.{name}.gz").read_bytes()).decode("utf-8").splitlines()


def split_rows(folder, split):
    """[(en, de, fr, cs, raw)] of one split."""
    raw = [json.loads(line) for line in lines(folder, split, "raw")]
    return list(zip(*(lines(folder, split, lang) for lang in LANGS), raw))


def every_row(folder):
    return [row for split in ("train", "val", "test") for row in split_rows(folder, split)]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("archive")
    contents, store = build_archive(root)
    return root, contents, store


@pytest.fixture()
def apt(archive, monkeypatch):
    root, _, store = archive
    monkeypatch.setenv("PATH", f"{fake_apt(root, store)}:{os.environ['PATH']}")
    return root / "apt.log"


@pytest.fixture(scope="module")
def built(archive, tmp_path_factory):
    root, contents, store = archive
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{fake_apt(root, store)}:{os.environ['PATH']}")
        out = tmp_path_factory.mktemp("corpus")
        return out, build_debian_catalogs(out, root / "cache", contents=[contents], **SIZES)


def test_mo_round_trip_with_context_plural_and_either_byte_order():
    messages = [Message("Open", ("Öffnen",), "menu"), Message("%d file", ("%d Datei", "%d Dateien"), None, "%d files")]
    data = write_mo(messages, {"Plural-Forms": "nplurals=2; plural=(n != 1);"})
    catalog = read_mo(data)
    assert sorted(catalog.messages, key=str) == sorted(messages, key=str) and catalog.plural_count == 2
    count, originals, translations = struct.unpack("<3I", data[8:20])  # the same catalog, big-endian
    swapped = bytearray(data)
    for at in [0, 4, 8, 12, 16, 20, 24] + [t + 4 * j for t in (originals, translations) for j in range(2 * count)]:
        swapped[at:at + 4] = data[at:at + 4][::-1]
    assert read_mo(bytes(swapped)).messages == catalog.messages
    latin = data.replace(b"charset=UTF-8", b"charset=L1   ").replace("Ö".encode(), "Ö".encode("latin1") + b" ")
    assert {m.msgid: m.msgstr for m in read_mo(latin).messages}["Open"] == ("Ö ffnen",)
    with pytest.raises(CatalogError, match=r"^x.mo is not a .mo catalog: wrong magic number$"):
        read_mo(b"\x00" * 40, "x.mo")
    with pytest.raises(CatalogError, match=r"^x.mo: truncated"):
        read_mo(data[:60], "x.mo")


def test_contents_index_counts_each_language_and_keeps_packages_with_all_three(archive):
    index = catalog_index(archive[1].read_text().splitlines(keepends=True), ("de", "fr", "cs"))
    assert index.counts() == {"cs": 13, "de": 14, "fr": 13}  # app03's line also names app03-extra
    assert index.shipping_all(("de", "fr", "cs")) == sorted(PACKAGES + ["app03-extra"])
    assert GERMAN_ONLY in index.by_lang["de"] and index.by_lang["de"]["app00"] == {"app00"}
    packed = archive[0] / "Contents-all.gz"
    packed.write_bytes(gzip.compress(archive[1].read_bytes()))
    assert read_catalog_index([packed], ("de", "fr", "cs")) == index


def test_plural_entries_give_singular_and_plural_rows(built):
    rows = {row[0]: row[1:4] for row in every_row(built[0])}
    assert rows["%d file was deleted"] == ("%d Datei wurde gelöscht", "%d fichier a été supprimé",
                                           "%d soubor byl smazán")
    assert rows["%d files were deleted"] == ("%d Dateien wurden gelöscht", "%d fichiers ont été supprimés",
                                             "%d soubory byly smazány")  # Czech's form for n = 2


def test_msgctxt_keeps_entries_with_the_same_msgid_apart(archive, built):
    from collections import Counter

    from transformer_hub.corpus.debian_catalogs import read_package

    _, entries = read_package(next(archive[2].glob("app00_*.deb")), LANGS, Counter())
    found = {entry.context: entry.texts for entry in entries if entry.raw[0] == "Print"}
    assert found == {"menu": ("Print", "Drucken", "Imprimer", "Tisk"),
                     "button": ("Print", "Jetzt drucken", "Imprimer maintenant", "Vytisknout")}
    kept = [row for row in every_row(built[0]) if row[0] == "Print"]  # val and test score a text once
    assert len(kept) == (2 if built[1]["packages"]["app00"]["split"] == "train" else 1)
    assert {row[4]["context"]: row[1:4] for row in kept}.items() <= {k: v[1:] for k, v in found.items()}.items()


def test_accelerators_are_removed_on_both_sides_and_kept_in_raw(built):
    rows = {row[0]: row for row in every_row(built[0])}
    assert rows["Save the Document"][1:4] == ("Dokument speichern", "Enregistrer le document", "Uložit dokument")
    assert rows["Save the Document"][4]["raw"] == {"en": "_Save the Document", "de": "Dokument _speichern",
                                                   "fr": "_Enregistrer le document", "cs": "_Uložit dokument"}
    assert rows["Quit the Program"][1:4] == ("Programm beenden", "Quitter le programme", "Ukončit program")
    assert rows["Delete %(name)s from the project?"][1] == "%(name)s aus dem Projekt löschen?"  # verbatim


def test_accelerator_rules():
    assert accelerator_kind("_Open") == "_" and accelerator_kind("&Open") == "&"
    assert accelerator_kind("file_name_here") is None  # two: an identifier, not a mark
    assert accelerator_kind("Drag & Drop") is None and accelerator_kind("%(user_name)s logged in") is None
    assert without_accelerator("Save &As && Close", "&") == "Save As & Close"
    assert without_accelerator("Tom &amp; &Jerry", "&") == "Tom &amp; Jerry"


def test_wrong_language_identical_and_wordless_targets_are_dropped(built):
    folder, manifest = built
    rows = {row[0]: row[1:4] for row in every_row(folder)}
    assert rows["The document could not be saved to the disk"] == (
        "", "Le document n'a pas pu être enregistré sur le disque", "Dokument nebylo možné uložit na disk")
    assert rows["Version"] == ("", "", "Verze")  # the English itself in German and French
    assert "<b>%s</b>" not in rows
    assert rows["Show the hidden files"] == ("Versteckte Dateien anzeigen", "Afficher les fichiers cachés", "")
    assert manifest["dropped"]["de: another language"] == 1 and manifest["dropped"]["de: the English itself"] == 1
    assert manifest["dropped"]["entry: English: markup, placeholders or numbers only"] == 1


def test_each_package_is_in_one_split_and_no_val_or_test_text_is_in_train(built):
    folder, manifest = built
    splits = {split: {line.split("#")[0] for line in lines(folder, split, "ids")} for split in
              ("train", "val", "test")}
    assert not (splits["train"] & splits["val"]) and not (splits["train"] & splits["test"])
    assert not (splits["val"] & splits["test"]) and splits["val"] and splits["test"]
    for split, names in splits.items():
        assert {manifest["packages"][name]["split"] for name in names} == {split}
    train = split_rows(folder, "train")
    for split in ("val", "test"):
        for row in split_rows(folder, split):
            for k in range(4):
                assert not row[k] or row[k] not in {r[k] for r in train}, (split, row)
    assert "Cancel" not in {row[0] for split in ("val", "test") for row in split_rows(folder, split)}
    assert manifest["counts"]["test"]["languages"]["cs"]["rows"] >= 2


def test_a_string_many_packages_share_is_merged_and_capped(built):
    cancels = [row for row in split_rows(built[0], "train") if row[0] == "Cancel"]
    train_packages = [int(name[3:]) for name, r in built[1]["packages"].items() if r["split"] == "train"]
    variants = sorted({CANCEL_DE[n] for n in train_packages},
                      key=lambda v: (-sum(CANCEL_DE[n] == v for n in train_packages), v))  # ties: alphabetical
    assert [row[1] for row in cancels] == variants[:3]  # the most frequent first, at most three
    assert cancels[0][4]["rows_merged"] == sum(CANCEL_DE[n] == variants[0] for n in train_packages)


def test_texts_of_a_held_out_corpus_go_nowhere(archive, built, apt, tmp_path):
    held = tmp_path / "held"
    held.mkdir()
    (held / "test.de.gz").write_bytes(gzip.compress(f"{sentence(4, 1)}\n".encode()))
    (held / "train.en.gz").write_bytes(gzip.compress(f"{sentence(5, 0)}\n".encode()))  # train: not held out
    out = tmp_path / "out"
    manifest = build_debian_catalogs(out, archive[0] / "cache", contents=[archive[1]], held_out=[held], **SIZES)
    english = [row[0] for row in every_row(out)]
    assert sentence(4, 0) not in english and sentence(5, 0) in english
    assert manifest["dropped"]["entry: in another corpus's val or test"] == 1


def test_projects_are_held_out_whole_and_share_no_text_with_the_other_splits(archive, built, apt, tmp_path):
    out = tmp_path / "projects"
    project = next(name for name, r in built[1]["packages"].items() if r["split"] == "train")
    manifest = build_debian_catalogs(out, archive[0] / "cache", contents=[archive[1]], projects=[project], **SIZES)
    assert manifest["packages"][project]["split"] == "projects" and manifest["split"]["projects"] == [project]
    assert {line.split("#")[0] for line in lines(out, "projects", "ids")} == {project}
    own = split_rows(out, "projects")
    assert own and "Cancel" not in {row[0] for row in own}  # other packages share it: a train text
    others = {(k, row[k]) for split in ("train", "val", "test") for row in split_rows(out, split)
              for k in range(4) if row[k]}
    assert not any((k, row[k]) in others for row in own for k in range(4) if row[k])
    assert project not in {line.split("#")[0] for split in ("train", "val", "test") for line in lines(out, split, "ids")}
    with pytest.raises(ContentsError, match="--projects nowhere: not among the packages chosen"):
        build_debian_catalogs(tmp_path / "x", archive[0] / "cache", contents=[archive[1]], projects=["nowhere"],
                              **SIZES)


def test_manifest_records_versions_licences_failures_and_hashes(built):
    folder, manifest = built
    assert json.loads((folder / "manifest.json").read_text()) == {k: v for k, v in manifest.items()
                                                                  if k != "manifest_sha256"}
    assert sorted(manifest["packages"]) == PACKAGES and GERMAN_ONLY not in manifest["packages"]
    assert {r["version"] for r in manifest["packages"].values()} == {VERSION}
    assert manifest["packages"]["app00"]["license"] == "GPL-2+" and manifest["licences"] == {"GPL-2+": 12}
    assert manifest["failed"] == {"app03-extra": "E: Unable to locate package app03-extra"}
    assert manifest["contents"]["packages_per_language"] == {"cs": 13, "de": 14, "fr": 13}
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
    assert {split for split in manifest["counts"]} == {"train", "val", "test"}


def test_a_second_run_reuses_the_cache_and_writes_the_same_bytes(archive, built, apt, tmp_path):
    again = tmp_path / "again"
    apt.unlink(missing_ok=True)
    build_debian_catalogs(again, archive[0] / "cache", contents=[archive[1]], **SIZES)
    asked = apt.read_text().splitlines()
    assert "download app03-extra" in asked and set(asked) <= {"download app03-extra", "update -qq"}  # only the
    # package that failed is asked for again: every other one is in the cache
    names = sorted(p.name for p in built[0].iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (again / name).read_bytes() == (built[0] / name).read_bytes(), name


def test_packages_and_limit_narrow_the_choice(archive, apt, tmp_path):
    manifest = build_debian_catalogs(tmp_path / "a", archive[0] / "cache", contents=[archive[1]],
                                     packages=["app00", "app01", "app02", "app05"], **SIZES)
    assert sorted(manifest["packages"]) == ["app00", "app01", "app02", "app05"]
    limited = build_debian_catalogs(tmp_path / "b", archive[0] / "cache", contents=[archive[1]], limit=5, **SIZES)
    assert limited["packages_chosen"] == 5
    with pytest.raises(ContentsError, match=rf"^{GERMAN_ONLY}: no catalog in each of de, fr, cs per the Contents"):
        build_debian_catalogs(tmp_path / "c", archive[0] / "cache", contents=[archive[1]], packages=[GERMAN_ONLY],
                              **SIZES)


def test_the_loader_reads_each_pair_a_row_has(built):
    from transformer_hub.training.data import load_directions, load_split

    folder = built[0]
    split = built[1]["packages"]["app00"]["split"]  # the package with rows that lack a language
    pairs = load_directions(folder, split, [("en", "de"), ("fr", "cs")])
    rows = split_rows(folder, split)
    assert pairs[("en", "de")] == [(r[0], r[1]) for r in rows if r[1]]
    assert pairs[("fr", "cs")] == [(r[2], r[3]) for r in rows if r[2] and r[3]]
    assert load_split(folder, split, "de", "en") == [(r[1], r[0]) for r in rows if r[1]]
    assert len(pairs[("en", "de")]) < len(rows)  # some rows lack German


@pytest.mark.slow  # a subprocess imports the package
def test_cli_builds_and_reports_errors_in_one_line(archive, apt, tmp_path, capsys):
    from transformer_hub.cli import main

    out = tmp_path / "cli"
    common = ["corpus", "debian-catalogs", "--cache", str(archive[0] / "cache"), "--contents", str(archive[1])]
    assert main([*common, "--out", str(out), "--val-entries", "2", "--test-entries", "2", "--no-progress"]) == 0
    assert (out / "train.cs.gz").is_file() and (out / "manifest.json").is_file()
    assert "1 packages failed (see manifest.json)" in capsys.readouterr().out
    for args, said in ((["--packages", "nosuch"], "nosuch: no catalog in each of de, fr, cs per the Contents index"),
                       (["--contents", str(tmp_path / "none")], "--contents "),
                       (["--limit", "1"], "--limit must be at least 3")):
        assert main([*common, "--out", str(tmp_path / "x"), *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and said in err, err
    done = subprocess.run([sys.executable, "-m", "transformer_hub", *common, "--out", str(tmp_path / "x"),
                           "--packages", GERMAN_ONLY], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (DEBIAN_CATALOGS / "manifest.json").is_file(), reason=DEBIAN_CATALOGS_MISSING)
def test_the_built_corpus_is_leak_free_and_matches_its_manifest():
    """On the real corpus: the files are the manifest's, every package is in one split, no val or test text (any
    language) is in train, and none is in LibreOffice help's val or test when that corpus is there."""
    manifest = json.loads((DEBIAN_CATALOGS / "manifest.json").read_text())
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((DEBIAN_CATALOGS / name).read_bytes()).hexdigest() == digest, name
    columns = {split: [lines(DEBIAN_CATALOGS, split, lang) for lang in LANGS] for split in ("train", "val", "test")}
    train = [set(column) - {""} for column in columns["train"]]
    for split in ("val", "test"):
        assert all(not set(column) & train[k] for k, column in enumerate(columns[split])), split
        packages = {line.split("#")[0] for line in lines(DEBIAN_CATALOGS, split, "ids")}
        assert {manifest["packages"][name]["split"] for name in packages} == {split}
        assert min(manifest["counts"][split]["languages"][lang]["rows"] for lang in LANGS[1:]) >= \
            manifest["split"][f"{split}_entries"]
    if (LIBREOFFICE_HELP / "test.en.gz").is_file():
        for k, lang in enumerate(LANGS):
            held = {line for split in ("val", "test") for line in lines(LIBREOFFICE_HELP, split, lang)}
            assert not held & {text for split in columns.values() for text in split[k]}, lang
