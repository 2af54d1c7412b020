#!/usr/bin/env python
"""Benchmarks (not tests): ``python -m benchmarks SUBCOMMAND [options]``.

Subcommands live in the registry ``BENCHMARKS`` (name -> ``Benchmark``, the library's ``Registry``); add one
with ``@benchmark("name", "help", add_arguments)`` on a ``run(args)`` function.

``train``: training throughput (target tokens/s) of our model against a ``torch.nn.Transformer``
  reference of the same size on the same batches, and GFLOP/s as a share of the matmul peak
  (see ``benchmarks/train.py``); ``app``: the Space's ``/translate`` latency and throughput through
  ``gradio_client`` (see ``benchmarks/app.py``); ``app --rest``: the REST ``POST /translate`` against it, both
  engines, on one server in one run (see ``benchmarks/rest.py``).

``engines``: the same sentences through ``engine="pytorch"``, ``engine="ctranslate2"`` (float32, int8) and, for the
  paper block, ``transformers``' MarianMTModel (see ``benchmarks/engines.py``).
``versions``: an old and a new version of a model on the same sentences through CTranslate2, time per sentence
  and the ratio (see ``benchmarks/versions.py``).
``trace``: beam search with and without ``return_search`` / ``return_alternatives`` (see ``benchmarks/trace.py``).
``quality``: the page's Translate at quality "best" against "fast", time per sentence (see ``benchmarks/quality.py``).
``text``, ``inside``, ``playground_start``, ``glossary``, ``l10n``, ``adapt``: sentences, languages and confidence; the
  Inside tab's views; a playground run's cold and warm start; constrained decoding with glossaries; localization
  files; a model adapted to unseen packages' catalogs (each module's docstring says more).
``hostile``: hostile documents (a zip bomb of empty elements, deep nesting, damaged members) against ``python app.py`` (CPU, memory above idle, ``/languages``
  meanwhile) and a /suggest flood (see ``benchmarks/hostile_bench.py``; results in docs/hostile.json).

``decode``: decoding speed on Multi30k val sentences, in one run, sentences/s of
  1. a naive reference loop written like the seed lessons: greedy, one sentence at a
     time, re-running ``model.decode`` over the whole prefix at every step (no cache)
     and projecting only the last position to the vocabulary, as the lesson's
     ``output_proj(out[:, -1])`` does (the ratios' base); also shown: the same loop
     projecting every position (slower, not used for the ratios);
  2. our greedy at batch size 1 (key/value cache);
  3. our greedy, batched, ``--workers`` (default 2) batches decoded at once by a ``DecodingPool``
     of worker processes started before the timing (``--parallel threads``: threads instead);
  4. our beam search (k=4), batched, likewise;
and the ratios to the naive loop (targets: 30x, 10x and 2x for 3, 4 and 2).  The model
is ``--model``, else the shipped ``space/models/en-de`` (or a random-init one with
``--fallback random``); the output says which, and measures it (BLEU of its greedy output: a random model scores ~0).
Methods run in interleaved rounds (``--repeats``) and the best time of each is kept,
so the load of other processes on a shared machine hits them alike.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]  # the checkout: its shipped models

import torch

from transformer_hub import Tokenizer, Transformer, TransformerConfig
from transformer_hub.training.data import default_data_dir, DataError, corpus_file, read_lines
from transformer_hub.decoding import DecodingConfig, DecodingPool, generate
from transformer_hub.training.metrics import score
from transformer_hub.registry import Registry

DATA_DIR = default_data_dir()
SHIPPED = ROOT / "space" / "models" / "en-de"



@dataclass(frozen=True)
class Benchmark:
    """A subcommand: its options, what it runs, its line in ``--help``."""

    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], dict]
    help: str


BENCHMARKS: Registry = Registry("benchmark")


def benchmark(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None]):
    """Register ``run(args)`` as ``benchmark.py NAME`` (a duplicate name raises, as every registry does)."""
    def add(run: Callable[[argparse.Namespace], dict]):
        BENCHMARKS.register(name)(Benchmark(add_arguments, run, help))
        return run
    return add


def data_file(data_dir: Path, split: str, lang: str) -> Path:
    try:
        return corpus_file(data_dir, split, lang)
    except DataError as exc:
        raise SystemExit(f"benchmark: error: {exc} (use --data-dir)")


# --------------------------------------------------------------------------- the model to measure
def random_model(data_dir: Path, src_lang: str, tgt_lang: str) -> Transformer:
    src = read_lines(data_file(data_dir, "train", src_lang))[:10000]
    tgt = read_lines(data_file(data_dir, "train", tgt_lang))[:10000]
    tokenizer = Tokenizer.train(src, tgt, vocab_size=8000)
    torch.manual_seed(0)
    config = TransformerConfig.preset("cpu", src_vocab_size=tokenizer.src_vocab_size,
                                      tgt_vocab_size=tokenizer.tgt_vocab_size, src_lang=src_lang, tgt_lang=tgt_lang)
    model = Transformer(config).eval()
    model.tokenizer = tokenizer
    return model


def pick_model(args: argparse.Namespace) -> Tuple[Transformer, str]:
    if args.model:
        return Transformer.from_pretrained(args.model), f"given model {args.model}"
    if (SHIPPED / "config.json").is_file():
        return Transformer.from_pretrained(str(SHIPPED)), f"shipped model {SHIPPED.relative_to(ROOT)}"
    if args.fallback == "random":
        return random_model(args.data_dir, args.src_lang, args.tgt_lang), \
            "RANDOM-INIT model of the 'cpu' preset (no shipped model; outputs run to the length cap)"
    raise SystemExit(f"benchmark: error: no shipped model at {SHIPPED.relative_to(ROOT)}; pass --model DIR_OR_REPO "
                     "(or --fallback random)")


# --------------------------------------------------------------------------- decode benchmark
class LastPosition(torch.nn.Module):
    """Wraps the output layer to project only the last position, as the seed lesson does
    (``model.output_proj(out[:, -1])``), so the naive loop is not charged for logits it never uses."""

    def __init__(self, generator: torch.nn.Module) -> None:
        super().__init__()
        self.generator = generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.generator(x[:, -1:])


def naive_greedy(model: Transformer, ids: List[int], max_len_offset: int = 50) -> List[int]:
    """The seed lessons' loop: one sentence, the whole prefix re-decoded every step, argmax, stop at eos."""
    cfg = model.config
    src = torch.tensor([ids])
    state = model.encode(src)
    tgt = torch.tensor([[cfg.bos_id]])
    for _ in range(min(len(ids) + max_len_offset, model.target_budget(state))):  # the same cap as ours
        logits = model.decode(tgt, state).logits[:, -1]  # no cache: the decoder runs over all positions again
        next_token = logits.argmax(dim=-1, keepdim=True)
        tgt = torch.cat([tgt, next_token], dim=1)
        if next_token.item() == cfg.eos_id:
            break
    return tgt[0, 1:].tolist()


