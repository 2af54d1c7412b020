"""``format=html`` on ``POST /translate``: each text is HTML (a fragment, or a page), parsed by
``transformer_hub.formats.html``; the visible text of its blocks is what is detected, counted against the limits
and translated (all sentences of the request's texts of one language in one decode), and the markup comes back
around the translation (tags, attributes, scripts, code kept). As in LibreTranslate, ``alternatives`` is then
``[]``: the alternatives of a page's sentences cannot be put back into its markup.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from transformer_hub.formats import Document, translate_texts
from transformer_hub.formats.html import read_markup

from .limits import Limits, _is_control
from .rest_input import RestError


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


def translate(api, job) -> Dict[str, Any]:
    """The answer to an html job (``rest.Job`` with ``documents``), decoded through ``api.decode``."""
    out = ["" if d is None else None for d in job.documents]
    used: Dict[str, str] = {}
    # a document without sentences (already in the target language, too short to detect, no words) stays as it is
    keep = [t is not None and not t.segments for t in job.texts]
    for source, unchanged in dict.fromkeys(zip(job.sources, keep)):
        picks = [i for i, (s, k, d) in enumerate(zip(job.sources, keep, job.documents))
                 if (s, k) == (source, unchanged) and d is not None]
        if not picks:
            continue

        def decode(sentences: List[str]) -> List[str]:
            name, engine, results = api.decode(job, source, picks[0], sentences)
            used.setdefault("model", name)
            used.setdefault("engine", engine)
            return [r.hypotheses[0].text for r in results]

        done = translate_texts([u for i in picks for u in job.documents[i].texts], list if unchanged else decode,
                               source)
        start = 0
        for i in picks:
            count = len(job.documents[i].texts)
            out[i] = job.documents[i].write(done[start:start + count]).decode("utf-8")
            start += count
    answer: Dict[str, Any] = {"translatedText": out if job.batch else out[0]}
    if job.detected is not None:
        answer["detectedLanguage"] = job.detected if job.batch else job.detected[0]
    if job.alternatives:
        answer["alternatives"] = [[] for _ in out] if job.batch else []
    answer.update(used)
    return answer
