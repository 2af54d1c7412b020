"""Shared fixtures: sentence pairs, a tiny tokenizer and model, and the local Hub test double.

* ``sentence_pairs`` (session): 300 synthetic (English, German) pairs, the same on every machine, corpus or not
  (tests that need Multi30k or the LibreOffice help corpus are marked ``data`` and skip without it).
* ``tiny_tokenizer`` (session): a joint SentencePiece vocabulary (~500 pieces, byte fallback) trained on them.
* ``make_model`` / ``tiny_model``: tiny Transformers (preset ``tiny``) sized to that tokenizer.
* ``hub_server``: a :class:`hub_server.HubServer` on 127.0.0.1 with this process's ``huggingface_hub``
  pointed at it (temporary HF_HOME and cache, Xet off, a fake token).  See ``tests/helpers/hub_server.py``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, List, Optional, Tuple

import pytest
import torch

from helpers.corpus import synthetic_pairs
from helpers.hub_server import HubServer, use_hub

from transformer_hub import Tokenizer, Transformer, TransformerConfig

# The test models are tiny: one intra-op thread is faster than two, and on a shared 2-core machine PyTorch's
# default thread pool oversubscribes the CPU (measured: the causality tests took 34 s with 2 threads, 4 s with 1).
torch.set_num_threads(int(os.environ.get("TRANSFORMER_HUB_TEST_THREADS", "1")))

# The newest-releases lane (.ci/run) runs the fast tests and, slow or not, these: the places where a new release of
# a parser, a web framework or huggingface_hub breaks first.
NEWEST_LANE = ("test_formats", "test_rest", "test_libre", "test_space_documents", "test_space_files", "test_hub",
               "test_train_push", "test_mcp")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.path.name.startswith(NEWEST_LANE):
            item.add_marker(pytest.mark.newest_lane)


@pytest.fixture(scope="session")
def sentence_pairs() -> List[Tuple[str, str]]:
    """300 synthetic (en, de) pairs: one world for the tests, whether a corpus is found or not."""
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


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random model (with its tokenizer) saved with ``save_pretrained``: what the CLI tests load."""
    from helpers.decoding_fixtures import random_model

    path = tmp_path_factory.mktemp("cli") / "model"
    random_model().save_pretrained(path)
    return path
