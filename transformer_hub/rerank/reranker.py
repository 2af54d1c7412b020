"""The reranker: a weighted sum of a candidate's features picks the output among its n-best list.

Weights are tuned per direction on validation data (``python -m scripts.tune_rerank``) and stored beside the model as
``rerank.json`` (``RerankFile``): per direction the search settings, the length penalty that normalises the
forward score, the weights, and the validation scores they reached; with the command that made the file and
the helper models it used (folders relative to the file's).  ``Reranker`` is the quality mode: beam search's
n-best, the features, the weighted sum.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from ..decoding import Hypothesis, TranslationResult, generate
from ..decoding.scoring import score_texts
from ..text.models import check_quality
from ..text.pipeline import generate_texts
from .features import FEATURES, NBestList, SearchSettings, collect

RERANK_FILE = "rerank.json"
SCHEMA = 1


@dataclass
class DirectionWeights:
    """One direction's tuned reranker: feature weights, the forward score's length penalty, the search."""

    weights: Dict[str, float] = field(default_factory=lambda: {"forward": 1.0})
    alpha: float = 0.6
    search: SearchSettings = field(default_factory=SearchSettings)
    # what tuning measured on val: sentences, beam and reranked BLEU; "domains": the sentences of each domain
    val: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(FEATURES))
        if unknown:
            raise ValueError(f"unknown reranking features {unknown}; known: {', '.join(FEATURES)}")
        if isinstance(self.search, dict):
            self.search = SearchSettings(**self.search)

    def used(self) -> List[str]:
        """The features with a non-zero weight, in ``FEATURES`` order."""
        return [f for f in FEATURES if self.weights.get(f, 0.0) != 0.0]

    def scores(self, nbest: NBestList) -> List[float]:
        """Each candidate's weighted sum (a feature the list lacks counts 0)."""
        total = [0.0] * len(nbest.texts)
        for name, weight in self.weights.items():
            if weight == 0.0:
                continue
            values = nbest.forward(self.alpha) if name == "forward" else nbest.features.get(name)
            if values is None:
                continue
            total = [t + weight * v for t, v in zip(total, values)]
        return total

    def choose(self, nbest: NBestList) -> int:
        """The index of the best-scoring candidate (ties: the earlier, i.e. the beam's order)."""
        scores = self.scores(nbest)
        return max(range(len(scores)), key=lambda i: (scores[i], -i)) if scores else 0


@dataclass
class RerankFile:
    """``rerank.json``: tuned weights per direction ("en-de"), the helpers, and how it was made."""

    directions: Dict[str, DirectionWeights]
    helpers: List[str] = field(default_factory=list)  # helper model folders, relative to this file's folder
    command: str = ""
    data: str = ""  # which sentences tuning read
    domains: List[str] = field(default_factory=list)  # the domains whose val sentences tuning read together

    def save(self, path: Union[str, Path]) -> None:
        body = {"schema": SCHEMA, "command": self.command, "data": self.data, "domains": self.domains,
                "helpers": self.helpers, "directions": {d: asdict(w) for d, w in sorted(self.directions.items())}}
        Path(path).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Union[str, Path]) -> "RerankFile":
        try:
            body = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read reranking weights {path}: {err}") from None
        if not isinstance(body, dict) or body.get("schema") != SCHEMA:
            raise ValueError(f"{path} is not a schema-{SCHEMA} reranking file")
        directions = {d: DirectionWeights(**w) for d, w in body["directions"].items()}
        return cls(directions, list(body.get("helpers", [])), body.get("command", ""), body.get("data", ""),
                   list(body.get("domains", [])))


@dataclass
class Reranked:
    """One sentence in quality mode: the chosen output, its list, each candidate's score and features."""

    source: str
    text: str
    candidates: List[str]
    scores: List[float]
    features: Dict[str, List[float]]
    glossary: list = field(default_factory=list)  # with a glossary: the entries (``glossary.Entry``) that applied
    warnings: List[str] = field(default_factory=list)  # e.g. a glossary term that could not fit the length budget


