"""Corpus reading (clear errors naming file and line), the Multi30k download, and token batching."""
import gzip
import io

import pytest
import torch

from transformer_hub.training.data import (DataError, Example, collate, corpus_file, download_multi30k, iterate_batches,
                                  load_split, read_lines, read_parallel, token_batches)


def write(path, text, gz=False):
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_read_lines_plain_and_gzip(tmp_path):
    assert read_lines(write(tmp_path / "a.en", "one\ntwo\r\n")) == ["one", "two"]
    assert read_lines(write(tmp_path / "a.de.gz", "eins\nzwei\n", gz=True)) == ["eins", "zwei"]


def test_undecodable_bytes_name_file_and_line(tmp_path):
    path = write(tmp_path / "bad.en", b"fine\nalso fine\nbroken \xff\xfe here\n")
    with pytest.raises(DataError, match=r"bad\.en:3: not valid UTF-8"):
        read_lines(path)


def test_empty_missing_and_fake_gzip(tmp_path):
    with pytest.raises(DataError, match="empty"):
        read_lines(write(tmp_path / "empty.en", ""))
    with pytest.raises(DataError, match="no such file"):
        read_lines(tmp_path / "nope.en")
    with pytest.raises(DataError, match="cannot read"):
        read_lines(write(tmp_path / "fake.en.gz", b"this is not gzip"))


def test_parallel_files_must_align(tmp_path):
    src, tgt = write(tmp_path / "s.en", "a\nb\nc\n"), write(tmp_path / "t.de", "x\ny\n")
    with pytest.raises(DataError, match=r"3 lines but .*t\.de has 2"):
        read_parallel(src, tgt)
    src, tgt = write(tmp_path / "s2.en", "a\n\nc\n"), write(tmp_path / "t2.de", "x\ny\nz\n")
    with pytest.raises(DataError, match=r"s2\.en:2: empty line"):
        read_parallel(src, tgt)
    src, tgt = write(tmp_path / "s3.en", "a\n \nc\n"), write(tmp_path / "t3.de", "x\n\nz\n")
    assert read_parallel(src, tgt) == [("a", "x"), ("c", "z")]  # aligned empty lines are skipped


def test_corpus_layout(tmp_path):
    write(tmp_path / "train.en.gz", "a dog\n", gz=True)
    write(tmp_path / "train.de", "ein Hund\n")
    assert load_split(tmp_path, "train", "en", "de") == [("a dog", "ein Hund")]
    with pytest.raises(DataError, match="no val.en.gz or val.en"):
        corpus_file(tmp_path, "val", "en")


def test_download_checks_files_offline(tmp_path):
    good = gzip.compress(b"A man.\nA dog.\n")
    urls = []

    def fetch(url):
        urls.append(url)
        return good

    written = download_multi30k(tmp_path / "m30k", langs=("en", "de"), splits=("train", "val"), fetch=fetch)
    assert sorted(p.name for p in written) == ["train.de.gz", "train.en.gz", "val.de.gz", "val.en.gz"]
    assert all(u.startswith("https://") and u.endswith(".gz") for u in urls)
    assert read_lines(tmp_path / "m30k" / "val.en.gz") == ["A man.", "A dog."]
    assert download_multi30k(tmp_path / "m30k", langs=("en",), splits=("train",), fetch=fetch) == []  # cached
    with pytest.raises(DataError, match="test_2016_flickr.en.gz is not a valid gzip"):
        download_multi30k(tmp_path / "m30k", langs=("en",), splits=("test_2016_flickr",), fetch=lambda u: b"<html>")
    assert not list((tmp_path / "m30k").glob("test_2016*")) and not list((tmp_path / "m30k").glob("tmp*"))


def examples(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 30, (n, 2), generator=g).tolist()
    return [Example(list(range(4, 4 + s)), [1] + list(range(4, 4 + t)) + [2]) for s, t in lengths]


