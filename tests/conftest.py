"""Shared fixtures: sentence pairs, a tiny tokenizer and model, and the local Hub test double.

* ``sentence_pairs`` (session): ~300 (English, German) pairs from Multi30k when the corpus is found
  (``$TRANSFORMER_HUB_DATA``, see ``MULTI30K``), else varied synthetic pairs, so every test also runs without it.
* ``tiny_tokenizer`` (session): a joint SentencePiece vocabulary (~500 pieces, byte fallback) trained on them.
* ``make_model`` / ``tiny_model``: tiny Transformers (preset ``tiny``) sized to that tokenizer.
* ``hub_server``: a :class:`hub_server.HubServer` on 127.0.0.1 with this process's ``huggingface_hub``
  pointed at it (temporary HF_HOME and cache, Xet off, a fake token).  See ``tests/hub_server.py``.
"""
from __future__ import annotations

import gzip
import os
import random
import sys
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `from hub_server import ...` in any test file

from hub_server import HubServer, fast_retries, use_hub  # noqa: E402

from transformer_hub import Tokenizer, Transformer, TransformerConfig  # noqa: E402

# The test models are tiny: one intra-op thread is faster than two, and on a shared 2-core machine PyTorch's
# default thread pool oversubscribes the CPU (measured: the causality tests took 34 s with 2 threads, 4 s with 1).
torch.set_num_threads(int(os.environ.get("TRANSFORMER_HUB_TEST_THREADS", "1")))

REPO_ROOT = Path(__file__).resolve().parent.parent
# The corpus comes through the environment, as for the library: $TRANSFORMER_HUB_DATA, else data/multi30k in the
# checkout (what `python -m transformer_hub download --dest data/multi30k` fills).  This project's machines keep a
# copy at ../shared/data/multi30k: used when the variable is unset, and exported so that subprocesses see it too.
# Point TRANSFORMER_HUB_DATA at a missing folder to check that everything passes, or skips, without the corpus.
_SHARED_COPY = REPO_ROOT.parent / "shared" / "data" / "multi30k"
if not os.environ.get("TRANSFORMER_HUB_DATA") and _SHARED_COPY.is_dir():
    os.environ["TRANSFORMER_HUB_DATA"] = str(_SHARED_COPY)
MULTI30K = Path(os.environ.get("TRANSFORMER_HUB_DATA") or REPO_ROOT / "data" / "multi30k")
MULTI30K_MISSING = (f"Multi30k corpus not found at {MULTI30K}: run `python -m transformer_hub download --dest "
                    "data/multi30k` or set TRANSFORMER_HUB_DATA")

__all__ = ["HubServer", "use_hub", "fast_retries", "MULTI30K", "read_multi30k", "synthetic_pairs"]


# --------------------------------------------------------------------------- text
def read_multi30k(split: str, lang: str, limit: Optional[int] = None) -> Optional[List[str]]:
    """The first ``limit`` lines of ``{split}.{lang}.gz``, or None when the corpus is absent."""
    path = MULTI30K / f"{split}.{lang}.gz"
    if not path.is_file():
        return None
    lines = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            lines.append(line.strip())
            if limit is not None and len(lines) >= limit:
                break
    return lines


_SUBJECTS = [("A man", "Ein Mann"), ("A woman", "Eine Frau"), ("Two children", "Zwei Kinder"),
             ("A small dog", "Ein kleiner Hund"), ("An old man", "Ein alter Mann"), ("A girl", "Ein Mädchen"),
             ("Three boys", "Drei Jungen"), ("A brown cat", "Eine braune Katze"), ("The workers", "Die Arbeiter"),
             ("A young musician", "Ein junger Musiker"), ("Several people", "Mehrere Leute")]
_VERBS = [("is riding", "fährt"), ("is holding", "hält"), ("is looking at", "betrachtet"), ("is painting", "malt"),
          ("is carrying", "trägt"), ("is throwing", "wirft"), ("is cleaning", "putzt"), ("is selling", "verkauft")]
_OBJECTS = [("a red bicycle", "ein rotes Fahrrad"), ("a large ball", "einen großen Ball"),
            ("a wooden boat", "ein Holzboot"), ("a blue guitar", "eine blaue Gitarre"),
            ("some fresh fruit", "etwas frisches Obst"), ("a heavy box", "eine schwere Kiste"),
            ("a white wall", "eine weiße Wand"), ("the street", "die Straße")]