class Reranker:
    """Quality mode for one model: n-best, features, the direction's tuned weighted sum."""

    def __init__(self, model, weights: RerankFile, helpers: Sequence = ()) -> None:
        self.model, self.file, self.helpers = model, weights, list(helpers)

    @classmethod
    def from_pretrained(cls, folder: Union[str, Path], model=None) -> "Reranker":
        """The model in ``folder`` (or ``model``, loaded from it), its ``rerank.json`` and the helpers it names."""
        from ..transformer import Transformer

        folder = Path(folder)
        path = folder / RERANK_FILE
        if not path.is_file():
            raise ValueError(f"{folder} has no {RERANK_FILE}: tune one with `python -m scripts.tune_rerank`, "
                             "or translate without the quality mode")
        weights = RerankFile.load(path)
        model = model if model is not None else Transformer.from_pretrained(folder)
        helpers = [Transformer.from_pretrained((folder / h).resolve()) for h in weights.helpers]
        return cls(model, weights, helpers)

    def direction(self, src_lang: Optional[str], tgt_lang: Optional[str]) -> DirectionWeights:
        src, tgt = self.model.config.check_pair(src_lang, tgt_lang)
        found = self.file.directions.get(f"{src}-{tgt}")
        if found is None:
            raise ValueError(f"no reranking weights for {src}-{tgt}; tuned: {', '.join(sorted(self.file.directions))}")
        return found

    def generate(self, texts: Sequence[str], src_lang: Optional[str] = None, tgt_lang: Optional[str] = None,
                 progress: bool = False, quality: str = "best", glossary=None,
                 domain: Optional[str] = None) -> List[Reranked]:
        """Rerank each text's n-best (``quality="best"``), or keep the beam's best (``"fast"``: the direction's
        tuned search alone, no features); empty texts give empty outputs without running a model.  With a
        ``glossary`` (a ``Glossary``, a dict of source -> target terms, or TSV text) the n-best is the constrained
        search's (``features.collect``): the output keeps the terms of the entries found in its text.  ``domain``:
        the texts' domain for a model trained with domain tags (None: its default), as ``generate`` takes it."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings; wrap a single sentence in a list")
        check_quality(quality)
        tuned = self.direction(src_lang, tgt_lang)
        src, tgt = self.model.config.check_pair(src_lang, tgt_lang)
        if quality == "fast":
            return self._beam(texts, src_lang, tgt_lang, tuned.search, progress, glossary, domain)
        real = [i for i, t in enumerate(texts) if t.strip()]
        lists = collect(self.model, [texts[i] for i in real], src, tgt, tuned.search, self.helpers, progress,
                        needed=tuned.used(), glossary=glossary, domain=domain)
        out = [Reranked(t, "", [], [], {}) for t in texts]
        for i, nbest in zip(real, lists):
            scores = tuned.scores(nbest)
            out[i] = Reranked(texts[i], nbest.texts[tuned.choose(nbest)], nbest.texts, scores,
                              {"forward": nbest.forward(tuned.alpha), **nbest.features}, nbest.glossary,
                              nbest.warnings)
        return out

    def results(self, texts: Sequence[str], src_lang: Optional[str] = None, tgt_lang: Optional[str] = None,
                progress: bool = False, domain: Optional[str] = None) -> List[TranslationResult]:
        """Quality mode as decoding results (what the text pipeline's ``RerankedModel`` gives): per text the
        beam's result with its candidates in the reranker's order, its choice first (the ``text`` of
        ``generate``'s answer); a candidate only a helper made joins them scored (forced) by the model (with
        ``domain``'s tag, as every search and score of the model here)."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings; wrap a single sentence in a list")
        texts = list(texts)
        out: List[Optional[TranslationResult]] = [None] * len(texts)
        blank = [i for i, t in enumerate(texts) if not t.strip()]  # an empty output, as the beam gives it
        if blank:  # (no direction needed: a blank line of a text whose language was not detected)
            languages = {"src_lang": src_lang, "tgt_lang": tgt_lang} if self.model.config.multilingual else {}
            for i, r in zip(blank, generate(self.model, [texts[i] for i in blank], strategy="greedy", domain=domain,
                                            **languages)):
                out[i] = r
        real = [i for i, t in enumerate(texts) if t.strip()]
        if real:
            tuned = self.direction(src_lang, tgt_lang)
            src, tgt = self.model.config.check_pair(src_lang, tgt_lang)
            lists = collect(self.model, [texts[i] for i in real], src, tgt, tuned.search, self.helpers, progress,
                            needed=tuned.used(), domain=domain)
            for i, nbest in zip(real, lists):
                out[i] = self._ordered(nbest, tuned, src, tgt, domain)
        return out  # type: ignore[return-value]

    def _ordered(self, nbest: NBestList, tuned: DirectionWeights, src: str, tgt: str,
                 domain: Optional[str] = None) -> TranslationResult:
        scores = tuned.scores(nbest)
        order = sorted(range(len(nbest.texts)), key=lambda k: (-scores[k], k))  # order[0] is ``choose``'s
        made = {}
        for hyp in nbest.beam.hypotheses:
            made.setdefault(hyp.text, hyp)  # the first of two segmentations, as ``collect`` keeps it
        missing = [nbest.texts[k] for k in order if nbest.texts[k] not in made]
        if missing:
            forced = score_texts(self.model, [nbest.source] * len(missing), missing, src_lang=src, tgt_lang=tgt,
                                 domain=domain, alpha=tuned.search.length_penalty)
            for text, f in zip(missing, forced):
                made[text] = Hypothesis(text, self.model.tokenizer.encode(text, side="target"), f.token_logprobs,
                                        f.score, f.normalized_score)
        return dataclasses.replace(nbest.beam, hypotheses=[made[nbest.texts[k]] for k in order])

    def _beam(self, texts: Sequence[str], src_lang: Optional[str], tgt_lang: Optional[str], search: SearchSettings,
              progress: bool, glossary=None, domain: Optional[str] = None) -> List[Reranked]:
        languages = {"src_lang": src_lang, "tgt_lang": tgt_lang} if self.model.config.multilingual else {}
        results = generate_texts(self.model, list(texts), strategy="beam", beam_size=search.beam_size,
                                 length_penalty=search.length_penalty, progress=progress, glossary=glossary,
                                 domain=domain, **languages)
        return [Reranked(t, r.text, [r.text] if t.strip() else [], [r.best.normalized_score] if t.strip() else [], {},
                         list(r.glossary), list(r.warnings)) for t, r in zip(texts, results)]

    def translate(self, texts: Sequence[str], src_lang: Optional[str] = None, tgt_lang: Optional[str] = None,
                  quality: str = "best", glossary=None, domain: Optional[str] = None) -> List[str]:
        """The output strings of ``generate``."""
        return [r.text for r in self.generate(texts, src_lang, tgt_lang, quality=quality, glossary=glossary,
                                              domain=domain)]
