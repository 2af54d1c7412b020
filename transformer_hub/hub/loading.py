"""Strict loading of a ``save_pretrained`` folder or Hub repository.

Loading never unpickles: weights come only from ``model.safetensors``; there is
no ``pytorch_model.bin`` fallback.  ``config.json`` is validated before any
tensor is allocated, the safetensors header (names, shapes, dtypes) is checked
(a config needing far more parameters than the file holds is refused before
the model is built), and only then are weights read and loaded with ``strict=True``.
A file may store its weights in float16 (half the bytes); they load as the model's float32 all the same, and the
model records the dtype it was loaded from (``weights_dtype``), so saving it again keeps that dtype.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
from huggingface_hub import hf_hub_download, try_to_load_from_cache
from huggingface_hub import _CACHED_NO_EXIST  # try_to_load_from_cache's "known to be absent" answer
from huggingface_hub.errors import EntryNotFoundError, HFValidationError, LocalEntryNotFoundError
from safetensors import SafetensorError, safe_open

from ..config import TransformerConfig
from ..tokenizer import CONFIG_FILE as TOKENIZER_CONFIG
from ..tokenizer import Tokenizer
from .card import CARD_FILE, card_data_from_file

WEIGHTS_FILE, CONFIG_JSON = "model.safetensors", "config.json"
DOMAINS_FILE = "domains.json"  # the domain classifier (transformer_hub.text.domain) of a model trained with domains
MAX_CONFIG_BYTES = 1024 * 1024
MAX_DOMAINS_BYTES = 16 * 1024 * 1024
# The dtypes save_pretrained can store the weights in (the model computes in float32 whichever is stored).
WEIGHTS_DTYPES = {"float32": torch.float32, "float16": torch.float16}


class ModelLoadError(RuntimeError):
    """This model cannot be loaded (missing, corrupt, unreachable, refused); the message names its folder or repo id.

    What :func:`loading` turns any failure into, for callers that serve several models (a ``DecodingPool``
    worker, the Space) and must tell "this model is unusable" from their own bugs.
    """


@contextlib.contextmanager
def loading(model_id: str, revision: Optional[str] = None) -> Iterator[None]:
    """Turn any failure to read model ``model_id`` (at ``revision``) into one :class:`ModelLoadError`."""
    try:
        yield
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - one clear type for the caller, whatever went wrong
        where = str(model_id) + (f"@{revision}" if revision else "")
        raise ModelLoadError(f"could not load the model at {where}: {type(exc).__name__}: {exc}") from None


_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def is_repo_id(name: str) -> bool:
    """Whether ``name``, when it is no folder here, reads as a Hub repo id (``name`` or ``owner/name``) rather
    than a path: the one rule every ``--model`` / ``--init-from`` / ``from_pretrained`` caller applies."""
    return bool(_REPO_ID.fullmatch(name)) and ".." not in name


class CheckpointError(ValueError):
    """A checkpoint folder or repository is missing files, corrupt, or does not fit its config."""


# --------------------------------------------------------------------------- tied weights
def tied_groups(model: torch.nn.Module) -> List[List[str]]:
    """State-dict names grouped by the tensor they share (one group per stored tensor), in order."""
    groups: Dict[int, List[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        groups.setdefault(id(tensor), []).append(name)
    return list(groups.values())


# --------------------------------------------------------------------------- load
Fetch = Callable[..., Optional[str]]  # fetch(filename, required=True) -> a local path (None: optional and absent)


def fetcher(model_id: str, revision: Optional[str] = None, **download_kwargs) -> Fetch:
    """Return ``fetch(filename, required)`` for a local folder or a Hub repository."""
    if os.path.isdir(model_id):
        def fetch_local(filename: str, required: bool = True) -> Optional[str]:
            path = os.path.join(model_id, filename)
            if os.path.isfile(path):
                return path
            if required:
                raise CheckpointError(f"{model_id} has no {filename}")
            return None
        return fetch_local

    def fetch_remote(filename: str, required: bool = True) -> Optional[str]:
        try:
            return hf_hub_download(repo_id=model_id, filename=filename, revision=revision, **download_kwargs)
        except HFValidationError as exc:
            raise OSError(f"{model_id!r} is neither a local folder nor a valid Hub repository id ({exc})") from exc
        except LocalEntryNotFoundError as exc:
            # The Hub was not reached (timeout, refused connection, 5xx, offline) and the file is not cached.
            # This is an EntryNotFoundError too, but it does not say the repository lacks the file: an optional
            # file is skipped only when the cache knows it is absent, or when the caller asked for no network.
            known_absent = try_to_load_from_cache(model_id, filename, cache_dir=download_kwargs.get("cache_dir"),
                                                  revision=revision) is _CACHED_NO_EXIST
            if not required and (known_absent or download_kwargs.get("local_files_only")):
                return None
            raise OSError(f"could not download {filename} from {model_id}: {_root_cause(exc)}") from exc
        except EntryNotFoundError:
            if required:
                raise CheckpointError(f"repository {model_id} (revision {revision or 'main'}) has no {filename}")
            return None
        except Exception as exc:  # HTTP errors (missing repo or revision) and the HTTP client's network errors
            raise OSError(f"could not download {filename} from {model_id}: {_root_cause(exc)}") from exc
    return fetch_remote


def _root_cause(exc: BaseException) -> str:
    """``Type: message`` of the first and the innermost exception of a chain (a timeout hides several layers deep)."""
    inner, seen = exc, {id(exc)}
    while (inner.__cause__ or inner.__context__) is not None and id(inner.__cause__ or inner.__context__) not in seen:
        inner = inner.__cause__ or inner.__context__
        seen.add(id(inner))
    text = f"{type(exc).__name__}: {exc}"
    return text if inner is exc else f"{text} (caused by {type(inner).__name__}: {inner})"


def read_config(path: str) -> TransformerConfig:
    if os.path.getsize(path) > MAX_CONFIG_BYTES:
        raise CheckpointError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes; not a config")
    try:
        return TransformerConfig.from_json_file(path)
    except ValueError as exc:
        raise CheckpointError(f"invalid config.json: {exc}") from exc


def read_header(path: str) -> Dict[str, Tuple[Tuple[int, ...], str]]:
    """{name: (shape, dtype)} from a safetensors header, without reading any tensor data."""
    try:
        with safe_open(path, framework="pt") as fh:
            return {name: (tuple(fh.get_slice(name).get_shape()), fh.get_slice(name).get_dtype()) for name in fh.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path} is not a readable safetensors file (truncated or corrupt?): {exc}") from exc


def check_size(header: Dict[str, Tuple[Tuple[int, ...], str]], config: TransformerConfig, path: str) -> None:
    """Refuse a config that needs far more parameters than the weights file holds (before allocating them)."""
    stored = sum(math.prod(shape) for shape, _ in header.values())
    needed = config.num_parameters()
    if needed > 2 * stored + 1_000_000:
        raise CheckpointError(f"config.json describes ~{needed:,} parameters but {path} holds {stored:,}; "
                              "refusing to build a model the weights cannot fill")


def check_weights_header(header: Dict[str, Tuple[Tuple[int, ...], str]], model: torch.nn.Module, path: str) -> None:
    """Compare the names, shapes and dtypes in the header with ``model``'s tensors."""
    expected = {group[0]: tuple(model.state_dict(keep_vars=True)[group[0]].shape) for group in tied_groups(model)}
    missing, unexpected = sorted(set(expected) - set(header)), sorted(set(header) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{path} does not match the config: missing tensors {missing[:10]}, "
                              f"unexpected tensors {unexpected[:10]}")
    for name, shape in expected.items():
        if header[name][0] != shape:
            raise CheckpointError(f"{path}: tensor {name} has shape {list(header[name][0])}, the config needs {list(shape)}")
        if header[name][1] not in ("F32", "F16", "BF16", "F64"):
            raise CheckpointError(f"{path}: tensor {name} has dtype {header[name][1]}, expected a float type")


