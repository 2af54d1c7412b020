"""``format=html`` on ``POST /translate``: each text is HTML (a fragment, or a page), parsed by
``transformer_hub.formats.html``; the visible text of its blocks is what is detected, counted against the limits
and translated (all sentences of the request's texts of one language in one decode), and the markup comes back
around the translation (tags, attributes, scripts, code kept). As in LibreTranslate, ``alternatives`` is then
``[]``: the alternatives of a page's sentences cannot be put back into its markup.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from transformer_hub.formats import Document, Translated, translate_document_texts
from transformer_hub.formats.html import read_markup

from transformer_hub.text.pipeline import AUTO, detect_sources
from transformer_hub.text.routing import domain_counts

from ..hosting.limits import Limits, _is_control
from ..serving.service import answer_warnings
from .input import RestError


def read_markups(raw: List[str], batch: bool, limits: Limits, where: Callable[[int], str]) -> List[Optional[Document]]:
    """Each text parsed as HTML (None for a blank item of a list), at most ``max_chars * max_lines`` long."""
    most = limits.max_chars * limits.max_lines
    documents: List[Optional[Document]] = []
    for i, text in enumerate(raw):
        if len(text) > most:
            raise RestError(400, f"Invalid request: {where(i)}the HTML is {len(text):,} characters, the limit is "
                                 f"{most:,}")
        if batch and not text.strip():
            documents.append(None)
            continue
        documents.append(read_markup("".join(ch for ch in text if not _is_control(ch))))
    return documents


def translate(api, job, domain: str = AUTO) -> Dict[str, Any]:
    """The answer to an html job (``rest.Job`` with ``documents``): each document's language (``source=auto``) told
    from its whole visible text, then the blocks of every document to translate through the pipeline in one call
    (``formats.translate_document_texts``; ``domain=auto``: each sentence's, a short block taking its document's);
    the model, engine and domain (most of its sentences') reported per document."""
    picks = [i for i, d in enumerate(job.documents) if d is not None]
    sources, confidences, unchanged = api.run(job, lambda models: detect_sources(
        models, [job.texts[i] for i in picks], job.source, job.target, keep_target_language=True), picks)
    # a document already in the target language, too short to detect, or without words stays as it is
    moving = [k for k in range(len(picks)) if unchanged[k] is None and sources[k] is not None]
    blocks = [(k, block) for k in moving for block in job.documents[picks[k]].texts]
    done = api.run(job, lambda models: translate_document_texts(
        [b for _, b in blocks], models, [sources[k] for k, _ in blocks], tgt_lang=job.target,
        config=api.config(job), glossary=job.glossary, check_size=api.check_size, domain=domain,
        document_ids=[k for k, _ in blocks]), picks) if blocks else []
    out = ["" for _ in job.documents]
    fields: Dict[str, List[Any]] = {"model": [None] * len(out), "engine": [None] * len(out), "domain": [None] * len(out),
                                    "glossary": [[] for _ in out], "warnings": [[] for _ in out],
                                    "domains": [{} for _ in out]}
    translated: Dict[int, List[Translated]] = {}  # each document's blocks, in order
    for (owner, _), t in zip(blocks, done):
        translated.setdefault(owner, []).append(t)
    for k, i in enumerate(picks):
        mine = translated.get(k, [])
        document = job.documents[i]
        out[i] = document.write(mine or [Translated.unchanged(t) for t in document.texts]).decode("utf-8")
        results = [t.result for t in mine if t.result is not None]
        fields["domains"][i] = domain_counts(results)
        main = next(iter(fields["domains"][i]), None)
        ran = sorted((r for r in results if r.model is not None), key=lambda r: r.domain != main)  # its domain's first
        if ran:
            fields["model"][i], fields["engine"][i], fields["domain"][i] = ran[0].model, ran[0].engine, main
        fields["glossary"][i] = [e.to_dict() for e in dict.fromkeys(e for r in results for e in r.glossary)]
        fields["warnings"][i] = [w for r in results for w in r.warnings]
    answer: Dict[str, Any] = {"translatedText": out}
    if job.source == "auto":
        detected = {i: (sources[k], confidences[k]) for k, i in enumerate(picks)}
        answer["detectedLanguage"] = [libre_detection(*detected.get(i, (None, None))) for i in range(len(out))]
    if job.alternatives:  # a page's sentences' alternatives cannot be put back into its markup
        answer["alternatives"] = [[] for _ in out]
    if any(fields["model"]):
        answer.update(model=fields["model"], engine=fields["engine"])
    if any(fields["domain"]):  # models trained with domains: the one each document was read as
        answer["domain"] = fields["domain"]
    if job.glossary is not None:
        answer["glossary"] = fields["glossary"]
    answer.update(answer_warnings(fields["warnings"], fields["domains"]))
    return answer if job.batch else {key: value[0] for key, value in answer.items()}


def libre_detection(code: Optional[str], confidence: Optional[float]) -> Dict[str, Any]:
    """LibreTranslate's ``{"confidence": 0-100, "language"}`` for a detection ("und", 0 for a text without words)."""
    if code is None:
        return {"confidence": 0.0, "language": "und"}
    return {"confidence": round(100.0 * (confidence or 0.0), 2), "language": code}