def add_decode_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model folder or Hub id (default: space/models/en-de if present)")
    p.add_argument("--fallback", choices=["error", "random"], default="error",
                   help="without a model: stop with an error, or measure a random-init one")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--split", default="val")
    p.add_argument("--src-lang", default="en")
    p.add_argument("--tgt-lang", default="de")
    p.add_argument("--n", type=int, default=500, help="sentences for our decoders")
    p.add_argument("--naive-n", type=int, default=100,
                   help="sentences for the naive loops (they are slow; the rate is extrapolated)")
    p.add_argument("--batch-size", type=int, default=DecodingConfig.batch_size,
                   help=f"sentences per batch in the batched runs (default: the library's, {DecodingConfig.batch_size})")
    p.add_argument("--workers", type=int, default=2,
                   help="batches decoded at once in the batched runs (each worker gets threads/workers intra-op "
                        "threads); batch 1 and the naive loop always run one sentence at a time")
    p.add_argument("--parallel", choices=["processes", "threads"], default="processes",
                   help="the batched runs' workers: a DecodingPool of processes (started before timing), or threads")
    p.add_argument("--beam-size", type=int, default=4)
    p.add_argument("--attention", default=None,
                   help="run every method with this attention kernel (a name in the ATTENTION registry) instead of "
                        "the model's own; same weights, same outputs")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (default 1: on a shared 2-core machine more threads only wait)")
    p.add_argument("--repeats", type=int, default=2, help="interleaved rounds; the best time of each method is kept")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")


