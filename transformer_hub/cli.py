"""``python -m transformer_hub COMMAND ...`` (also the ``transformer-hub`` console script).

Commands live in the registry ``COMMANDS`` (name -> function taking the remaining argv and
returning an exit status); add one with ``@command("name", "one-line help")``.

    python -m transformer_hub download  [--langs en,de,fr,cs] [--dest DIR]
    python -m transformer_hub translate --model space/models/en-de [--strategy beam --beam-size 5] < src.txt > hyp.txt
    python -m transformer_hub evaluate  --model space/models/en-de --src val.en.gz --ref val.de.gz [--lowercase]
    python -m transformer_hub export    --model space/models/en-de --format ctranslate2 --out en-de-ct2 [--quantization int8]
    python -m transformer_hub train     ...   (forwarded to transformer_hub.train.main)

Errors a user can cause (missing data, a missing model, a bad option, an
unreadable file, an unknown command) end with exit status 2 and one line on
stderr saying what is wrong and what to do, never a traceback; ``--debug`` (or
``TRANSFORMER_HUB_DEBUG=1``) shows the traceback, for developers.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import traceback
import warnings
from typing import Callable, Iterator, List, Optional, Sequence, TextIO

from .data import default_data_dir, MULTI30K_LANGS, download_multi30k, read_lines
from .errors import Parser, UserError
from .metrics import score_with_signatures
from .registry import Registry

PROG = "transformer_hub"
PROGRESS_MIN_LINES = 100  # show a progress bar (stderr) from this many input lines on
DEBUG_ENV = "TRANSFORMER_HUB_DEBUG"


class CLIError(UserError):
    """A user error: printed as one line, exit status 2."""


Command = Callable[[List[str]], Optional[int]]
COMMANDS: Registry = Registry("command")


def command(name: str, help: str) -> Callable[[Command], Command]:
    """Register ``fn(argv) -> exit status`` as ``python -m transformer_hub NAME``; ``help`` is its line in usage."""

    def add(fn: Command) -> Command:
        fn.help = help  # type: ignore[attr-defined]
        return COMMANDS.register(name)(fn)

    return add


# --------------------------------------------------------------------------- shared helpers
def read_input(path: Optional[str]) -> List[str]:
    """Lines of text to translate or score (``-``/None = stdin): bad UTF-8 becomes U+FFFD, empty input is fine."""
    return read_lines(path or "-", errors="replace", allow_empty=True)


_LINE_BREAKS = re.compile(r"[\r\n\t\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """Keep an output on its line: line and field separators become spaces."""
    return _LINE_BREAKS.sub(" ", text)


@contextlib.contextmanager
def open_output(path: Optional[str]) -> Iterator[TextIO]:
    """A UTF-8 text stream to ``path`` (``-`` or None = stdout, left open)."""
    if path is None or path == "-":
        stream = sys.stdout
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="replace")
        yield stream
        stream.flush()
        return
    try:
        fh = open(path, "w", encoding="utf-8", errors="replace", newline="\n")
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}")
    with fh:
        yield fh


def looks_like_repo_id(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?", name)) and ".." not in name


def load_model(name: str, revision: Optional[str] = None, device: str = "cpu"):
    """A ``save_pretrained`` folder or a Hub repo id -> Transformer with a tokenizer, on ``device``."""
    from .model import Transformer

    if not os.path.isdir(name):
        if os.path.exists(name):
            raise CLIError(f"--model {name} is a file; give the model folder (config.json, model.safetensors, ...)")
        if not looks_like_repo_id(name) or name.startswith((".", "/", "~")):
            raise CLIError(f"model folder {name} does not exist: pass a save_pretrained folder "
                           "(e.g. --model space/models/en-de) or a Hub repo id")
    try:
        model = Transformer.from_pretrained(name, revision=revision)
    except Exception as exc:  # noqa: BLE001 - any failure to load is reported in one line
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = "folder" if os.path.isdir(name) else "model (no such folder; tried the Hub repo)"
        raise CLIError(f"cannot load {where} {name}: {message}")
    if model.tokenizer is None:
        raise CLIError(f"model {name} has no tokenizer files (tokenizer_config.json); cannot translate text")
    try:
        import torch

        model.to(torch.device(device))
    except Exception as exc:  # noqa: BLE001
        raise CLIError(f"cannot use device {device!r}: {exc}")
    return model


MODELS_DIR_ENV = "TRANSFORMER_HUB_SPACE_MODELS"  # where ``translate`` without --model looks (default: space/models)


def add_model_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--model", required=required, help="a save_pretrained folder or a Hub repo id" + (
        "" if required else "; default: the model of space/models whose card scores --src-lang -> --tgt-lang best"))
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--src-lang", default=None, help="source language code (multilingual models; a bilingual "
                        "model accepts only its own pair); 'auto' detects it per line among the model's languages")
    parser.add_argument("--tgt-lang", default=None, help="target language code (required by multilingual models)")


def best_model_for(args: argparse.Namespace) -> str:
    """The folder of the best-measured model for ``--src-lang -> --tgt-lang`` among space/models (stderr says which)."""
    from .selection import best_model, candidates_in

    folder = os.environ.get(MODELS_DIR_ENV) or os.path.join("space", "models")
    if not os.path.isdir(folder):
        raise CLIError(f"--model is required: there is no {folder} folder here to choose a model from")
    if not (args.src_lang and args.tgt_lang):
        raise CLIError(f"without --model, give --src-lang and --tgt-lang: the model of {folder} that translates "
                       "that direction best is used")
    found = best_model(candidates_in(folder), args.src_lang, args.tgt_lang)
    if found is None:
        raise CLIError(f"no model in {folder} translates {args.src_lang}->{args.tgt_lang}; pass --model")
    print(f"model: {found.source} (the best measured for {args.src_lang}->{args.tgt_lang} in {folder})",
          file=sys.stderr)
    return str(found.source)


def check_languages(args: argparse.Namespace, model) -> dict:
    """``src_lang`` / ``tgt_lang`` for generate, checked against what the model serves (one-line error)."""
    try:
        model.config.check_pair(None if args.src_lang == "auto" else args.src_lang, args.tgt_lang)
    except ValueError as exc:
        raise CLIError(f"--src-lang/--tgt-lang: {exc}")
    return {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang}


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    from .decoding import STRATEGIES, DecodingConfig

    d = DecodingConfig()
    g = parser.add_argument_group("decoding (see transformer_hub.decoding.DecodingConfig)")
    g.add_argument("--strategy", default=None,
                   help=f"one of: {', '.join(STRATEGIES.names())} (default: greedy; beam with --n-best > 1)")
    g.add_argument("--beam-size", type=int, default=None,
                   help=f"beams per sentence (default {d.beam_size}, or --n-best if larger)")
    g.add_argument("--length-penalty", type=float, default=d.length_penalty,
                   help=f"GNMT alpha in ((5+|Y|)/6)^alpha (default {d.length_penalty})")
    g.add_argument("--n-best", type=int, default=d.n_best, help="hypotheses per sentence; > 1 writes TSV")
    g.add_argument("--batch-size", type=int, default=d.batch_size, help=f"sentences per batch (default {d.batch_size})")
    g.add_argument("--workers", type=int, default=1,
                   help="batches decoded at once (default 1); faster on several cores when there are several batches")
    g.add_argument("--parallel", choices=["processes", "threads"], default="processes",
                   help="with --workers > 1: worker processes, each with a copy of the model (default; a few "
                        "seconds to start), or threads in this process (no start-up, but they share one GIL)")
    g.add_argument("--max-len-offset", type=int, default=d.max_len_offset,
                   help=f"max output tokens = source tokens + this (default {d.max_len_offset})")
    g.add_argument("--max-length", type=int, default=None, help="absolute cap on output tokens")
    g.add_argument("--min-len", type=int, default=d.min_len, help="block eos before this many tokens")
    g.add_argument("--temperature", type=float, default=d.temperature, help="sampling temperature")
    g.add_argument("--top-k", type=int, default=d.top_k, help="sampling: keep the k most likely tokens (0 = all)")
    g.add_argument("--top-p", type=float, default=d.top_p, help="sampling: nucleus mass (1.0 = all)")
    g.add_argument("--seed", type=int, default=None, help="sampling seed")
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help=f"always show a progress bar on stderr (default: from {PROGRESS_MIN_LINES} lines on)")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")


def decoding_config(args: argparse.Namespace):
    from .decoding import DecodingConfig

    from .decoding.threads import MAX_WORKERS

    if not 1 <= args.workers <= MAX_WORKERS:
        raise CLIError(f"--workers must be between 1 and {MAX_WORKERS}, got {args.workers}")
    n_best = args.n_best
    strategy = args.strategy or ("beam" if n_best > 1 else DecodingConfig.strategy)
    beam_size = args.beam_size if args.beam_size is not None else max(DecodingConfig.beam_size, n_best)
    try:
        return DecodingConfig(strategy=strategy, beam_size=beam_size, length_penalty=args.length_penalty,
                              n_best=n_best, batch_size=args.batch_size, max_len_offset=args.max_len_offset,
                              max_length=args.max_length, min_len=args.min_len, temperature=args.temperature,
                              top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    except ValueError as exc:
        raise CLIError(str(exc))


@contextlib.contextmanager
def decoding_workers(args: argparse.Namespace, model, engine="pytorch") -> Iterator[dict]:
    """``generate``'s ``workers=`` and ``engine=``: a DecodingPool engine for --parallel processes, else threads."""
    if args.workers == 1 or args.parallel == "threads" or engine != "pytorch":
        yield dict(workers=args.workers, engine=engine)
        return
    from .decoding import DecodingPool

    try:
        pool = DecodingPool(model, args.workers)
    except (ValueError, RuntimeError) as exc:
        raise CLIError(f"--workers {args.workers}: {exc}")
    with pool:
        yield dict(workers=1, engine=pool)


