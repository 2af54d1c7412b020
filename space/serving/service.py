"""What the tabs' buttons do: validate, pick the model and languages, call the library, shape the answer.

Every function here only calls ``transformer_hub`` (``generate`` through the decoder's pool, the
model's config and tokenizer); no model math lives in the Space.  A visitor's mistake is a ``RequestError``
with a clear message, which the page shows (``space/page/tabs/_common.py``'s ``handler``, which words every
other failure too, never a stack trace) and the REST API answers with a 400.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import gradio as gr

from transformer_hub.decoding import ENGINES, DecodingConfig, TranslationResult
from transformer_hub.decoding import STRATEGIES as STRATEGY_REGISTRY
from transformer_hub.decoding.words import doubt
from transformer_hub.export.engine import CHOICES as ENGINE_CHOICES
from transformer_hub.export.engine import choose_engine, engine_available
from transformer_hub.text.pipeline import Models, translate_texts
from transformer_hub.text.routing import describe_domains

from ..hosting.limits import CleanText, RequestError, choice_option, clean_text, float_option, int_option
from ..pictures import word_view
from . import glossary as page_glossary, quality as best_quality
from .choice import AUTO
from .context import SpaceContext
from .decoder import Request
from .languages import LANGUAGES, direction
from .leaving import client_left

# the library's registered strategies, the plain ones first (a plugin's strategy appears after them)
STRATEGIES: Tuple[str, ...] = tuple(sorted(STRATEGY_REGISTRY.names(),
                                           key=lambda s: (s not in ("greedy", "beam", "sample"), s)))
# PyTorch by default: the from-scratch model the page is about, and every option of every model (attention maps,
# alternatives, the search trace, forced prefixes, the decoder-only layout); CTranslate2 is the faster choice.
DEFAULT_ENGINE = "pytorch"
# Plain translations (the Translate tab's /translate, the REST routes): CTranslate2 when it can honour the call.
TRANSLATE_ENGINE = "auto"
ENGINE_NAMES = tuple(e for e in ENGINE_CHOICES if e != "auto")  # the engines themselves, the pickers' order


# ---------------------------------------------------------------------------- shared steps
def pick_model(ctx: SpaceContext, name: Optional[str], source_lang=None, target_lang=None) -> str:
    """The picker name of the requested model.  None, "" or "auto": the best-scored model for the direction
    (``source_lang`` -> ``target_lang``, when both are given and some model serves it), else the default model."""
    if not ctx.store.names():
        raise RequestError("No model is available: ship one under space/models/, or start the app with "
                       "--model FOLDER_OR_REPO_ID (or MODEL_IDS).")
    if name is not None and not isinstance(name, str):  # API callers send anything: the events skip preprocessing
        raise RequestError(f"The model must be given by its name, got {type(name).__name__}.")
    if not name or name == AUTO:
        best = (ctx.chooser.best(source_lang, target_lang)
                if isinstance(source_lang, str) and isinstance(target_lang, str) else None)
        return best or ctx.store.default()
    name = ctx.store.name_of(name) or name
    if name not in ctx.store.specs:
        raise RequestError(f"Unknown model {name!r}; available: {', '.join(ctx.store.names())}.")
    return name


def pick_engine(engine, choices: Optional[Tuple[str, ...]] = None) -> str:
    engine = choice_option("engine", engine, choices or tuple(ENGINES.names()))
    if not engine_available(engine) and engine != "auto":
        raise RequestError(f"The {engine} engine is not installed on this server (pip install ctranslate2).")
    return engine


def decoding_config(ctx: SpaceContext, strategy: str, beam_size=4, length_penalty=0.6, temperature=1.0,
                    top_p=1.0, max_length=None, n_best: int = 1, **extra: Any) -> DecodingConfig:
    """A ``DecodingConfig`` from UI/API values, every number range-checked against the Space's limits."""
    strategy = choice_option("strategy", strategy, STRATEGIES)
    options: Dict[str, Any] = dict(strategy=strategy, **extra)
    limits = ctx.limits
    options["max_length"] = (limits.max_output_tokens if max_length in (None, "", 0) else
                             int_option("max length", max_length, 1, limits.max_output_tokens))
    if strategy == "beam":
        options["beam_size"] = int_option("beam size", beam_size, 1, limits.max_beam)
        options["length_penalty"] = float_option("length penalty", length_penalty, 0.0, 2.0)
        options["n_best"] = int_option("n-best", n_best, 1, options["beam_size"])
    elif strategy == "sample":
        options["temperature"] = float_option("temperature", temperature, 0.0, 5.0, low_open=True)
        options["top_p"] = float_option("top-p", top_p, 0.0, 1.0, low_open=True)
    else:
        options["length_penalty"] = float_option("length penalty", length_penalty, 0.0, 2.0)
    return DecodingConfig(**options)