def stored_dtype(header: Dict[str, Tuple[Tuple[int, ...], str]]) -> str:
    """The ``WEIGHTS_DTYPES`` name a re-save should use: float16 when every tensor is stored so, else float32
    (a file of any other or mixed dtypes is saved again in float32, which holds its values)."""
    return "float16" if header and all(dtype == "F16" for _, dtype in header.values()) else "float32"


def load_weights(path: str, model: torch.nn.Module) -> None:
    """Strictly load ``path`` into ``model``; tied names are filled from their stored twin, in the model's dtype."""
    try:
        with safe_open(path, framework="pt") as fh:
            stored = {name: fh.get_tensor(name) for name in fh.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path} could not be read (truncated or corrupt?): {exc}") from exc
    expected, state = model.state_dict(), {}
    for group in tied_groups(model):
        for name in group:  # a float16 file gives float32 parameters: the model computes in its own dtype
            state[name] = stored[group[0]].to(expected[name].dtype)
    model.load_state_dict(state, strict=True)


def load_pretrained(cls, model_id: str, revision: Optional[str] = None, **download_kwargs: Any):
    """``Transformer.from_pretrained``: config first, then header check, then strict weights, tokenizer, card."""
    model_id = str(model_id)
    fetch = fetcher(model_id, revision, **{k: v for k, v in download_kwargs.items() if k in
                                           ("cache_dir", "force_download", "token", "local_files_only")})
    config = read_config(fetch(CONFIG_JSON))
    weights = fetch(WEIGHTS_FILE)
    header = read_header(weights)
    check_size(header, config, weights)
    model = cls(config)
    check_weights_header(header, model, weights)
    load_weights(weights, model)
    model.weights_dtype = stored_dtype(header)
    model.eval()
    model.tokenizer = read_tokenizer(fetch, config)
    card = fetch(CARD_FILE, required=False)
    if card is not None:
        model.card_data = card_data_from_file(card)
    model.domain_data = read_domains(fetch(DOMAINS_FILE, required=False))
    return model


