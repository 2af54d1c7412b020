#!/usr/bin/env python
"""A reproducible "Table 3" on Multi30k En->De: architecture variants trained on one identical budget.

    python -m scripts.variant_study --out runs/variant-study              # all variants, resumable
    python -m scripts.variant_study --variants paper,modern --max-updates 300 --limit 2000   # a quick look

Every variant gets the same budget: the same number of updates (--max-updates, each of at
most --max-tokens tokens), the same learning-rate schedule, the same SentencePiece vocabulary
(trained once into <out>/tokenizer and copied into every run), the same seed and therefore the
same batches in the same order.  Each run is an ordinary ``transformer_hub.training.trainer.Trainer`` run
in <out>/<variant> (checkpoints every epoch, last 10 averaged); the averaged model is then
scored with the same decoding (beam --final-beam, default 5) on val and test_2016_flickr.

Written by the script, never by hand: <out>/results.json and <ship-to>/results.json (the budget
and one row per variant, read by the Space's "Architecture variants" tab), <ship-to>/results.md,
<ship-to>/validation_curves.png, and <ship-to>/<variant>/ (``save_pretrained``) for every
architecture variant (the extra-seed repeats of ``paper`` are measured, not shipped).

Resumable: a variant whose final record exists is skipped; an interrupted one (Ctrl-C, kill)
continues from its newest checkpoint (the Trainer's --resume).  Rerun the same command.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple


from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.training import checkpoint as ckpt
from transformer_hub.hub import results as results_json
from transformer_hub.config import MAX_LAYERS, PRESETS
from transformer_hub.training.data import default_data_dir, load_split
from transformer_hub.training.metrics import MetricsLog, score
from transformer_hub.training.config import TrainingConfig
from transformer_hub.training.trainer import Trainer

logger = logging.getLogger("variant_study")

# --------------------------------------------------------------------------- the variants
PAPER: Dict[str, Any] = {"layout": "encoder-decoder", "positional": "sinusoidal", "norm": "post",
                         "feed_forward": "relu"}
MATCH_PAPER = "match-paper"  # n_decoder_layers: as many as bring the parameter count closest to `paper`
VARIANTS: Dict[str, Dict[str, Any]] = {  # name -> overrides of PAPER on the preset (cpu: 128/4 heads/256/4+4)
    "paper": {},
    "learned-pos": {"positional": "learned"},
    "pre-norm": {"norm": "pre"},
    "modern": {"norm": "pre", "positional": "rope", "feed_forward": "swiglu"},
    "decoder-only": {"layout": "decoder-only", "n_encoder_layers": 0, "n_decoder_layers": MATCH_PAPER},
}
PARAM_TOLERANCE = 0.10  # decoder-only must be within 10 % of paper's parameter count
SRC, TGT, TEST_SPLIT = "en", "de", "test_2016_flickr"
DECODE_BATCH = 200  # sentences per decoding batch (as the Trainer's own evaluation)
RECORD = "variant.json"  # <out>/<variant>/variant.json: written last, marks a finished variant
BUDGET_KEYS = ("updates", "max_tokens", "warmup", "peak_lr", "save_every", "average_last", "preset", "max_len",
               "vocab_size", "train_limit",
               "valid_limit", "test_limit", "beam", "seeds")  # a rerun must match these


def plan(seeds: Sequence[int]) -> Dict[str, Dict[str, Any]]:
    """Variant name -> overrides with its seed: every architecture on seeds[0], ``paper-seedN`` for the others."""
    runs = {name: {**PAPER, **overrides, "seed": seeds[0]} for name, overrides in VARIANTS.items()}
    runs.update({f"paper-seed{seed}": {**PAPER, "seed": seed} for seed in seeds[1:]})
    return runs


def variant_config(preset: str, vocab_size: int, overrides: Dict[str, Any],
                   max_len: Optional[int] = None) -> TransformerConfig:
    """The config a variant trains with (tied embeddings over one joint vocabulary, as the Trainer builds it)."""
    fields = {k: v for k, v in overrides.items() if k != "seed"}
    if max_len:
        fields["max_len"] = max_len
    if fields.get("n_decoder_layers") == MATCH_PAPER:
        fields["n_decoder_layers"] = matched_decoder_layers(variant_config(preset, vocab_size, PAPER, max_len))
    return TransformerConfig.preset(preset, **fields, src_vocab_size=vocab_size, tgt_vocab_size=vocab_size,
                                    share_embeddings=True, src_lang=SRC, tgt_lang=TGT)


def matched_decoder_layers(paper: TransformerConfig) -> int:
    """The decoder-only depth whose parameter count is closest to ``paper``'s (asserted within 10 %)."""
    target = paper.num_parameters()
    counts = {n: dataclasses.replace(paper, layout="decoder-only", n_encoder_layers=0,
                                     n_decoder_layers=n).num_parameters() for n in range(1, MAX_LAYERS + 1)}
    best = min(counts, key=lambda n: abs(counts[n] - target))
    if abs(counts[best] - target) > PARAM_TOLERANCE * target:
        raise AssertionError(f"no decoder-only depth within {PARAM_TOLERANCE:.0%} of {target:,} parameters")
    return best