def run(ctx: SpaceContext, name: str, sentences: Sequence[str], config: DecodingConfig, languages=(None, None),
        engine: str = DEFAULT_ENGINE, prefix: Optional[str] = None) -> Tuple[List[TranslationResult], float]:
    """Decode ``sentences`` with model ``name`` in one direction; returns (results, seconds)."""
    start = time.perf_counter()
    requests = [Request(s, languages[0], languages[1], prefix) for s in sentences]
    results = ctx.decoder.generate(name, requests, config, engine=engine)
    return results, time.perf_counter() - start


def languages_for(ctx: SpaceContext, name: str, source_lang, target_lang) -> Tuple[Optional[str], Optional[str]]:
    return direction(ctx.store.config(name), source_lang, target_lang)


class SpaceModels(Models):
    """The Space's models as the text pipeline (``transformer_hub.text.pipeline``) sees them: ``model`` (a picker
    name; None or "auto": the best for each direction, ``choice.py``) over ``ctx``'s store, decoded by its worker
    with the engine the options allow."""

    def __init__(self, ctx: SpaceContext, model: Optional[str] = None, engine: str = TRANSLATE_ENGINE,
                 languages: Optional[List[str]] = None, cancelled: Optional[Callable[[], bool]] = None) -> None:
        self.ctx, self.engine, self.cancelled = ctx, engine, client_left(cancelled)  # cancelled(): the client left
        self.model = None if model is None or model == "" or model == AUTO else model
        self._languages = list(languages) if languages is not None else list(LANGUAGES)

    def languages(self) -> List[str]:
        return self._languages

    def choose(self, src_lang: Optional[str], tgt_lang: Optional[str], quality: str = "fast",
               domain: Optional[str] = None) -> str:
        """The model asked for, else the best-scored one for the direction (ValueError naming it when none); at
        quality "best" one with reranking weights for it (``space/serving/quality.py``)."""
        if quality == "best" and self.ctx.store.names():
            asked = pick_model(self.ctx, self.model) if self.model is not None else None
            return best_quality.best_model(self.ctx, asked, src_lang, tgt_lang, domain)
        if self.model is not None or not self.ctx.store.names():  # no model at all: pick_model says so
            return pick_model(self.ctx, self.model)
        name = self.ctx.chooser.best(src_lang, tgt_lang, domain)
        if name is None:
            raise ValueError(f"{LANGUAGES.get(tgt_lang, tgt_lang)} ({tgt_lang}) is not available as a target "
                             f"language from {LANGUAGES.get(src_lang, src_lang)} ({src_lang})")
        return name

    def domains(self, name: Optional[str] = None) -> Tuple[str, ...]:
        store = self.ctx.store  # any model: the local ones (never a Hub download just to list domains)
        names = [name] if name is not None else [n for n, spec in store.specs.items() if spec.local]
        return tuple(dict.fromkeys(d for n in names for d in (store.config(n).domains or ())))

    def domain_classifier(self):
        return self.ctx.store.domain_classifier()

    def domain_labels(self) -> Dict[str, str]:
        return dict(DOMAIN_LABELS)

    def decode(self, name: str, sentences: List[str], src_langs: list, tgt_langs: list, config: DecodingConfig,
               quality: str = "fast", prefix: Optional[list] = None, constraints: Optional[list] = None,
               domain: Optional[list] = None, **options) -> Tuple[List[TranslationResult], str]:
        """The sentences decoded by the worker: ``prefix`` (each one's forced start) and ``constraints`` (each
        one's target phrases: a glossary's terms, which make engine "auto" PyTorch) are honoured; the rest
        (progress, workers) do not apply to the Space's worker.  ``quality="best"``: reranked there (PyTorch)."""
        if quality == "best":
            return best_quality.rerank(self.ctx, name, sentences, src_langs, tgt_langs, prefix, constraints,
                                       domain, self.cancelled), "pytorch"
        constraints = constraints or [()] * len(sentences)
        engine = resolve_engine(self.ctx, pick_engine(self.engine, ENGINE_CHOICES), name, config,
                                constrained=any(constraints))
        pairs: Dict[Tuple, Tuple] = {}
        for pair in zip(src_langs, tgt_langs):
            if pair not in pairs:
                pairs[pair] = languages_for(self.ctx, name, *pair)
        starts = prefix if prefix is not None else [None] * len(sentences)
        domains = domain if domain is not None else [None] * len(sentences)  # the pipeline's, for tagged models
        requests = [Request(s, *pairs[pair], start, constraints=tuple(c or ()), domain=d)
                    for s, pair, start, c, d in zip(sentences, zip(src_langs, tgt_langs), starts, constraints, domains)]
        return self.ctx.decoder.generate(name, requests, config, engine=engine, cancelled=self.cancelled), engine


