"""What one worker of a corpus job holds: the models, loaded once, and the library's one translation pipeline
(``text.pipeline.translate_texts``: detection, sentences, the model per direction, engine, glossary) over a
block of lines.  A line the pipeline refuses (a language no model reads, already in the target language, a
direction no model serves) is reported on its row and the block's other lines are translated; nothing here
needs Ray (``job.py`` puts it in Ray Data's actors)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..decoding import DecodingConfig
from ..hub.selection import candidates_in
from ..text.glossary import Glossary
from ..text.pipeline import Models, ModelSet, OneModel, TextError, translate_texts
from .blocks import CorpusError, Item

_TEXT_N = re.compile(r"^text \d+ ")  # the pipeline names a text by its place in the call; a row has its own id


def load_models(path: str) -> Models:
    """A model folder (``config.json``) as ``OneModel``, or a folder of them (``space/models``) as ``ModelSet``,
    named as the CLI's ``translate`` names them (their folder paths)."""
    from ..transformer import Transformer

    folder = Path(path)
    if (folder / "config.json").is_file():
        return OneModel(_loaded(Transformer, path))
    found = candidates_in(folder)
    if not found:
        raise CorpusError(f"--model {path}: not a model folder (config.json) nor a folder of model folders")
    return ModelSet({str(c.source): _loaded(Transformer, str(c.source)) for c in found})


def reranked_model(path: str, quality: str, engine: str, glossary: Optional[Glossary]) -> Models:
    """``quality="best"``: the model folder's reranker (its ``rerank.json``) as the pipeline's ``Models``, as the
    CLI's ``translate --quality best`` loads it; a line whose direction has no tuned weights is a bad line."""
    from ..rerank import RerankedModel
    from ..transformer import Transformer

    if quality != "best":
        raise CorpusError(f"quality must be fast or best, got {quality!r}")
    if engine != "pytorch" or glossary is not None:
        raise CorpusError("--quality best does not combine with --engine ctranslate2 or --glossary: the reranker "
                          "runs its own tuned search")
    if not (Path(path) / "config.json").is_file():
        raise CorpusError(f"--quality best needs --model to be one model folder with its rerank.json, not {path}")
    try:
        return RerankedModel.from_pretrained(path, model=_loaded(Transformer, path))
    except ValueError as exc:  # no rerank.json, or one that does not fit the model
        raise CorpusError(f"--model {path}: {exc}") from None


def _loaded(cls, path: str):
    model = cls.from_pretrained(path)
    if model.tokenizer is None:
        raise CorpusError(f"model {path} has no tokenizer files (tokenizer_config.json); cannot translate text")
    return model


class Translator:
    """The models of ``model`` and the options of a job; ``translate(items, first_id)`` gives one row per item."""

    def __init__(self, model: str, src_lang: Optional[str], tgt_lang: Optional[str],
                 config: Optional[DecodingConfig] = None, split_sentences: bool = False,
                 glossary: Optional[Glossary] = None, engine: str = "pytorch", threads: Optional[int] = 1,
                 quality: str = "fast") -> None:
        if threads:
            import torch

            torch.set_num_threads(threads)  # one core per worker: the workers, not torch, use the machine's cores
        self.models = load_models(model) if quality == "fast" else reranked_model(model, quality, engine, glossary)
        self.options: Dict[str, Any] = dict(src_lang=src_lang, tgt_lang=tgt_lang, split_sentences=split_sentences,
                                            glossary=glossary, quality=quality)
        self.config, self.engine = config or DecodingConfig(), _engine(engine)

    def translate(self, items: List[Item], first_id: int = 0) -> List[Dict[str, Any]]:
        """Rows ``{"id", "text", "src_lang", "model"}`` (with ``unchanged``, ``truncated``, ``warnings`` when they
        apply) or ``{"id", "text": "", "error"}``, in the order of ``items``."""
        errors = {i: item.error for i, item in enumerate(items) if item.error}
        pending = [i for i in range(len(items)) if i not in errors]
        results: Dict[int, Any] = {}
        while pending:  # each refused line is taken out and the rest tried again (refusals come before decoding)
            try:
                out = translate_texts(self.models, [items[i].text for i in pending], self.config,
                                      engine=self.engine, **self.options)
            except TextError as exc:
                errors[pending.pop(exc.index)] = _TEXT_N.sub("", str(exc))
                continue
            results.update(zip(pending, out))
            break
        return [_row(first_id + i, results.get(i), errors.get(i)) for i in range(len(items))]


def _row(line_id: int, result, error: Optional[str]) -> Dict[str, Any]:
    if result is None:
        return {"id": line_id, "text": "", "error": error}
    row = {"id": line_id, "text": result.text, "src_lang": result.src_lang, "model": result.model}
    if result.unchanged:
        row["unchanged"] = result.unchanged
    if result.truncated:
        row["truncated"] = True
    if result.warnings:
        row["warnings"] = list(result.warnings)
    return row


def _engine(name: str):
    if name == "pytorch":
        return name
    from ..export import CTranslate2Engine

    return CTranslate2Engine()
