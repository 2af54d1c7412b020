"""A word-for-word corpus small enough to train on in seconds, the trainer's options for it, and checkpoint reading."""
import random
from pathlib import Path

from safetensors.torch import load_file

from transformer_hub.training import checkpoint as ckpt

EN = "a the one two red big small dog cat man woman child runs walks sits jumps on in near street park water".split()
DE = "ein das eins zwei rot groß klein Hund Katze Mann Frau Kind rennt geht sitzt springt auf in bei Straße Park Wasser".split()


def synthetic_corpus(folder: Path, n: int = 240, seed: int = 0) -> dict:
    """Word-for-word 'translations' over a small lexicon: enough for a loss to fall."""
    rng = random.Random(seed)
    files = {}
    for split, count in (("train", n), ("valid", 24)):
        src, tgt = [], []
        for _ in range(count):
            idx = [rng.randrange(len(EN)) for _ in range(rng.randint(3, 9))]
            src.append(" ".join(EN[i] for i in idx))
            tgt.append(" ".join(DE[i] for i in idx))
        for side, lines in (("src", src), ("tgt", tgt)):
            path = folder / f"{split}.{side}"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            files[f"{split}_{side}"] = str(path)
    return files


def args_for(tmp_path: Path, out: str, *extra: str) -> list:
    files = synthetic_corpus(tmp_path)
    return ["--out", str(tmp_path / out), "--train-src", files["train_src"], "--train-tgt", files["train_tgt"],
            "--valid-src", files["valid_src"], "--valid-tgt", files["valid_tgt"], "--preset", "tiny",
            "--vocab-size", "300", "--max-tokens", "300", "--warmup", "4", "--peak-lr", "0.003",
            "--final-beam", "0", "--threads", "1", *extra]


def checkpoint_weights(run: Path, step: int) -> dict:
    return load_file(str(ckpt.step_dir(run / "checkpoints", step) / "model.safetensors"))