def decode_text(ctx: SpaceContext, clean: CleanText, model, config: DecodingConfig, source_lang, target_lang,
                engine: str = DEFAULT_ENGINE, prefix: Optional[str] = None, progress=None, quality: str = "fast",
                glossary=None, domain: Optional[str] = AUTO):
    """``clean`` through the text pipeline (detected for source "auto", split into sentences, each direction's
    model chosen, decoded at ``quality``, joined; ``glossary`` applied; ``domain``: a domain of the models or
    "auto", told from the text), and the view of its result; returns (view, seconds).

    With a ``progress`` (a document) the sentences are decoded ``limits.document_chunk`` at a time, each step
    reported."""
    text, limits = "\n".join(clean.lines), ctx.limits

    def check_size(count: int) -> None:
        if progress is None and count > limits.max_sentences:
            raise RequestError(f"Too many sentences: {count}. Send at most {limits.max_sentences} per request, or "
                           "upload the text as a .txt file.")
        if progress is not None and count > limits.max_file_sentences:
            raise RequestError(f"The document has too many sentences: {count}, the limit is "
                           f"{limits.max_file_sentences}. Split it into smaller files.")

    def report(done: int, total: int) -> None:
        progress((done, total), desc="Translating", unit="sentences")

    start = time.perf_counter()
    (result,) = translate_texts(SpaceModels(ctx, model, engine), [text], config, src_lang=source_lang,
                                tgt_lang=target_lang, split_sentences=prefix is None, prefix=prefix,
                                check_size=check_size, on_chunk=None if progress is None else report,
                                chunk_size=None if progress is None else limits.document_chunk, quality=quality,
                                glossary=glossary, domain=domain)
    seconds = time.perf_counter() - start
    sentences = result.sentences if result.sentences is not None else [result]
    _truncation_note(sentences)
    source, name = result.src_lang, result.model
    if name is None:  # nothing was decoded (no words): any model into the target names the view
        source = source or next((s for s, t in ctx.chooser.pairs() if t == target_lang), None)
        name = pick_model(ctx, model, source, target_lang)
    models = list(dict.fromkeys(s.model for s in sentences if s.model)) or [name]  # a mixed text's: one per domain
    data = word_view.build(result, ctx.store.tokenizer(name), _special(ctx, name), model=name,
                           source_lang=source, target_lang=target_lang, detected=result.src_lang_confidence,
                           ms=round(seconds * 1e3, 1), tokenizers={m: ctx.store.tokenizer(m) for m in models})
    data["engine"] = result.engine or resolve_engine(ctx, pick_engine(engine, ENGINE_CHOICES), name, config)
    data["models"], data["domains"] = models, result.domain_counts
    data["domain"], data["domain_confidence"] = result.domain, result.domain_confidence
    trained = ctx.store.config(name).domains or ()  # the unsure note names what a model with domains knows
    data["trained_on"] = " and ".join(DOMAIN_LABELS.get(d, d) for d in trained) or None
    data["domain_menu"] = bool(SpaceModels(ctx).domains())  # the unsure note then points to the Domain menu
    if glossary is not None:  # what the note under the translation says applied, and what could not fit
        data["glossary"], data["warnings"] = [e.to_dict() for e in result.glossary], list(result.warnings)
    return data, seconds


