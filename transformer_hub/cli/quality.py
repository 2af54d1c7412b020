"""``translate --quality best``: the model folder's reranker (``transformer_hub.rerank``) in the text pipeline,
one line per line."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .commands import CLIError
from .options import (models_folder, best_model_for, check_languages, load_model, one_line, open_output, progress,
                      read_input, set_threads)


def translate_best(args: argparse.Namespace) -> int:
    """Rerank each line's n-best with the weights tuned beside the model (rerank.json), through the text pipeline
    (``translate_texts(RerankedModel(...), quality="best")``: --split-sentences and --src-lang auto as without)."""
    from ..rerank import RerankedModel
    from ..text.pipeline import translate_texts

    refused = [flag for flag, given in (("--prefix-file", args.prefix_file), ("--alternatives", args.alternatives),
                                        ("--json", args.json), ("--n-best", args.n_best != 1),
                                        ("--engine", args.engine != "pytorch"), ("--glossary", args.glossary is not None))
               if given]
    if refused:
        raise CLIError(f"--quality best does not combine with {', '.join(refused)}: it returns one reranked line each")
    if args.model is None and args.src_lang in (None, "auto"):
        raise CLIError("--quality best without --model needs --src-lang: the weights are tuned per direction")
    set_threads(args.threads)
    lines = read_input(args.input)
    name = args.model or tuned_model_for(args)
    model = load_model(name, args.revision, args.device)
    languages = check_languages(args, model)
    try:
        models = RerankedModel.from_pretrained(name, model=model)
        results = translate_texts(models, lines, split_sentences=args.split_sentences, quality="best",
                                  progress=progress(args, len(lines)), domain=args.domain, **languages)
    except ValueError as exc:  # no rerank.json, a direction it has no weights for, a text it does not read
        raise CLIError(str(exc))
    with open_output(args.output) as out:
        for r in results:
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
