"""``python -m transformer_hub translate``: one line in, one line out (TSV with --n-best, JSON lines with
--json / --alternatives)."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Callable, Dict, Iterator, List, Optional, TextIO

from ..errors import Parser
from .commands import PROG, CLIError, command
from .options import (add_decoding_arguments, add_model_arguments, best_model_for, check_languages, decoding_config,
                      decoding_engine, decoding_workers, load_model, one_line, open_output, progress, read_input,
                      served_direction, set_threads, shipped_candidates, translation_glossary)
from .quality import translate_best


@command("translate", "translate stdin (or --input) line by line to stdout (or --output)")
def translate_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} translate", description="Translate one sentence per line: one line in, one line "
                    "out (empty lines stay empty). With --n-best > 1, write TSV: line_index (0-based), rank, score, "
                    "normalized_score, text. With --alternatives K, write JSON lines (one object per input line).")
    add_model_arguments(parser, required=False)
    parser.add_argument("--input", "-i", default=None, help="input file (.gz allowed; default: stdin)")
    parser.add_argument("--output", "-o", default=None, help="output file (default: stdout)")
    parser.add_argument("--prefix-file", default=None,
                        help="target prefixes, one per input line (empty line: none): each output starts with its "
                             "prefix (a last word without a space after it may be completed)")
    parser.add_argument("--alternatives", type=int, default=0, metavar="K",
                        help="write JSON lines with each output token's K most likely tokens and probabilities")
    parser.add_argument("--json", action="store_true",
                        help="write JSON lines: text, src_lang, src_lang_confidence, confidence, hypotheses")
    parser.add_argument("--split-sentences", action="store_true",
                        help="translate each sentence of a line on its own and put them back in the line's layout")
    parser.add_argument("--glossary", default=None, metavar="FILE",
                        help="source<TAB>target terms (.tsv; .csv: source,target): where a source term occurs, its "
                             "target term must appear in the translation (beam search, PyTorch engine)")
    parser.add_argument("--domain", default="auto",
                        help="where the texts come from, for models trained with domains (e.g. software, captions): "
                             "auto (default: each line's domain told by the model's classifier; without one, the "
                             "model's default) or a domain's name (one of the model's, e.g. a project's from `adapt`)")
    add_decoding_arguments(parser)
    parser.add_argument("--engine", choices=["pytorch", "ctranslate2"], default="pytorch",
                        help="decode with PyTorch (default) or CTranslate2 (pip install ctranslate2; converted once)")
    parser.add_argument("--compute-type", default="float32",
                        help="with --engine ctranslate2: float32 (default: our greedy output), int8, ...")
    parser.add_argument("--quality", choices=["fast", "best"], default="fast",
                        help="fast: the decoding options above; best: rerank beam search's n-best with the weights "
                             "tuned beside the model (rerank.json), slower")
    args = parser.parse_args(argv)
    if args.quality == "best":
        return translate_best(args)
    glossary = translation_glossary(args)
    config = decoding_config(args)
    engine = decoding_engine(args, config)
    set_threads(args.threads)
    lines = read_input(args.input)
    prefixes = translation_prefixes(args, len(lines))
    if args.alternatives:
        config = _with_alternatives(config, args.alternatives)
    options = dict(split_sentences=args.split_sentences, glossary=glossary, domain=args.domain)
    from ..decoding.batching import progress_bar

    with contextlib.ExitStack() as stack, open_output(args.output) as out:
        translate = stack.enter_context(_translator(args, config, engine, options))
        show = stack.enter_context(progress_bar(progress(args, len(lines)), len(lines), "translating"))
        for first in range(0, len(lines), CHUNK_LINES):  # each chunk written and let go: memory flat in the lines
            chunk = slice(first, first + CHUNK_LINES)
            results, tokenizers = translate(lines[chunk], prefixes[chunk] if prefixes is not None else None)
            _write(out, args, config, results, tokenizers, first)
            show(len(results))
    return 0


CHUNK_LINES = 256  # lines decoded at a time (sorted into batches by length within the chunk)


@contextlib.contextmanager
def _translator(args: argparse.Namespace, config, engine, options: dict) -> Iterator[Callable]:
    """``translate(lines, prefixes) -> (results, tokenizers)``: by ``--model`` (or the best shipped for the
    direction when pools of processes need one model), or without a model, each line by the model of its direction
    and domain."""
    if args.model is None and (args.src_lang == "auto" or args.workers == 1 or args.parallel == "threads"):
        yield _by_shipped_models(args, config, engine, options)
        return
    from ..text.pipeline import generate_texts

    model = load_model(args.model or best_model_for(args), args.revision, args.device)
    check_domain(args, model)
    with decoding_workers(args, model, engine) as runner:
        def translate(lines: List[str], prefixes: Optional[List[str]]):
            try:
                return (generate_texts(model, lines, config, prefix=prefixes, **options, **runner,
                                 **check_languages(args, model)), {None: model.tokenizer})
            except ValueError as exc:  # a prefix longer than its sentence may be, an engine without prefixes
                raise CLIError(str(exc))
        yield translate


def _by_shipped_models(args: argparse.Namespace, config, engine, options: dict) -> Callable:
    """Without ``--model``: each line (its language detected with ``--src-lang auto``, its domain told with
    ``--domain auto``) translated by the model of space/models that scores its direction and domain best (the
    pipeline's ``ModelSet``); stderr names the model of each direction and domain once."""
    from ..text.pipeline import ModelSet, translate_texts

    if args.workers > 1 and args.parallel != "threads":  # said before any model loads
        raise CLIError("--parallel processes needs --model (one model per pool); use --parallel threads")
    if args.src_lang != "auto":
        served_direction(args)  # one-line errors before any model loads
    models = ModelSet({str(c.source): load_model(str(c.source), None, args.device) for c in shipped_candidates()})
    tokenizers = {name: model.tokenizer for name, model in models.models.items()}
    named = set()

    def translate(lines: List[str], prefixes: Optional[List[str]]):
        try:
            results = translate_texts(models, lines, config, src_lang=args.src_lang, tgt_lang=args.tgt_lang,
                                      workers=args.workers, engine=engine, prefix=prefixes, **options)
        except ValueError as exc:  # a line in a language no model reads, a direction no model serves
            raise CLIError(str(exc))
        ran = [s for r in results for s in (r.sentences if r.sentences is not None else [r])]  # a line may mix domains
        for key in dict.fromkeys((s.src_lang, s.domain, s.model) for s in ran if s.model is not None):
            if key not in named:
                named.add(key)
                src, domain, name = key
                told = f", {domain} text" if domain else ""
                print(f"model: {name} (the best measured for {src}->{args.tgt_lang}{told})", file=sys.stderr)
        return results, tokenizers
    return translate


def _write(out: TextIO, args: argparse.Namespace, config, results, tokenizers, first: int) -> None:
    """The results of the lines from ``first`` (0-based) on, in the output's format; their warnings on stderr."""
    for i, r in enumerate(results, start=first):  # a glossary term that could not fit the length budget
        for warning in r.warnings:
            print(f"line {i + 1}: {warning}", file=sys.stderr)
    if args.alternatives or args.json:
        write_json(out, results, tokenizers, alternatives=bool(args.alternatives), first=first)
    elif config.n_best == 1:
        for r in results:
            out.write(one_line(r.text) + "\n")
    else:
        for i, r in enumerate(results, start=first):
            for rank, h in enumerate(r.hypotheses):
                out.write(f"{i}\t{rank}\t{h.score:.4f}\t{h.normalized_score:.4f}\t{one_line(h.text)}\n")


def check_domain(args: argparse.Namespace, model) -> None:
    """``--domain``: auto, or one of the model's domains (a one-line error naming them)."""
    if args.domain != "auto":
        try:
            model.config.check_domain(args.domain)
        except ValueError as exc:
            raise CLIError(f"--domain: {exc}")


def translation_prefixes(args: argparse.Namespace, n_lines: int) -> Optional[List[str]]:
    """``--prefix-file``: one prefix per input line, or None."""
    if args.prefix_file is None:
        return None
    prefixes = read_input(args.prefix_file)
    if len(prefixes) != n_lines:
        raise CLIError(f"--prefix-file {args.prefix_file} has {len(prefixes)} lines for {n_lines} input lines: "
                       "give one prefix per input line (an empty line for none)")
    return prefixes


def _with_alternatives(config, k: int):
    try:
        return config.replace(return_alternatives=k)
    except ValueError as exc:
        raise CLIError(f"--alternatives: {exc}")


def _hypothesis_json(h, tokenizer, alternatives: bool) -> dict:
    entry = {"text": h.text, "score": h.score, "normalized_score": h.normalized_score, "confidence": h.confidence,
             "tokens": tokenizer.pieces(h.tokens, side="target")}
    if alternatives:
        entry["alternatives"] = [[[piece, round(p, 6)] for piece, p in step] for step in h.alternative_pieces(tokenizer)]
    return entry


def write_json(out: TextIO, results, tokenizers: Dict[Optional[str], object], alternatives: bool = False,
               first: int = 0) -> None:
    """One JSON object per input line: its languages, best text and confidence, its hypotheses (each token's
    piece and, with ``alternatives``, its alternatives as [piece, prob]), and with --split-sentences its sentences.
    ``tokenizers``: by the name of the model that translated a line (``None``: the one model of the call);
    ``first``: the input line of ``results[0]`` (0-based)."""
    for i, r in enumerate(results, start=first):
        tokenizer = tokenizers.get(r.model, tokenizers.get(None))
        line = {"line": i, "source": r.source, "text": r.text, "src_lang": r.src_lang,
                "src_lang_confidence": r.src_lang_confidence, "confidence": r.best.confidence,
                "hypotheses": [_hypothesis_json(h, tokenizer, alternatives) for h in r.hypotheses]}
        if r.sentences is not None:
            line["sentences"] = [{"source": s.source, "text": s.text, "confidence": s.best.confidence}
                                 for s in r.sentences]
        if r.glossary or r.warnings:
            line["glossary"] = [e.to_dict() for e in r.glossary]
            line["warnings"] = r.warnings
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
