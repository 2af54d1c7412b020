"""``train --init-from``: start a run from a saved model's weights, with a fresh optimizer and schedule.

The run takes the saved model's config (architecture, vocabulary sizes, languages) and its tokenizer; an
option that says otherwise is refused in one line rather than silently ignored.  Dropout, a training setting
that the config also holds, is the one option this run may change.  The weights go through the library's strict
loader (config validated first, safetensors header checked, ``strict=True``, nothing unpickled).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Dict, List, Optional, Tuple

import torch

from ..config import TransformerConfig
from ..errors import UserError
from ..hub import WEIGHTS_FILE, CheckpointError, is_repo_id
from ..transformer import Transformer
from ..tokenizer import Tokenizer
from .config import TrainingConfig

# Options that describe the network; with --init-from they must agree with the saved config (or be left out).
ARCHITECTURE = ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "max_len", "positional",
                "norm", "feed_forward", "attention", "layout", "tag_position")


def check_init_source(source: str) -> None:
    """``--init-from`` names a folder that exists or a Hub repo id (checked before any data is read)."""
    if not os.path.isdir(source) and (os.path.exists(source) or not is_repo_id(source)):  # a path
        raise UserError(f"--init-from {source}: no such model folder (give a save_pretrained folder or a Hub repo id)")


def load_init(source: str) -> Transformer:
    """The saved model ``source`` (a save_pretrained folder or a Hub repo id), with its tokenizer."""
    check_init_source(source)
    try:
        model = Transformer.from_pretrained(source)
    except (CheckpointError, OSError, ValueError) as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"--init-from {source}: {first_line}") from exc
    if model.tokenizer is None:
        raise UserError(f"--init-from {source}: the model has no tokenizer (tokenizer_config.json); "
                        "its vocabulary is needed to read the training text")
    return model


def weights_digest(source: str) -> Optional[str]:
    """sha256 of a local folder's model.safetensors (a record of exactly what was loaded), else None."""
    path = os.path.join(source, WEIGHTS_FILE)
    if not os.path.isfile(path):
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def conflicts(options: TrainingConfig, config: TransformerConfig, tokenizer: Tokenizer,
              directions: List[Tuple[str, str]]) -> List[str]:
    """The options of ``options`` that contradict the saved ``config``/``tokenizer`` (empty: none)."""
    found = [f"--{name.replace('_', '-')} {getattr(options, name)} (the model has {getattr(config, name)})"
             for name in ARCHITECTURE if getattr(options, name, None) is not None
             and getattr(options, name) != getattr(config, name)]
    if options.preset is not None:
        found.append(f"--preset {options.preset} (the architecture is the model's)")
    if options.vocab_size is not None and options.vocab_size != tokenizer.tgt_vocab_size:
        found.append(f"--vocab-size {options.vocab_size} (the model's vocabulary has {tokenizer.tgt_vocab_size} pieces)")
    if options.separate_vocab and tokenizer.joint:
        found.append("--separate-vocab (the model's vocabulary is joint)")
    if options.no_share_embeddings and config.share_embeddings:
        found.append("--no-share-embeddings (the model shares its embeddings)")
    if bool(options.langs) != config.multilingual:
        found.append(f"--langs {options.langs}" if options.langs else
                     f"no --langs (the model is multilingual: --langs {','.join(config.languages or [])})")
    elif options.langs and set(options.langs.split(",")) != set(config.languages or []):
        found.append(f"--langs {options.langs} (the model's languages are {','.join(config.languages or [])})")
    else:
        served = config.pairs()
        found += [f"direction {s}-{t} (the model serves {', '.join(f'{a}-{b}' for a, b in served)})"
                  for s, t in directions if served and (s, t) not in served]
    return found


def run_config(options: TrainingConfig, config: TransformerConfig, tokenizer: Tokenizer,
               directions: List[Tuple[str, str]], domains: Optional[List[str]] = None) -> TransformerConfig:
    """The config this run trains: the saved one (options checked against it), with this run's dropout; a model
    without domain tags that a run gives ``domains`` gets them (``tokenizer`` already holds their pieces)."""
    found = conflicts(options, config, tokenizer, directions)
    if config.domains is not None and domains != config.domains:
        found.append(f"--domain-tags with the corpora {','.join(domains or []) or '(none)'} (the model reads the "
                     f"domain tags {','.join(config.domains)}: name its --data-dir folders so, in that order)")
    if found:
        raise UserError(f"--init-from {options.init_from} fixes the architecture and vocabulary; these options "
                        f"contradict it: {'; '.join(found)}")
    if domains and config.domains is None:
        config = dataclasses.replace(config, domains=domains, src_vocab_size=tokenizer.src_vocab_size,
                                     tgt_vocab_size=tokenizer.tgt_vocab_size)
    return dataclasses.replace(config, dropout=options.dropout) if options.dropout is not None else config


def grow_vocabulary(weights: Dict, old_size: int, new_size: int) -> Dict:
    """``weights`` with every vocabulary-sized table (embeddings, the output projection and its bias) grown
    from ``old_size`` to ``new_size`` rows; a new row starts as the mean of the old ones, so a new tag begins as
    an average piece rather than noise, and no old id moves."""
    if new_size == old_size:
        return weights
    grown = {}
    for name, tensor in weights.items():
        if tensor.dim() >= 1 and tensor.shape[0] == old_size:
            extra = tensor.float().mean(dim=0, keepdim=True).expand(new_size - old_size, *tensor.shape[1:])
            tensor = torch.cat([tensor, extra.to(tensor.dtype)], dim=0)
        grown[name] = tensor
    return grown


def add_domains(tokenizer: Tokenizer, config: TransformerConfig, weights: Dict, domains: List[str]
                ) -> Tuple[Tokenizer, TransformerConfig, Dict]:
    """A saved model taught new domain tags: each of ``domains`` it lacks appended to its vocabulary (no old id
    moves), its tables grown (``grow_vocabulary``) and its config's ``domains`` extended, the old ones first (so
    its default domain stays)."""
    tok = tokenizer.with_domains(domains)
    known = list(config.domains or [])
    grown = dataclasses.replace(config, domains=known + [d for d in domains if d not in known],
                                src_vocab_size=tok.src_vocab_size, tgt_vocab_size=tok.tgt_vocab_size)
    return tok, grown, grow_vocabulary(weights, config.tgt_vocab_size, tok.tgt_vocab_size)


def shown_source(source: str) -> str:
    """The source as the card and results.json record it: relative to the working folder if it was absolute."""
    return os.path.relpath(source) if os.path.isabs(source) else source


def provenance(record: Dict[str, Optional[str]]) -> str:
    """The card's sentence on where the weights started."""
    digest = f" (model.safetensors sha256 {record['sha256'][:16]}...)" if record.get("sha256") else ""
    return (f"Initialised from the weights of `{shown_source(record['source'])}`{digest}: its config and tokenizer, "
            "then trained with a fresh optimizer and learning-rate schedule as the Training table says.")