def set_threads(threads: Optional[int]) -> None:
    if threads is None:
        return
    if threads < 1:
        raise CLIError(f"--threads must be >= 1, got {threads}")
    import torch

    torch.set_num_threads(threads)


def _progress(args: argparse.Namespace, n_lines: int) -> bool:
    return bool(args.progress) if args.progress is not None else n_lines >= PROGRESS_MIN_LINES


def decoding_engine(args: argparse.Namespace, config):
    """What ``generate(..., engine=)`` gets for --engine / --compute-type, its options checked before any work."""
    if args.engine == "pytorch":
        return "pytorch"
    from .export import CTranslate2Engine, require

    try:
        require("ctranslate2", "--engine ctranslate2")
        engine = CTranslate2Engine(compute_type=args.compute_type)
        engine.check(config, args.workers)
    except (ValueError, ImportError) as exc:
        raise CLIError(str(exc))
    return engine


# --------------------------------------------------------------------------- translate
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
    add_decoding_arguments(parser)
    parser.add_argument("--engine", choices=["pytorch", "ctranslate2"], default="pytorch",
                        help="decode with PyTorch (default) or CTranslate2 (pip install ctranslate2; converted once)")
    parser.add_argument("--compute-type", default="float32",
                        help="with --engine ctranslate2: float32 (default: our greedy output), int8, ...")
    args = parser.parse_args(argv)
    glossary = translation_glossary(args)
    config = decoding_config(args)
    engine = decoding_engine(args, config)
    set_threads(args.threads)
    lines = read_input(args.input)
    prefixes = translation_prefixes(args, len(lines))
    if args.alternatives:
        config = _with_alternatives(config, args.alternatives)
    model = load_model(args.model or best_model_for(args), args.revision, args.device)
    from .decoding import generate

    with decoding_workers(args, model, engine) as runner:
        try:
            results = generate(model, lines, config, progress=_progress(args, len(lines)), prefix=prefixes,
                               split_sentences=args.split_sentences, glossary=glossary, **runner,
                               **check_languages(args, model))
        except ValueError as exc:  # a prefix longer than its sentence may be, an engine without prefixes
            raise CLIError(str(exc))
    for i, r in enumerate(results):  # a glossary term that could not fit the length budget
        for warning in r.warnings:
            print(f"line {i + 1}: {warning}", file=sys.stderr)
    with open_output(args.output) as out:
        if args.alternatives or args.json:
            write_json(out, results, model.tokenizer, alternatives=bool(args.alternatives))
        elif config.n_best == 1:
            for r in results:
                out.write(one_line(r.text) + "\n")
        else:
            for i, r in enumerate(results):
                for rank, h in enumerate(r.hypotheses):
                    out.write(f"{i}\t{rank}\t{h.score:.4f}\t{h.normalized_score:.4f}\t{one_line(h.text)}\n")
    return 0


