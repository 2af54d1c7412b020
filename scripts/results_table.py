"""The results table that ``scripts/domain_results.py`` prints: every model's BLEU per domain and direction, and the
gap of the last model to its targets, which are chosen by name (``--targets``: what one release set out to reach).

* ``v3``: LibreOffice's help test split at fixed values, captions within ``CAPTIONS_MARGIN`` of the first model.
* ``v4``: Debian's catalogs at fixed values on entries of 3+ words, each help direction 3 BLEU above the model
  named ``v3``, captions at least ``v3``'s on the English-side directions.

Directions a set leaves out are measured against the last model's pivot through English, where there is one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from transformer_hub.hub.selection import DEFAULT_DOMAIN

PIVOT = "en"
CAPTIONS_MARGIN = 0.3  # v3: on captions no English-side direction may fall more than this below the first model
# sacreBLEU (cased, 13a) targets on the LibreOffice help test split, set before training v3.
V3_SOFTWARE = {"en-de": 35.0, "en-fr": 40.0, "en-cs": 30.0, "de-en": 40.0, "fr-en": 40.0, "cs-en": 38.0}
# ... and on the catalogs' test split (entries of 3+ English words), set before training v4.
V4_CATALOGS = {"en-de": 30.0, "en-fr": 35.0, "en-cs": 25.0, "de-en": 35.0, "fr-en": 38.0, "cs-en": 32.0}
Target = Optional[Tuple[str, float]]


@dataclass(frozen=True)
class Fixed:
    """A value per direction, on ``metric``."""

    values: Dict[str, float]
    metric: str = "bleu"

    def __call__(self, row: Dict, names: List[str]) -> Target:
        value = self.values.get(row["direction"])
        return None if value is None else (self.metric, value)


@dataclass(frozen=True)
class Relative:
    """Another model's score in the same row (``model``; None: the table's first) plus ``margin``."""

    model: Optional[str]
    metric: str
    margin: float
    english_side: bool = False  # only directions into or out of English

    def __call__(self, row: Dict, names: List[str]) -> Target:
        reference = self.model or names[0]
        if reference not in row or (self.english_side and PIVOT not in row["direction"].split("-")):
            return None
        return self.metric, round(row[reference][self.metric] + self.margin, 2)


# Rules by "DOMAIN/SPLIT" (first) or "DOMAIN".
TARGET_SETS = {
    "v3": {"software": Fixed(V3_SOFTWARE),
           DEFAULT_DOMAIN: Relative(None, "bleu_lowercase", -CAPTIONS_MARGIN, english_side=True)},
    "v4": {"catalogs/test:3+words": Fixed(V4_CATALOGS), "software": Relative("v3", "bleu", 3.0),
           DEFAULT_DOMAIN: Relative("v3", "bleu_lowercase", 0.0, english_side=True)},
}


def target_of(row: Dict, names: List[str], targets: str = "v3") -> Target:
    """(metric, value) the row's last model must reach; outside captions, the pivot where no rule gives one."""
    rules = TARGET_SETS[targets]
    rule = rules.get(f"{row['domain']}/{row['split']}") or rules.get(row["domain"])
    found = rule(row, names) if rule else None
    if found is None and row["domain"] != DEFAULT_DOMAIN:
        pivot = next((k for k in row if k.endswith(" via en")), None)
        return ("bleu", row[pivot]["bleu"]) if pivot else None
    return found


def place(row: Dict, rows: List[Dict]) -> str:
    """The table's first cell: the domain, with the split where the rows hold several splits of that domain."""
    several = len({r["split"] for r in rows if r["domain"] == row["domain"]}) > 1
    return f"{row['domain']}/{row['split']}" if several else row["domain"]


def beam_names(names: List[str]) -> List[str]:
    """The models' beam rows (not their quality mode's, ``NAME best``), in order: the last is the one targeted."""
    return [n for n in names if not n.endswith(" best")]


def metric_of(row: Dict) -> str:
    return "bleu_lowercase" if row["domain"] == DEFAULT_DOMAIN else "bleu"


def markdown(rows: List[Dict], names: List[str], first: int = 0, targets: str = "v3") -> str:
    """One line per domain and direction: every model's BLEU (captions: lowercased), the pivot, the target; then,
    where the rows have slices, the quality mode against the beam on them."""
    beam = beam_names(names)
    last = beam[-1]
    head = " | ".join(f"{n} BLEU" for n in beam)
    lines = [f"| domain | direction | {head} | {last} chrF | {last} via en | target | gap |",
             "|---|---|" + "---|" * (len(beam) + 4)]
    for row in rows:
        metric = metric_of(row)
        cells = [f"{row[n][metric]:.2f}" if n in row else "" for n in beam]
        pivot = row.get(f"{last} via en")
        target = target_of(row, beam, targets)
        gap = f"{row[last][target[0]] - target[1]:+.2f}" if target and last in row else ""
        lines.append(f"| {place(row, rows)} | {row['direction']} | {' | '.join(cells)} "
                     f"| {row[last]['chrf']:.2f} | {f'{pivot[metric]:.2f}' if pivot else ''} "
                     f"| {f'{target[1]:.2f}' if target else ''} | {gap} |")
    text = "\n".join(lines) + "\n\nBLEU: lowercased on captions, cased on the other domains (sacreBLEU 13a)."
    if any(":" in r["split"] for r in rows):
        text += " `:3+words` and `:1-2words`: the entries whose English has 3 or more words, and 1 or 2."
    return text + quality_table(rows, names, first)


def quality_table(rows: List[Dict], names: List[str], first: int) -> str:
    """The quality mode ("best") against the beam on the slices, where the rows have them ("" if not)."""
    sliced = [n for n in names if any(n in r.get("slices", {}) for r in rows)]
    if not any(n.endswith(" best") for n in sliced):
        return ""
    lines = ["| domain | direction | " + " | ".join(f"{n} BLEU" for n in sliced) + " |",
             "|---|---|" + "---|" * len(sliced)]
    for row in rows:
        cells = [f"{row['slices'][n][metric_of(row)]:.2f}" if n in row.get("slices", {}) else "" for n in sliced]
        lines.append(f"| {place(row, rows)} | {row['direction']} | {' | '.join(cells)} |")
    return (f"\n\nThe quality mode (\"best\") against the beam on the first {first} "
            "sentences of each test set:\n\n" + "\n".join(lines))
