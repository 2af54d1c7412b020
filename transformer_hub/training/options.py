"""The options of ``python -m transformer_hub train``: data, model, section 5's recipe."""
from __future__ import annotations

import argparse

from ..config import PRESETS
from .data import default_data_dir
from ..errors import Parser

DESCRIPTION = "The paper's training recipe (section 5) on parallel text, resumable exactly, optionally distributed."


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except None ("not given": the option's help says what then applies)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        return (action.help or "") if action.default is None else super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="transformer_hub train", description=DESCRIPTION, formatter_class=_Defaults)
    d = p.add_argument_group("data")
    d.add_argument("--data-dir", action="append", default=None, metavar="[NAME=]PATH",
                   help=f"Multi30k-style folder of {{split}}.{{lang}}[.gz] (default: {default_data_dir()}); repeat it "
                   "to mix corpora, each named: --data-dir captions=PATH --data-dir software=PATH")
    d.add_argument("--domain-tags", action=argparse.BooleanOptionalAction, default=False,
                   help="with named --data-dir folders: start each source with its corpus's domain tag "
                   "(<domain:NAME>, Kobus et al., 2017); decoding then takes domain=NAME (default: the first)")
    d.add_argument("--src-lang", default="en")
    d.add_argument("--tgt-lang", default="de")
    d.add_argument("--langs", default=None, help="a multilingual model over these languages, e.g. en,de,fr,cs: "
                   "every direction between them (target-language tags), from {split}.{lang} files in --data-dir")
    d.add_argument("--directions", default=None, help="with --langs: only these directions, e.g. en-de,de-en")
    d.add_argument("--train-split", default="train")
    d.add_argument("--valid-split", default="val")
    d.add_argument("--test-splits", default="test_2016_flickr,test_2017_flickr,test_2017_mscoco",
                   help="comma-separated splits scored at the end (missing ones are skipped)")
    d.add_argument("--train-src", help="your own aligned files instead of --data-dir (with --train-tgt)")
    d.add_argument("--train-tgt")
    d.add_argument("--valid-src")
    d.add_argument("--valid-tgt")
    d.add_argument("--limit", type=int, default=0, help="use only the first N training pairs (0 = all)")
    d.add_argument("--valid-limit", type=int, default=0, help="use only the first N validation pairs (0 = all)")
    t = p.add_argument_group("tokenizer")
    t.add_argument("--vocab-size", type=int, default=None, help="pieces in the SentencePiece model (default: 10000)")
    t.add_argument("--separate-vocab", action="store_true", help="one vocabulary per language (default: joint)")
    t.add_argument("--subword-sampling-alpha", type=float, default=0.0,
                   help="subword regularisation: re-segment the training text every epoch by SentencePiece "
                   "sampling with this alpha (e.g. 0.1; nbest -1); 0 = off. Decoding never samples")
    t.add_argument("--subword-sampling-side", default="source", choices=("source", "both"),
                   help="which training side is sampled (target too with 'both')")
    m = p.add_argument_group("model (a preset, then overrides)")
    m.add_argument("--preset", default=None, choices=sorted(PRESETS), help="the model's sizes before overrides (default: cpu)")
    m.add_argument("--init-from", metavar="DIR_OR_REPO", default=None,
                   help="start from this saved model's weights, config and tokenizer (a fresh optimizer and "
                   "schedule); architecture and vocabulary options must agree with it or be left out")
    for name, kind in (("d_model", int), ("n_heads", int), ("d_ff", int), ("n_encoder_layers", int),
                       ("n_decoder_layers", int), ("dropout", float), ("max_len", int), ("positional", str),
                       ("norm", str), ("feed_forward", str), ("attention", str), ("layout", str)):
        m.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, default=None)
    m.add_argument("--tag-position", default=None, choices=("source", "decoder"),
                   help="with --langs: the target-language tag starts the source (default) or follows bos at the "
                   "decoder's start (forced when decoding, never predicted)")
    m.add_argument("--no-share-embeddings", action="store_true")
    o = p.add_argument_group("optimisation (section 5)")
    o.add_argument("--max-tokens", type=int, default=8000, help="tokens per batch (per process)")
    o.add_argument("--peak-lr", type=float, default=0.005, help="sets the schedule's factor so that lr(warmup) = peak")
    o.add_argument("--lr-factor", type=float, default=None, help="the schedule's factor directly (overrides --peak-lr)")
    o.add_argument("--warmup", type=int, default=2000)
    o.add_argument("--cooldown-updates", type=int, default=0, metavar="K",
                   help="the rate falls linearly to 0 over the last K updates before --max-updates (0 = none); "
                   "a resumed run may add one to end on a low rate")
    o.add_argument("--label-smoothing", type=float, default=0.1)
    o.add_argument("--clip-norm", type=float, default=1.0)
    o.add_argument("--max-updates", type=int, default=8000)
    o.add_argument("--max-epochs", type=int, default=1000)
    o.add_argument("--max-minutes", type=float, default=0,
                   help="stop after this much wall time, validation included, summed over resumes (0 = no limit)")
    o.add_argument("--seed", type=int, default=1)
    r = p.add_argument_group("checkpoints, evaluation, publishing")
    r.add_argument("--out", required=True, help="run folder: checkpoints, metrics.jsonl, plots, final model")
    r.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in --out")
    r.add_argument("--save-every", type=int, default=0, help="also checkpoint every N updates (0 = each epoch only)")
    r.add_argument("--keep-last", type=int, default=10)
    r.add_argument("--average-last", type=int, default=10, help="average the last N checkpoints for the final model")
    r.add_argument("--bleu-every", type=int, default=1, help="score val BLEU every N epochs (loss every epoch)")
    r.add_argument("--valid-every", type=int, default=0,
                   help="also validate (loss, BLEU) and checkpoint every N updates (0 = at epoch ends only)")
    r.add_argument("--bleu-directions", type=int, default=3,
                   help="multilingual: directions scored with BLEU per validation, rotating through all of them")
    r.add_argument("--final-beam", type=int, default=5, help="beam size of the final evaluation (0 = skip it)")
    r.add_argument("--push-to-hub", metavar="REPO_ID")
    r.add_argument("--hub-private", action="store_true")
    r.add_argument("--hub-revision")
    r.add_argument("--device", default="cpu", help="cpu or cuda")
    r.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = all cores)")
    r.add_argument("--name", default=None, help="model name for the card")
    return p