def read_domains(path: Optional[str]) -> Optional[Dict[str, Any]]:
    """``domains.json`` as a dict (None when the model has none); text's ``DomainClassifier`` reads it."""
    if path is None:
        return None
    if os.path.getsize(path) > MAX_DOMAINS_BYTES:
        raise CheckpointError(f"{path} is larger than {MAX_DOMAINS_BYTES} bytes: not a domain classifier")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} holds {type(data).__name__}, not a domain classifier")
    return data


def read_tokenizer(fetch: Fetch, config: TransformerConfig) -> Optional[Tokenizer]:
    """The tokenizer a folder or repo ships (None when it has none), checked against its config."""
    tok_config = fetch(TOKENIZER_CONFIG, required=False)
    if tok_config is None:
        return None
    files = Tokenizer.files_from_config(tok_config)
    tokenizer = Tokenizer.from_files(fetch(files["source"]), fetch(files["target"]))
    tokenizer.sampling = Tokenizer.sampling_from_config(tok_config)
    check_tokenizer(tokenizer, config)
    return tokenizer


def check_tokenizer(tokenizer: Tokenizer, config: TransformerConfig) -> None:
    if (tokenizer.src_vocab_size, tokenizer.tgt_vocab_size) != (config.src_vocab_size, config.tgt_vocab_size):
        raise CheckpointError(f"tokenizer vocabularies ({tokenizer.src_vocab_size}, {tokenizer.tgt_vocab_size}) do not "
                              f"match the config ({config.src_vocab_size}, {config.tgt_vocab_size})")
