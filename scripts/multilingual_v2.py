"""The multilingual v2 model's finished measurements: the targets set before training it, the published systems
beside it, and the table docs/results.md prints from its results file
(``space/models/multilingual/multilingual_results.json``).

New measurements come from ``python -m scripts.domain_results``; this module keeps what the docs' tests check the
stated numbers against.
"""
from __future__ import annotations

from typing import Dict, List, Optional

SPLITS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
# Lowercased sacreBLEU targets on test_2016_flickr, set before training; between two non-English languages: the
# pivot through English plus PIVOT_MARGIN (a direct direction must earn its place against translating twice).
TARGETS = {"en-de": 42.0, "en-fr": 60.0, "en-cs": 33.5, "de-en": 45.0, "fr-en": 56.0, "cs-en": 43.0}
PIVOT_MARGIN = 0.5
# Published text-only systems trained on Multi30k alone (test_2016_flickr), with the metric each reports.
ANCHORS = {"en-de": (41.02, "Wu et al. 2021, tokenized"),
           "en-fr": (59.7, "Helcl et al. 2018, lowercased"),
           "en-cs": (30.9, "Helcl et al. 2018, lowercased")}


def target_of(row: Dict) -> Optional[float]:
    if row["split"] != SPLITS[0]:
        return None
    if row["direction"] in TARGETS:
        return TARGETS[row["direction"]]
    return round(row["pivot"]["bleu_lowercase"] + PIVOT_MARGIN, 2) if "pivot" in row else None


def verdict(row: Dict) -> str:
    """'42.00 (missed by 1.23)' or '41.94 (met, +0.52)': the target and the gap to it; empty without a target."""
    target = target_of(row)
    if target is None:
        return ""
    gap = row["multilingual"]["bleu_lowercase"] - target
    return f"{target:.2f} ({f'met, +{gap:.2f}' if gap >= 0 else f'missed by {-gap:.2f}'})"


def anchor(row: Dict) -> str:
    found = ANCHORS.get(row["direction"]) if row["split"] == SPLITS[0] else None
    return f"{found[0]:.2f} ({found[1]})" if found else ""


def lowercased(row: Dict, kind: str) -> str:
    return f"{row[kind]['bleu_lowercase']:.2f}" if kind in row else ""


def markdown(rows: List[Dict]) -> str:
    """One line per split and direction: direct scores, the pivot's and the bilingual model's, the target
    (``rows``: per split and direction, the scores of ``multilingual`` and, where made, ``pivot`` and ``bilingual``)."""
    lines = ["| split | direction | BLEU | BLEU (lc) | chrF | pivot via en BLEU (lc) | bilingual BLEU (lc) "
             "| target (lc) | published |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        m = row["multilingual"]
        lines.append(f"| {row['split']} | {row['direction']} | {m['bleu']:.2f} | {m['bleu_lowercase']:.2f} "
                     f"| {m['chrf']:.2f} | {lowercased(row, 'pivot')} | {lowercased(row, 'bilingual')} "
                     f"| {verdict(row)} | {anchor(row)} |")
    return "\n".join(lines)
