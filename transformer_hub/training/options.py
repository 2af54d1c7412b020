"""The options of ``python -m transformer_hub train`` (data, model, section 5's recipe), parsed into a ``TrainingConfig``."""
from __future__ import annotations

import argparse
from dataclasses import MISSING, fields
from typing import Optional, Sequence

from ..config import PRESETS
from ..errors import Parser, UserError
from .config import TrainingConfig
from .data import default_data_dir
from .precision import PRECISIONS

DESCRIPTION = "The paper's training recipe (section 5) on parallel text, resumable exactly, optionally distributed."


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except None ("not given": the option's help says what then applies)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        return (action.help or "") if action.default is None else super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    """The command line; its defaults are ``TrainingConfig``'s."""
    p = Parser(prog="transformer_hub train", description=DESCRIPTION, formatter_class=_Defaults)
    for group in (_data, _tokenizer, _model, _optimisation, _publishing):
        group(p)
    p.set_defaults(**{f.name: f.default for f in fields(TrainingConfig) if f.default is not MISSING})
    return p


def parse_config(argv: Optional[Sequence[str]] = None) -> TrainingConfig:
    """The ``TrainingConfig`` a command line asks for; a bad value is a one-line ``UserError``."""
    try:
        return TrainingConfig(**vars(build_parser().parse_args(argv)))
    except ValueError as exc:
        raise UserError(f"{exc} (see transformer_hub train --help)") from exc


def _data(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("data")
    d.add_argument("--data-dir", action="append", metavar="[NAME=]PATH",
                   help=f"Multi30k-style folder of {{split}}.{{lang}}[.gz] (default: {default_data_dir()}); repeat it "
                   "to mix corpora, each named: --data-dir captions=PATH --data-dir software=PATH")
    d.add_argument("--domain-tags", action=argparse.BooleanOptionalAction,
                   help="with named --data-dir folders: start each source with its corpus's domain tag "
                   "(<domain:NAME>, Kobus et al., 2017); decoding then takes domain=NAME (default: the first)")
    d.add_argument("--upsample", action="append", metavar="NAME=N",
                   help="the named corpus's training pairs N times in every epoch (a small corpus beside a large "
                   "one: --upsample captions=3); repeatable")
    d.add_argument("--src-lang")
    d.add_argument("--tgt-lang")
    d.add_argument("--langs", help="a multilingual model over these languages, e.g. en,de,fr,cs: "
                   "every direction between them (target-language tags), from {split}.{lang} files in --data-dir")
    d.add_argument("--directions", help="with --langs: only these directions, e.g. en-de,de-en")
    d.add_argument("--train-split")
    d.add_argument("--valid-split")
    d.add_argument("--test-splits",
                   help="comma-separated splits scored at the end (missing ones are skipped)")
    d.add_argument("--train-src", help="your own aligned files instead of --data-dir (with --train-tgt)")
    d.add_argument("--train-tgt")
    d.add_argument("--valid-src")
    d.add_argument("--valid-tgt")
    d.add_argument("--limit", type=int, help="use only the first N training pairs (0 = all)")
    d.add_argument("--valid-limit", type=int, help="use only the first N validation pairs (0 = all)")


def _tokenizer(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("tokenizer")
    t.add_argument("--vocab-size", type=int, help="pieces in the SentencePiece model (default: 10000)")
    t.add_argument("--separate-vocab", action="store_true", help="one vocabulary per language (default: joint)")
    t.add_argument("--tokenizer-lines", type=int, metavar="N",
                   help="train the tokenizer on at most N distinct lines of each language of each corpus (a seeded "
                   "sample), so that a large corpus does not outweigh the others (default: 0 = every line)")
    t.add_argument("--new-vocabulary", action="store_true",
                   help="with --init-from: train a new joint tokenizer on this run's corpora (--vocab-size, "
                   "--tokenizer-lines) and move the model's tables onto it: a piece both vocabularies have keeps "
                   "its row, a new one starts from the rows of the old pieces that spell it")
    t.add_argument("--subword-sampling-alpha", type=float,
                   help="subword regularisation: re-segment the training text every epoch by SentencePiece "
                   "sampling with this alpha (e.g. 0.1; nbest -1); 0 = off. Decoding never samples")
    t.add_argument("--subword-sampling-side", choices=("source", "both"),
                   help="which training side is sampled (target too with 'both')")


def _model(p: argparse.ArgumentParser) -> None:
    m = p.add_argument_group("model (a preset, then overrides)")
    m.add_argument("--preset", choices=sorted(PRESETS), help="the model's sizes before overrides (default: cpu)")
    m.add_argument("--init-from", metavar="DIR_OR_REPO",
                   help="start from this saved model's weights, config and tokenizer (a fresh optimizer and "
                   "schedule); architecture and vocabulary options must agree with it or be left out")
    for name, kind in (("d_model", int), ("n_heads", int), ("d_ff", int), ("n_encoder_layers", int),
                       ("n_decoder_layers", int), ("dropout", float), ("max_len", int), ("positional", str),
                       ("norm", str), ("feed_forward", str), ("attention", str), ("layout", str)):
        m.add_argument("--" + name.replace("_", "-"), dest=name, type=kind)
    m.add_argument("--tag-position", choices=("source", "decoder"),
                   help="with --langs: the target-language tag starts the source (default) or follows bos at the "
                   "decoder's start (forced when decoding, never predicted)")
    m.add_argument("--no-share-embeddings", action="store_true")


def _optimisation(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("optimisation (section 5)")
    o.add_argument("--max-tokens", type=int, help="tokens per batch (per process)")
    o.add_argument("--peak-lr", type=float, help="sets the schedule's factor so that lr(warmup) = peak")
    o.add_argument("--lr-factor", type=float, help="the schedule's factor directly (overrides --peak-lr)")
    o.add_argument("--warmup", type=int)
    o.add_argument("--cooldown-updates", type=int, metavar="K",
                   help="the rate falls linearly to 0 over the last K updates before --max-updates (0 = none); "
                   "a resumed run may add one to end on a low rate")
    o.add_argument("--label-smoothing", type=float)
    o.add_argument("--speed-kernels", action="store_true", help="train with the fused loss and the 16-bit dropout "
                   "mask (transformer_hub.model.kernels: the same numbers, a faster CPU step)")
    o.add_argument("--precision", choices=PRECISIONS, help="bf16: autocast forward and loss in bfloat16 (weights and "
                   "optimizer stay float32); auto: bf16 where the CPU has bf16 units (amx_bf16, avx512_bf16), else float32")
    o.add_argument("--clip-norm", type=float)
    o.add_argument("--max-updates", type=int)
    o.add_argument("--max-epochs", type=int)
    o.add_argument("--max-minutes", type=float,
                   help="stop after this much wall time, validation included, summed over resumes (0 = no limit)")
    o.add_argument("--seed", type=int)


def _publishing(p: argparse.ArgumentParser) -> None:
    r = p.add_argument_group("checkpoints, evaluation, publishing")
    r.add_argument("--out", required=True, help="run folder: checkpoints, metrics.jsonl, plots, final model")
    r.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    r.add_argument("--save-every", type=int, help="also checkpoint every N updates (0 = each epoch only)")
    r.add_argument("--keep-last", type=int)
    r.add_argument("--average-last", type=int, help="average the last N checkpoints for the final model")
    r.add_argument("--bleu-every", type=int, help="score val BLEU every N epochs (loss every epoch)")
    r.add_argument("--valid-every", type=int,
                   help="also validate (loss, BLEU) and checkpoint every N updates (0 = at epoch ends only)")
    r.add_argument("--bleu-directions", type=int,
                   help="multilingual: directions scored with BLEU per validation, rotating through all of them")
    r.add_argument("--final-beam", type=int, help="beam size of the final evaluation (0 = skip it)")
    r.add_argument("--push-to-hub", metavar="REPO_ID")
    r.add_argument("--hub-private", action="store_true")
    r.add_argument("--hub-revision")
    r.add_argument("--device", help="cpu or cuda")
    r.add_argument("--threads", type=int, help="torch CPU threads (0 = all cores)")
    r.add_argument("--name", help="model name for the card")