# --------------------------------------------------------------------------- one run
def training_config(args: argparse.Namespace, run: Path, config: TransformerConfig, seed: int) -> TrainingConfig:
    """The ``TrainingConfig`` of one variant: the shared budget plus its architecture."""
    architecture = {key: getattr(config, key) for key in ("layout", "positional", "norm", "feed_forward",
                                                          "n_encoder_layers", "n_decoder_layers", "max_len")}
    return TrainingConfig(
        out=str(run), resume=True, data_dir=[str(args.data_dir)], src_lang=SRC, tgt_lang=TGT, preset=args.preset,
        vocab_size=args.vocab_size, max_updates=args.max_updates, max_epochs=10 ** 9, max_tokens=args.max_tokens,
        warmup=args.warmup, peak_lr=args.peak_lr, save_every=args.save_every, average_last=args.average_last,
        limit=args.limit, valid_limit=args.valid_limit, seed=seed, threads=args.threads, final_beam=0,
        test_splits="", name=f"transformer_hub en-de variant {run.name}", **architecture)


def evaluate(model: Transformer, pairs: Sequence[Tuple[str, str]], beam: int) -> Tuple[Dict[str, float], float]:
    """sacreBLEU/chrF of beam search over ``pairs`` and the seconds decoding took."""
    model.eval()
    started = time.perf_counter()
    hypotheses = model.translate([s for s, _ in pairs], strategy="beam", beam_size=beam, batch_size=DECODE_BATCH)
    seconds = time.perf_counter() - started
    return {k: round(v, 2) for k, v in score(hypotheses, [t for _, t in pairs]).items()}, seconds


def train_variant(args: argparse.Namespace, name: str, overrides: Dict[str, Any], tokenizer: Path,
                  test_pairs: Sequence[Tuple[str, str]], n_pairs: int) -> Optional[Dict[str, Any]]:
    """Train (or resume) one variant, score it, ship it; returns its record, or None when interrupted."""
    run = Path(args.out) / name
    vocab = Tokenizer.from_directory(tokenizer).tgt_vocab_size
    config = variant_config(args.preset, vocab, overrides, args.max_len)
    shutil.copytree(tokenizer, run / "tokenizer", dirs_exist_ok=True)  # the Trainer reuses it, never retrains
    if not ckpt.list_checkpoints(run / "checkpoints"):
        (run / "metrics.jsonl").unlink(missing_ok=True)  # a run killed before its first checkpoint starts over
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    trainer = Trainer(training_config(args, run, config, overrides["seed"]))
    if dataclasses.asdict(trainer.run.config) != dataclasses.asdict(config):
        raise RuntimeError(f"{name}: the Trainer built {trainer.run.config}, not the planned {config}")
    count = len(trainer.run.train_examples)
    if count != n_pairs:  # check_lengths() should have caught it: the same data for every variant
        raise RuntimeError(f"{name} kept {count} of the {n_pairs} training pairs; raise --max-len")
    c = trainer.run.config
    logger.info("%s: %s, %s positions, %s-norm, %s, %d+%d layers, %s parameters, seed %d, %d pairs, step %d of %d",
                name, c.layout, c.positional, c.norm, c.feed_forward, c.n_encoder_layers, c.n_decoder_layers,
                f"{trainer.run.model.num_parameters():,}", overrides["seed"], count, trainer.run.state.step,
                args.max_updates)
    try:
        final = trainer.train()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if final is None:
        return None
    s, training = trainer.run.state, results_json.load(run / "results.json").models[0].training
    if not s.step == training["updates"] == args.max_updates:
        raise RuntimeError(f"{name} stopped after {training['updates']} updates, not the budget's {args.max_updates}")
    val, _ = evaluate(trainer.run.model, trainer.run.valid_pairs, args.final_beam)
    test, seconds = evaluate(trainer.run.model, test_pairs, args.final_beam)
    record = {
        "name": name, "seed": overrides["seed"], "layout": c.layout, "positional": c.positional, "norm": c.norm,
        "feed_forward": c.feed_forward, "attention": c.attention, "d_model": c.d_model, "n_heads": c.n_heads,
        "d_ff": c.d_ff, "n_encoder_layers": c.n_encoder_layers, "n_decoder_layers": c.n_decoder_layers,
        "layers": f"{c.n_encoder_layers}+{c.n_decoder_layers}", "parameters": trainer.run.model.num_parameters(),
        "updates": training["updates"], "epochs": training["epochs"], "train_pairs": count,
        "train_seconds": round(s.train_seconds, 2),  # training updates only: no validation, checkpoints, eval
        "train_wall_seconds": round(s.wall_seconds, 2),  # the Trainer's clock: + validation between epochs
        "train_tokens": s.tokens, "train_tokens_per_s": round(s.tokens / max(s.train_seconds, 1e-9), 1),
        "beam": args.final_beam, "val": val, TEST_SPLIT: test, "decode_sentences": len(test_pairs),
        "decode_seconds": round(seconds, 3), "decode_sentences_per_s": round(len(test_pairs) / max(seconds, 1e-9), 2),
    }
    record["model"] = ship(trainer.run.model, record, run, args) if not name.startswith("paper-seed") else None
    (run / (RECORD + ".tmp")).write_text(json.dumps(record, indent=1))
    (run / (RECORD + ".tmp")).replace(run / RECORD)
    return record


