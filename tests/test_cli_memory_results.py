"""``python -m benchmarks cli_memory``: its input cycles through the test sets."""
import gzip

import pytest

from benchmarks import cli_memory


def test_the_input_takes_each_test_set_in_turn_and_starts_again(tmp_path, monkeypatch):
    for name, split, lines in (("cat", "test", ["Open file", "", "Save"]), ("help", "test", ["Choose Insert."]),
                               ("m30k", "test_2016_flickr", ["A dog runs."])):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{split}.en.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    monkeypatch.setenv("DEBIAN_CATALOGS", str(tmp_path / "cat"))
    monkeypatch.setenv("TRANSFORMER_HUB_LIBREOFFICE_HELP", str(tmp_path / "help"))
    monkeypatch.setenv("TRANSFORMER_HUB_DATA", str(tmp_path / "m30k"))
    assert cli_memory.input_lines(6) == ["Open file", "Save", "Choose Insert.", "A dog runs.", "Open file", "Save"]
    monkeypatch.setenv("DEBIAN_CATALOGS", str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match="cli_memory needs the debian-catalogs corpus"):
        cli_memory.input_lines(1)