DOUBT_REASON = "the model is unsure of its translation: a word or its mean token probability is low"


def unsure_sentences(ctx: SpaceContext, result: TranslationResult) -> List[Dict[str, str]]:
    """The sentences of one text's ``result`` the model is unsure of, by the Translate tab's flag
    (``transformer_hub.decoding.words.doubt``: the least likely word or the mean token probability low) or because
    they look like none of the domains the models were trained on (``TranslationResult.unfamiliar``,
    ``transformer_hub.text.explained``): each one's source, translation and reasons (why, in words)."""
    found = []
    for sentence in result.sentences if result.sentences is not None else [result]:
        name = sentence.model or result.model
        if not sentence.hypotheses or name is None:
            continue
        flag = doubt(sentence.best, ctx.store.tokenizer(name))
        why = [r for r in (sentence.unfamiliar, DOUBT_REASON if flag is not None and flag.unsure() else None) if r]
        if why:
            found.append({"source": sentence.source, "translation": sentence.text, "reasons": why})
    return found


def unsure_reasons(sentences: Sequence[Mapping[str, Any]]) -> List[str]:
    """The distinct reasons of ``unsure_sentences``' entries, in the order they come."""
    return list(dict.fromkeys(r for s in sentences for r in s["reasons"]))


def _special(ctx: SpaceContext, name: str) -> set:
    cfg = ctx.store.config(name)
    return {cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id}


def _truncation_note(results) -> None:
    if any(getattr(r, "truncated", False) for r in results):
        gr.Warning("A sentence was longer than the model accepts and was cut before translating.")


DOMAIN_LABELS = {"captions": "image captions", "software": "software documentation"}  # the page's words for them
DOMAIN_INFO = ("what the text is, which picks the model (the best scored on that domain) and the domain tag it "
               "reads the text with; Automatic: told from the text's words by the domain classifier shipped "
               "with the model. The note under the translation names the model and the domain.")


def domain_choices(ctx: SpaceContext) -> List[Tuple[str, str]]:
    """The page's Domain menu: (label, value), "auto" first; empty when no model was trained with domains."""
    known = SpaceModels(ctx, None).domains()
    return [("Automatic (told from the text)", AUTO)] + [(DOMAIN_LABELS.get(d, d).capitalize(), d)
                                                       for d in known] if known else []


def domain_note(domain: Optional[str], confidence: Optional[float], counts: Optional[Mapping[str, int]] = None) -> str:
    """How the note names the domain a text was translated as ("" for a model without domains); for a text whose
    sentences were read as several (``counts``, ``TranslationResult.domain_counts``), how many as each, and the
    Domain menu that reads them all as one."""
    if counts and len(counts) > 1:
        told = describe_domains(counts, {d: f"**{DOMAIN_LABELS.get(d, d)}**" for d in counts})
        return (f"domains told per sentence: {told}, each translated as its own (to translate all of them as one, "
                "choose it in the Domain menu)")
    if not domain:
        return ""
    told = f" (told from the text, {100 * confidence:.0f} %)" if confidence is not None else ""
    return f"domain **{DOMAIN_LABELS.get(domain, domain)}**{told}"


