"""``python -m transformer_hub evaluate``: translate a test set and score it (sacreBLEU, chrF), with the speed."""
from __future__ import annotations

import json
import time
from typing import List

from ..errors import Parser
from ..training.metrics import score_with_signatures
from .commands import PROG, CLIError, command
from .options import (add_decoding_arguments, add_model_arguments, best_model_for, check_languages, decoding_config,
                      decoding_workers, load_model, one_line, open_output, progress, read_input, set_threads)


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
    from ..text.pipeline import generate_texts  # sentences, or detected with --src-lang auto

    with decoding_workers(args, model) as runner:  # started before the clock: the speed is the decoding's
        start = time.perf_counter()
        results = generate_texts(model, sources, config, progress=progress(args, len(sources)), **runner,
                                 domain=None, **check_languages(args, model))  # a test set: the model's default
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