def translation_glossary(args: argparse.Namespace):
    """``--glossary FILE``: its entries (checked before the model loads), or None; it asks for beam search."""
    if args.glossary is None:
        return None
    from .glossary import Glossary

    if args.engine != "pytorch":
        raise CLIError("--glossary needs --engine pytorch (CTranslate2 has no constrained search)")
    if args.strategy not in (None, "beam"):
        raise CLIError(f"--glossary needs beam search: drop --strategy {args.strategy} or use --strategy beam")
    args.strategy = "beam"
    try:
        return Glossary.load(args.glossary)
    except ValueError as exc:
        raise CLIError(f"--glossary {args.glossary}: {exc}")


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


def write_json(out: TextIO, results, tokenizer, alternatives: bool = False) -> None:
    """One JSON object per input line: its languages, best text and confidence, its hypotheses (each token's
    piece and, with ``alternatives``, its alternatives as [piece, prob]), and with --split-sentences its sentences."""
    for i, r in enumerate(results):
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


# --------------------------------------------------------------------------- evaluate
@command("evaluate", "translate --src and score it against --ref: sacreBLEU and chrF")
def evaluate_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} evaluate", description="Translate a test set and print sacreBLEU (cased; also "
                    "lowercased with --lowercase) and chrF, plus decoding speed.")
    add_model_arguments(parser)
    parser.add_argument("--src", required=True, help="source sentences, one a line (.gz allowed)")
    parser.add_argument("--ref", required=True, help="reference translations, one a line (.gz allowed)")
    parser.add_argument("--lowercase", action="store_true", help="also report lowercased BLEU (as some papers do)")
    parser.add_argument("--limit", type=int, default=None, help="score only the first N lines")
    parser.add_argument("--hyp-out", default=None, help="also write the hypotheses to this file")
    parser.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    add_decoding_arguments(parser)
    args = parser.parse_args(argv)
    config = decoding_config(args)
    if config.n_best != 1:
        raise CLIError("evaluate scores the best hypothesis only: drop --n-best")
    set_threads(args.threads)
    sources, references = read_input(args.src), read_input(args.ref)
    if len(sources) != len(references):
        raise CLIError(f"--src has {len(sources)} lines but --ref has {len(references)}")
    if args.limit is not None:
        if args.limit < 1:
            raise CLIError(f"--limit must be >= 1, got {args.limit}")
        sources, references = sources[: args.limit], references[: args.limit]
    if not sources:
        raise CLIError(f"{args.src} is empty")
    model = load_model(args.model or best_model_for(args), args.revision, args.device)
    from .decoding import generate

    with decoding_workers(args, model) as runner:  # started before the clock: the speed is the decoding's
        start = time.perf_counter()
        results = generate(model, sources, config, progress=_progress(args, len(sources)), **runner,
                           **check_languages(args, model))
        seconds = time.perf_counter() - start
    hypotheses = [one_line(r.text) for r in results]
    scores, signatures = score_with_signatures(hypotheses, references, lowercase=args.lowercase)
    scores.update({f"{name}_signature": signature for name, signature in signatures.items()})
    scores.update(sentences=len(sources), seconds=round(seconds, 3),
                  sentences_per_second=round(len(sources) / max(seconds, 1e-9), 2),
                  strategy=config.strategy, beam_size=config.beam_size if config.strategy == "beam" else None,
                  model=args.model)
    if args.hyp_out:
        with open_output(args.hyp_out) as out:
            out.writelines(h + "\n" for h in hypotheses)
    if args.json:
        print(json.dumps(scores))
    else:
        print(f"BLEU (cased) = {scores['bleu']:.2f}  [{scores['bleu_signature']}]")
        if args.lowercase:
            print(f"BLEU (lowercased) = {scores['bleu_lowercase']:.2f}  [{scores['bleu_lowercase_signature']}]")
        print(f"chrF = {scores['chrf']:.2f}  [{scores['chrf_signature']}]")
        print(f"{len(sources)} sentences in {seconds:.1f} s: {scores['sentences_per_second']:.1f} sentences/s "
              f"({config.strategy}{f', beam {config.beam_size}' if config.strategy == 'beam' else ''})")
    return 0