def ship(model: Transformer, record: Dict[str, Any], run: Path, args: argparse.Namespace) -> str:
    """``save_pretrained`` the averaged model to <ship-to>/<name>/ with its scores on the model card."""
    dest = Path(args.ship_to) / record["name"]
    results = [{"dataset_name": "Multi30k", "dataset_type": "multi30k", "split": split, "metric": metric,
                "metric_name": results_json.METRICS[metric], "value": record[split][metric]}
               for split in ("val", TEST_SPLIT) for metric in ("bleu", "chrf")]
    training = {k: record[k] for k in ("updates", "epochs", "train_seconds", "train_tokens_per_s", "seed")}
    model.card_data = {**model.card_data, "name": f"transformer_hub en-de variant study: {record['name']}",
                       "datasets": ["multi30k"], "results": results, "plot": str(run / "training_curves.png"),
                       "training": {**training, "beam": record["beam"], "max_tokens_per_batch": args.max_tokens}}
    model.save_pretrained(dest)
    shutil.copyfile(run / "metrics.jsonl", dest / "metrics.jsonl")
    return str(dest)


# --------------------------------------------------------------------------- reports
ARCHITECTURE = ("layout", "positional", "norm", "feed_forward", "attention", "d_model", "n_heads", "d_ff",
                "n_encoder_layers", "n_decoder_layers")
TRAINING = ("seed", "updates", "epochs", "train_pairs", "train_seconds", "train_wall_seconds", "train_tokens",
            "train_tokens_per_s")
METRICS = ("bleu", "bleu_lowercase", "chrf")


def study_results(budget: Dict[str, Any], records: List[Dict[str, Any]], folder: Path) -> results_json.Results:
    """The study as a ``results.json`` (``transformer_hub.hub.results``): model paths relative to ``folder``."""
    models, scores = [], []
    for r in records:
        path = results_json.relative_path(r["model"], folder) if r.get("model") else None
        models.append(results_json.ModelResult(
            name=r["name"], path=path, parameters=r["parameters"], architecture={k: r[k] for k in ARCHITECTURE},
            training={k: r[k] for k in TRAINING},
            decoding={"beam": r["beam"], "sentences": r["decode_sentences"], "seconds": r["decode_seconds"],
                      "sentences_per_s": r["decode_sentences_per_s"]}))
        scores += [results_json.Score(model=r["name"], split=split, metric=metric, value=r[split][metric],
                                      direction=f"{SRC}-{TGT}")
                   for split in ("val", TEST_SPLIT) for metric in METRICS if metric in r.get(split, {})]
    settings = {k: v for k, v in budget.items() if k not in ("tokenizer", "data_dir")}  # machine paths stay out
    return results_json.Results(models=models, results=scores, settings=settings)


