"""scripts/keep_run.py keeps a run's newest checkpoint in a tracked folder and writes it back."""
from pathlib import Path

import pytest

from scripts import keep_run


def make_run(root: Path, steps) -> Path:
    run = root / "runs" / "v4"
    for step in steps:
        folder = run / "checkpoints" / f"step_{step:07d}"
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(bytes([step % 256]) * 10)
    (run / "tokenizer").mkdir(parents=True, exist_ok=True)
    (run / "tokenizer" / "spm.model").write_bytes(b"pieces")
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    (run / "big.bin").write_bytes(b"0" * (keep_run.SMALL + 1))
    (run / "stage1.log").write_text("train: 1/3000\r")
    return run


def listing(folder: Path):
    return sorted(f.relative_to(folder).as_posix() for f in folder.rglob("*") if f.is_file())


def test_save_keeps_only_the_newest_checkpoint_and_restore_writes_it_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path, [50, 100])
    assert keep_run.main(["save", "runs/v4"]) == 0
    kept = tmp_path / "resume" / "v4"
    assert listing(kept) == ["checkpoints/step_0000100/model.safetensors", "metrics.jsonl", "tokenizer/spm.model"]
    make_run(tmp_path, [150])
    (tmp_path / "runs/v4/checkpoints/step_0000150/model.safetensors").write_bytes(b"new")
    keep_run.main(["save", "runs/v4"])
    assert listing(kept)[0] == "checkpoints/step_0000150/model.safetensors"  # replaced, not stacked
    assert len(listing(kept)) == 3
    import shutil
    shutil.rmtree(tmp_path / "runs")
    keep_run.main(["restore", "runs/v4"])
    assert (tmp_path / "runs/v4/checkpoints/step_0000150/model.safetensors").read_bytes() == b"new"
    assert (tmp_path / "runs/v4/tokenizer/spm.model").read_bytes() == b"pieces"
    assert not (tmp_path / "runs/v4/checkpoints/step_0000100").exists()


def test_a_run_without_checkpoints_or_nothing_kept_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "v4").mkdir(parents=True)
    with pytest.raises(SystemExit, match="has no checkpoints/step_"):
        keep_run.main(["save", "runs/v4"])
    with pytest.raises(SystemExit, match="holds no checkpoint to restore"):
        keep_run.main(["restore", "runs/other", "--kept", str(tmp_path / "nothing")])
