#!/usr/bin/env python
"""The text targets (sentences, languages, confidence), measured in one run: ``python -m benchmarks text [--parts detect,paragraphs,speed,confidence]``.

* ``detect``: ``transformer_hub.text.detect_language`` among en/de/fr/cs on every test_2016_flickr sentence of the
  four languages (target: >= 99.0 % per language), and on 200 paragraphs of three consecutive test sentences
  per language (target: 100 %); also how many of them ``unserved_language`` would refuse (should be 0).
* ``paragraphs``: ``--paragraphs`` paragraphs of three consecutive test_2016_flickr sentences, en->de by
  ``--model`` (default the shipped multilingual model): BLEU against the three references joined, for the
  sentences one per line (the reference), the paragraph with ``split_sentences=True`` (target: within 1.0 of
  it), and the paragraph as one input (how much worse).
* ``speed``: 500 val sentences as paragraphs of three; the time of ``split_sentences`` alone and of the
  translation with ``split_sentences=True`` against the same sentences one per line (target: splitting costs
  at most 5 % of the time of translating); best of ``--repeats`` interleaved rounds.
* ``confidence``: ``Hypothesis.confidence`` of real sentences and of the same sentences with their words
  shuffled (an out-of-domain stand-in), en<->de/fr/cs with the Space's beam 4: the threshold that flags 5 % of
  the val sentences (how ``CONFIDENCE_THRESHOLD`` was chosen), and the share flagged at ``CONFIDENCE_THRESHOLD``
  on val and on test_2016_flickr.
"""
from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]  # the checkout: its shipped models

import sacrebleu
import torch

from transformer_hub import Transformer
from transformer_hub.training.data import corpus_file, default_data_dir, read_lines
from transformer_hub.decoding import CONFIDENCE_THRESHOLD, generate
from transformer_hub.text import detect_language, split_sentences, translate_texts, unserved_language

LANGS = ["en", "de", "fr", "cs"]


def lines(args, split: str, lang: str) -> List[str]:
    return read_lines(corpus_file(args.data_dir, split, lang))


