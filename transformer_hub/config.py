"""``TransformerConfig``: one flat dataclass that is exactly what ``config.json`` holds.

It is validated on construction, before any tensor exists, so a hostile
``config.json`` (``d_model=10**9``, an unknown variant) fails fast and cheaply.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, fields
from itertools import permutations
from typing import Any, Callable, Dict, List, Optional, Tuple

from .registry import LAYOUT, PARTS

# Documented sanity bounds: anything beyond them is refused before allocation.
MAX_VOCAB_SIZE = 1_000_000
MAX_D_MODEL = 16_384
MAX_D_FF = 65_536
MAX_HEADS = 256
MAX_LAYERS = 128
MAX_LEN = 16_384
MAX_PARAMETERS = 2_000_000_000  # 2 B parameters: ~8 GB of fp32, far beyond what this project trains
MAX_LANGUAGES = 64
# The target-language tag starts the source (Johnson et al., 2017), or the decoder input right after bos.
TAG_POSITIONS = ("source", "decoder")
LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}$")  # ISO 639-1 / 639-3 codes: "en", "de", "fra"


def language_tag(lang: str) -> str:
    """The tokenizer piece that tells a multilingual model its target language (Johnson et al., 2017)."""
    return f"<2{lang}>"


# A domain tag follows the language tag at the source start ("domain control", Kobus et al., 2017).
DOMAIN_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
MAX_DOMAINS = 16


def domain_tag(domain: str) -> str:
    """The tokenizer piece that tells a model which domain its source comes from (Kobus et al., 2017)."""
    return f"<domain:{domain}>"


@dataclass
class TransformerConfig:
    """Hyper-parameters of the model; defaults are the paper's base model (Table 3) with a 32k vocabulary."""

    src_vocab_size: int = 32000
    tgt_vocab_size: int = 32000
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1
    max_len: int = 256
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_id: int = 3
    share_embeddings: bool = False
    positional: str = "sinusoidal"
    norm: str = "post"
    feed_forward: str = "relu"
    attention: str = "math"
    layout: str = "encoder-decoder"
    src_lang: Optional[str] = None       # a bilingual model: its one direction
    tgt_lang: Optional[str] = None
    languages: Optional[List[str]] = None   # a multilingual model: the languages it serves (target-language tags)
    directions: Optional[List[str]] = None  # "src-tgt" pairs it was trained for; None = every pair of `languages`
    tag_position: str = "source"  # where a multilingual model reads its target-language tag: "source" or "decoder"
    domains: Optional[List[str]] = None  # domain tags the source starts with (after the language tag); first = default

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise ``ValueError`` with a clear message for any invalid or absurd setting."""
        for f in fields(self):
            value = getattr(self, f.name)
            expected = {"int": int, "float": (int, float), "bool": bool, "str": str}.get(str(f.type))
            if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{f.name} must be an integer, got {value!r}")
            if expected is bool and not isinstance(value, bool):
                raise ValueError(f"{f.name} must be true or false, got {value!r}")
            if expected is str and not isinstance(value, str):
                raise ValueError(f"{f.name} must be a string, got {value!r}")
            if str(f.type) == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"{f.name} must be a number, got {value!r}")
            if str(f.type) == "Optional[str]" and value is not None and not isinstance(value, str):
                raise ValueError(f"{f.name} must be a string or null, got {value!r}")
        bounds = {
            "src_vocab_size": (1, MAX_VOCAB_SIZE), "tgt_vocab_size": (1, MAX_VOCAB_SIZE),
            "d_model": (1, MAX_D_MODEL), "n_heads": (1, MAX_HEADS), "d_ff": (1, MAX_D_FF),
            "n_encoder_layers": (0, MAX_LAYERS), "n_decoder_layers": (1, MAX_LAYERS), "max_len": (1, MAX_LEN),
        }
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"{name}={value} is out of range: it must be between {low} and {high}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        for name in ("pad_id", "bos_id", "eos_id", "unk_id"):
            value = getattr(self, name)
            if not 0 <= value < min(self.src_vocab_size, self.tgt_vocab_size):
                raise ValueError(f"{name}={value} must be a valid token id (< vocabulary size)")
        if len({self.pad_id, self.bos_id, self.eos_id}) != 3:
            raise ValueError("pad_id, bos_id and eos_id must be distinct")
        self._validate_variants()
        self._validate_languages()
        self._validate_domains()
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError("share_embeddings needs one shared vocabulary "
                             f"(src_vocab_size={self.src_vocab_size} != tgt_vocab_size={self.tgt_vocab_size})")
        for field_name, reg in PARTS.items():  # what each part needs from the rest of the config
            check = reg.about(getattr(self, field_name), "check", None)
            if check is not None:
                check(self)
        if self.num_parameters() > MAX_PARAMETERS:
            raise ValueError(f"this config has ~{self.num_parameters():,} parameters, over the limit of "
                             f"{MAX_PARAMETERS:,}; refusing to allocate it")

    def _validate_variants(self) -> None:
        # The registries are filled by register_builtin_parts(), which the package's __init__ calls; Python
        # runs that before any submodule (this one included) can be imported, so the names are there.
        for field_name, reg in PARTS.items():
            name = getattr(self, field_name)
            if name not in reg:
                raise ValueError(f"unknown {reg.kind} {name!r} for {field_name}; registered: {', '.join(reg.names())}")

    def _validate_languages(self) -> None:
        if self.tag_position not in TAG_POSITIONS:
            raise ValueError(f"tag_position must be one of {', '.join(TAG_POSITIONS)}, got {self.tag_position!r}")
        if self.tag_position == "decoder" and (self.languages is None
                                               or not LAYOUT.about(self.layout, "has_encoder")):
            raise ValueError("tag_position 'decoder' is for multilingual encoder-decoder models (languages=[...])")
        for name in ("src_lang", "tgt_lang"):
            value = getattr(self, name)
            if value is not None and not LANGUAGE_CODE.match(value):
                raise ValueError(f"{name}={value!r} is not a language code (two or three lowercase letters)")
        if self.languages is None:
            if self.directions is not None:
                raise ValueError("directions needs languages (the languages of a multilingual model)")
            return
        if not isinstance(self.languages, list) or not 2 <= len(self.languages) <= MAX_LANGUAGES:
            raise ValueError(f"languages must be a list of 2 to {MAX_LANGUAGES} language codes, got {self.languages!r}")
        for lang in self.languages:
            if not isinstance(lang, str) or not LANGUAGE_CODE.match(lang):
                raise ValueError(f"languages: {lang!r} is not a language code (two or three lowercase letters)")
        if len(set(self.languages)) != len(self.languages):
            raise ValueError(f"languages lists a language twice: {self.languages}")
        if self.src_lang is not None or self.tgt_lang is not None:
            raise ValueError("a multilingual model (languages=[...]) has no single src_lang/tgt_lang: set them to null")
        if self.directions is not None:
            if not isinstance(self.directions, list) or not self.directions:
                raise ValueError(f"directions must be a non-empty list of 'src-tgt' strings, got {self.directions!r}")
            for direction in self.directions:
                pair = direction.split("-") if isinstance(direction, str) else []
                if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(self.languages):
                    raise ValueError(f"directions: {direction!r} is not 'src-tgt' with two different languages "
                                     f"of {self.languages}")

    def _validate_domains(self) -> None:
        if self.domains is None:
            return
        if not isinstance(self.domains, list) or not 1 <= len(self.domains) <= MAX_DOMAINS:
            raise ValueError(f"domains must be a list of 1 to {MAX_DOMAINS} names, got {self.domains!r}")
        for name in self.domains:
            if not isinstance(name, str) or not DOMAIN_NAME.match(name):
                raise ValueError(f"domains: {name!r} is not a domain name (a lowercase letter, then up to 31 "
                                 "lowercase letters, digits or _)")
        if len(set(self.domains)) != len(self.domains):
            raise ValueError(f"domains lists a domain twice: {self.domains}")

    def check_domain(self, domain: Optional[str]) -> Optional[str]:
        """The domain to decode in: ``None`` is the model's first (default) domain; a name it was not trained
        with, or any name for a model without domain tags, is a ``ValueError`` naming what it has."""
        if self.domains is None:
            if domain is None:
                return None
            raise ValueError(f"this model was trained without domain tags: call it without domain= (got {domain!r})")
        if domain is None:
            return self.domains[0]
        if domain not in self.domains:
            raise ValueError(f"unknown domain {domain!r}: this model knows {', '.join(self.domains)}")
        return domain

    @property
    def multilingual(self) -> bool:
        """True when the model serves several languages through target-language tags."""
        return self.languages is not None

    @property
    def decoder_tags(self) -> bool:
        """True when the target-language tag follows bos at the decoder's start (forced, never predicted)."""
        return self.tag_position == "decoder"

    def pairs(self) -> List[Tuple[str, str]]:
        """The (source, target) directions this model serves; empty when it names no languages."""
        if self.languages is None:
            return [(self.src_lang, self.tgt_lang)] if self.src_lang and self.tgt_lang else []
        if self.directions is not None:
            return [tuple(d.split("-")) for d in self.directions]  # type: ignore[misc]
        return list(permutations(self.languages, 2))

    def check_pair(self, src_lang: Optional[str], tgt_lang: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
        """The direction to decode: defaults filled in, a direction the model does not serve a ``ValueError``."""
        pairs = self.pairs()
        if not pairs:  # a model that names no languages translates whatever it was trained on
            if src_lang is None and tgt_lang is None:
                return None, None
            raise ValueError("this model names no languages (config src_lang/tgt_lang are null): "
                             "call it without src_lang/tgt_lang")
        if self.languages is None:
            src_lang = self.src_lang if src_lang is None else src_lang
            tgt_lang = self.tgt_lang if tgt_lang is None else tgt_lang
        elif tgt_lang is None:
            raise ValueError(f"a multilingual model needs tgt_lang, one of {', '.join(self.languages)}")
        known = set(self.languages or (self.src_lang, self.tgt_lang))
        for name, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
            if lang is not None and lang not in known:
                raise ValueError(f"unknown {name} {lang!r}: this model serves {_served(pairs)}")
        if src_lang is not None and (src_lang, tgt_lang) not in pairs:
            raise ValueError(f"this model does not translate {src_lang}->{tgt_lang}; it serves {_served(pairs)}")
        return src_lang, tgt_lang

    def num_parameters(self) -> int:
        """Parameter count computed from the sizes alone (nothing is allocated).

        The registered layout adds up what each registered part says it holds (``parameter_count``); a
        plugin part without that method is counted exactly on a ``meta``-device instance.
        """
        layout = LAYOUT.get(self.layout)
        return part_parameters(layout, self, lambda: layout(self))

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "TransformerConfig":
        """Build from a parsed ``config.json``; unknown keys are an error, not silently dropped."""
        if not isinstance(data, dict):
            raise ValueError(f"config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys: {sorted(known)}")
        return cls(**data)

    @classmethod
    def from_json_file(cls, path: str) -> "TransformerConfig":
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read config {path}: {exc}") from exc
        return cls.from_dict(data)

    # ------------------------------------------------------------------ presets
    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TransformerConfig":
        """``base`` and ``big`` (paper, Table 3), ``cpu`` (the shipped Multi30k size), ``tiny`` (tests)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


def part_parameters(part: Any, config: TransformerConfig, build: Callable[[], Any]) -> int:
    """The parameters of a registered ``part``: its own ``parameter_count(config)``, else those of ``build()`` on meta.

    Built-in parts state their count.  Only a count the class defines itself is trusted (a subclass may add
    parameters); any other part is built on the ``meta`` device, shapes without storage, so a plugin is counted
    exactly without allocating it (slower: the first ``meta`` initialisation imports much of PyTorch).
    """
    if "parameter_count" in vars(part):
        return int(part.parameter_count(config))
    import torch  # only for plugins: the built-in parts need no tensor library to be counted

    with torch.device("meta"):
        module = build()
    return sum(p.numel() for p in module.parameters())  # tied tensors are yielded once


def _served(pairs: List[Tuple[str, str]]) -> str:
    return ", ".join(f"{s}->{t}" for s, t in pairs)


PRESETS: Dict[str, Dict[str, Any]] = {
    "base": dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, dropout=0.1),
    "big": dict(d_model=1024, n_heads=16, d_ff=4096, n_encoder_layers=6, n_decoder_layers=6, dropout=0.3),
    "cpu": dict(src_vocab_size=10000, tgt_vocab_size=10000, d_model=128, n_heads=4, d_ff=256,
                n_encoder_layers=4, n_decoder_layers=4, dropout=0.3, share_embeddings=True),
    "tiny": dict(src_vocab_size=64, tgt_vocab_size=64, d_model=32, n_heads=4, d_ff=64,
                 n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=64),
}
