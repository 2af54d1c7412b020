"""The OpenAPI description of the routes in ``space/rest/libre.py`` (settings, files, suggestions, health), in the
form of ``space/rest/schema.py``'s: request bodies given, answers as pydantic models, refusals as ``Error``."""
from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional

from pydantic import BaseModel, Field

from ..serving.languages import LANGUAGES
from .schema import REFUSALS, Detection, Error, TranslateRequest, _answers

Code = Literal[tuple(LANGUAGES)]  # type: ignore[valid-type]


class NamedLanguage(BaseModel):
    code: str
    name: str


class DefaultLanguages(BaseModel):
    source: NamedLanguage
    target: NamedLanguage


class FrontendSettings(BaseModel):
    charLimit: int = Field(description="characters per text (-1: no limit)")
    frontendTimeout: int = Field(description="milliseconds LibreTranslate's web UI waits after a keystroke")
    apiKeys: bool = Field(description="whether API keys are in use")
    keyRequired: bool = Field(description="whether a request needs an API key")
    suggestions: bool = Field(description="whether POST /suggest stores suggestions")
    filesTranslation: bool
    supportedFilesFormat: List[str] = Field(description="the file extensions /translate_file takes")
    language: DefaultLanguages


class TranslatedFile(BaseModel):
    translatedFileUrl: str = Field(description="where to GET the translated file (until it expires)")
    model: Optional[str] = None
    engine: Optional[str] = None
    detectedLanguage: Optional[Detection | Dict[str, str]] = None
    domain: Optional[str] = Field(None, description="with models trained with domains: the domain most of the "
                                                    "document's sentences were read as")
    domains: Optional[Dict[str, int]] = Field(None, description="when its sentences were read as several domains "
                                                                "(domain auto): how many as each")
    warnings: Optional[List[str]] = Field(None, description="e.g. that its sentences were read as several domains, "
                                                            "and how to read them all as one")
    unsure: Optional[Dict[str, Any]] = Field(None, description="when the model is unsure of some sentences: how "
                                                               "many, of how many, the first few and the reasons")


class SuggestRequest(BaseModel):
    q: str = Field(description="the original text")
    s: str = Field(description="the suggested translation")
    source: Code
    target: Code
    model: Optional[str] = Field(None, description="the model whose translation is corrected (default: the "
                                                   "direction's best)")
    api_key: Optional[str] = None


class Success(BaseModel):
    success: bool


class Health(BaseModel):
    status: Literal["ok"]


_FILE_FORM = {"type": "object", "required": ["file", "source", "target"], "properties": {
    "file": {"type": "string", "format": "binary"},
    "source": {"type": "string", "enum": ["auto", *LANGUAGES]},
    "target": {"type": "string", "enum": list(LANGUAGES)},
    "model": {"type": "string"}, "engine": TranslateRequest.model_json_schema()["properties"]["engine"],
    "quality": TranslateRequest.model_json_schema()["properties"]["quality"],
    "domain": TranslateRequest.model_json_schema()["properties"]["domain"],
    "api_key": {"type": "string"}}}


def _suggest_body() -> Dict[str, Any]:
    schema = SuggestRequest.model_json_schema()
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema},
                                                          "application/x-www-form-urlencoded": {"schema": schema}}}}


OPERATIONS: Dict[str, Dict[str, Any]] = {
    "/frontend/settings": {"methods": ["GET"], "summary": "What LibreTranslate's web UI needs to know first",
                           "responses": {200: {"model": FrontendSettings}}},
    "/translate_file": {"methods": ["POST"], "summary": "Translate a document, its structure kept",
                        "openapi_extra": {"requestBody": {"required": True, "content": {
                            "multipart/form-data": {"schema": _FILE_FORM}}}},
                        "responses": _answers(TranslatedFile, (400, 403, 408, 413, 429, 500))},
    "/download_file/{name:anyname}": {"methods": ["GET"],
                                   "summary": "A translated file, under the name /translate_file gave",
                              "responses": {200: {"content": {"application/octet-stream": {}},
                                                  "description": "the file"},
                                            404: {"model": Error, "description": "expired or never existed"}}},
    "/suggest": {"methods": ["POST"], "summary": "Suggest a better translation (SPACE_SUGGESTIONS=1)",
                 "openapi_extra": _suggest_body(),
                 "responses": {200: {"model": Success},
                               **{s: {"model": Error, "description": REFUSALS[s]} for s in (400, 408, 413, 429)},
                               403: {"model": Error, "description": "suggestions are off, or an unknown API key"}}},
    "/health": {"methods": ["GET"], "summary": "Whether the server answers", "responses": {200: {"model": Health}}},
}
