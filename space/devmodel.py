"""A small model for trying the Space (and testing it) before a trained model ships.

    python -m space.devmodel OUT_DIR [--pairs 3000 --seconds 60]

Returns ``space/models/en-de`` when it exists; otherwise trains a tiny
Transformer for a minute on the first Multi30k En->De training pairs with the
library's trainer (``transformer_hub.train``) and saves it with ``save_pretrained``.  Its German is poor but real: enough to see every tab
work.  The folder is reused if it already holds a model.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple

from transformer_hub.data import DEFAULT_DATA_DIR, load_split
from transformer_hub.train import main as train_main

from .models_store import DEFAULT_MODELS_DIR, SHIPPED, is_model_folder

DATA_DIR = Path(os.environ.get("MULTI30K_DIR", DEFAULT_DATA_DIR))


def load_pairs(limit: int, data_dir: Path = DATA_DIR) -> List[Tuple[str, str]]:
    """The first ``limit`` Multi30k En->De training pairs."""
    if not data_dir.is_dir():
        raise FileNotFoundError(f"no Multi30k train.en/train.de under {data_dir} (set MULTI30K_DIR)")
    return load_split(data_dir, "train", "en", "de")[:limit]


def train_tiny(out: Path, pairs: int = 3000, seconds: float = 60.0, seed: int = 0, vocab_size: int = 1000,
               data: Optional[List[Tuple[str, str]]] = None) -> Path:
    """Train for ``seconds`` with the library's trainer on the first ``pairs`` Multi30k pairs (or on ``data``)."""
    data = list(data) if data is not None else load_pairs(pairs)
    with tempfile.TemporaryDirectory(prefix="devmodel_") as tmp:
        files = {}
        for name, rows in (("train", data), ("valid", data[:50])):
            for side, index in (("src", 0), ("tgt", 1)):
                files[f"{name}_{side}"] = Path(tmp) / f"{name}.{side}"
                files[f"{name}_{side}"].write_text("\n".join(r[index] for r in rows) + "\n", encoding="utf-8")
        train_main(["--out", f"{tmp}/run", "--train-src", str(files["train_src"]), "--train-tgt", str(files["train_tgt"]),
                    "--valid-src", str(files["valid_src"]), "--valid-tgt", str(files["valid_tgt"]),
                    "--preset", "tiny", "--d-model", "64", "--d-ff", "128", "--max-len", "128", "--dropout", "0.1",
                    "--vocab-size", str(vocab_size), "--max-tokens", "1500", "--warmup", "30", "--peak-lr", "0.003",
                    "--max-minutes", str(seconds / 60), "--bleu-every", "1000", "--final-beam", "0",
                    "--average-last", "2", "--threads", "1", "--seed", str(seed), "--name", "space dev model (tiny)"])
        shutil.copytree(Path(tmp) / "run" / "final", out)
    return out


def ensure_model(out: Optional[Path] = None, prefer_shipped: bool = True, **options) -> Path:
    """The shipped model if there is one, else a tiny model trained into ``out`` (reused when present)."""
    shipped = DEFAULT_MODELS_DIR / SHIPPED
    if prefer_shipped and is_model_folder(shipped):
        return shipped
    if out is None:
        raise FileNotFoundError("no shipped model and no folder to train a tiny one in")
    out = Path(out)
    if is_model_folder(out):
        return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    train_tiny(tmp, **options)
    try:
        os.replace(tmp, out)
    except OSError:  # another process finished first
        pass
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    print(train_tiny(Path(args.out), pairs=args.pairs, seconds=args.seconds))


def model_for_tests(cache_root: Optional[os.PathLike] = None, seconds: float = 30.0,
                    data: Optional[List[Tuple[str, str]]] = None) -> Path:
    """The shipped model, else a tiny one trained once into ``cache_root`` (pytest's cache) or the temp folder.

    ``data`` replaces the Multi30k pairs (for machines without the corpus)."""
    root = Path(cache_root) if cache_root else Path(tempfile.gettempdir()) / "transformer_hub_space"
    name = "tiny-en-de" if data is None else "tiny-en-de-synthetic"
    return ensure_model(root / name, pairs=2000, seconds=seconds, vocab_size=1000, data=data)
