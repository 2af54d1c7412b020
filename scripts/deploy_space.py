#!/usr/bin/env python
"""Assemble the Hugging Face Space folder and upload it: ``python -m scripts.deploy_space --repo-id USER/SPACE``.

The Space folder holds only what the Space runs: ``README.md`` (the Space card with its front matter, from
``space/README.md``), ``app.py``, ``requirements.txt`` (the project's, minus gradio, which the Space's
``sdk_version`` pins), the Python modules of ``space/`` and ``transformer_hub/`` that ``app.py`` imports
(followed through every import statement, those inside functions included), and the chosen models under
``space/models/`` (``--models en-de,variants/paper``, ``--models all`` (default) or ``--models none``), each
with the files loading and describing it needs (config, weights, tokenizer, card), plus the variant study's
``results.json`` and curves.  The card's front matter names Hub models (``models:``, which the Hub links to the
Space) only when ``--hub-models USER/MODEL,...`` says which: ``space/README.md`` itself names none, so that no
repository id is ever invented.  ``--dry-run`` only assembles it (into ``--out`` or a temporary folder) and
prints the file list.  The upload creates the Space if needed (``repo_type="space"``, ``space_sdk="gradio"``)
and replaces the code and models that were there (``HF_ENDPOINT`` / ``HF_TOKEN`` are honoured as usual by
``huggingface_hub``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]

from .import_graph import imports, module_file
PACKAGES = ("space", "transformer_hub")
# what the Space reads of a model folder: config, weights, tokenizer files (named in tokenizer_config.json), card,
# the training log that the "Inside the Transformer" tab draws its curves from, the reranker's tuned weights
# (quality "best": space/serving/quality.py) and the domain classifier (domain "auto": transformer_hub/text/domain.py)
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer_config.json", "README.md", "metrics.jsonl",
               "rerank.json", "domains.json")
VARIANT_STUDY_FILES = ("results.json", "validation_curves.png")  # read by the variants tab
MAX_FILE_BYTES = 50 * 1024 * 1024


class DeployError(RuntimeError):
    pass


def front_matter(readme: Path) -> Dict[str, str]:
    """The flat ``key: value`` pairs of a README's YAML front matter (lists are kept as raw text)."""
    text = readme.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not match:
        raise DeployError(f"{readme} has no YAML front matter (--- ... ---)")
    meta = {}
    for line in match.group(1).splitlines():
        m = re.match(r"^([A-Za-z_]+):\s*(.*)$", line)
        if m:
            meta[m.group(1)] = m.group(2).strip().strip('"')
    return meta


def check_card(readme: Path) -> Dict[str, str]:
    meta = front_matter(readme)
    for key in ("title", "emoji", "sdk", "sdk_version", "app_file", "license"):
        if not meta.get(key):
            raise DeployError(f"{readme}: front matter lacks {key!r}")
    if meta["sdk"] != "gradio" or meta["app_file"] != "app.py":
        raise DeployError(f"{readme}: expected sdk: gradio and app_file: app.py")
    if "models" in meta:
        raise DeployError(f"{readme}: the card names no models itself; pass --hub-models USER/MODEL,... to list them")
    try:
        import gradio
    except ImportError:  # pragma: no cover - deploying without gradio installed is allowed
        return meta
    if meta["sdk_version"] != gradio.__version__:
        raise DeployError(f"{readme}: sdk_version {meta['sdk_version']} differs from the installed gradio "
                          f"{gradio.__version__}; update one of them")
    return meta


REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def card_with_models(card: str, hub_models: Sequence[str]) -> str:
    """``card`` with a ``models:`` list of ``hub_models`` (Hub repo ids) at the end of its front matter."""
    bad = [m for m in hub_models if not REPO_ID.match(m)]
    if bad:
        raise DeployError(f"--hub-models takes Hub repo ids (USER/NAME); got {bad}")
    if not hub_models:
        return card
    end = card.index("\n---\n", 4)  # the front matter's closing line (check_card found it)
    listed = "".join(f"\n  - {m}" for m in dict.fromkeys(hub_models))
    return card[:end] + "\nmodels:" + listed + card[end:]


CPU_TORCH_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"  # the Space runs on CPU


def space_requirements(requirements: Path) -> str:
    """The project's runtime requirements without gradio (the Space's sdk_version provides it), torch from its CPU
    index: the locked release, ``+cpu`` build (PyPI's is the CUDA build, several GB the Space would never use)."""
    lines = [CPU_TORCH_INDEX]
    for line in requirements.read_text(encoding="utf-8").splitlines():
        name = re.split(r"[<>=!~\[; ]", line.strip(), 1)[0].lower()
        if name and not line.strip().startswith("#") and name not in ("gradio", "gradio-client", "gradio_client"):
            lines.append(line.strip())
    return "\n".join(lines) + "\n"


def available_models(models_dir: Path) -> List[str]:
    from space.serving.model_store import discover

    return [spec.name for spec in discover(models_dir)]


def code_files(root: Path = ROOT, entry: str = "app.py") -> List[Path]:
    """The modules of ``space`` and ``transformer_hub`` that ``entry`` needs, with their packages' __init__."""
    todo, seen, files = [(root / entry, "__main__")], set(), set()
    while todo:
        path, module = todo.pop()
        for name in imports(path, module):
            parts = name.split(".")
            if parts[0] not in PACKAGES:
                continue
            for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
                prefix = ".".join(parts[:i])
                target = module_file(root, prefix)
                if target is not None and prefix not in seen:
                    seen.add(prefix)
                    files.add(target)
                    todo.append((target, prefix))
    return sorted(files)


