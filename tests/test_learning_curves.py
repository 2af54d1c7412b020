"""scripts/learning_curves.py: stages joined on one update axis, per-direction losses at each stage's end."""
import json
from pathlib import Path

from scripts import learning_curves


def write(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"cut by a crash')
    return path


def test_stages_are_joined_and_plotted(tmp_path, capsys):
    first = write(tmp_path / "a.jsonl", [{"kind": "train", "step": 5, "loss": 9.0},
                                         {"kind": "val", "step": 10, "val_loss/en-de": 3.0, "val_loss/de-en": 2.5,
                                          "bleu/en-de": 10.0}])
    second = write(tmp_path / "b.jsonl", [{"kind": "val", "step": 4, "val_loss/en-de": 2.0, "val_loss/de-en": 1.5,
                                           "bleu/de-en": 30.0}])
    records, starts = learning_curves.joined([first, second])
    assert starts == [0, 10] and [r["step"] for r in records] == [10, 14]
    assert learning_curves.stage_ends(records, starts) == [{"en-de": 3.0, "de-en": 2.5}, {"en-de": 2.0, "de-en": 1.5}]
    assert learning_curves.main([str(first), str(second), "--out", str(tmp_path / "lc.png")]) == 0
    assert (tmp_path / "lc.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["val_loss"] == {"en-de": 2.0, "de-en": 1.5}


def test_a_missing_stage_is_one_line(tmp_path, capsys):
    assert learning_curves.main([str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err.strip() == f"no such metrics file: {tmp_path / 'none.jsonl'}"
