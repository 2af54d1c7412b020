"""What several commands share: reading input and writing output, loading a model (folder or Hub repo id; the
best shipped one for a direction when none is named), and the decoding options."""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from typing import Iterator, List, Optional, TextIO

from ..hub import is_repo_id
from ..training.data import read_lines
from .commands import CLIError

PROGRESS_MIN_LINES = 100  # show a progress bar (stderr) from this many input lines on


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


def load_model(name: str, revision: Optional[str] = None, device: str = "cpu"):
    """A ``save_pretrained`` folder or a Hub repo id -> Transformer with a tokenizer, on ``device``."""
    from ..transformer import Transformer

    if not os.path.isdir(name):
        if os.path.exists(name):
            raise CLIError(f"--model {name} is a file; give the model folder (config.json, model.safetensors, ...)")
        if not is_repo_id(name):
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


def shipped_candidates() -> list:
    """The model folders of space/models (or ``$TRANSFORMER_HUB_SPACE_MODELS``) as ``hub.selection`` candidates."""
    from ..hub.selection import candidates_in

    folder = models_folder()
    if not os.path.isdir(folder):
        raise CLIError(f"--model is required: there is no {folder} folder here to choose a model from")
    found = candidates_in(folder)
    if not found:
        raise CLIError(f"--model is required: {folder} holds no model folder to choose from")
    return found


def models_folder() -> str:
    return os.environ.get(MODELS_DIR_ENV) or os.path.join("space", "models")


def best_model_for(args: argparse.Namespace) -> str:
    """The folder of the best-measured model for ``--src-lang -> --tgt-lang`` among space/models (stderr says which)."""
    folder, found = models_folder(), served_direction(args)
    print(f"model: {found.source} (the best measured for {args.src_lang}->{args.tgt_lang} in {folder})",
          file=sys.stderr)
    return str(found.source)


def served_direction(args: argparse.Namespace):
    """The best-measured candidate of space/models for ``--src-lang -> --tgt-lang`` (one-line errors: no
    direction given, none serves it)."""
    from ..hub.selection import best_model

    folder, candidates = models_folder(), shipped_candidates()
    if not (args.src_lang and args.tgt_lang):
        raise CLIError(f"without --model, give --src-lang and --tgt-lang: the model of {folder} that translates "
                       "that direction best is used")
    found = best_model(candidates, args.src_lang, args.tgt_lang, getattr(args, "domain", None))
    if found is None:
        raise CLIError(f"no model in {folder} translates {args.src_lang}->{args.tgt_lang}; pass --model")
    return found


def check_languages(args: argparse.Namespace, model) -> dict:
    """``src_lang`` / ``tgt_lang`` for generate, checked against what the model serves (one-line error)."""
    try:
        model.config.check_pair(None if args.src_lang == "auto" else args.src_lang, args.tgt_lang)
    except ValueError as exc:
        raise CLIError(f"--src-lang/--tgt-lang: {exc}")
    return {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang}


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    from ..decoding import STRATEGIES, DecodingConfig

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
    from ..decoding import DecodingConfig

    from ..decoding.threads import MAX_WORKERS

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
    from ..decoding import DecodingPool

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


def progress(args: argparse.Namespace, n_lines: int) -> bool:
    return bool(args.progress) if args.progress is not None else n_lines >= PROGRESS_MIN_LINES


def decoding_engine(args: argparse.Namespace, config):
    """What ``generate(..., engine=)`` gets for --engine / --compute-type, its options checked before any work."""
    if args.engine == "pytorch":
        return "pytorch"
    from ..export import CTranslate2Engine, require

    try:
        require("ctranslate2", "--engine ctranslate2")
        engine = CTranslate2Engine(compute_type=args.compute_type)
        engine.check(config, args.workers)
    except (ValueError, ImportError) as exc:
        raise CLIError(str(exc))
    return engine


def translation_glossary(args: argparse.Namespace):
    """``--glossary FILE``: its entries (checked before the model loads), or None; it asks for beam search."""
    if args.glossary is None:
        return None
    from ..text.glossary import Glossary

    if args.engine != "pytorch":
        raise CLIError("--glossary needs --engine pytorch (CTranslate2 has no constrained search)")
    if args.strategy not in (None, "beam"):
        raise CLIError(f"--glossary needs beam search: drop --strategy {args.strategy} or use --strategy beam")
    args.strategy = "beam"
    try:
        return Glossary.load(args.glossary)
    except ValueError as exc:
        raise CLIError(f"--glossary {args.glossary}: {exc}")
