"""The Space's tools for AI agents, served as Model Context Protocol tools when the server runs with
``GRADIO_MCP_SERVER=true`` (Gradio's MCP server, ``gradio[mcp]``): ``translate``, ``detect`` and ``languages``,
LibreTranslate's own MCP tools.

Each one is a ``gr.api`` endpoint of the Blocks (its type hints and docstring become the tool's schema and
description) that answers exactly as the REST route of the same name does (it calls the same ``RestAPI``).
The page's other events (plots, word views, beam trees) stay API endpoints for ``gradio_client`` but are not
tools: ``hide_page_events`` marks them so that the MCP server does not list them.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Literal

import gradio as gr

from ..rest.input import check_text
from ..rest.routes import RestAPI, RestError
from ..serving.context import SpaceContext
from .tabs._common import DECODE

Language = Literal["en", "de", "fr", "cs"]
Source = Literal["auto", "en", "de", "fr", "cs"]
TOOL_NAMES = ("translate", "detect", "languages")


def add_tools(ctx: SpaceContext) -> List[Any]:
    """Register the three tools on the Blocks being built (call inside ``with gr.Blocks()``)."""
    rest = RestAPI(ctx)

    def answer(work, params: Dict[str, Any]):
        try:
            check_text(params)  # a lone surrogate is not text: the REST routes' words, not the codec's
            return work(params)
        except RestError as exc:
            raise gr.Error(exc.message) from None

    def translate(text: str, source: Source = "auto", target: Language = "de") -> str:
        """Translate text between English (en), German (de), French (fr) and Czech (cs) with this Space's
        Transformer models (trained from scratch on Multi30k's short image descriptions and LibreOffice's help,
        software documentation). Lines and paragraphs are kept; each sentence is translated on its own.

        Args:
            text: the text to translate (a few sentences; one line may hold up to about a thousand characters).
            source: the language of the text, or "auto" to detect it among en, de, fr and cs.
            target: the language to translate into.
        Returns:
            the translated text.
        """
        return answer(rest.translate, {"q": text, "source": source, "target": target})["translatedText"]

    def detect(text: str) -> str:
        """Detect the language of a text among those this Space translates from (en, de, fr, cs).

        Args:
            text: the text whose language to detect.
        Returns:
            JSON: a list with one entry, {"confidence": 0 to 100, "language": the code}.
        """
        return json.dumps(answer(rest.detect, {"q": text}))

    def languages() -> str:
        """The languages this Space translates from, each with the languages it translates into.

        Returns:
            JSON: a list of {"code": "en", "name": "English", "targets": ["de", "fr", ...]}.
        """
        return json.dumps(rest.languages())

    for tool in (translate, detect):  # they run the model: the decoding events' concurrency group
        gr.api(tool, api_name=f"tool_{tool.__name__}", concurrency_id=DECODE, concurrency_limit=ctx.decode_workers)
    gr.api(languages, api_name="tool_languages", concurrency_limit=None)
    return [translate, detect, languages]


def hide_page_events(demo: gr.Blocks, tools: List[Any]) -> None:
    """Keep the page's events out of the MCP server's tool list (they stay API endpoints): Gradio lists a
    function as a tool unless its ``_mcp_type`` (set by ``gr.mcp.tool``/``resource``/``prompt``) says otherwise."""
    for block_fn in demo.fns.values():
        if block_fn.fn is not None and block_fn.fn not in tools:
            block_fn.fn._mcp_type = "page event"
