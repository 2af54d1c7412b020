#!/usr/bin/env python
"""Constrained decoding and glossaries, measured: ``python -m benchmarks glossary [--limit N] [--out docs]``.

Two protocols on test_2016_flickr, English into German, French and Czech (the shipped multilingual model, and
the en-de model for German), every system with beam 5:

* *reference phrases* (Post & Vilar, NAACL 2018): per sentence one, or two, phrases of 1-3 words drawn from the
  reference (seeded, not overlapping); term use (the phrase in the output) and BLEU, against plain beam 5;
* *a real dictionary* (Dinu et al., ACL 2019): FreeDict's English-German/-French/-Czech dictionaries (Debian
  packages ``dict-freedict-eng-deu``, ``-eng-fra``, ``-eng-ces``; their ``/usr/share/dictd/*.index`` and
  ``*.dict.dz`` read with the standard library).  A sentence's glossary: up to two dictionary entries whose
  English term (1-3 words, not only among the 100 most frequent words of the training English) occurs in the
  source and one of whose translations occurs in the reference (that translation, as the reference writes it,
  is the target term).  Term use and BLEU, plain beam 5 against the glossary.  Without the dictionaries this
  protocol is skipped with a note saying how to get them.
* speed: each constrained run's time over plain beam 5's on the same sentences (the first ``--speed-sentences``),
  in ``--rounds`` interleaved rounds: a round takes the sentences 40 at a time and decodes each chunk plain and
  with every constrained setting in turn (plain first, then last, alternately), so machine noise lands on both
  sides of each ratio; the figure is the median of the rounds' ratios.

The phrases, the dictionaries and the words an output keeps are ``benchmarks/glossary_terms.py``'s.  Writes
``OUT/glossary.json`` and ``OUT/glossary.md`` (the table, made from the JSON; a test checks that they agree).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import sacrebleu
import torch

from transformer_hub import Transformer
from transformer_hub.training.data import corpus_file, default_data_dir, read_lines
from transformer_hub.decoding import generate
from transformer_hub.decoding.constraints import Term

from .glossary_terms import EDGE, dictionary_terms, keeps_usual, read_freedict, reference_phrases, usual_words

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"de": "deu", "fr": "fra", "cs": "ces"}
SYSTEMS = [("multilingual", "de"), ("multilingual", "fr"), ("multilingual", "cs"), ("en-de", "de")]
DICT_DIR = Path("/usr/share/dictd")
GET_DICTIONARIES = "apt-get install dict-freedict-eng-deu dict-freedict-eng-fra dict-freedict-eng-ces"
BEAM = dict(strategy="beam", beam_size=5)
TERM_USE_TARGET, DICT_BLEU_DROP, SPEED_TARGET = 0.99, 0.3, 3.0
SPEED_SENTENCES, ROUNDS = 200, 5  # timed per round; rounds (an odd count: the median is one round's ratio)
CHUNK = 40  # sentences decoded by every setting in turn within a round (one batch each)


# --------------------------------------------------------------------------- measuring
def term_use(texts: Sequence[str], phrases: Sequence[Sequence[str]]) -> float:
    total = sum(map(len, phrases))
    return sum(p in text for text, ps in zip(texts, phrases) for p in ps) / total if total else float("nan")


def decode(model, sources: List[str], tgt: str, constraints=None, **options) -> Tuple[List[str], float, int]:
    """(outputs, seconds, sentences with a warning) for beam 5, constrained or not (``options``: DecodingConfig's)."""
    langs = dict(src_lang="en", tgt_lang=tgt) if model.config.multilingual else {}
    start = time.perf_counter()
    results = generate(model, sources, constraints=constraints, **langs, **BEAM, **options)
    return [r.text for r in results], time.perf_counter() - start, sum(bool(r.warnings) for r in results)


def bleu(texts: List[str], references: List[str]) -> float:
    return round(sacrebleu.corpus_bleu(texts, [references]).score, 2)


def timed_rounds(model, tgt: str, sources: List[str], settings: Dict[str, list], rounds: int,
                 chunk: int = CHUNK) -> dict:
    """Seconds of plain beam 5 and of each constrained setting (name -> constraints per sentence) on ``sources``,
    ``rounds`` times.  Interleaved finely, so a burst of load from other jobs lands on both sides of a ratio: each
    round takes the sentences ``chunk`` at a time and decodes every chunk with every setting in turn, plain first
    in even chunks and last in odd ones.  Per setting: each round's ratio (its seconds over plain's) and their
    median."""
    plain_s: List[float] = [0.0] * rounds
    seconds: Dict[str, List[float]] = {name: [0.0] * rounds for name in settings}
    order = [None] + list(settings)
    for r in range(rounds):
        for k, start in enumerate(range(0, len(sources), chunk)):
            for name in (order if (r + k) % 2 == 0 else order[::-1]):
                part = None if name is None else settings[name][start:start + chunk]
                taken = decode(model, sources[start:start + chunk], tgt, part)[1]
                if name is None:
                    plain_s[r] += taken
                else:
                    seconds[name][r] += taken
    out = {"sentences": len(sources), "rounds": rounds, "chunk": chunk,
           "plain_seconds": [round(t, 3) for t in plain_s]}
    for name, times in seconds.items():
        ratios = [t / p for t, p in zip(times, plain_s)]
        out[name] = {"ratios": [round(x, 3) for x in ratios], "median": round(statistics.median(ratios), 2)}
    return out


def run_system(model, tgt: str, sources: List[str], refs: List[str], dictionary, frequent, seed: int,
               speed_sentences: int = 200, rounds: int = 5) -> dict:
    """Every protocol for one model and direction: the outputs of every setting on all ``sources`` (term use,
    BLEU, warnings), then the speed of each on the first ``speed_sentences`` in ``rounds`` interleaved rounds."""
    phrases = {c: reference_phrases(refs, c, seed + c) for c in (1, 2)}
    plain = decode(model, sources, tgt)[0]
    row = {"sentences": len(sources), "plain": {"bleu": bleu(plain, refs)}}
    settings = {f"reference_{c}": phrases[c] for c in (1, 2)}
    for count in (1, 2):
        texts, _, warned = decode(model, sources, tgt, phrases[count])
        row[f"reference_{count}"] = {
            "phrases": sum(map(len, phrases[count])), "term_use": round(term_use(texts, phrases[count]), 4),
            "term_use_plain": round(term_use(plain, phrases[count]), 4), "bleu": bleu(texts, refs),
            "warnings": warned}
    if dictionary is not None:
        row["dictionary"] = dictionary_protocol(model, tgt, sources, refs, plain, dictionary, frequent, seed)
        settings["dictionary"] = [[Term(t, s) for s, t in pairs] for pairs in
                                  dictionary_terms(sources, refs, dictionary, frequent, seed)]
    n = min(speed_sentences, len(sources))
    speed = timed_rounds(model, tgt, sources[:n], {k: v[:n] for k, v in settings.items()}, rounds)
    row["speed"] = speed
    for name in settings:
        row[name]["time_ratio"] = speed[name]["median"]
    return row


def dictionary_protocol(model, tgt: str, sources: List[str], refs: List[str], plain: List[str], dictionary,
                        frequent, seed: int) -> dict:
    """The FreeDict glossary: each sentence's (term, target) pairs as glossary terms (``Term``: anchored to the
    term's source words), and the same targets placed by constrained search alone (``unanchored``, what the
    glossary did before anchoring).  Term use, BLEU, and ``keeps_usual``: over the terms whose plain output
    wrote another dictionary translation, the share of outputs that hold the target term and that word too (each
    word counted beyond what the source's other words explain: ``glossary_terms.keeps_usual``)."""
    terms = dictionary_terms(sources, refs, dictionary, frequent, seed)
    targets = [[t for _, t in pairs] for pairs in terms]
    usual = [usual_words(pairs, text, dictionary, src) for pairs, text, src in zip(terms, plain, sources)]
    anchored, _, warned = decode(model, sources, tgt, [[Term(t, s) for s, t in pairs] for pairs in terms])
    unanchored, _, warned_before = decode(model, sources, tgt, targets)
    replaced, kept = keeps_usual(anchored, terms, usual, sources, dictionary)
    return {"terms": sum(map(len, targets)), "sentences_with_terms": sum(bool(t) for t in targets),
            "term_use": round(term_use(anchored, targets), 4), "term_use_plain": round(term_use(plain, targets), 4),
            "bleu": bleu(anchored, refs), "warnings": warned, "replaced_terms": replaced, "keeps_usual": kept,
            "unanchored": {"term_use": round(term_use(unanchored, targets), 4), "bleu": bleu(unanchored, refs),
                           "warnings": warned_before,
                           "keeps_usual": keeps_usual(unanchored, terms, usual, sources, dictionary)[1]},
            "examples": [{"source": s, "terms": [list(p) for p in pairs]}
                         for s, pairs in zip(sources, terms) if pairs][:3]}


def targets_met(row: dict) -> Dict[str, bool]:
    met = {"term_use_reference": min(row[f"reference_{c}"]["term_use"] for c in (1, 2)) >= TERM_USE_TARGET,
           "bleu_reference_above_plain": min(row[f"reference_{c}"]["bleu"] for c in (1, 2)) > row["plain"]["bleu"],
           "speed_two_phrases": row["reference_2"]["time_ratio"] <= SPEED_TARGET}
    if "dictionary" in row:
        met["term_use_dictionary"] = row["dictionary"]["term_use"] >= TERM_USE_TARGET
        met["bleu_dictionary"] = row["dictionary"]["bleu"] >= row["plain"]["bleu"] - DICT_BLEU_DROP
        kept, before = row["dictionary"]["keeps_usual"], row["dictionary"]["unanchored"]["keeps_usual"]
        met["keeps_usual_falls"] = kept < before or kept == 0  # at 0 % already there is nothing left to fall
        met["bleu_not_below_unanchored"] = row["dictionary"]["bleu"] >= row["dictionary"]["unanchored"]["bleu"]
    return met


# --------------------------------------------------------------------------- report
def markdown(report: dict) -> str:
    """The tables of ``glossary.md``, every number from ``report`` (the JSON)."""
    lines = [f"Made by `{report['command']}` ({report['sentences']} test_2016_flickr sentences per direction, "
             f"beam 5, {report['threads']} thread(s)); `glossary.json` holds the same numbers.", "",
             f"Time: a constrained run's seconds over plain beam 5's on the same {report['speed_sentences']} "
             f"sentences, the median of {report['rounds']} rounds; a round decodes the sentences {CHUNK} at a time, "
             "each chunk plain and with every constrained setting in turn (plain first, then last, alternately), so "
             "the load of other jobs falls on both sides (every round's ratio is in the JSON).", "",
             "Reference phrases (Post & Vilar): term use with constraints (without), BLEU, time against plain "
             "beam 5.", "",
             "| model | direction | plain BLEU | 1 phrase: use | BLEU | time | 2 phrases: use | BLEU | time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in report["results"]:
        cells = [row["model"], f"en-{row['tgt']}", f"{row['plain']['bleu']:.2f}"]
        for c in (1, 2):
            r = row[f"reference_{c}"]
            cells += [f"{100 * r['term_use']:.1f}% ({100 * r['term_use_plain']:.1f}%)", f"{r['bleu']:.2f}",
                      f"{r['time_ratio']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    dictionary = [row for row in report["results"] if "dictionary" in row]
    lines += ["", "FreeDict glossary (Dinu et al.): term use with the glossary (plain beam 5), BLEU plain and with it.",
              ""]
    if not dictionary:
        lines.append(f"Not measured: the FreeDict dictionaries were not installed (`{GET_DICTIONARIES}`).")
    else:
        lines += ["Terms anchored to their source words (`decoding/anchoring.py`) against the same targets placed by "
                  "constrained search alone (before anchoring): term use, BLEU, and *keeps both*: of the terms whose "
                  "plain output wrote another dictionary translation (*replaced*), the share of outputs holding the "
                  "target term and that word too (a word counts for the term only as often as the source's other "
                  "words do not explain it: the article of \"the face\" is no \"le\" kept for \"him\").", "",
                  "| model | direction | terms | use | BLEU plain | BLEU glossary | time | replaced | keeps both "
                  "| before: use | BLEU | keeps both |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in dictionary:
            d, u = row["dictionary"], row["dictionary"]["unanchored"]
            lines.append(f"| {row['model']} | en-{row['tgt']} | {d['terms']} | {100 * d['term_use']:.1f}% "
                         f"({100 * d['term_use_plain']:.1f}%) | {row['plain']['bleu']:.2f} | {d['bleu']:.2f} | "
                         f"{d['time_ratio']:.2f}x | {d['replaced_terms']} | {100 * d['keeps_usual']:.1f}% | "
                         f"{100 * u['term_use']:.1f}% | {u['bleu']:.2f} | {100 * u['keeps_usual']:.1f}% |")
    lines += ["", "Targets (term use >= 99%, BLEU with phrases above plain, dictionary BLEU within 0.3 of plain, two "
              "phrases <= 3x the time; anchored terms keep both less often than before (or never), at no lower BLEU):", ""]
    for row in report["results"]:
        flags = ", ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in row["targets"].items())
        lines.append(f"- {row['model']} en-{row['tgt']}: {flags}")
    return "\n".join(lines) + "\n"


def summary(report: dict) -> str:
    """docs/python.md's sentence on these results (a test checks that it holds it as written here)."""
    rows = report["results"]
    use = [row[f"reference_{c}"]["term_use"] for row in rows for c in (1, 2)]
    plain_use = [row[f"reference_{c}"]["term_use_plain"] for row in rows for c in (1, 2)]
    dictionary = [row["dictionary"] for row in rows if "dictionary" in row]
    gain = [row["dictionary"]["bleu"] - row["plain"]["bleu"] for row in rows if "dictionary" in row]
    two = [row["reference_2"]["time_ratio"] for row in rows]
    def span(values: List[float], fmt: str, joint: str = "-") -> str:
        low, high = format(min(values), fmt), format(max(values), fmt)
        return low if low == high else f"{low}{joint}{high}"

    percent = lambda values: [100 * v for v in values]  # noqa: E731
    text = (f"On {report['sentences']} test_2016_flickr sentences per direction (`{report['command']}`), reference "
            f"phrases are used {span(percent(use), '.1f')}% of the time with constraints "
            f"({span(percent(plain_use), '.1f')}% without)")
    if dictionary:
        text += (f", FreeDict terms {span(percent([d['term_use'] for d in dictionary]), '.1f')}% (BLEU "
                 f"{span(gain, '+.2f', ' to ')} against plain beam 5)")
    text += (f"; two phrases take {span(two, '.2f', 'x-')}x plain beam 5's time (the median of "
             f"{report['rounds']} interleaved rounds on {report['speed_sentences']} sentences).")
    termed = [(f"{row['model']} en-{row['tgt']}", row["dictionary"]) for row in rows if "dictionary" in row]
    if termed:
        pairs = ", ".join(f"{name} {100 * d['unanchored']['keeps_usual']:.1f}% to {100 * d['keeps_usual']:.1f}% of "
                          f"{d['replaced_terms']} (BLEU {d['bleu'] - d['unanchored']['bleu']:+.2f})"
                          for name, d in termed)
        text += (" A glossary term anchored to its source words replaces the word the model writes for it: the share "
                 "of outputs that hold the term and still that word, constrained search alone to anchored, and "
                 f"BLEU anchored against constrained search alone: {pairs}.")
    return text


def command(args: argparse.Namespace) -> str:
    """The command line that makes these results: the options that change what is measured, when not the default."""
    parts = ["python -m benchmarks glossary"]
    for option, value, default in (("--limit", args.limit, None), ("--speed-sentences", args.speed_sentences,
                                                                    SPEED_SENTENCES),
                                   ("--rounds", args.rounds, ROUNDS), ("--seed", args.seed, 0),
                                   ("--threads", args.threads, 1)):
        if value != default:
            parts.append(f"{option} {value}")
    return " ".join(parts + ["--out docs"])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=None, help="Multi30k folder (default: TRANSFORMER_HUB_DATA)")
    parser.add_argument("--models", default=str(ROOT / "space" / "models"), help="folder of the shipped models")
    parser.add_argument("--dict-dir", default=str(DICT_DIR), help="where the FreeDict .index/.dict.dz files are")
    parser.add_argument("--limit", type=int, default=None, help="only the first N test sentences (development)")
    parser.add_argument("--systems", default=",".join(f"{m}:{t}" for m, t in SYSTEMS), help="model:target,...")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--speed-sentences", type=int, default=SPEED_SENTENCES,
                        help=f"sentences timed in each round (default {SPEED_SENTENCES}, the first of the test set)")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"interleaved timing rounds, plain and every constrained setting (default {ROUNDS})")
    parser.add_argument("--out", default=None, help="write glossary.json and glossary.md here (e.g. docs)")


def run(args: argparse.Namespace) -> int:
    torch.set_num_threads(args.threads)
    data = Path(args.data_dir) if args.data_dir else default_data_dir()
    read = lambda lang: read_lines(corpus_file(data, "test_2016_flickr", lang))[:args.limit]  # noqa: E731
    frequent = {w for w, _ in Counter(w.strip(EDGE).lower() for line in read_lines(corpus_file(data, "train", "en"))
                                      for w in line.split()).most_common(100)}
    dictionaries: Dict[str, Optional[dict]] = {}
    models: Dict[str, Transformer] = {}
    results = []
    for name, tgt in (s.split(":") for s in args.systems.split(",")):
        if tgt not in dictionaries:
            dictionaries[tgt] = read_freedict(Path(args.dict_dir), TARGETS[tgt])
            if dictionaries[tgt] is None:
                print(f"FreeDict eng-{TARGETS[tgt]} not found in {args.dict_dir}: skipping the dictionary protocol "
                      f"for en-{tgt} (get it with `{GET_DICTIONARIES}`)")
        if name not in models:
            models[name] = Transformer.from_pretrained(Path(args.models) / name).eval()
        row = {"model": name, "tgt": tgt, **run_system(models[name], tgt, read("en"), read(tgt), dictionaries[tgt],
                                                        frequent, args.seed, args.speed_sentences, args.rounds)}
        row["targets"] = targets_met(row)
        results.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "dictionary"}), flush=True)
    report = {"command": command(args), "sentences": len(read("en")), "threads": args.threads, "seed": args.seed,
              "speed_sentences": min(args.speed_sentences, len(read("en"))), "rounds": args.rounds,
              "results": results}
    if args.out:
        out = Path(args.out)
        (out / "glossary.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (out / "glossary.md").write_text("# Glossaries: constrained decoding measured\n\n" + markdown(report),
                                         encoding="utf-8")
    print(markdown(report))
    print(summary(report))
    return 0

