"""The Space's models as the text pipeline (``transformer_hub.text.pipeline``) sees them: the model asked for, or
the best for each direction (``choice.py``), decoded by the Space's worker with the engine the options allow."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from transformer_hub.decoding import DecodingConfig, TranslationResult
from transformer_hub.export.engine import CHOICES as ENGINE_CHOICES
from transformer_hub.text.pipeline import Models

from . import service
from .context import SpaceContext
from .decoder import Request
from .languages import LANGUAGES


class SpaceModels(Models):
    """``model`` (a picker name; None: the best for each direction) over ``ctx``'s store and worker."""

    def __init__(self, ctx: SpaceContext, model: Optional[str] = None, engine: str = service.TRANSLATE_ENGINE,
                 languages: Optional[List[str]] = None) -> None:
        self.ctx, self.model, self.engine = ctx, model, engine
        self._languages = list(languages) if languages is not None else list(LANGUAGES)

    def languages(self) -> List[str]:
        return self._languages

    def choose(self, src_lang: Optional[str], tgt_lang: Optional[str]) -> str:
        """The model asked for, else the best-scored one for the direction (ValueError naming it when none)."""
        if self.model is not None:
            return service.pick_model(self.ctx, self.model)
        name = self.ctx.chooser.best(src_lang, tgt_lang)
        if name is None:
            raise ValueError(f"{LANGUAGES.get(tgt_lang, tgt_lang)} ({tgt_lang}) is not available as a target "
                             f"language from {LANGUAGES.get(src_lang, src_lang)} ({src_lang})")
        return name

    def decode(self, name: str, sentences: List[str], src_langs: list, tgt_langs: list, config: DecodingConfig,
               **options) -> Tuple[List[TranslationResult], str]:
        """``options``: ``constraints`` (one list of target phrases per sentence: a glossary's terms) is honoured,
        and makes engine "auto" PyTorch; the rest (progress, workers) do not apply to the Space's worker."""
        constraints = options.get("constraints") or [()] * len(sentences)
        engine = service.resolve_engine(self.ctx, service.pick_engine(self.engine, ENGINE_CHOICES), name, config,
                                        constrained=any(constraints))
        pairs: Dict[Tuple, Tuple] = {}
        for pair in zip(src_langs, tgt_langs):
            if pair not in pairs:
                pairs[pair] = service.languages_for(self.ctx, name, *pair)
        requests = [Request(s, *pairs[pair], constraints=tuple(c or ())) for s, pair, c in
                    zip(sentences, zip(src_langs, tgt_langs), constraints)]
        return self.ctx.decoder.generate(name, requests, config, engine=engine), engine