def paragraphs_of(sentences: List[str], n: int, size: int = 3) -> List[List[str]]:
    return [sentences[i * size:(i + 1) * size] for i in range(min(n, len(sentences) // size))]


def detect(args) -> None:
    print("## detection among en, de, fr, cs (test_2016_flickr)")
    print("| language | sentences | accuracy | paragraphs of 3 | accuracy | refused as another language |")
    print("|---|---|---|---|---|---|")
    for lang in LANGS:
        sents = lines(args, "test_2016_flickr", lang)
        paras = [" ".join(p) for p in paragraphs_of(sents, 200)]
        s_ok = sum(d.code == lang for d in detect_language(sents, LANGS)) / len(sents)
        p_ok = sum(d.code == lang for d in detect_language(paras, LANGS)) / len(paras)
        refused = sum(x is not None for x in unserved_language(sents + paras, LANGS))
        print(f"| {lang} | {len(sents)} | {100 * s_ok:.2f} % ({'met' if s_ok >= 0.99 else 'MISSED'}) | {len(paras)} "
              f"| {100 * p_ok:.2f} % ({'met' if p_ok == 1.0 else 'MISSED'}) | {refused} |")


def bleu(hyps: List[str], refs: List[str]) -> float:
    return sacrebleu.corpus_bleu(hyps, [refs]).score


def full_stop(sentence: str) -> str:
    """The caption as a sentence of a paragraph: 17 of the first 300 test captions have no final punctuation,
    and joined as they are ("... in a city The man ...") no segmenter can tell where one ends."""
    return sentence if sentence.rstrip().endswith((".", "!", "?")) else sentence.rstrip() + "."


def paragraphs(args, model) -> None:
    raw = paragraphs_of(lines(args, "test_2016_flickr", "en"), args.paragraphs)
    ref = [" ".join(p) for p in paragraphs_of(lines(args, "test_2016_flickr", "de"), args.paragraphs)]
    options = dict(src_lang="en", tgt_lang="de", strategy=args.strategy, beam_size=5, batch_size=64)
    print(f"\n## {len(raw)} paragraphs of 3 test_2016_flickr sentences, en->de, {args.strategy} (beam 5), BLEU "
          "against the 3 references joined")
    print("| sentences | input | BLEU | difference to one per line |")
    print("|---|---|---|---|")
    for variant, src in (("captions as they are", raw), ("a full stop added where missing",
                                                          [[full_stop(s) for s in p] for p in raw])):
        flat = [s for p in src for s in p]
        one_by_one = [r.text for r in generate(model, flat, **options)]
        per_line = [" ".join(one_by_one[i * 3:(i + 1) * 3]) for i in range(len(src))]
        joined = [" ".join(p) for p in src]
        split = [r.text for r in translate_texts(model, joined, **options)]
        whole = [r.text for r in generate(model, joined, **options)]
        base = bleu(per_line, ref)
        for name, hyps in (("one sentence per line", per_line), ("paragraph, split_sentences=True", split),
                           ("paragraph as one input", whole)):
            print(f"| {variant} | {name} | {bleu(hyps, ref):.2f} | {bleu(hyps, ref) - base:+.2f} |")
        gap = abs(bleu(split, ref) - base)
        print(f"{variant}: split_sentences within 1.0 of one per line: {'met' if gap <= 1.0 else 'MISSED'} "
              f"({gap:.2f})")


def speed(args, model) -> None:
    sents = [full_stop(s) for s in lines(args, "val", "en")[:500]]
    paras = [" ".join(p) for p in paragraphs_of(sents, len(sents) // 3 + 1)]
    rest = sents[len(paras) * 3:]
    paras += rest  # all 500 sentences, in paragraphs of three
    options = dict(src_lang="en", tgt_lang="de", strategy="greedy", batch_size=64)
    best: Dict[str, float] = {"split only": 1e9, "one per line": 1e9, "split_sentences=True": 1e9}
    for _ in range(args.repeats):
        t = time.perf_counter()
        count = sum(len(split_sentences(p, "en").segments) for p in paras)
        best["split only"] = min(best["split only"], time.perf_counter() - t)
        t = time.perf_counter()
        generate(model, sents, **options)
        best["one per line"] = min(best["one per line"], time.perf_counter() - t)
        t = time.perf_counter()
        translate_texts(model, paras, **options)
        best["split_sentences=True"] = min(best["split_sentences=True"], time.perf_counter() - t)
    base = best["one per line"]
    print(f"\n## speed: {len(sents)} val sentences ({len(paras)} texts, {count} segments found), greedy, "
          f"{torch.get_num_threads()} thread(s), best of {args.repeats}")
    print("| what | seconds | share of translating one per line |")
    print("|---|---|---|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} | {100 * seconds / base:.1f} % |")
    cost = best["split only"] / base
    print(f"splitting costs at most 5 % of translating: {'met' if cost <= 0.05 else 'MISSED'} ({100 * cost:.2f} %)")


def _confidences(args, model, split: str) -> Dict[str, List[float]]:
    """Per direction en<->de/fr/cs, beam 4 (the Space's): confidences of real sentences and of word-shuffled ones."""
    rng = random.Random(0)
    scores: Dict[str, List[float]] = {"in": [], "out": []}
    for src, tgt in [("en", "de"), ("de", "en"), ("en", "fr"), ("fr", "en"), ("en", "cs"), ("cs", "en")]:
        sents = lines(args, split, src)[:args.confidence_n]
        shuffled = [" ".join(rng.sample(s.split(), len(s.split()))) for s in sents]
        options = dict(src_lang=src, tgt_lang=tgt, strategy="beam", beam_size=4, batch_size=64)
        scores["in"] += [r.best.confidence for r in generate(model, sents, **options)]
        scores["out"] += [r.best.confidence for r in generate(model, shuffled, **options)]
    return scores


def _flagged(values: List[float], threshold: float) -> float:
    return 100.0 * sum(v < threshold for v in values) / len(values)


def confidence(args, model) -> None:
    val = _confidences(args, model, "val")
    chosen = round(sorted(val["in"])[int(0.05 * len(val["in"]))], 2)  # 5 % of real val sentences flagged
    test = _confidences(args, model, "test_2016_flickr")
    print(f"\n## confidence: {len(val['in'])} sentences per split (en<->de/fr/cs, beam 4) vs the same with "
          "their words shuffled")
    print(f"threshold flagging 5 % of the val sentences: {chosen:.2f} (CONFIDENCE_THRESHOLD = {CONFIDENCE_THRESHOLD})")
    print("| split | real sentences flagged | shuffled sentences flagged |")
    print("|---|---|---|")
    for name, scores in (("val", val), ("test_2016_flickr", test)):
        print(f"| {name} | {_flagged(scores['in'], CONFIDENCE_THRESHOLD):.1f} % "
              f"| {_flagged(scores['out'], CONFIDENCE_THRESHOLD):.1f} % |")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=str(ROOT / "space" / "models" / "multilingual"))
    p.add_argument("--data-dir", default=str(default_data_dir()))
    p.add_argument("--parts", default="detect,paragraphs,speed,confidence")
    p.add_argument("--paragraphs", type=int, default=100)
    p.add_argument("--strategy", default="beam", choices=["greedy", "beam"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--confidence-n", type=int, default=300, help="val sentences per direction")
    p.add_argument("--threads", type=int, default=1)


def run(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    parts = args.parts.split(",")
    if "detect" in parts:
        detect(args)
    model = Transformer.from_pretrained(args.model) if set(parts) - {"detect"} else None
    for name, fn in (("paragraphs", paragraphs), ("speed", speed), ("confidence", confidence)):
        if name in parts:
            fn(args, model)

