"""``python -m transformer_hub translate-corpus INPUT OUTPUT``: a whole corpus through the translation pipeline
on Ray Data (``transformer_hub.scale``), N actors each with the models loaded once, resumable block by block."""
from __future__ import annotations

import json
import os
import sys
from typing import List

from ..errors import Parser
from .commands import PROG, CLIError, command
from .options import add_decoding_arguments, decoding_config, models_folder, translation_glossary

SHOWN_BAD_LINES = 20  # stderr names this many bad lines; the rest are counted (and all are in the error file)


@command("translate-corpus", "translate a whole file on Ray Data (N actors, resumable; pip install "
                             "'transformer_hub[scale]')")
def translate_corpus_command(argv: List[str]) -> int:
    args = _parser().parse_args(argv)
    if args.workers != 1:
        raise CLIError("translate-corpus decodes one batch at a time per actor: use --actors N, not --workers")
    if not os.path.isfile(args.input):
        raise CLIError(f"cannot read {args.input}: no such file")
    if os.path.abspath(args.input) == os.path.abspath(args.output):
        raise CLIError("OUTPUT must not be INPUT")
    if args.actors < 1:
        raise CLIError(f"--actors must be >= 1, got {args.actors}")
    from ..scale import CorpusJob, run_job

    if args.quality == "best" and (args.engine != "pytorch" or args.glossary is not None):
        raise CLIError("--quality best does not combine with --engine ctranslate2 or --glossary: the reranker runs "
                       "its own tuned search")
    glossary = translation_glossary(args)  # before Ray starts: a bad file is one line, at once
    config = decoding_config(args)
    options = dict(model=args.model or _default_model(args), src_lang=args.src_lang, tgt_lang=args.tgt_lang,
                   config=config, split_sentences=args.split_sentences, glossary=glossary, engine=args.engine,
                   quality=args.quality)
    if args.quality == "best":
        _check_reranker(options["model"])
    job = CorpusJob(args.input, args.output, options, field=args.field, block_lines=args.block_lines,
                    actors=args.actors, address=args.address, progress=args.progress is not False)
    try:
        report = run_job(job)
    except ValueError as exc:  # the pipeline's refusal of the whole job (no --tgt-lang for a multilingual model)
        raise CLIError(str(exc))
    _report_bad_lines(args.output, report.bad, jsonl=args.output.endswith((".jsonl", ".jsonl.gz")))
    print(f"translated {report.lines} lines in {report.blocks} blocks ({report.translated_blocks} this run, "
          f"{report.blocks - report.translated_blocks} done before); {len(report.bad)} bad", file=sys.stderr)
    return 0


def _default_model(args) -> str:
    """Without --model: space/models (each line its direction's best model); with --quality best, the model whose
    reranker is tuned for --src-lang -> --tgt-lang, as ``translate --quality best`` picks it."""
    if args.quality == "fast":
        return models_folder()
    if args.src_lang in (None, "auto"):
        raise CLIError("--quality best without --model needs --src-lang: the weights are tuned per direction")
    from .quality import tuned_model_for

    return tuned_model_for(args)


def _check_reranker(model: str) -> None:
    """Before Ray starts: --quality best needs one model folder with its rerank.json (an actor could only fail)."""
    from ..rerank import RERANK_FILE

    if not os.path.isfile(os.path.join(model, "config.json")):
        raise CLIError(f"--quality best needs --model to be one model folder with its {RERANK_FILE}, not {model}")
    if not os.path.isfile(os.path.join(model, RERANK_FILE)):
        raise CLIError(f"{model} has no {RERANK_FILE}: tune one with `python -m scripts.tune_rerank`, or use "
                       "--quality fast")


def _parser() -> Parser:
    parser = Parser(prog=f"{PROG} translate-corpus", description="Translate INPUT (text, .gz, or JSON lines: "
                    ".jsonl[.gz], the --field of each) into OUTPUT in input order (JSON lines for a .jsonl OUTPUT: "
                    "id, text, src_lang, model, error), on Ray Data. Blocks of --block-lines are written to "
                    "OUTPUT.parts/ as they finish; run the same command again to resume an interrupted job.")
    parser.add_argument("input", metavar="INPUT")
    parser.add_argument("output", metavar="OUTPUT")
    parser.add_argument("--model", default=None, help="a model folder, or a folder of them (each line: its "
                        "direction's best-scored model; default: space/models)")
    parser.add_argument("--src-lang", default="auto", help="source language code, or 'auto' (default): per line")
    parser.add_argument("--tgt-lang", default=None, help="target language code")
    parser.add_argument("--address", default=None, help="a Ray cluster to join ('auto': the one this machine "
                        "belongs to); default: a local cluster for this job")
    parser.add_argument("--actors", type=int, default=2, help="translating actors, one CPU and one copy of the "
                        "models each (default 2)")
    parser.add_argument("--field", default="text", help="the field of each JSON line to translate (default text)")
    parser.add_argument("--block-lines", type=int, default=1000, help="lines per block, the unit of resuming "
                        "(default 1000)")
    parser.add_argument("--split-sentences", action="store_true",
                        help="translate each sentence of a line on its own and put them back in the line's layout")
    parser.add_argument("--glossary", default=None, metavar="FILE", help="source<TAB>target terms (beam search)")
    parser.add_argument("--engine", choices=["pytorch", "ctranslate2"], default="pytorch")
    parser.add_argument("--quality", choices=["fast", "best"], default="fast", help="best: rerank each line's "
                        "5-best with the weights tuned beside --model (its rerank.json), as translate --quality best")
    add_decoding_arguments(parser)
    return parser


def _report_bad_lines(output: str, bad: list, jsonl: bool) -> None:
    """Name the bad lines on stderr (1-based, as editors count); a text OUTPUT gets them all in OUTPUT.errors.jsonl
    (a JSON lines OUTPUT carries them in its error field)."""
    for row in bad[:SHOWN_BAD_LINES]:
        print(f"line {row['id'] + 1}: {row['error']}", file=sys.stderr)
    if len(bad) > SHOWN_BAD_LINES:
        print(f"... and {len(bad) - SHOWN_BAD_LINES} more bad lines", file=sys.stderr)
    if bad and not jsonl:
        with open(output + ".errors.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps({"line": r["id"] + 1, "error": r["error"]}, ensure_ascii=False) + "\n"
                          for r in bad)
        print(f"bad lines (empty in {output}): {output}.errors.jsonl", file=sys.stderr)
