"""What ``adapt`` leaves in its folder: the adapted model (``save_pretrained``: weights, config, tokenizer), its
card (the project's data and sizes, the before/after scores per direction, the recipe), a domain classifier that
knows the project (``domains.json``), ``adapt.json`` (every number the card and the command print) and the plot of
the held-out curves beside the before/after table."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tqdm.auto import tqdm

from ..hub.card import PLOT_FILE
from ..hub.results import METRICS
from ..text.domain import DomainClassifier, model_domain_classifier
from .adaptation import Adaptation, Scores
from .data import DataSource
from .evaluation import result_records
from .metrics import plot_adaptation
from .warm_start import provenance, shown_source, weights_digest

RESULTS_FILE = "adapt.json"
COLUMNS = ["scored on", "BLEU before", "BLEU after", "chrF before", "chrF after"]


def write(a: Adaptation, before: Scores, after: Scores, run: Dict, command: str) -> Path:
    """Write the adapted model's folder (``a.config.out``) and print the before/after table; returns the folder."""
    out = Path(a.config.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = table_rows(a, before, after)
    plot = plot_adaptation(run["curves"], rows, out / PLOT_FILE, a.domain)
    classifier, how = domain_classifier(a, command)
    a.model.domain_data = classifier.to_dict() if classifier is not None else None
    a.model.card_data = card_data(a, after, run, rows, command, str(plot))
    a.model.save_pretrained(out)
    record = {"command": command, "base": shown_source(a.config.base), "domain": a.domain,
              "directions": [d.name for d in a.directions],
              "data": [{**f.describe(), "direction": d.name} for d in a.directions for f in d.user.files],
              "pairs": {d.name: {"train": len(d.train), "held_out": len(d.held),
                                 "replay": {name: len(pairs) for name, (pairs, _) in d.replay.items()}}
                        for d in a.directions},
              "before": before, "after": after, "training": recipe(a, run), "curve": run["curves"],
              "classifier": how}
    (out / RESULTS_FILE).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    width = max(len(r[0]) for r in rows)
    tqdm.write(f"{'scored on':<{width}}  BLEU before  after   chrF before  after")
    for row in rows:
        tqdm.write(f"{row[0]:<{width}}  {row[1]:>11} {row[2]:>6}   {row[3]:>11} {row[4]:>6}")
    tqdm.write(f"{out}: the adapted model (domain {a.domain!r}), its card, {RESULTS_FILE} and {PLOT_FILE}")
    return out


def table_rows(a: Adaptation, before: Scores, after: Scores) -> List[List[str]]:
    """One row per scored set and direction: its name, BLEU before and after, chrF before and after."""
    rows = []
    for d in a.directions:
        for key, was in before[d.name].items():
            now = after[d.name][key]
            name = f"held-out {a.domain} {d.name} ({len(d.held)})" if key == "held_out" else \
                f"{key.split('/', 1)[1]} val {d.name} ({len(d.replay[key.split('/', 1)[1]][1])})"
            rows.append([name, f"{was['bleu']:.2f}", f"{now['bleu']:.2f}", f"{was['chrf']:.2f}", f"{now['chrf']:.2f}"])
    return rows


def domain_classifier(a: Adaptation, command: str) -> Tuple[Optional[DomainClassifier], str]:
    """A classifier that knows the project: trained anew on the replayed corpora and the project's training
    pairs (every direction's) when every base domain is replayed, else the base model's own extended by the
    project; none when the base has none to extend."""
    project = [text for d in a.directions for pair in d.train for text in pair]
    base_domains = list(a.base.config.domains or [])
    if a.replayed and set(a.replayed) >= set(base_domains):
        texts = {name: [text for d in a.directions for pair in d.replay[name][0] for text in pair]
                 for name in a.replayed}
        return DomainClassifier.train({**texts, a.domain: project}, made_by=command), "trained on the replayed " \
            "corpora and the project's training pairs"
    found = model_domain_classifier(a.base)
    if found is None:
        return None, "none (the base model ships no domain classifier and its corpora were not replayed)"
    return found.with_domain(a.domain, project), "the base model's, extended by the project's training pairs"


def recipe(a: Adaptation, run: Dict) -> Dict:
    """The card's Training table: where it started, the data's sizes, how it trained and how it stopped."""
    c = a.config
    return {"base": shown_source(c.base), "domain": a.domain, "directions": ", ".join(d.name for d in a.directions),
            "train_pairs": sum(len(d.train) for d in a.directions),
            "held_out_pairs": sum(len(d.held) for d in a.directions), "held_out_share": c.holdout,
            "replay": ", ".join(f"{n} ({sum(len(d.replay[n][0]) for d in a.directions)} pairs)"
                                for n in a.replayed) or "none",
            "replay_share": c.replay_share if a.replayed else 0, "minutes_budget": c.minutes,
            **{k: v for k, v in run.items() if k != "curves"}, "max_tokens_per_batch": c.max_tokens,
            "peak_lr": c.peak_lr, "warmup": c.warmup, "label_smoothing": c.label_smoothing, "seed": c.seed,
            "eval_every": c.eval_every, "eval_limit": c.eval_limit}


def card_data(a: Adaptation, after: Scores, run: Dict, rows: List[List[str]], command: str,
              plot: str) -> Dict:
    """The adapted model's card data: its results per direction (the held-out pairs as the project's test, each
    replayed domain's val), its data, its recipe, and how it was made with the before/after table."""
    described = {name: [DataSource(Path(f), name).describe() for f in folders]
                 for name, folders in a.replay_sources.items()}
    corpora = [corpus for found in described.values() for corpus in found]
    results = []
    for d in a.directions:
        results += result_records(_metrics(after[d.name]["held_out"]), "test", d.name, a.domain)
        for name, found in described.items():
            dataset = " + ".join(corpus["corpus"].lower() for corpus in found)
            results += result_records(_metrics(after[d.name][f"val/{name}"]), "val", d.name, dataset)
    data = [{"corpus": f.describe()["file"], "domain": a.domain, "licence": "the project's",
             "source": f"{f.kind}, {d.name}, {len(f.pairs)} pairs"} for d in a.directions for f in d.user.files]
    table = ["| " + " | ".join(COLUMNS) + " |", "| --- | --- | --- | --- | --- |"]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    made = (f"Adapted to the domain `{a.domain}` with `{command}`: the held-out pairs ({c_share(a)}) were never "
            "trained on, in any direction; the base model is scored in the best of its domains, the adapted one in "
            "its new tag, both as served (placeholders masked).\n\n" + "\n".join(table) + "\n\n"
            + provenance({"source": a.config.base, "sha256": weights_digest(a.config.base)}))
    name = a.base.card_data.get("name") or "transformer_hub model"
    return {"name": f"{name}, adapted to {a.domain}", "data": data + corpora,
            "datasets": [a.domain] + [c["corpus"].lower() for c in corpora], "results": results,
            "training": recipe(a, run), "provenance": made, "plot": plot}


def c_share(a: Adaptation) -> str:
    return f"{a.config.holdout:.0%} of the project's distinct source sentences, seed {a.config.seed}"


def _metrics(scores: Dict) -> Dict[str, float]:
    return {k: v for k, v in scores.items() if k in METRICS}
