"""scripts/deploy_space.py: the Space folder is assembled right and uploads to the local Hub test double."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import deploy_space as deploy

ROOT = Path(__file__).resolve().parents[1]

REPO = "user/transformer-space"


@pytest.fixture
def models_dir(tmp_path, make_model):
    """A models folder like space/models: en-de, two variants and their results table."""
    root = tmp_path / "models"
    make_model().save_pretrained(root / "en-de")
    make_model(norm="pre").save_pretrained(root / "variants" / "pre-norm")
    make_model(positional="learned").save_pretrained(root / "variants" / "learned-pos")
    from transformer_hub.hub import results as results_json

    results_json.save(results_json.Results(models=[results_json.ModelResult("pre-norm", path="pre-norm")]),
                      root / "variants" / "results.json")
    (root / "en-de" / "metrics.jsonl").write_text("{}\n")  # the training log: the inside tab draws it
    (root / "en-de" / "training_curves.png").write_bytes(b"png")
    return root


def test_card_front_matter_is_a_valid_space_card():
    import gradio

    meta = deploy.check_card(ROOT / "space" / "README.md")
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert meta["sdk_version"] == gradio.__version__
    card = (ROOT / "space" / "README.md").read_text()
    for key in ("colorFrom:", "colorTo:", "datasets:", "license:", "emoji:"):
        assert key in card
    # no invented repository ids or addresses: Hub models come from --hub-models, and nothing links elsewhere
    assert "models" not in meta and "http" not in re.sub(r"http://127\.0\.0\.1:7860/?", "", card)
    assert len(meta["short_description"]) <= 60  # the Hub refuses longer ones
    for language in ("English", "German", "French", "Czech"):  # the four-language demo, not En->De only
        assert language in card
    assert "En→De" not in card and "(English → German)" not in card
    for endpoint in ("/translate", "/tokens", "/continue", "/beam_tree", "/compare", "/attention"):
        assert endpoint in card
    requirement = next(l for l in (ROOT / "requirements.txt").read_text().splitlines() if l.startswith("gradio"))
    from packaging.specifiers import SpecifierSet

    assert gradio.__version__ in SpecifierSet(requirement[len("gradio"):])  # the card agrees with requirements


def test_dry_run_assembles_the_space_folder(tmp_path, models_dir, capsys):
    out = tmp_path / "staged"
    assert deploy.main(["--dry-run", "--out", str(out), "--models-dir", str(models_dir)]) == 0
    files = set(deploy.files_of(out))
    assert {"README.md", "app.py", "requirements.txt", "space/__init__.py", "space/page/demo.py",
            "space/page/tabs/translate.py", "space/page/tabs/attention.py", "transformer_hub/__init__.py",
            "transformer_hub/model/model.py", "transformer_hub/decoding/api.py", "space/models/en-de/config.json",
            "space/models/en-de/model.safetensors", "space/models/en-de/metrics.jsonl",
                "space/models/variants/pre-norm/config.json",
            "space/models/variants/learned-pos/model.safetensors", "space/models/variants/results.json"} <= files
    assert not any("__pycache__" in f or f.endswith(".pyc") or f.startswith("tests/") for f in files)
    assert "space/README.md" not in files and "scripts/deploy_space.py" not in files
    # only what the Space runs: no training, CLI or benchmark code, no training by-products of the models
    assert not {"transformer_hub/training/trainer.py", "transformer_hub/cli/translate.py", "transformer_hub/training/data.py",
                "benchmarks/app.py", "space/models/en-de/training_curves.png"} & files
    assert {"transformer_hub/decoding/pool.py", "transformer_hub/hub/results.py", "space/pictures/architecture.py",
            "space/models/en-de/spm.model" if (models_dir / "en-de" / "spm.model").is_file() else "app.py"} <= files
    assert (out / "README.md").read_text().startswith("---\ntitle:")
    requirements = (out / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in requirements and not any(r.startswith("gradio") for r in requirements)
    assert requirements[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"  # torch's CPU build
    assert "app.py" in capsys.readouterr().out


def test_chosen_models_only(tmp_path, models_dir):
    out = deploy.assemble(tmp_path / "a", ["en-de"], models_dir=models_dir)
    assert not (out / "space" / "models" / "variants").exists()
    out = deploy.assemble(tmp_path / "b", ["none"], models_dir=models_dir)
    assert not (out / "space" / "models").exists()
    with pytest.raises(deploy.DeployError, match="not found"):
        deploy.assemble(tmp_path / "c", ["variants/nope"], models_dir=models_dir)
    assert deploy.main(["--dry-run", "--models", "nope", "--models-dir", str(models_dir)]) == 2


def test_the_cards_models_come_from_hub_models_only(tmp_path, models_dir, capsys):
    out = tmp_path / "staged"
    assert deploy.main(["--dry-run", "--out", str(out), "--models", "none", "--models-dir", str(models_dir),
                        "--hub-models", "me/en-de, me/multi,me/en-de"]) == 0
    card = (out / "README.md").read_text()
    front = card.split("\n---\n", 1)[0]
    assert front.endswith("models:\n  - me/en-de\n  - me/multi") and card.count("me/en-de") == 1
    assert deploy.front_matter(out / "README.md")["title"] == deploy.front_matter(ROOT / "space" / "README.md")["title"]
    assert card.split("\n---\n", 1)[1] == (ROOT / "space" / "README.md").read_text().split("\n---\n", 1)[1]
    plain = deploy.assemble(tmp_path / "plain", ["none"], models_dir=models_dir)
    assert (plain / "README.md").read_text() == (ROOT / "space" / "README.md").read_text()  # none given: none listed
    assert deploy.main(["--dry-run", "--models", "none", "--models-dir", str(models_dir),
                        "--hub-models", "not a repo id"]) == 2
    assert "Hub repo ids" in capsys.readouterr().err


def test_a_card_that_names_models_itself_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    card = (ROOT / "space" / "README.md").read_text()
    readme.write_text(card.replace("\n---\n", "\nmodels:\n  - someone/somewhere\n---\n", 1))
    with pytest.raises(deploy.DeployError, match="pass --hub-models"):
        deploy.check_card(readme)


def test_wrong_sdk_version_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("---\ntitle: x\nemoji: 🔤\nsdk: gradio\nsdk_version: 1.0.0\napp_file: app.py\nlicense: mit\n---\n")
    with pytest.raises(deploy.DeployError, match="sdk_version"):
        deploy.check_card(readme)
    readme.write_text("no front matter\n")
    with pytest.raises(deploy.DeployError, match="front matter"):
        deploy.check_card(readme)


@pytest.mark.slow
def test_the_assembled_space_runs_on_its_own(tmp_path, models_dir):
    """The staged folder alone (no checkout on the path) builds the demo with the shipped models."""
    out = deploy.assemble(tmp_path / "staged", ["all"], models_dir=models_dir)
    code = ("import space, transformer_hub; from space import build_demo; d = build_demo(); "
            "print(space.__file__); print(transformer_hub.__file__); print(d.space_context.store.names())")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MODEL_IDS", "TRANSFORMER_HUB_SPACE_MODELS")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=out, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith(str(out)) and lines[1].startswith(str(out))
    assert lines[2] == str(["en-de", "variants/learned-pos", "variants/pre-norm"])


def test_upload_to_the_hub_creates_and_updates_the_space(hub_server, models_dir, capsys):
    from huggingface_hub import HfApi

    assert deploy.main(["--repo-id", REPO, "--models-dir", str(models_dir)]) == 0
    files = hub_server.files_at(REPO, repo_type="space")
    assert {"README.md", "app.py", "requirements.txt", "space/page/demo.py", "transformer_hub/model/model.py",
            "space/models/en-de/model.safetensors", "space/models/variants/results.json"} <= set(files)
    local = deploy.assemble(models_dir.parent / "check", ["all"], models_dir=models_dir)
    assert files["app.py"] == (local / "app.py").read_bytes()
    assert files["space/models/en-de/model.safetensors"] == (local / "space/models/en-de/model.safetensors").read_bytes()
    assert HfApi().space_info(REPO).sdk == "gradio"
    assert "uploaded to space" in capsys.readouterr().out

    # a second deploy with fewer models replaces the old content: no stale checkpoints stay behind
    assert deploy.main(["--repo-id", REPO, "--models", "en-de", "--models-dir", str(models_dir),
                        "--message", "only en-de"]) == 0
    files = hub_server.files_at(REPO, repo_type="space")
    assert "space/models/en-de/config.json" in files
    assert not any(f.startswith("space/models/variants/") for f in files)
    assert len(hub_server.commits(REPO, repo_type="space")) == 3  # initial, first deploy, second deploy


def test_upload_needs_a_repo_id(capsys):
    with pytest.raises(SystemExit):
        deploy.main([])
    assert "--repo-id" in capsys.readouterr().err


def test_the_rerankers_weights_are_deployed_with_their_helper_model(tmp_path, make_model):
    """quality "best" reads rerank.json beside the weights, and the helper folders it names."""
    from transformer_hub.rerank import RERANK_FILE, DirectionWeights, RerankFile

    assert RERANK_FILE in deploy.MODEL_FILES
    root = tmp_path / "models"
    make_model().save_pretrained(root / "multilingual")
    make_model().save_pretrained(root / "en-de")
    RerankFile({"en-de": DirectionWeights()}, helpers=["../en-de"], command="test").save(
        root / "multilingual" / RERANK_FILE)
    out = deploy.assemble(tmp_path / "all", ["multilingual", "en-de"], models_dir=root)
    deployed = out / "space" / "models" / "multilingual" / RERANK_FILE
    assert RerankFile.load(deployed) == RerankFile.load(root / "multilingual" / RERANK_FILE)
    with pytest.raises(deploy.DeployError, match=r"multilingual/rerank.json uses the helper model \.\./en-de: "
                                                 r"deploy it too \(--models multilingual en-de\)"):
        deploy.assemble(tmp_path / "alone", ["multilingual"], models_dir=root)


def test_a_domain_classifier_is_deployed_with_its_model(tmp_path, make_model):
    """domain "auto" reads domains.json beside the weights: a deployed model without it could not choose."""
    root = tmp_path / "models"
    make_model().save_pretrained(root / "multilingual")
    (root / "multilingual" / "domains.json").write_text('{"stand": "in"}')
    out = deploy.assemble(tmp_path / "all", ["multilingual"], models_dir=root)
    assert (out / "space" / "models" / "multilingual" / "domains.json").read_text() == '{"stand": "in"}'


def test_the_shipped_rerank_files_are_among_the_deployed_files(tmp_path):
    shipped = sorted((ROOT / "space" / "models").glob("*/rerank.json"))
    if not shipped:
        pytest.skip("no shipped model has a rerank.json")
    out = tmp_path / "staged"
    assert deploy.main(["--dry-run", "--out", str(out)]) == 0
    files = set(deploy.files_of(out))
    assert {f"space/models/{p.parent.name}/rerank.json" for p in shipped} <= files