# --------------------------------------------------------------------------- export
@command("export", "convert a model for CTranslate2 (--format ctranslate2) or transformers' MarianMTModel (marian)")
def export_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} export", description="Write a folder that CTranslate2 (ctranslate2.Translator) or "
                    "transformers (MarianMTModel / MarianTokenizer, the paper's block only) loads directly.")
    parser.add_argument("--model", required=True, help="a save_pretrained folder or a Hub repo id")
    parser.add_argument("--revision", default=None, help="Hub revision (branch, tag or commit)")
    parser.add_argument("--format", required=True, choices=["ctranslate2", "marian"], help="the target runtime")
    parser.add_argument("--out", required=True, help="the folder to write")
    parser.add_argument("--quantization", default=None, help="ctranslate2 only: float32 (default), int8, int8_float32, "
                        "int16, float16, bfloat16, int8_float16, int8_bfloat16")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    from .export import export

    model = load_model(args.model, args.revision)
    try:
        path = export(model, args.out, args.format, quantization=args.quantization, force=args.force)
    except (ValueError, ImportError, OSError) as exc:  # refused variant, missing package, existing folder
        raise CLIError(str(exc).strip().splitlines()[0])
    print(f"wrote the {args.format} export of {args.model} to {path}")
    return 0


# --------------------------------------------------------------------------- train
@command("train", "train a model (forwards its arguments to transformer_hub.train)")
def train_command(argv: List[str]) -> int:
    from . import train

    status = train.main(argv)
    return status if isinstance(status, int) else 0