_PLACES = [("in the park", "im Park"), ("on the beach", "am Strand"), ("near a river", "in der Nähe eines Flusses"),
           ("at the market", "auf dem Markt"), ("in front of a shop", "vor einem Geschäft"),
           ("under a tree", "unter einem Baum"), ("during the winter", "während des Winters"), ("", "")]


def synthetic_pairs(n: int = 300, seed: int = 0) -> List[Tuple[str, str]]:
    """Varied (English, German) sentence pairs built from phrase tables (umlauts and ß included)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        (se, sd), (ve, vd), (oe, od), (pe, pd) = (rng.choice(t) for t in (_SUBJECTS, _VERBS, _OBJECTS, _PLACES))
        en = " ".join(w for w in (se, ve, oe, pe) if w) + rng.choice([".", ".", "!"])
        de = " ".join(w for w in (sd, vd, od, pd) if w) + "."
        pairs.append((en, de))
    return pairs


@pytest.fixture(scope="session")
def sentence_pairs() -> List[Tuple[str, str]]:
    """~300 (en, de) pairs: Multi30k's first training sentences when available, synthetic otherwise."""
    en, de = read_multi30k("train", "en", 300), read_multi30k("train", "de", 300)
    if en and de:
        return list(zip(en, de))
    return synthetic_pairs(300)


@pytest.fixture(scope="session")
def tiny_tokenizer(sentence_pairs) -> Tokenizer:
    """A joint en+de SentencePiece vocabulary of at most 512 pieces (with byte fallback: > 256 + 4)."""
    en, de = zip(*sentence_pairs)
    return Tokenizer.train(en, de, vocab_size=512, joint=True)


# --------------------------------------------------------------------------- models
@pytest.fixture
def make_model(tiny_tokenizer) -> Callable[..., Transformer]:
    """``make_model(**config_overrides)``: a seeded tiny Transformer in eval mode, sized to ``tiny_tokenizer``.

    ``tokenizer=False`` leaves the tokenizer off; ``seed=`` changes the initialisation.
    """
    def make(tokenizer: bool = True, seed: int = 0, **overrides) -> Transformer:
        vocab = tiny_tokenizer.src_vocab_size
        fields = dict(src_vocab_size=vocab, tgt_vocab_size=vocab, share_embeddings=True, src_lang="en", tgt_lang="de")
        if overrides.get("layout") == "decoder-only":
            fields["n_encoder_layers"] = 0
        fields.update(overrides)
        torch.manual_seed(seed)
        model = Transformer(TransformerConfig.preset("tiny", **fields)).eval()
        if tokenizer:
            model.tokenizer = tiny_tokenizer
        return model

    return make


@pytest.fixture
def tiny_model(make_model) -> Transformer:
    """The paper's architecture at test size, shared en/de vocabulary, tokenizer attached."""
    return make_model()


def random_ids(batch: int, length: int, vocab: int, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Token ids avoiding the special ids 0-3 (pad, bos, eos, unk)."""
    return torch.randint(4, vocab, (batch, length), generator=generator)


@pytest.fixture
def ids() -> Callable[..., torch.Tensor]:
    """``ids(batch, length, vocab)``: random non-special token ids (seeded per test)."""
    generator = torch.Generator().manual_seed(1234)
    return lambda batch, length, vocab: random_ids(batch, length, vocab, generator)


# --------------------------------------------------------------------------- the Hub test double
@pytest.fixture
def hub_server(tmp_path):
    """A started :class:`HubServer`; ``huggingface_hub`` in this process talks to it (and only to it).

    Yields the server: ``.url``, ``.files`` / ``.files_at(repo_id, revision)``, ``.requests``,
    ``.fail_next(count, status, path=regex, delay=...)``, ``.put_files(...)``, ``.env(home)`` for subprocesses.
    The HF cache lives under ``tmp_path / "hf_home"``; timeouts are 5 s.
    """
    with HubServer() as server, use_hub(server.url, tmp_path / "hf_home"):
        server.home = tmp_path / "hf_home"
        yield server
