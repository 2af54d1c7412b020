"""The OpenAPI description of the REST routes (served at ``/openapi.json``): what each accepts and answers.

The routes read their parameters themselves (JSON, form or query string, as LibreTranslate does), so FastAPI
is given the request bodies here rather than inferring them (other fields, such as LibreTranslate's
``api_key``, which counts only when the server runs with keys, are accepted); the answers are pydantic models, and every
refusal is ``{"error": "..."}`` with the statuses the routes actually use.  The fuzzing test
(tests/test_rest_fuzz.py) holds the routes to this description.
"""
from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, Field

from transformer_hub.export.engine import CHOICES as ENGINE_CHOICES

from ..serving.languages import LANGUAGES

Code = Literal[tuple(LANGUAGES)]  # type: ignore[valid-type]


class TranslateRequest(BaseModel):
    q: Union[str, List[str]] = Field(description="a text, or a list of texts (answered item by item)")
    source: Literal[("auto", *LANGUAGES)] = Field(description="a language code, or auto to detect each text's")  # type: ignore[valid-type]
    target: Code = Field(description="the language to translate into")
    format: Literal["text", "html"] = Field("text", description="text, or html: the text of its blocks translated, "
                                                                 "tags, attributes, scripts and code kept")
    alternatives: int = Field(0, ge=0, description="other translations to give per text (up to beam size - 1)")
    model: Optional[str] = Field(None, description="a model name, or auto (the best model for the direction)")
    engine: Literal[tuple(ENGINE_CHOICES)] = "auto"  # type: ignore[valid-type]
    glossary: Optional[Union[str, Dict[str, str]]] = Field(
        None, description="terms every translation must follow: TSV text (source<TAB>target per line) or an object "
                          "of source -> target terms (format=text; engine auto or pytorch)")
    quality: Literal["fast", "best"] = Field(
        "fast", description="fast: beam search (the default); best: each sentence's n-best reranked with the weights "
                            "tuned beside the model (rerank.json; slower; format=text; a direction without tuned "
                            "weights is a 400)")
    domain: Optional[str] = Field(
        "auto", description="where the texts come from, for models trained with domain tags: auto (the default: "
                            "each sentence's, told from its words, or a short one's from its paragraph or text) or a "
                            "domain the models know (e.g. captions, software) for every sentence; the answer's domain "
                            "says which each text got")
    api_key: Optional[str] = Field(None, description="an API key (its own limits; SPACE_API_KEYS=1)")


class DetectRequest(BaseModel):
    q: str
    api_key: Optional[str] = None


class Detection(BaseModel):
    confidence: float = Field(ge=0, le=100)
    language: str


class GlossaryEntry(BaseModel):
    source: str
    target: str


class Translation(BaseModel):
    translatedText: Union[str, List[str]]
    detectedLanguage: Optional[Union[Detection, List[Detection]]] = None
    alternatives: Optional[Union[List[str], List[List[str]]]] = None
    model: Optional[str] = None
    engine: Optional[str] = None
    glossary: Optional[Union[List[GlossaryEntry], List[List[GlossaryEntry]]]] = Field(
        None, description="with a glossary: per text, the entries whose source term occurs in it")
    warnings: Optional[Union[List[str], List[List[str]]]] = Field(
        None, description="per text: glossary terms that could not fit the translation's length limit, and a "
                          "text whose sentences were read as several domains (how to read them all as one)")
    domain: Optional[Union[str, List[Optional[str]]]] = Field(
        None, description="with models trained with domains: the domain each text was translated as (of a text "
                          "mixing domains, the one most of its sentences were read as)")
    domains: Optional[Union[Dict[str, int], List[Dict[str, int]]]] = Field(
        None, description="when some text's sentences were read as several domains (domain auto): per text, how many "
                          "as each")
    unsure: Optional[Union[bool, List[bool]]] = Field(
        None, description="per text (format text): whether the model is unsure of any of its sentences, or some "
                          "sentence looks like none of the domains the models were trained on")
    unsure_reasons: Optional[Union[List[str], List[List[str]]]] = Field(
        None, description="when some text is unsure: per text, why, in words (e.g. that it looks like neither "
                          "image captions nor software documentation)")


class Language(BaseModel):
    code: str
    name: str
    targets: List[str]


class Error(BaseModel):
    error: str = Field(description="what is wrong, in a sentence a person can act on")


REFUSALS = {400: "a bad request", 403: "an unknown API key (SPACE_API_KEYS=1)", 408: "the body did not arrive in time", 413: "the body is too large",
            429: "the server is busy", 500: "a fault of the server", 503: "a model could not be loaded"}


def _body(model: type, form: bool) -> Dict[str, Any]:
    schema = model.model_json_schema()
    content = {"application/json": {"schema": schema}}
    if form:  # a form carries one text per field: q is a string there
        content["application/x-www-form-urlencoded"] = {
            "schema": {**schema, "properties": {**schema["properties"], "q": {"type": "string"}}}}
    return {"requestBody": {"required": True, "content": content}}


def _answers(model: Any, statuses=tuple(REFUSALS)) -> Dict[int, Dict[str, Any]]:
    return {200: {"model": model}, **{s: {"model": Error, "description": REFUSALS[s]} for s in statuses}}


OPERATIONS: Dict[str, Dict[str, Any]] = {
    "/translate": {"methods": ["POST"], "summary": "Translate a text or a list of texts",
                   "openapi_extra": _body(TranslateRequest, form=True), "responses": _answers(Translation)},
    "/detect": {"methods": ["POST"], "summary": "Detect the language of a text",
                "openapi_extra": _body(DetectRequest, form=True), "responses": _answers(List[Detection])},
    "/languages": {"methods": ["GET"], "summary": "The languages translated from, and their targets",
                   "responses": {200: {"model": List[Language]}}},
}
