"""``python -m transformer_hub translate-file``: a document or a localization file translated with its structure
kept (every format of ``transformer_hub.formats``: .po/.pot, XLIFF, .docx, .html, .srt, ...)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List

from ..errors import Parser
from ..formats import DocumentError, extensions, format_of, read_document, translate_document_texts
from ..text.pipeline import AUTO, ModelSet, OneModel
from .commands import PROG, CLIError, command
from .options import add_decoding_arguments, add_model_arguments, decoding_config, load_model, set_threads, \
    shipped_candidates


@command("translate-file", "translate a document or localization file (.po, .xlf, .docx, ...), its structure kept")
def translate_file_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} translate-file", description="Translate a file, keeping its structure: a gettext "
                    "catalog's entries without a translation (marked fuzzy for review), XLIFF targets (marked for "
                    "review), a document's text. Placeholders, tags and accelerators come back unchanged; an entry "
                    f"that cannot keep them stays untranslated. Formats: {', '.join(extensions())}.")
    parser.add_argument("input", help="the file to translate")
    parser.add_argument("--output", "-o", default=None, help="where to write it (default: NAME.TGT.EXT beside it)")
    parser.add_argument("--overwrite", action="store_true",
                        help="catalogs and XLIFF: translate entries that already have a translation too")
    parser.add_argument("--domain", default=AUTO, help="the text's domain for models trained with domains "
                        "(default: auto, told by the models' classifier from the whole file)")
    add_model_arguments(parser, required=False)
    add_decoding_arguments(parser)
    args = parser.parse_args(argv)
    if not args.tgt_lang:
        raise CLIError("give --tgt-lang: the language to translate the file into")
    source = Path(args.input)
    try:
        format_of(source.suffix)
        data = source.read_bytes()
        document = read_document(data, source.suffix, tgt_lang=args.tgt_lang, overwrite=args.overwrite)
    except OSError as exc:
        raise CLIError(f"cannot read {source}: {exc.strerror or exc}")
    except DocumentError as exc:
        raise CLIError(str(exc))
    set_threads(args.threads)
    if args.model:
        models = OneModel(load_model(args.model, args.revision, args.device))
    else:  # each text's model chosen by direction and domain among space/models, as the Space does
        models = ModelSet({str(c.source): load_model(str(c.source), None, args.device) for c in shipped_candidates()})
    try:
        done = translate_document_texts(document.texts, models, args.src_lang or AUTO, tgt_lang=args.tgt_lang,
                                        config=decoding_config(args), domain=args.domain)
    except ValueError as exc:  # a language no model reads, a domain no model knows
        raise CLIError(str(exc))
    output = Path(args.output) if args.output else source.with_name(f"{source.stem}.{args.tgt_lang}{source.suffix}")
    output.write_bytes(document.write(done))
    models_used = sorted({t.result.model for t in done if t.result is not None and t.result.model})
    print(f"{output}: {sum(len(t.spans) for t in done)} sentences translated by {', '.join(models_used) or 'none'}",
          file=sys.stderr)
    return 0