# --------------------------------------------------------------------------- download
@command("download", "download Multi30k (task 1, raw text) from the dataset's official GitHub files")
def download_command(argv: List[str]) -> int:
    parser = Parser(prog=f"{PROG} download", description="Fetch the Multi30k task-1 splits (train, val, test "
                    "2016/2017) into a folder `train --data-dir` reads; files already there are kept.")
    parser.add_argument("--langs", default=",".join(MULTI30K_LANGS),
                        help=f"comma-separated languages among {','.join(MULTI30K_LANGS)} (default: all four)")
    parser.add_argument("--dest", default=str(default_data_dir()), help="the folder to fill (default: %(default)s)")
    args = parser.parse_args(argv)
    langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
    unknown = [lang for lang in langs if lang not in MULTI30K_LANGS]
    if unknown or not langs:
        raise CLIError(f"--langs {args.langs}: Multi30k has {', '.join(MULTI30K_LANGS)}")
    try:
        written = download_multi30k(args.dest, langs)
    except OSError as exc:  # the folder cannot be created or written
        raise CLIError(f"cannot write to {args.dest}: {exc.strerror or exc}; choose another --dest")
    print(f"{len(written)} new file(s) in {args.dest} ({', '.join(langs)}); train with "
          f"`python -m {PROG} train --data-dir {args.dest} --out runs/NAME`")
    return 0


# --------------------------------------------------------------------------- entry point
def usage() -> str:
    names = COMMANDS.names()
    width = max(map(len, names))
    lines = [f"usage: python -m {PROG} [--debug] COMMAND [options]   (COMMAND --help for its options)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {getattr(COMMANDS.get(name), 'help', '')}" for name in names]
    lines += ["", f"--debug (or {DEBUG_ENV}=1) shows the traceback of an error"]
    return "\n".join(lines)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run a command; returns the exit status (0 ok, 2 user error, 1 anything unexpected)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes"}
    argv = [arg for arg in argv if arg != "--debug"]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from . import __version__

        print(f"{PROG} {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"{PROG}: error: unknown command {name!r}: use one of {', '.join(COMMANDS.names())} "
              f"(python -m {PROG} --help)", file=sys.stderr)
        return 2
    previous = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        return run_command(name, rest, debug)
    finally:
        warnings.showwarning = previous


def run_command(name: str, argv: List[str], debug: bool = False) -> int:
    """Run one registered command; every error ends as one line on stderr (and its traceback with ``debug``)."""
    try:
        status = COMMANDS.get(name)(argv)
    except SystemExit as exc:  # argparse's --help, or a forwarded command's own exit
        if isinstance(exc.code, str):
            print(f"{PROG} {name}: error: {exc.code}", file=sys.stderr)
            return 2
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG} {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `... | head`: the reader went away
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - reported in one line; --debug shows where it came from
        if debug:
            traceback.print_exc()
        if isinstance(exc, UserError):
            print(f"{PROG} {name}: error: {exc}", file=sys.stderr)
            return 2
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"{PROG} {name}: error: {type(exc).__name__}: {text} (unexpected; rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 1
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