def copy_code(root: Path, dest: Path) -> None:
    for path in code_files(root):
        rel = path.relative_to(root)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / rel)


def copy_model(folder: Path, dest: Path) -> None:
    """The files of a model folder the Space reads: config, weights, tokenizer, card, training log, rerank.json,
    domains.json."""
    dest.mkdir(parents=True, exist_ok=True)
    names = list(MODEL_FILES)
    if (folder / "tokenizer_config.json").is_file():
        names += [str(v) for v in json.loads((folder / "tokenizer_config.json").read_text()).values()
                  if isinstance(v, str) and (folder / v).is_file()]
    for name in dict.fromkeys(names):
        if (folder / name).is_file():
            shutil.copy2(folder / name, dest / name)


def check_rerank_helpers(models_dir: Path, wanted: Sequence[str]) -> None:
    """A deployed model's ``rerank.json`` names helper folders: they must be deployed too (else "best" fails)."""
    for name in wanted:
        path = models_dir / name / "rerank.json"
        if not path.is_file():
            continue
        for helper in json.loads(path.read_text(encoding="utf-8")).get("helpers", []):
            folder = (models_dir / name / helper).resolve()
            if not any(folder == (models_dir / other).resolve() for other in wanted):
                raise DeployError(f"{name}/rerank.json uses the helper model {helper}: deploy it too "
                                  f"(--models {' '.join(dict.fromkeys([*wanted, os.path.relpath(folder, models_dir)]))})")


def assemble(out: Path, models: Sequence[str] = ("all",), root: Path = ROOT, models_dir: Optional[Path] = None,
             hub_models: Sequence[str] = ()) -> Path:
    """Write the Space folder into ``out`` (emptied first); returns ``out``.  ``hub_models``: the card's ``models:``."""
    models_dir = Path(models_dir or root / "space" / "models")
    card = root / "space" / "README.md"
    check_card(card)
    text = card_with_models(card.read_text(encoding="utf-8"), hub_models)
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copy2(root / "app.py", out / "app.py")
    (out / "README.md").write_text(text, encoding="utf-8")
    (out / "requirements.txt").write_text(space_requirements(root / "requirements.txt"), encoding="utf-8")
    copy_code(root, out)
    found = available_models(models_dir)
    wanted = found if list(models) == ["all"] else [] if list(models) == ["none"] else list(models)
    missing = [m for m in wanted if m not in found]
    if missing:
        raise DeployError(f"models not found under {models_dir}: {missing}; available: {found or '(none)'}")
    check_rerank_helpers(models_dir, wanted)
    for name in wanted:
        copy_model(models_dir / name, out / "space" / "models" / name)
    if any(m.startswith("variants/") for m in wanted):
        for name in VARIANT_STUDY_FILES:
            if (models_dir / "variants" / name).is_file():
                shutil.copy2(models_dir / "variants" / name, out / "space" / "models" / "variants" / name)
    for path in out.rglob("*"):
        if path.is_file() and path.stat().st_size > MAX_FILE_BYTES:
            raise DeployError(f"{path.relative_to(out)} is over {MAX_FILE_BYTES // 2**20} MB; a Space is no place for it")
    return out


def upload(folder: Path, repo_id: str, private: bool = False, message: Optional[str] = None,
           token: Optional[str] = None) -> str:
    """Create the Space if needed and replace its content with ``folder``; returns the commit URL/oid."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="space",
                             commit_message=message or "Deploy the transformer_hub Space",
                             delete_patterns=["space/**", "transformer_hub/**", "*.py", "requirements.txt"])
    return getattr(info, "oid", None) or str(info)


def files_of(folder: Path) -> List[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo-id", help="the Space, USER/NAME (required unless --dry-run)")
    parser.add_argument("--models", default="all", help="comma-separated model names under space/models, "
                                                        "'all' or 'none' (default: all)")
    parser.add_argument("--hub-models", default="", help="comma-separated Hub model repo ids the Space card lists "
                        "under models: (default: none; the shipped models travel inside the Space)")
    parser.add_argument("--models-dir", default=None, help="where the models are (default: space/models)")
    parser.add_argument("--out", default=None, help="assemble here instead of a temporary folder")
    parser.add_argument("--dry-run", action="store_true", help="assemble and list the files; upload nothing")
    parser.add_argument("--private", action="store_true")
    parser.add_argument("--message", default=None, help="commit message")
    args = parser.parse_args(argv)
    if not args.dry_run and not args.repo_id:
        parser.error("--repo-id is required (or use --dry-run)")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    staging = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="space-"))
    try:
        folder = assemble(staging / "space" if not args.out else staging, models,
                          models_dir=Path(args.models_dir) if args.models_dir else None,
                          hub_models=[m.strip() for m in args.hub_models.split(",") if m.strip()])
        files = files_of(folder)
        size = sum((folder / f).stat().st_size for f in files)
        print(f"assembled {len(files)} files ({size / 2**20:.1f} MB) in {folder}")
        if args.dry_run:
            print("\n".join(files))
            return 0
        commit = upload(folder, args.repo_id, private=args.private, message=args.message)
        print(f"uploaded to space {args.repo_id}: {commit}")
        return 0
    except DeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if not args.out:
            shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
