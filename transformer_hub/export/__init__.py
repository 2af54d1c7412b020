"""Exports to the field's inference runtimes, and the CTranslate2 engine behind ``generate(..., engine=...)``.

    from transformer_hub.export import export_ctranslate2, export_marian, CTranslate2Engine
    export_ctranslate2("space/models/en-de", "en-de-ct2", quantization="int8")   # ctranslate2.Translator folder
    export_marian("space/models/variants/paper", "paper-marian")                  # MarianMTModel folder
    generate(model, texts, engine="ctranslate2")                                  # or engine=CTranslate2Engine(...)

``ctranslate2`` and ``transformers`` are optional: they are imported only when
an export or the engine runs, and their absence is reported with the command
that installs them.  Which parts each format takes: the parts' own ``exports`` (``check_exportable``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .common import MissingDependencyError, PathLike, UnsupportedModelError, check_exportable, load, require
from ..registry import Registry
from .engine import CHOICES, CTranslate2Engine, choose_engine, engine_available

# format name -> exporter(model, out, quantization=None, force=False) -> folder; plugins may add theirs
FORMATS: Registry = Registry("export format")


@FORMATS.register("ctranslate2")
def export_ctranslate2(model, out: PathLike, quantization: Optional[str] = None, force: bool = False) -> Path:
    """Convert ``model`` (a Transformer, a folder or a Hub repo id) to a self-contained CTranslate2 folder."""
    require("ctranslate2", "the ctranslate2 export")
    model = load(model)
    check_exportable(model.config, "ctranslate2")  # before conversion, with the message naming what is missing
    from . import ctranslate2 as ct2_export

    return ct2_export.export(model, out, quantization=quantization, force=force)


@FORMATS.register("marian")
def export_marian(model, out: PathLike, quantization: Optional[str] = None, force: bool = False) -> Path:
    """Convert the paper's block (a Transformer, a folder or a Hub repo id) to a ``MarianMTModel`` folder."""
    if quantization not in (None, "float32"):
        raise ValueError("--quantization applies to the ctranslate2 format only (Marian weights stay float32)")
    require("transformers", "the marian export")
    model = load(model)
    check_exportable(model.config, "marian")
    from . import marian

    return marian.export(model, out, force=force)


def export(model, out: PathLike, format: str, quantization: Optional[str] = None, force: bool = False) -> Path:
    """The exporter registered as ``format`` (what the CLI's ``export --format`` calls)."""
    if format not in FORMATS:
        raise ValueError(f"unknown export format {format!r}; formats: {', '.join(FORMATS.names())}")
    return FORMATS.get(format)(model, out, quantization=quantization, force=force)


__all__ = ["export", "export_ctranslate2", "export_marian", "CTranslate2Engine", "engine_available", "choose_engine",
           "CHOICES", "FORMATS", "check_exportable", "UnsupportedModelError", "MissingDependencyError"]