def markdown(budget: Dict[str, Any], records: List[Dict[str, Any]]) -> str:
    """The results table, one row per variant, with the shared budget above it."""
    head = (f"Multi30k {SRC}->{TGT}, identical budget for every variant: {budget['updates']} updates of <= "
            f"{budget['max_tokens']} tokens, warmup {budget['warmup']}, peak lr {budget['peak_lr']}, last "
            f"{budget.get('average_last', 10)} checkpoints averaged, one joint "
            f"SentencePiece vocabulary of {budget['vocabulary']} pieces, preset `{budget['preset']}`, "
            f"{budget['train_pairs']} training pairs; beam {budget['beam']}, sacreBLEU cased; train min = "
            "time in training updates only.\n\n")
    cols = ["variant", "layout", "positional", "norm", "FFN", "layers", "params", "updates", "seed", "train min",
            "train tok/s", "val BLEU", "val chrF", "test16 BLEU", "test16 chrF", "decode sent/s"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in records:
        cells = [r["name"], r["layout"], r["positional"], r["norm"], r["feed_forward"], r["layers"],
                 f"{r['parameters']:,}", r["updates"], r["seed"], f"{r['train_seconds'] / 60:.1f}",
                 f"{r['train_tokens_per_s']:,.0f}", f"{r['val']['bleu']:.2f}", f"{r['val']['chrf']:.2f}",
                 f"{r[TEST_SPLIT]['bleu']:.2f}", f"{r[TEST_SPLIT]['chrf']:.2f}", f"{r['decode_sentences_per_s']:.1f}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return head + "\n".join(lines) + "\n"


def plot_validation(curves: Dict[str, List[Dict[str, Any]]], path: Path, budget: Dict[str, Any]) -> Path:
    """Validation loss and greedy validation BLEU against updates, every variant on the same axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(11, 4))
    for i, (name, val) in enumerate(curves.items()):
        style = dict(color=f"C{i}", marker="o", ms=3, lw=1.2, ls="--" if name.startswith("paper-seed") else "-")
        ax_loss.plot([r["step"] for r in val], [r["val_loss"] for r in val], label=name, **style)
        scored = [r for r in val if "bleu" in r]
        ax_bleu.plot([r["step"] for r in scored], [r["bleu"] for r in scored], label=name, **style)
    ax_loss.set(xlabel="update", ylabel="cross-entropy (nats/token)", title="validation loss")
    ax_bleu.set(xlabel="update", ylabel="sacreBLEU, greedy", title="validation BLEU")
    for ax in (ax_loss, ax_bleu):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize=8)
    fig.suptitle(f"Multi30k {SRC}->{TGT}: {budget['updates']} updates each, <= {budget['max_tokens']} tokens/batch")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- the study
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] + " Every variant trains exactly "
                                "--max-updates updates.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--out", default="runs/variant-study", help="study folder: tokenizer/, one run per variant")
    p.add_argument("--variants", default="all", help=f"comma list of {', '.join(VARIANTS)}, paper-seedN")
    p.add_argument("--seeds", default="1,2", help="seed of every variant, then one paper-seedN repeat per extra seed")
    p.add_argument("--preset", default="cpu", choices=sorted(PRESETS), help="sizes shared by all variants")
    p.add_argument("--max-len", type=int, default=None, help="max positions; None = the preset's")
    p.add_argument("--max-updates", type=int, default=3000, help="the budget: updates per variant, identical for all")
    p.add_argument("--max-tokens", type=int, default=4096, help="tokens per batch")
    p.add_argument("--warmup", type=int, default=1000, help="warm-up updates of the paper's schedule")
    p.add_argument("--save-every", type=int, default=0, help="checkpoint every N updates (0 = each epoch)")
    p.add_argument("--average-last", type=int, default=10, help="the final model averages the last N checkpoints")
    p.add_argument("--peak-lr", type=float, default=0.005, help="learning rate at the end of warm-up")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint SentencePiece vocabulary, trained once")
    p.add_argument("--data-dir", default=str(default_data_dir()), help=f"Multi30k: train, val, {TEST_SPLIT}")
    p.add_argument("--limit", type=int, default=0, help="first N training pairs (0 = all)")
    p.add_argument("--valid-limit", type=int, default=0, help="first N val pairs (0 = all)")
    p.add_argument("--test-limit", type=int, default=0, help=f"first N {TEST_SPLIT} pairs (0 = all)")
    p.add_argument("--final-beam", type=int, default=5, help="beam size of the final evaluation")
    p.add_argument("--ship-to", default="space/models/variants", help="where models, results and the plot go")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = all cores)")
    return p


def shared_tokenizer(args: argparse.Namespace, pairs: Sequence[Tuple[str, str]]) -> Path:
    """<out>/tokenizer: trained once on the (limited) training text, then reused by every variant."""
    folder = Path(args.out) / "tokenizer"
    if not (folder / "tokenizer_config.json").is_file():
        logger.info("training the shared tokenizer on %d pairs (vocab_size %d)", len(pairs), args.vocab_size)
        Tokenizer.train([s for s, _ in pairs], [t for _, t in pairs], vocab_size=args.vocab_size).save(folder)
    return folder


def check_lengths(tokenizer: Path, pairs: Sequence[Tuple[str, str]], max_len: int, decoder_only: bool) -> None:
    """Every variant must keep every training pair (decoder-only fits source and target in max_len)."""
    tok = Tokenizer.from_directory(tokenizer)
    longest = max(max(len(tok.encode(s, side="source")) + 1, len(tok.encode(t, side="target")) + 2) for s, t in pairs)
    need = 2 * longest if decoder_only else longest
    if max_len < need:
        raise SystemExit(f"max_len {max_len} would drop long training pairs (the longest side has {longest} tokens"
                         f"{', twice that for decoder-only' if decoder_only else ''}): pass --max-len {need}")


def check_budget(out: Path, budget: Dict[str, Any]) -> None:
    """Write <out>/budget.json once; refuse to continue a study that ran on another budget."""
    path = out / "budget.json"
    if path.is_file():
        old = json.loads(path.read_text())
        changed = [k for k in BUDGET_KEYS if old.get(k) != budget.get(k)]
        if changed:
            diff = ", ".join(f"{k}: {old.get(k)!r} -> {budget.get(k)!r}" for k in changed)
            raise SystemExit(f"{out} holds a study with another budget ({diff}); use a new --out")
    path.write_text(json.dumps({k: budget[k] for k in BUDGET_KEYS}, indent=1))


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    runs = plan(seeds)
    chosen = list(runs) if args.variants == "all" else [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in runs]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {', '.join(runs)}")
    out, ship_to = Path(args.out), Path(args.ship_to)
    out.mkdir(parents=True, exist_ok=True)
    train_pairs = load_split(args.data_dir, "train", SRC, TGT)[: args.limit or None]
    tokenizer = shared_tokenizer(args, train_pairs)
    max_len = args.max_len or PRESETS[args.preset].get("max_len", TransformerConfig.max_len)
    check_lengths(tokenizer, train_pairs, max_len, any(runs[n]["layout"] == "decoder-only" for n in chosen))
    vocab = Tokenizer.from_directory(tokenizer).tgt_vocab_size
    test_pairs = load_split(args.data_dir, TEST_SPLIT, SRC, TGT)[: args.test_limit or None]
    budget = {"rule": "every variant: the same updates, batches in the same order, schedule, tokenizer and seed "
                      "(paper-seedN: only the seed differs)",
              "updates": args.max_updates, "max_tokens": args.max_tokens, "warmup": args.warmup,
              "save_every": args.save_every, "average_last": args.average_last,
              "peak_lr": args.peak_lr, "preset": args.preset, "max_len": args.max_len, "vocab_size": args.vocab_size,
              "vocabulary": vocab, "seeds": seeds, "train_limit": args.limit,
              "train_pairs": len(train_pairs),
              "valid_limit": args.valid_limit, "test_limit": args.test_limit, "beam": args.final_beam,
              "test_split": TEST_SPLIT, "test_sentences": len(test_pairs), "decode_batch_size": DECODE_BATCH,
              "threads": args.threads, "data": Path(args.data_dir).name}  # no machine paths: results.json
    check_budget(out, budget)
    records: Dict[str, Dict[str, Any]] = {}
    for name in runs:  # finished variants, requested or not, all go in the report
        if (out / name / RECORD).is_file():
            records[name] = json.loads((out / name / RECORD).read_text())
    for i, name in enumerate(chosen, start=1):
        if name in records:
            logger.info("[%d/%d] %s: finished earlier, skipped", i, len(chosen), name)
            if records[name]["model"] and not (ship_to / name / "model.safetensors").is_file():
                records[name]["model"] = ship(Transformer.from_pretrained(str(out / name / "final")), records[name],
                                              out / name, args)
            continue
        logger.info("[%d/%d] %s", i, len(chosen), name)
        record = train_variant(args, name, runs[name], tokenizer, test_pairs, len(train_pairs))
        if record is None:
            logger.warning("%s interrupted; its checkpoint is saved: rerun the same command to resume", name)
            return 130
        records[name] = record
    ordered = [records[name] for name in runs if name in records]
    if any(r["updates"] != args.max_updates for r in ordered):
        raise RuntimeError("variants trained different numbers of updates: the budget is not identical")
    for path in (out / "results.json", ship_to / "results.json"):
        results_json.save(study_results(budget, ordered, path.parent), path)
    table = markdown(budget, ordered)
    (ship_to / "results.md").write_text(table)
    curves = {r["name"]: [m for m in MetricsLog(out / r["name"] / "metrics.jsonl").read() if m.get("kind") == "val"]
              for r in ordered}
    plot_validation(curves, ship_to / "validation_curves.png", budget)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