def use_attention_kernel(model: Transformer, name: str) -> str:
    """Give every attention layer the kernel registered as ``name`` (a computation choice: no weights change)."""
    from transformer_hub.model import MultiHeadAttention
    from transformer_hub.registry import ATTENTION

    try:
        kernel = ATTENTION.get(name)
    except ValueError as exc:  # lists the registered kernels
        raise SystemExit(f"--attention: {exc}")
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.kernel = kernel()
    model.config.attention = name
    return name


def timed(fn) -> Tuple[object, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


@dataclass(frozen=True)
class Method:
    """One timed decoder: its key in the results, its label, how many sentences it decodes, the call."""

    key: str
    label: str
    sentences: int
    run: Callable[[], list]


def naive_run(model: Transformer, texts: List[str], last_position_only: bool) -> Callable[[], list]:
    """Text in, text out, one sentence at a time: tokenise, the naive loop, detokenise."""
    def run() -> list:
        body, eos, tok = model.body, model.config.eos_id, model.tokenizer
        generator = body.generator
        if last_position_only:
            body.generator = LastPosition(generator)
        try:
            with torch.inference_mode():
                outs = []
                for text in texts:
                    out = naive_greedy(model, tok.encode(text) + [eos])
                    tok.decode(out, side="target")
                    outs.append(out)
                return outs
        finally:
            body.generator = generator
    return run


def decode_methods(args: argparse.Namespace, model: Transformer, sources: List[str], naive_n: int,
                   parallel: dict) -> List[Method]:
    """The naive loops (the ratios' base), our greedy at batch 1, and our batched greedy and beam search."""
    n, workers = len(sources), f", {args.workers} worker {args.parallel}" if args.workers > 1 else ""
    batched = dict(batch_size=args.batch_size, **parallel)
    return [
        Method("naive", "naive loop as in the seed lesson (batch 1)", naive_n, naive_run(model, sources[:naive_n], True)),
        Method("naive_all_positions", "  same, projecting every position", naive_n,
               naive_run(model, sources[:naive_n], False)),
        Method("greedy_batch1", "our greedy, batch 1, KV cache", n,
               lambda: generate(model, sources, strategy="greedy", batch_size=1)),
        Method("greedy_batched", f"our greedy, batched ({args.batch_size}){workers}", n,
               lambda: generate(model, sources, strategy="greedy", **batched)),
        Method(f"beam{args.beam_size}_batched", f"our beam-{args.beam_size}, batched ({args.batch_size}){workers}", n,
               lambda: generate(model, sources, strategy="beam", beam_size=args.beam_size, **batched)),
    ]


def time_rounds(methods: List[Method], repeats: int) -> Tuple[Dict[str, dict], Dict[str, list]]:
    """Interleaved rounds, best time kept (other processes' load hits every method alike); results and outputs."""
    times: Dict[str, List[float]] = {m.key: [] for m in methods}
    outputs: Dict[str, list] = {}
    for round_ in range(repeats):
        for m in methods:
            outputs[m.key], seconds = timed(m.run)
            times[m.key].append(seconds)
            print(f"round {round_ + 1}/{repeats}: {m.label.strip()}: {m.sentences / seconds:.1f} sentences/s",
                  file=sys.stderr)
    results = {}
    for m in methods:
        best = min(times[m.key])
        results[m.key] = dict(label=m.label, sentences=m.sentences, seconds=best, all_seconds=times[m.key],
                              sentences_per_second=m.sentences / best)
        if m.key.startswith("naive"):
            results[m.key]["extrapolated_from"] = m.sentences
    return results, outputs


def add_ratios(results: Dict[str, dict], targets: Dict[str, float]) -> None:
    """Each method's speed as a multiple of the naive loop's, and whether it meets its target."""
    base = results["naive"]["sentences_per_second"]
    for key, r in results.items():
        r["ratio_vs_naive"] = r["sentences_per_second"] / base
        if key in targets:
            r["target_ratio"] = targets[key]
            r["meets_target"] = r["ratio_vs_naive"] >= targets[key]


def output_checks(outputs: Dict[str, list], references: List[str], eos: int, beam_key: str) -> dict:
    """Does the naive loop give our greedy tokens, and how trained is the model (BLEU via ``metrics.score``)?"""
    naive_out, greedy = outputs["naive"], outputs["greedy_batched"]
    naive_tokens = [t[:-1] if t and t[-1] == eos else t for t in naive_out]
    agree = sum(a == r.best.tokens for a, r in zip(naive_tokens, greedy)) / len(naive_out)
    bleu = {key: score([r.text for r in outputs[key]], references, lowercase=False)["bleu"]
            for key in ("greedy_batched", beam_key)}
    return dict(bleu=bleu, greedy_finished_with_eos=sum(r.best.finished for r in greedy) / len(greedy),
                greedy_mean_output_tokens=sum(len(r.best) for r in greedy) / len(greedy),
                naive_agrees_with_our_greedy=agree, model_looks_trained=bleu["greedy_batched"] >= 1.0)


def print_decode_report(report: dict, src_lang: str, tgt_lang: str, beam_key: str, repeats: int) -> None:
    threads, naive_n, bleu = report["threads"], report["naive_sentences"], report["bleu"]
    print(f"\ndecoding speed on {report['sentences']} Multi30k {report['split']} sentences ({src_lang}->{tgt_lang}), "
          f"{threads} thread(s)")
    print(f"model: {report['model']}")
    print(f"model check: greedy BLEU {bleu['greedy_batched']:.1f}, beam BLEU {bleu[beam_key]:.1f}, "
          f"{report['greedy_finished_with_eos']:.0%} of greedy outputs end with eos, "
          f"{report['greedy_mean_output_tokens']:.1f} output tokens on average -> "
          + ("a trained model" if report["model_looks_trained"] else
             "looks UNTRAINED (random-like): read the ratios with care"))
    print(f"{'decoder':<52} {'sent/s':>9} {'vs naive':>9}  target")
    for r in report["results"].values():
        target = f">= {r['target_ratio']:.0f}x {'ok' if r['meets_target'] else 'MISSED'}" if "target_ratio" in r else ""
        print(f"{r['label']:<52} {r['sentences_per_second']:>9.1f} {r['ratio_vs_naive']:>8.1f}x  {target}")
    print(f"(naive loops timed on the first {naive_n} sentences and extrapolated to sentences/s; they produced the "
          f"same tokens as our greedy on {report['naive_agrees_with_our_greedy']:.0%} of them. Ratios are against the "
          f"first naive loop: the prefix re-decoded every step, the last position projected, as the seed lesson does; "
          f"best of {repeats} interleaved rounds, {threads} thread(s))")


def bench_decode(args: argparse.Namespace) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    model, model_kind = pick_model(args)
    model.eval()
    if args.attention:
        model_kind += f" (attention kernel {use_attention_kernel(model, args.attention)})"
    cfg = model.config
    src_lang, tgt_lang = cfg.src_lang or args.src_lang, cfg.tgt_lang or args.tgt_lang
    sources = read_lines(data_file(args.data_dir, args.split, src_lang))[: args.n]
    references = read_lines(data_file(args.data_dir, args.split, tgt_lang))[: args.n]
    n, naive_n, beam_key = len(sources), min(args.naive_n, len(sources)), f"beam{args.beam_size}_batched"
    print(f"model: {model_kind}; {model.num_parameters():,} parameters; {n} {args.split} sentences; "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)", file=sys.stderr)
    generate(model, sources[:8], batch_size=8)  # warm-up
    with contextlib.ExitStack() as stack:  # a DecodingPool of processes, started before the timing
        parallel = (dict(engine=stack.enter_context(DecodingPool(model, args.workers)))
                    if args.workers > 1 and args.parallel == "processes" else dict(workers=args.workers))
        results, outputs = time_rounds(decode_methods(args, model, sources, naive_n, parallel), args.repeats)
    add_ratios(results, {"greedy_batch1": 2.0, "greedy_batched": 30.0, beam_key: 10.0})
    report = dict(benchmark="decode", model=model_kind, parameters=model.num_parameters(), layout=cfg.layout,
                  split=args.split, sentences=n, naive_sentences=naive_n, threads=torch.get_num_threads(),
                  workers=args.workers, parallel=args.parallel, torch=torch.__version__,
                  machine=f"{platform.machine()}, {platform.processor() or platform.system()}", results=results,
                  **output_checks(outputs, references, cfg.eos_id, beam_key))
    print_decode_report(report, src_lang, tgt_lang, beam_key, args.repeats)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"results written to {args.out}")
    return report


