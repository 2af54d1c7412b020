"""Saving, strict loading and the model card for ``Transformer`` (a ``PyTorchModelHubMixin``).

Loading never unpickles: weights come only from ``model.safetensors``; there is
no ``pytorch_model.bin`` fallback.  ``config.json`` is validated before any
tensor is allocated, the safetensors header (names, shapes, dtypes) is checked
(a config needing far more parameters than the file holds is refused before
the model is built), and only then are weights read and loaded with ``strict=True``.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
from huggingface_hub import (EvalResult, ModelCard, ModelCardData, PyTorchModelHubMixin, hf_hub_download,
                             try_to_load_from_cache)
from huggingface_hub import _CACHED_NO_EXIST  # try_to_load_from_cache's "known to be absent" answer
from huggingface_hub.errors import EntryNotFoundError, HFValidationError, LocalEntryNotFoundError
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from .config import TransformerConfig
from .tokenizer import CONFIG_FILE as TOKENIZER_CONFIG
from .tokenizer import Tokenizer

WEIGHTS_FILE, CONFIG_JSON, CARD_FILE, PLOT_FILE = "model.safetensors", "config.json", "README.md", "training_curves.png"
MAX_CONFIG_BYTES = 1024 * 1024


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


class CheckpointError(ValueError):
    """A checkpoint folder or repository is missing files, corrupt, or does not fit its config."""


# --------------------------------------------------------------------------- tied weights
def tied_groups(model: torch.nn.Module) -> List[List[str]]:
    """State-dict names grouped by the tensor they share (one group per stored tensor), in order."""
    groups: Dict[int, List[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        groups.setdefault(id(tensor), []).append(name)
    return list(groups.values())


# --------------------------------------------------------------------------- save
def save_folder(model, directory) -> None:
    """Write config.json, model.safetensors, the tokenizer files and the model card."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = model.state_dict()
    tensors = {group[0]: state[group[0]].detach().contiguous().cpu() for group in tied_groups(model)}
    save_file(tensors, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})
    (directory / CONFIG_JSON).write_text(json.dumps(model.config.to_dict(), indent=2, sort_keys=True) + "\n")
    if model.tokenizer is not None:
        model.tokenizer.save(directory)
    plot = model.card_data.get("plot")
    if plot and Path(plot).is_file() and Path(plot).resolve() != (directory / PLOT_FILE).resolve():
        shutil.copyfile(plot, directory / PLOT_FILE)
    model_card(model, has_plot=(directory / PLOT_FILE).is_file()).save(directory / CARD_FILE)


