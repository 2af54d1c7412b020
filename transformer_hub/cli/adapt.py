"""``python -m transformer_hub adapt``: fine-tune a saved model on a project's own translations in a time budget
(``transformer_hub.training.adapt``), and write the adapted model's folder."""
from __future__ import annotations

import shlex
from typing import List

from ..errors import Parser
from .commands import PROG, CLIError, command


@command("adapt", "fine-tune a model on your project's translations (.po, .tmx, .tsv) in --minutes, measured")
def adapt_command(argv: List[str]) -> int:
    from ..training.adapt import AdaptConfig, adapt

    parser = Parser(prog=f"{PROG} adapt", description="Teach a saved model your project's words: its translated "
                    "pairs learn a new domain tag, mixed with a replay of the model's own corpora, until the "
                    "minutes are spent; the held-out pairs (never trained on) are scored before and after.")
    parser.add_argument("--from", dest="base", required=True, help="the model to start from: a save_pretrained "
                        "folder (e.g. space/models/multilingual-v4) or a Hub repo id")
    parser.add_argument("--data", action="append", required=True, metavar="FILE",
                        help="the project's translations, repeatable: .po, .tmx, .tsv (source<TAB>target), two "
                             "aligned files as SOURCE,TARGET, or a folder of `suggestions export`; files of "
                             "several directions (de.po, fr.po) adapt them all in one run")
    parser.add_argument("--out", required=True, help="the folder to write the adapted model into")
    parser.add_argument("--minutes", type=float, default=30.0, help="the training's time budget (default 30)")
    parser.add_argument("--domain", default=None, help="the project's domain name (default: from --out's name)")
    parser.add_argument("--src-lang", default=None, help="the source language, when the files do not say")
    parser.add_argument("--tgt-lang", default=None, help="the target language, when the files do not say")
    parser.add_argument("--replay-data", action="append", default=[], metavar="[NAME=]DIR",
                        help="a corpus the model was trained on ({split}.{lang} files, e.g. Multi30k, the "
                             "LibreOffice help), named by its domain; repeatable")
    defaults = AdaptConfig(base="", data=["-"], out="")
    for name, kind, text in (
            ("replay_share", float, "the replayed pairs' share of each direction's examples in an epoch"),
            ("holdout", float, "the share of the project's source sentences held out to score"),
            ("seed", int, "the seed of the hold-out, the batches and the replay"),
            ("max_updates", int, "stop after this many updates too (0: only the minutes)"),
            ("eval_every", int, "updates between held-out BLEU measurements"),
            ("eval_limit", int, "held-out pairs per direction those measurements score (0: all)"),
            ("max_tokens", int, "tokens per batch"), ("peak_lr", float, "the learning rate after warm-up"),
            ("warmup", int, "warm-up updates"), ("val_limit", int, "pairs of each replayed val scored"),
            ("beam", int, "the beam of the before/after scores (1: greedy)"),
            ("threads", int, "torch threads (0: torch's choice)")):
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=getattr(defaults, name),
                            help=f"{text} (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        config = AdaptConfig(**vars(args))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    adapt(config, command=f"python -m {PROG} adapt " + " ".join(shlex.quote(a) for a in argv))
    return 0
