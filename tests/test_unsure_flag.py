"""``python -m scripts.unsure_flag``: what it counts, on records whose answer is known."""
import json
import re

import pytest

from scripts import unsure_flag


def test_the_measurement_counts_what_it_says():
    """The two worst of 20 sentences by chrF are the lowest 10 %; a mean threshold flagging exactly them has
    precision, recall and F1 of 1."""
    rows = [{"chrf": 10.0 * i, "mean": 0.3 if i < 2 else 0.9, "lowest_word": 0.5} for i in range(20)]
    result = unsure_flag.measure(rows)
    assert result["lowest_count"] == 2 and result["before"]["flagged_lowest"] == 1.0
    assert result["lowest_chrf_below"] == 20.0  # the lowest two (0 and 10) are below the third's chrF
    assert result["before"]["flagged_all"] == pytest.approx(0.1) and result["before"]["f1"] == 1.0
    assert result["after"]["f1"] == 1.0 and result["after"]["flagged_all"] == pytest.approx(0.1)
    assert re.fullmatch(r"\d\.\d+", str(result["after"]["mean"]))


def test_corpora_are_calibrated_together_with_each_ones_lowest_tenth():
    """Two corpora of one domain (v4's software: the help and the catalogs) and captions: each corpus's lowest
    10 % are its own two worst, whatever its level, and the chosen flag is reported on each corpus."""
    def corpus(name, level, low_mean):
        return [{"chrf": level + i, "mean": low_mean if i < 2 else 0.9, "lowest_word": 0.5, "corpus": name}
                for i in range(20)]
    rows = corpus("captions:multi30k", 50.0, 0.3) + corpus("software:help", 1.0, 0.35) \
        + corpus("software:catalogs", 20.0, 0.32)
    result = unsure_flag.measure(rows)
    assert unsure_flag.lowest_of(rows) == {0, 1, 20, 21, 40, 41}
    assert result["after"]["f1"] == 1.0
    assert list(result["per_corpus"]) == ["captions:multi30k", "software:help", "software:catalogs"]
    for name, below in (("captions:multi30k", 52.0), ("software:help", 3.0), ("software:catalogs", 22.0)):
        found = result["per_corpus"][name]
        assert found["flagged_lowest"] == 1.0 and found["flagged_all"] == pytest.approx(0.1)
        assert found["lowest_chrf_below"] == below and found["sentences"] == 20
    assert "lowest_chrf_below" not in result


def test_records_are_read_back_without_decoding(tmp_path, capsys):
    rows = [{"chrf": 10.0 * i, "mean": 0.3 if i < 2 else 0.9, "lowest_word": 0.5, "corpus": "captions:m"}
            for i in range(20)]
    (tmp_path / "records.json").write_text(json.dumps(rows))
    unsure_flag.main(["--data", "captions=/nowhere/m", "--records", str(tmp_path / "records.json"),
                      "--out", str(tmp_path / "out.json")])
    saved = json.loads((tmp_path / "out.json").read_text())
    assert saved["command"] == "python -m scripts.unsure_flag --data captions=m --records records.json " \
                               "--out out.json"  # no machine's folders recorded
    assert saved["after"]["flagged_lowest"] == 1.0 and "flags 100.0 %" in capsys.readouterr().out


def test_a_folder_without_its_domain_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit):
        unsure_flag.main(["--data", "data/multi30k"])
    assert "--data takes NAME=DIR" in capsys.readouterr().err
