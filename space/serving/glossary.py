"""The page's glossary box: its text read by the library's parser (``transformer_hub.text.glossary``), with the
messages ``POST /translate`` gives for the same mistakes ("Invalid request: glossary line 2: ..."), the parser's
HTML-escaped: the page shows a refusal as Gradio's error, whose message is HTML."""
from __future__ import annotations

import html
from typing import Optional

from transformer_hub.text.glossary import FORMATS, Glossary

from ..hosting.limits import RequestError

AUTO = "auto"  # TSV when a line holds a tab, else CSV
ENTRY_FORMATS = (AUTO,) + FORMATS
# the one engine that cannot place a glossary's terms; the page and POST /translate refuse it in these words
NO_GLOSSARY_ENGINE = "ctranslate2"
NO_GLOSSARY_ENGINE_MESSAGE = "glossary needs engine pytorch or auto (CTranslate2 has no constrained search)"


def entries_format(text: str, chosen: str = AUTO) -> str:
    """``chosen``, or for "auto" the format the text is written in: TSV when any line holds a tab, else CSV."""
    if chosen not in ENTRY_FORMATS:
        raise RequestError(f"Invalid request: the glossary format must be one of {', '.join(ENTRY_FORMATS)}, "
                       f"got {chosen!r}")
    if chosen != AUTO:
        return chosen
    return "tsv" if "\t" in text else "csv"


def parse(text: Optional[str], chosen: str = AUTO, strategy: str = "beam", engine: str = AUTO) -> Optional[Glossary]:
    """The glossary box's entries, or None when it is empty; a ``RequestError`` in plain words when it is malformed
    or the options cannot honour it (the REST API's messages). The format is checked even for an empty box: a
    format that does not exist is the caller's mistake whatever the text."""
    entries_format("", chosen)
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if not isinstance(text, str):
        raise RequestError(f"Invalid request: a glossary is text, got {type(text).__name__}")
    if engine == NO_GLOSSARY_ENGINE:
        raise RequestError(f"Invalid request: {NO_GLOSSARY_ENGINE_MESSAGE}")
    if strategy != "beam":
        raise RequestError("Invalid request: glossary needs the beam strategy (its terms are placed by constrained "
                       f"beam search), got {strategy!r}")
    try:
        return Glossary.parse(text, entries_format(text, chosen))
    except ValueError as exc:  # the parser names the line or entry at fault
        # the page renders an error as HTML: "source<TAB>target" would lose its tag and all after it
        raise RequestError(html.escape(f"Invalid request: {exc}", quote=False)) from exc
