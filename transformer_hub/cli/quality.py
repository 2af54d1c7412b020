"""``translate --quality best``: the model folder's reranker (``transformer_hub.rerank``), one line per line."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .commands import CLIError
from .options import (models_folder, best_model_for, check_languages, load_model, one_line, open_output, progress,
                      read_input, set_threads)


def translate_best(args: argparse.Namespace) -> int:
    """Rerank each line's n-best with the weights tuned beside the model (rerank.json)."""
    from ..rerank import Reranker

    refused = [flag for flag, given in (("--prefix-file", args.prefix_file), ("--alternatives", args.alternatives),
                                        ("--json", args.json), ("--split-sentences", args.split_sentences),
                                        ("--n-best", args.n_best != 1), ("--engine", args.engine != "pytorch"),
                                        ("--glossary", args.glossary is not None))
               if given]
    if refused:
        raise CLIError(f"--quality best does not combine with {', '.join(refused)}: it returns one reranked line each")
    set_threads(args.threads)
    lines = read_input(args.input)
    name = args.model or tuned_model_for(args)
    model = load_model(name, args.revision, args.device)
    check_languages(args, model)
    if args.src_lang == "auto":
        raise CLIError("--quality best needs --src-lang: the weights are tuned per direction")
    try:
        reranker = Reranker.from_pretrained(name, model=model)
        outputs = reranker.generate(lines, args.src_lang, args.tgt_lang, progress=progress(args, len(lines)))
    except ValueError as exc:  # no rerank.json, a direction it has no weights for
        raise CLIError(str(exc))
    with open_output(args.output) as out:
        for r in outputs:
            out.write(one_line(r.text) + "\n")
    return 0


def tuned_model_for(args: argparse.Namespace) -> str:
    """Without --model: the folder of space/models whose rerank.json has weights for the direction (else the best)."""
    from ..rerank import RERANK_FILE, RerankFile

    folder = Path(models_folder())
    for path in sorted(folder.glob(f"*/{RERANK_FILE}")):
        if f"{args.src_lang}-{args.tgt_lang}" in RerankFile.load(path).directions:
            print(f"model: {path.parent} (its reranker is tuned for {args.src_lang}->{args.tgt_lang})", file=sys.stderr)
            return str(path.parent)
    return best_model_for(args)