benchmark("decode", "decoding speed: naive loop vs cached, batched greedy and beam", add_decode_arguments)(bench_decode)


def _register_others() -> None:
    """Every benchmark but ``decode`` lives in a module of its own."""
    from . import (adapt, app, cli_memory, glossary, hostile_bench, inside, l10n, playground_start, quality, rest, scale,
                   text, versions)
    from .engines import add_engines_arguments, bench_engines
    from .trace import add_trace_arguments, bench_trace
    from .train import add_train_arguments, bench_train

    benchmark("train", "training throughput: ours vs a torch.nn.Transformer reference", add_train_arguments)(bench_train)
    benchmark("app", "latency/throughput of the Space's /translate through gradio_client",
              app.add_arguments)(lambda args: rest.run_rest(args) if args.rest else app.run(args))

    benchmark("trace", "beam search with and without the search trace and the alternatives",
              add_trace_arguments)(bench_trace)

    benchmark("engines", "pytorch vs ctranslate2 (float32, int8) vs transformers MarianMT: speed and BLEU",
              add_engines_arguments)(bench_engines)
    for name, module, description in (
            ("versions", versions,
             "two versions of a model through CTranslate2 on the same sentences: time per sentence"),
            ("quality", quality, "the page's time per sentence at quality best vs fast (interleaved)"),
            ("scale", scale, "translate-corpus on Ray (1, 2 actors) vs one process; REST on Ray Serve vs app.py"),
            ("hostile", hostile_bench, "hostile documents: CPU, memory, /languages meanwhile; a /suggest flood"),
            ("text", text, "sentence splitting, language detection and the confidence flag"),
            ("inside", inside, "the Inside tab's views and figures against the library calls alone"),
            ("playground_start", playground_start, "a playground run's start, cold against a warm spare"),
            ("glossary", glossary, "constrained decoding and glossaries: term use, BLEU, time against plain beam"),
            ("l10n", l10n, "catalogs: placeholders kept, msgfmt/pofilter on .po outputs, BLEU with/without, speed"),
            ("cli_memory", cli_memory, "the command line's peak memory at 1,000 and 10,000 lines of the test sets"),
            ("adapt", adapt, "adapt to held-out Debian packages as projects: held-out BLEU gain, base val change")):
        benchmark(name, description, module.add_arguments)(module.run)


_register_others()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for name in BENCHMARKS.names():
        BENCHMARKS.get(name).add_arguments(sub.add_parser(name, help=BENCHMARKS.get(name).help))
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line as given, for a results file
    BENCHMARKS.get(args.command).run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