def mixed_domains_warning(counts: Mapping[str, int]) -> Optional[str]:
    """The REST answers' warning for a text or document whose sentences were read as several domains (None for
    one): how many as each, and the ``domain`` field that reads them all as one."""
    if len(counts) < 2:
        return None
    return (f"mixed domains: {describe_domains(counts)}, each translated as its own; to translate all of them as "
            f"one, send domain ({' or '.join(counts)})")


def answer_warnings(warnings: Sequence[Sequence[str]], counts: Sequence[Mapping[str, int]]) -> Dict[str, list]:
    """The REST answers' ``warnings`` (per text: its own, e.g. a glossary term that could not fit, then
    ``mixed_domains_warning``) and ``domains`` (per text, how many sentences were read as each domain), each only
    where some text has one."""
    notes = [mixed_domains_warning(c) for c in counts]
    merged = [list(w) + ([note] if note else []) for w, note in zip(warnings, notes)]
    return {**({"domains": [dict(c) for c in counts]} if any(notes) else {}),
            **({"warnings": merged} if any(merged) else {})}


def engine_note(engine: str, seconds: float, model: Union[str, Sequence[str], None] = None,
                quality: str = "fast") -> str:
    """The note's run: the quality, the model (``model``: a list for a text whose domains took several), the engine
    and the time."""
    models = [model] if isinstance(model, str) else list(model or ())
    parts = ["quality **best** (reranked)"] if quality == "best" else []
    parts += [("models " if len(models) > 1 else "model ") + ", ".join(f"**{m}**" for m in models)] if models else []
    return " · ".join(parts + [f"engine **{engine}**", f"{seconds * 1000.0:.1f} ms"])


def resolve_engine(ctx: SpaceContext, engine: str, name: str, config: DecodingConfig,
                   constrained: bool = False) -> str:
    """The engine that will run: ``"auto"`` resolved for this model and these options (``choose_engine``;
    ``constrained``: some sentence has constraints, which only PyTorch honours)."""
    return choose_engine(engine, config, ctx.store.config(name), constrained=constrained)


# ---------------------------------------------------------------------------- Translate
ALTERNATIVES = 5  # alternatives kept per output piece (the word view's menus)


def translate_view(ctx: SpaceContext, text: str, model: str, strategy: str = "beam", beam_size: int = 4,
                   length_penalty: float = 0.6, temperature: float = 1.0, top_p: float = 1.0, max_length: int = 0,
                   source_lang: str = "en", target_lang: str = "de", engine: str = TRANSLATE_ENGINE,
                   quality: Union[bool, str] = False, glossary: str = "",
                   glossary_format: str = "auto", domain: str = AUTO) -> Tuple[str, float, str, Dict[str, Any]]:
    """Lines of sentences -> their translation in the same layout, every sentence in one batch; returns
    (text, milliseconds, note, the word view's data).  ``source_lang="auto"`` detects the language; the model
    "auto" (or none) is the best-scored one for the (detected) direction; the engine "auto" is CTranslate2 when
    it can run the call; the word view's alternatives are PyTorch-only, so "auto" resolves to PyTorch here unless
    the caller names "ctranslate2" (no alternatives then); the note says which model and engine ran, the time
    and the ``glossary`` entries applied (TSV or CSV text, ``glossary_format`` "auto" tells them apart);
    ``domain`` (models trained with domains): "auto" tells the text's domain, else one of ``domain_choices``.
    ``quality`` (the "Best quality" box, or "fast" / "best"): "best" reranks (the options do not apply)."""
    clean, quality = clean_text(text, ctx.limits), best_quality.quality_option(quality)
    engine = pick_engine(engine, ENGINE_CHOICES)
    terms = page_glossary.parse(glossary, glossary_format, strategy, engine)  # the REST API's checks and messages
    # the page's word view offers each word's alternatives: PyTorch-only, so "auto" resolves to PyTorch here
    extra = {"return_alternatives": ALTERNATIVES} if engine in ("pytorch", "auto") else {}
    config = decoding_config(ctx, strategy, beam_size, length_penalty, temperature, top_p, max_length, **extra)
    domain = choice_option("domain", domain or AUTO, (AUTO, *(d for _, d in domain_choices(ctx)[1:])))
    data, seconds = decode_text(ctx, clean, model, config, source_lang, target_lang, engine, quality=quality,
                                glossary=terms, domain=domain)
    ran = " · ".join(p for p in (domain_note(data["domain"], data["domain_confidence"], data["domains"]),
                                 engine_note(data["engine"], seconds, data["models"], quality)) if p)
    note = "  \n".join(p for p in (word_view.note(data), ran) if p)
    return data["translation"], round(seconds * 1000.0, 1), note, data


