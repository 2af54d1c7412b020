"""A small model for trying the Space (and testing it) before a trained model ships.

    python -m space.devmodel OUT_DIR [--pairs 3000 --seconds 60]

Returns ``space/models/en-de`` when it exists; otherwise trains a tiny
Transformer for a minute on the first Multi30k En->De training pairs (a plain
teacher-forced loop over the library's ``model(src, tgt_in)``) and saves it
with ``save_pretrained``.  Its German is poor but real: enough to see every tab
work.  The folder is reused if it already holds a model.
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import time
from pathlib import Path
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F

from transformer_hub import Tokenizer, Transformer, TransformerConfig

from .models_store import DEFAULT_MODELS_DIR, SHIPPED, is_model_folder

DATA_DIR = Path(os.environ.get("MULTI30K_DIR", Path(__file__).resolve().parents[1].parent / "shared/data/multi30k"))


def _lines(path: Path, limit: int) -> List[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [line.strip() for _, line in zip(range(limit), fh)]


def load_pairs(limit: int, data_dir: Path = DATA_DIR) -> List[Tuple[str, str]]:
    for suffix in (".gz", ""):
        en, de = data_dir / f"train.en{suffix}", data_dir / f"train.de{suffix}"
        if en.is_file() and de.is_file():
            return [(s, t) for s, t in zip(_lines(en, limit), _lines(de, limit)) if s and t]
    raise FileNotFoundError(f"no Multi30k train.en/train.de under {data_dir} (set MULTI30K_DIR)")


def train_tiny(out: Path, pairs: int = 3000, seconds: float = 60.0, seed: int = 0, vocab_size: int = 1000,
               data: Optional[List[Tuple[str, str]]] = None) -> Path:
    """Train for ``seconds`` on the first ``pairs`` Multi30k pairs (or on ``data``) and save into ``out``."""
    torch.manual_seed(seed)
    random.seed(seed)
    data = list(data) if data is not None else load_pairs(pairs)
    tokenizer = Tokenizer.train([s for s, _ in data], [t for _, t in data], vocab_size=vocab_size, joint=True)
    vocab = tokenizer.src_vocab_size
    config = TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=64, n_heads=4, d_ff=128,
                               n_encoder_layers=2, n_decoder_layers=2, dropout=0.1, max_len=128,
                               share_embeddings=True, src_lang="en", tgt_lang="de")
    model = Transformer(config)
    model.tokenizer = tokenizer
    bos, eos, pad = config.bos_id, config.eos_id, config.pad_id
    examples = [(tokenizer.encode(s)[:100] + [eos], [bos] + tokenizer.encode(t, side="target")[:100] + [eos])
                for s, t in data]
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains fastest on one thread, above all on shared cores
    start, step = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        batch = random.sample(examples, min(64, len(examples)))
        src = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s, _ in batch], batch_first=True, padding_value=pad)
        tgt = torch.nn.utils.rnn.pad_sequence([torch.tensor(t) for _, t in batch], batch_first=True, padding_value=pad)
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=pad,
                               label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
    torch.set_num_threads(threads)
    model.eval()
    model.card_data = {"name": "space dev model (tiny)",
                       "training": {"pairs": len(data), "updates": step, "seconds": round(seconds), "loss": round(loss.item(), 3)}}
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
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
    import tempfile

    root = Path(cache_root) if cache_root else Path(tempfile.gettempdir()) / "transformer_hub_space"
    name = "tiny-en-de" if data is None else "tiny-en-de-synthetic"
    return ensure_model(root / name, pairs=2000, seconds=seconds, vocab_size=1000, data=data)