def test_token_batches_respect_budget_cover_all_and_are_seeded():
    data = examples()
    batches = token_batches(data, max_tokens=120, seed=3, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(len(data)))
    for b in batches:
        longest = max(max(len(data[i].src), len(data[i].tgt)) for i in b)
        assert longest * len(b) <= 120 or len(b) == 1
    assert batches == token_batches(data, 120, seed=3, epoch=0)
    assert batches != token_batches(data, 120, seed=3, epoch=1)
    # bucketing keeps padding low: far fewer pad tokens than random batching would give
    pads = sum(max(len(data[i].src) for i in b) * len(b) - sum(len(data[i].src) for i in b) for b in batches)
    assert pads < 0.25 * sum(len(e.src) for e in data)


def test_collate_shapes_and_shift():
    src, tgt_in, tgt_out = collate([Example([5, 6, 2], [1, 7, 8, 2]), Example([5, 2], [1, 9, 2])], pad_id=0)
    assert src.tolist() == [[5, 6, 2], [5, 2, 0]]
    assert tgt_in.tolist() == [[1, 7, 8], [1, 9, 0]]
    assert tgt_out.tolist() == [[7, 8, 2], [9, 2, 0]]


def test_iterate_batches_shards_and_resumes():
    data = examples()
    full = [i for i, _ in iterate_batches(data, 120, seed=1, epoch=0, pad_id=0)]
    later = [i for i, _ in iterate_batches(data, 120, seed=1, epoch=0, pad_id=0, start=5)]
    assert later == full[5:]
    rank0 = [b[0].tolist() for _, b in iterate_batches(data, 120, 1, 0, 0, rank=0, world_size=2)]
    rank1 = [b[0].tolist() for _, b in iterate_batches(data, 120, 1, 0, 0, rank=1, world_size=2)]
    assert len(rank0) == len(rank1) == len(full) // 2 and rank0 != rank1


def test_read_lines_error_handling_is_a_choice(tmp_path):
    path = write(tmp_path / "latin1.txt", b"caf\xe9\nok\n")
    with pytest.raises(DataError, match=r"latin1\.txt:1: not valid UTF-8"):
        read_lines(path)
    assert read_lines(path, errors="replace") == ["caf\ufffd", "ok"]
    assert read_lines(write(tmp_path / "empty.txt", ""), allow_empty=True) == []
    with pytest.raises(ValueError, match="errors must be"):
        read_lines(path, errors="ignore")


def test_read_lines_gzip_by_magic_stdin_and_line_ends(tmp_path, monkeypatch):
    assert read_lines(write(tmp_path / "no_suffix", "a\nb", gz=True)) == ["a", "b"]  # no final newline either
    assert read_lines(write(tmp_path / "crlf.txt", "a\r\n\r\nb\r\n")) == ["a", "", "b"]
    assert read_lines(write(tmp_path / "inner.txt", "a\rb\n")) == ["a\rb"]  # only "\n" ends a line
    monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": io.BytesIO(b"x\ny\n")})())
    assert read_lines("-") == ["x", "y"]


def test_missing_corpus_says_how_to_get_it(tmp_path):
    with pytest.raises(DataError, match=r"no Multi30k at .*nothing: run `python -m transformer_hub download`"):
        load_split(tmp_path / "nothing", "train", "en", "de")
    with pytest.raises(DataError, match=r"download --langs fr --dest"):
        corpus_file(tmp_path, "train", "fr")


def test_default_data_dir_is_the_environment_or_the_download_folder(tmp_path, monkeypatch):
    """Nothing derived from where the package sits: $TRANSFORMER_HUB_DATA, else data/multi30k (what download fills)."""
    from pathlib import Path

    from transformer_hub.training import data

    monkeypatch.setenv(data.DATA_ENV, str(tmp_path / "mine"))
    assert data.default_data_dir() == tmp_path / "mine"
    monkeypatch.delenv(data.DATA_ENV)
    assert data.default_data_dir() == Path("data") / "multi30k"
