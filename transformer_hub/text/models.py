"""Where the text pipeline's sentences are decoded: a ``Models`` names the languages a text may be detected as,
chooses the model for a direction (and quality, and domain) and decodes many sentences of one model in one call.
``OneModel`` is one model object; ``ModelSet`` several, each direction served by the one whose card scores it best;
``rerank.RerankedModel`` and the Space's models implement the same interface."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..decoding import DecodingConfig, TranslationResult, generate
from ..hub.selection import Candidate, best_model, candidate
from .domain import DomainClassifier, model_domain_classifier

QUALITIES = ("fast", "best")  # fast: the decoding options as given; best: the reranked n-best (rerank.Reranker)


def check_quality(quality: object) -> str:
    """``quality`` if it is one of ``QUALITIES``, else a ``ValueError`` naming them."""
    if not isinstance(quality, str) or quality not in QUALITIES:
        raise ValueError(f"quality must be one of {', '.join(QUALITIES)}, got {quality!r}")
    return quality


class Models:
    """Where sentences are decoded: the languages a text may be detected as, the model for a direction, and one
    decoding call for many sentences of one model (each with its own languages)."""

    one_model = False  # error messages say "this model" or "the models"

    def languages(self) -> List[str]:
        raise NotImplementedError

    def choose(self, src_lang: Optional[str], tgt_lang: Optional[str], quality: str = "fast",
               domain: Optional[str] = None) -> str:
        """The name of the model that translates ``src_lang -> tgt_lang`` at ``quality`` for texts of ``domain``
        (None: the default domain) (ValueError when none does)."""
        raise NotImplementedError

    def domains(self, name: Optional[str] = None) -> Tuple[str, ...]:
        """The domains model ``name`` was trained to be told (``config.domains``; None: those of any model)."""
        return ()

    def domain_classifier(self) -> Optional[DomainClassifier]:
        """What tells a text's domain for ``domain="auto"`` (None: no model ships one, and no domain is given)."""
        return None

    def domain_labels(self) -> Dict[str, str]:
        """How to name each domain to a person ("captions": "image captions"); a domain not here by its name."""
        return {}

    def decode(self, name: str, sentences: List[str], src_langs: list, tgt_langs: list, config: DecodingConfig,
               quality: str = "fast", **options: Any) -> Tuple[List[TranslationResult], str]:
        """The sentences' results, in order, and the name of the engine that decoded them; each result's
        hypotheses are best first (``quality="best"``: the reranker's choice first)."""
        raise NotImplementedError

    def default_languages(self) -> Tuple[Optional[str], Optional[str]]:
        """(source, target) a text gets when none is given: a bilingual model's own pair, else none."""
        return None, None

    def tokenizer(self, name: str, options: Dict[str, Any]) -> Any:
        """The tokenizer of model ``name`` when decoding with ``options`` gives cross-attention, else None."""
        return None


def engine_name(engine: Any) -> str:
    return engine if isinstance(engine, str) else getattr(engine, "name", None) or type(engine).__name__


def model_name(model: Any, default: str = "model") -> str:
    return (getattr(model, "card_data", None) or {}).get("name") or default


class OneModel(Models):
    """One model object: every text goes to it (it checks the directions it serves)."""

    one_model = True

    def __init__(self, model: Any, name: Optional[str] = None) -> None:
        self.model, self.name = model, name or model_name(model)

    def languages(self) -> List[str]:
        c = self.model.config
        langs = list(c.languages) if c.languages else [lang for lang in (c.src_lang, c.tgt_lang) if lang]
        if not langs:
            raise ValueError("src_lang='auto' needs a model that names its languages (config src_lang/tgt_lang "
                             "or languages); give src_lang=None for this one")
        return list(dict.fromkeys(langs))

    def choose(self, src_lang: Optional[str], tgt_lang: Optional[str], quality: str = "fast",
               domain: Optional[str] = None) -> str:
        return self.name

    def domains(self, name: Optional[str] = None) -> Tuple[str, ...]:
        return tuple(self.model.config.domains or ())

    def domain_classifier(self) -> Optional[DomainClassifier]:
        return model_domain_classifier(self.model)

    def decode(self, name, sentences, src_langs, tgt_langs, config, quality: str = "fast", **options):
        if quality != "fast":
            raise ValueError(f"quality={quality!r} needs the model's tuned reranker: translate through "
                             "transformer_hub.rerank.RerankedModel (a model folder with rerank.json)")
        results = generate(self.model, sentences, config, src_lang=src_langs, tgt_lang=tgt_langs, **options)
        return results, engine_name(options.get("engine", "pytorch"))

    def default_languages(self) -> Tuple[Optional[str], Optional[str]]:
        c = self.model.config
        return c.src_lang, (None if c.languages else c.tgt_lang)

    def tokenizer(self, name, options):
        attends = engine_name(options.get("engine", "pytorch")) == "pytorch"  # CTranslate2 gives no attention
        return getattr(self.model, "tokenizer", None) if attends else None


class ModelSet(Models):
    """Several models by name; each direction is served by the one whose model card scores it best
    (``hub.selection.best_model``; the order given breaks ties and ranks unscored models)."""

    def __init__(self, models: Mapping[str, Any]) -> None:
        self.models = dict(models)
        self.candidates: List[Candidate] = [candidate(name, m.config, getattr(m, "card_data", None))
                                            for name, m in self.models.items()]

    def languages(self) -> List[str]:
        return list(dict.fromkeys(lang for c in self.candidates for pair in c.pairs for lang in pair))

    def choose(self, src_lang, tgt_lang, quality: str = "fast", domain: Optional[str] = None) -> str:
        found = best_model(self.candidates, src_lang, tgt_lang, domain) if src_lang and tgt_lang else None
        if found is None:
            raise ValueError(f"no model translates {src_lang} -> {tgt_lang}; the models serve "
                             + ", ".join(f"{s}->{t}" for s, t in dict.fromkeys(p for c in self.candidates for p in c.pairs)))
        return found.name

    def decode(self, name, sentences, src_langs, tgt_langs, config, quality: str = "fast", **options):
        return OneModel(self.models[name], name).decode(name, sentences, src_langs, tgt_langs, config, quality,
                                                        **options)

    def tokenizer(self, name, options):
        return OneModel(self.models[name], name).tokenizer(name, options)

    def domains(self, name: Optional[str] = None) -> Tuple[str, ...]:
        models = [self.models[name]] if name is not None else list(self.models.values())
        return tuple(dict.fromkeys(d for m in models for d in (m.config.domains or ())))

    def domain_classifier(self) -> Optional[DomainClassifier]:
        return next((c for c in map(model_domain_classifier, self.models.values()) if c is not None), None)