def model_card(model, has_plot: bool = False) -> ModelCard:
    """A model card with YAML metadata (languages, datasets, metrics, model-index results)."""
    cfg: TransformerConfig = model.config
    info = model.card_data
    languages = list(cfg.languages or [lang for lang in (cfg.src_lang, cfg.tgt_lang) if lang])
    results = info.get("results", [])
    eval_results = [EvalResult(task_type="translation", dataset_type=r.get("dataset_type", "multi30k"),
                               dataset_name=r.get("dataset_name", "Multi30k"), dataset_split=r.get("split"),
                               dataset_config=r.get("direction"),
                               metric_type=r["metric"], metric_name=r.get("metric_name", r["metric"]),
                               metric_value=float(r["value"])) for r in results]
    base = model._hub_mixin_info.model_card_data.to_dict()
    data = ModelCardData(
        **{k: v for k, v in base.items() if k in ("library_name", "license", "pipeline_tag", "tags")},
        language=languages or None, datasets=info.get("datasets"), metrics=["bleu", "chrf"],
        model_name=info.get("name", "transformer_hub model"), eval_results=eval_results or None,
        training=info.get("training") or None, provenance=info.get("provenance") or None,
        quality=info.get("quality") or None,
    )
    pair = ", ".join(languages) if cfg.multilingual else f"{cfg.src_lang or 'source'} → {cfg.tgt_lang or 'target'}"
    example = ('print(model.translate(["Ein Mann fährt Fahrrad."], src_lang="de", tgt_lang="fr", strategy="beam"))'
               if cfg.multilingual else
               'print(model.translate(["A man is riding a bicycle."], strategy="beam", beam_size=5))')
    title = info.get("name", "transformer_hub model")
    lines = [
        "---", data.to_yaml(), "---", "",
        f"# {title}" + ("" if f"({pair})" in title else f" ({pair})"), "",
        "A Transformer (Vaswani et al., 2017, [Attention Is All You Need](https://arxiv.org/abs/1706.03762)) "
        "written from scratch with transformer_hub.", "",
        "## Use", "", "```python", "from transformer_hub import Transformer", "",
        'model = Transformer.from_pretrained("<this repo or folder>")',
        example, "```", "",
    ]
    if info.get("provenance"):  # how the folder was made: the command, and anything done to it afterwards
        lines += ["## How this folder was made", "", info["provenance"], ""]
    if info.get("quality"):  # the quality mode: the reranker tuned beside the weights (rerank.json)
        lines += ["## Quality mode", "", info["quality"], ""]
    lines += ["## Architecture", "", "| setting | value |", "| --- | --- |"]
    for key in ("layout", "positional", "norm", "feed_forward", "attention", "d_model", "n_heads", "d_ff",
                "n_encoder_layers", "n_decoder_layers", "dropout", "share_embeddings",
                "src_vocab_size", "tgt_vocab_size", "max_len", "languages"):
        if getattr(cfg, key) is not None:  # a bilingual model has no list of languages (its pair is in the title)
            lines.append(f"| {key} | {getattr(cfg, key)} |")
    lines.append(f"| parameters | {sum(p.numel() for p in model.parameters()):,} |")
    if results:
        lines += ["", "## Results", ""] + results_table(results, pair)
    if info.get("training"):
        lines += ["", "## Training", "", "| setting | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in info["training"].items()]
    if has_plot:
        lines += ["", f"![training curves]({PLOT_FILE})"]
    return ModelCard("\n".join(lines) + "\n")


def results_table(results: List[Dict[str, Any]], pair: str) -> List[str]:
    """Markdown rows: one per (dataset, split, direction), one column per metric, in the order first met."""
    metrics = list(dict.fromkeys(r.get("metric_name", r["metric"]) for r in results))
    rows: Dict[Tuple[str, str, str], Dict[str, float]] = {}
    for r in results:
        key = (r.get("dataset_name", "Multi30k"), r.get("split", ""), r.get("direction", pair))
        rows.setdefault(key, {})[r.get("metric_name", r["metric"])] = float(r["value"])
    lines = ["| dataset | split | direction | " + " | ".join(metrics) + " |", "| --- " * (3 + len(metrics)) + "|"]
    for (dataset, split, direction), values in rows.items():
        cells = [f"{values[m]:.2f}" if m in values else "" for m in metrics]
        lines.append(f"| {dataset} | {split} | {direction} | " + " | ".join(cells) + " |")
    return lines


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


def load_weights(path: str, model: torch.nn.Module) -> None:
    """Strictly load ``path`` into ``model``; tied names are filled from their stored twin."""
    try:
        with safe_open(path, framework="pt") as fh:
            stored = {name: fh.get_tensor(name) for name in fh.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path} could not be read (truncated or corrupt?): {exc}") from exc
    state = {}
    for group in tied_groups(model):
        for name in group:
            state[name] = stored[group[0]]
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
    model.eval()
    model.tokenizer = read_tokenizer(fetch, config)
    card = fetch(CARD_FILE, required=False)
    if card is not None:
        model.card_data = card_data_from_file(card)
    return model


class HubMixin(PyTorchModelHubMixin):
    """How a model is stored like a Hub model: what ``Transformer`` inherits.

    huggingface_hub's ``PyTorchModelHubMixin`` gives ``save_pretrained`` and ``push_to_hub``, which write
    through ``_save_pretrained`` (here: :func:`save_folder`); ``from_pretrained`` is replaced by the strict
    :func:`load_pretrained` (the mixin's loads with ``strict=False`` and falls back to unpickling
    ``pytorch_model.bin``).  This module never imports the model: ``cls`` is the class being loaded.
    """

    def _save_pretrained(self, save_directory: Path) -> None:
        save_folder(self, save_directory)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, revision: Optional[str] = None, cache_dir=None,
                        force_download: bool = False, token=None, local_files_only: bool = False, **unused):
        """Load a ``save_pretrained`` folder or Hub repo: config validated first, weights strictly, tokenizer too."""
        if unused:
            raise TypeError(f"unexpected arguments {sorted(unused)}; the config comes from config.json")
        return load_pretrained(cls, pretrained_model_name_or_path, revision=revision, cache_dir=cache_dir,
                               force_download=force_download, token=token, local_files_only=local_files_only)


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


def card_data_from_file(path: str) -> Dict[str, Any]:
    """Recover results and training facts from a model card (best effort: a bad card is not fatal)."""
    try:
        data = ModelCard.load(path).data
    except Exception:  # noqa: BLE001 - the card is documentation; weights and config are what matter
        return {}
    info: Dict[str, Any] = {}
    if data.model_name:
        info["name"] = data.model_name
    if data.datasets:
        info["datasets"] = list(data.datasets)
    if data.eval_results:
        info["results"] = [{"dataset_name": r.dataset_name, "dataset_type": r.dataset_type, "split": r.dataset_split,
                            "metric": r.metric_type, "metric_name": r.metric_name, "value": r.metric_value}
                           | ({"direction": r.dataset_config} if r.dataset_config else {})
                           for r in data.eval_results]
    extra = data.to_dict()
    if isinstance(extra.get("training"), dict):
        info["training"] = extra["training"]
    for key in ("provenance", "quality"):
        if isinstance(extra.get(key), str):
            info[key] = extra[key]
    return info