def translate(ctx: SpaceContext, *args, **kwargs) -> Tuple[str, float, str]:
    """``translate_view`` without the view's data: (text, milliseconds, note)."""
    return translate_view(ctx, *args, **kwargs)[:3]


# ---------------------------------------------------------------------------- Attention
def layer_head_choices(ctx: SpaceContext, model: Optional[str]) -> Tuple[List[tuple], List[tuple]]:
    """Dropdown choices (label, value) for layers and heads; value 0 means 'average' (short labels: a phone's
    dropdown has room for about 12 characters; the dropdowns' info text says what "average" averages)."""
    layers, heads = 6, 8
    if model in ctx.store.specs:
        try:
            cfg = ctx.store.config(model)
            layers, heads = cfg.n_decoder_layers, cfg.n_heads
        except Exception:  # noqa: BLE001 - the attention call will report the real problem
            pass
    return ([("average", 0)] + [(f"layer {i}", i) for i in range(1, layers + 1)],
            [("average", 0)] + [(f"head {i}", i) for i in range(1, heads + 1)])


def attention(ctx: SpaceContext, text: str, model: str, strategy: str = "greedy", beam_size: int = 4,
              layer: int = 0, head: int = 0, source_lang: str = "en", target_lang: str = "de"):
    """Cross-attention of the translation: (figure, data with the matrix and the piece labels, translation)."""
    clean = clean_text(text, ctx.limits, single=True)
    strategy = choice_option("strategy", strategy, ("greedy", "beam"))
    config = decoding_config(ctx, strategy, beam_size, return_attention=True)
    name = pick_model(ctx, model, source_lang, target_lang)
    (result,), seconds = run(ctx, name, clean.sentences, config, languages_for(ctx, name, source_lang, target_lang))
    hyp = result.best
    weights = hyp.attention
    if weights is None:
        raise RequestError(f"Model {name!r} did not return attention weights for this translation.")
    n_layers, n_heads = weights.shape[0], weights.shape[1]
    layer = int_option("layer", layer, 0, n_layers)
    head = int_option("head", head, 0, n_heads)
    picked = weights[layer - 1:layer] if layer else weights  # (layers, heads, T, S)
    picked = picked[:, head - 1:head] if head else picked
    matrix = picked.float().mean(dim=(0, 1))  # (T, S)
    rows, cols = matrix.shape
    source = (list(result.source_pieces) + ["?"] * cols)[:cols]  # labels always match the matrix
    target = (result.target_pieces(ctx.store.tokenizer(name)) + ["?"] * rows)[:rows]
    where = f"{'layer ' + str(layer) if layer else 'all layers'}, {'head ' + str(head) if head else 'all heads'}"
    from ..pictures.attention import attention_figure

    figure = attention_figure(matrix.tolist(), source, target, f"Cross-attention ({where}) · {name}")
    data = {"model": name, "translation": hyp.text, "layer": layer, "head": head, "shape": [rows, cols],
            "source_pieces": source, "target_pieces": target,
            "matrix": [[round(float(v), 4) for v in row] for row in matrix.tolist()],
            "layers": n_layers, "heads": n_heads, "ms": round(seconds * 1000.0, 1)}
    return figure, data, hyp.text
