"""scripts/run_branch.py keeps a run's newest checkpoint as the one commit of its own branch and writes it back."""
import subprocess
from pathlib import Path

import pytest

from scripts import run_branch


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.org")):
        git(tmp_path, "config", key, value)
    (tmp_path / ".gitignore").write_text("runs/\n")
    git(tmp_path, "add", ".gitignore")
    git(tmp_path, "commit", "-qm", "init")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make_run(root: Path, steps) -> Path:
    run = root / "runs" / "v4"
    for step in steps:
        folder = run / "checkpoints" / f"step_{step:07d}"
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(bytes([step % 256]) * 10)
    (run / "tokenizer").mkdir(parents=True)
    (run / "tokenizer" / "spm.model").write_bytes(b"pieces")
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    (run / "big.bin").write_bytes(b"0" * (run_branch.SMALL + 1))
    return run


def test_save_keeps_only_the_newest_checkpoint_on_one_commit_and_restore_writes_it_back(repo):
    make_run(repo, [50, 100])
    assert run_branch.main(["save", "runs/v4"]) == 0
    assert git(repo, "ls-tree", "-r", "--name-only", "v4-run").splitlines() == [
        "runs/v4/checkpoints/step_0000100/model.safetensors", "runs/v4/metrics.jsonl", "runs/v4/tokenizer/spm.model"]
    assert git(repo, "status", "--porcelain") == "" and git(repo, "log", "--format=%s", "main") == "init"
    (repo / "runs" / "v4" / "checkpoints" / "step_0000150").mkdir()
    (repo / "runs" / "v4" / "checkpoints" / "step_0000150" / "model.safetensors").write_bytes(b"new")
    run_branch.main(["save", "runs/v4"])
    assert git(repo, "rev-list", "--count", "v4-run") == "1"  # replaced, not stacked
    subprocess.run(["rm", "-rf", str(repo / "runs")], check=True)
    run_branch.main(["restore", "runs/v4"])
    assert (repo / "runs/v4/checkpoints/step_0000150/model.safetensors").read_bytes() == b"new"
    assert (repo / "runs/v4/tokenizer/spm.model").read_bytes() == b"pieces"
    assert not (repo / "runs/v4/checkpoints/step_0000100").exists()


def test_a_run_without_checkpoints_or_a_branch_without_the_run_is_one_line(repo):
    (repo / "runs" / "v4").mkdir(parents=True)
    with pytest.raises(SystemExit, match="has no checkpoints/step_"):
        run_branch.main(["save", "runs/v4"])
    make_run(repo, [50])
    run_branch.main(["save", "runs/v4"])
    with pytest.raises(SystemExit, match="holds no files of runs/other"):
        run_branch.main(["restore", "runs/other"])
