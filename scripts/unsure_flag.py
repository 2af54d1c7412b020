"""Choose the unsure-sentence flag on the val splits and measure it: ``python -m scripts.unsure_flag``.

Every val sentence (``--n`` per direction, en<->de/fr/cs) is translated as the Space does (beam 4, the
multilingual model, in its corpus's domain) and scored by sentence chrF against its reference.  The flag to beat
is the mean token probability alone (``Hypothesis.confidence`` below 0.58); the flag chosen also looks at the
least likely word (``transformer_hub.decoding.words.doubt``).  Its two thresholds are the pair, on a grid, whose
flagged set best matches the sentences of lowest chrF (F1); the best mean-only threshold is reported beside it.
Reported for each: of those lowest-chrF sentences the share flagged, against the share of all sentences flagged.

The Space has one flag for every domain, so it is calibrated on all corpora at once: ``--data NAME=DIR`` once per
corpus, NAME the domain whose tag it is read with (v4: ``captions=`` Multi30k, ``software=`` LibreOffice's help
and ``software=`` Debian's catalogs).  The lowest 10 % are taken within each corpus (their chrF levels differ),
and the chosen flag's shares are reported per corpus too.  A row the corpus lacks in a language (the catalogs'
empty lines) is not a sentence of that direction.  Results: ``docs/unsure_flag.json``.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import sacrebleu

from benchmarks.recorded import shown_word
from transformer_hub import Transformer
from transformer_hub.decoding import generate
from transformer_hub.decoding.words import doubt
from transformer_hub.training.data import load_split

ROOT = Path(__file__).resolve().parents[1]

DIRECTIONS = [("en", "de"), ("de", "en"), ("en", "fr"), ("fr", "en"), ("en", "cs"), ("cs", "en")]
BEFORE = {"mean": 0.58, "lowest_word": 0.0}  # the flag before: the mean token probability alone
LOWEST_SHARE = 0.10  # the sentences the flag should catch: the lowest 10 % by sentence chrF
MEANS = [round(0.40 + 0.01 * i, 2) for i in range(41)]  # 0.40 .. 0.80
# never 0: the flag must catch one doubtful word among sure ones, which a mean hides (a sentence with one wrong
# word keeps a fair chrF, so the lowest-chrF sentences cannot reward it; "mean_only" shows what it costs)
WORDS = [round(0.005 * i, 3) for i in range(1, 61)]  # 0.005 .. 0.30


def records(model: Transformer, data: Path, split: str, n: int, domain: str) -> List[Dict[str, object]]:
    """Per sentence of ``data`` (read in ``domain``): direction, corpus, chrF, mean token probability, least
    likely word's probability."""
    out: List[Dict[str, object]] = []
    tag = {"domain": domain} if domain in (model.config.domains or ()) else {}
    for src, tgt in DIRECTIONS:
        pairs = load_split(data, split, src, tgt)[:n]
        results = generate(model, [s for s, _ in pairs], src_lang=src, tgt_lang=tgt, strategy="beam",
                           beam_size=4, length_penalty=0.6, batch_size=64, progress=True, **tag)
        for result, (_, ref) in zip(results, pairs):
            d = doubt(result.best, model.tokenizer)
            out.append({"direction": f"{src}-{tgt}", "domain": domain, "corpus": f"{domain}:{data.name}",
                        "chrf": sacrebleu.sentence_chrf(result.text, [ref]).score,
                        "mean": d.mean if d else 0.0, "lowest_word": d.lowest_word if d else 0.0})
    return out


def rates(rows: Sequence[Dict], lowest: set, mean: float, lowest_word: float) -> Dict[str, float]:
    """The share of all sentences flagged, the share of the lowest-chrF ones flagged, and the precision."""
    flagged = {i for i, r in enumerate(rows) if r["mean"] < mean or r["lowest_word"] < lowest_word}
    hit = len(flagged & lowest)
    return {"mean": mean, "lowest_word": lowest_word, "flagged_all": len(flagged) / len(rows),
            "flagged_lowest": hit / len(lowest), "precision": hit / len(flagged) if flagged else 0.0,
            "f1": 2 * hit / (len(flagged) + len(lowest))}


def lowest_of(rows: Sequence[Dict]) -> set:
    """The indices of the lowest-chrF ``LOWEST_SHARE`` of the rows, taken within each corpus."""
    lowest = set()
    for corpus in dict.fromkeys(r.get("corpus", "") for r in rows):
        mine = sorted((i for i, r in enumerate(rows) if r.get("corpus", "") == corpus), key=lambda i: rows[i]["chrf"])
        lowest |= set(mine[:max(1, round(LOWEST_SHARE * len(mine)))])
    return lowest


def chrf_below(rows: Sequence[Dict], lowest: set) -> float:
    """The chrF that the ``lowest`` rows are under: the lowest of the other rows'."""
    return min((r["chrf"] for i, r in enumerate(rows) if i not in lowest), default=100.0)


def measure(rows: Sequence[Dict]) -> Dict[str, object]:
    """The flag before, the best pair of thresholds, the best mean alone; the chosen pair on each corpus."""
    lowest = lowest_of(rows)

    def best(pairs):
        return max((rates(rows, lowest, m, w) for m, w in pairs), key=lambda r: (r["f1"], -r["flagged_all"]))

    found = {"sentences": len(rows), "lowest_share": LOWEST_SHARE, "lowest_count": len(lowest),
             "before": rates(rows, lowest, BEFORE["mean"], BEFORE["lowest_word"]),
             "after": best([(m, w) for m in MEANS for w in WORDS]), "mean_only": best([(m, 0.0) for m in MEANS])}
    corpora = list(dict.fromkeys(r["corpus"] for r in rows if r.get("corpus")))
    if not corpora:
        return {**found, "lowest_chrf_below": chrf_below(rows, lowest)}
    found["per_corpus"] = {}  # the chosen flag on each corpus's sentences (its own lowest 10 %, its own level)
    for corpus in corpora:
        mine = [r for r in rows if r.get("corpus") == corpus]
        low = lowest_of(mine)
        found["per_corpus"][corpus] = {**rates(mine, low, found["after"]["mean"], found["after"]["lowest_word"]),
                                       "sentences": len(mine), "lowest_chrf_below": chrf_below(mine, low)}
    return found


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=str(ROOT / "space" / "models" / "multilingual-v4"))
    p.add_argument("--data", action="append", required=True, metavar="NAME=DIR",
                   help="a corpus in Multi30k's layout and the domain it is read in, once per corpus")
    p.add_argument("--split", default="val")
    p.add_argument("--n", type=int, default=300, help="sentences per direction and corpus")
    p.add_argument("--records", type=Path, default=None,
                   help="a JSON file of per-sentence records: read when it exists (no decoding), else written")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "unsure_flag.json")
    args = p.parse_args(argv)
    if any("=" not in value for value in args.data):
        p.error("--data takes NAME=DIR: the domain a corpus is read in, then its folder")
    if args.records is not None and args.records.exists():
        rows = json.loads(args.records.read_text())
    else:
        model = Transformer.from_pretrained(args.model).eval()
        rows = [row for value in args.data
                for row in records(model, Path(value.partition("=")[2]), args.split, args.n, value.partition("=")[0])]
        if args.records is not None:
            args.records.write_text(json.dumps(rows))
    given = [shown_word(word) for word in (sys.argv[1:] if argv is None else argv)]
    result = {"command": shlex.join(["python", "-m", "scripts.unsure_flag", *given]), "model": Path(args.model).name,
              "split": args.split, "per_direction": args.n, "decoding": "beam 4, length penalty 0.6", **measure(rows)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name in ("before", "after", "mean_only"):
        r = result[name]
        print(f"{name}: mean < {r['mean']:g} or lowest word < {r['lowest_word']:g}: flags "
              f"{100 * r['flagged_lowest']:.1f} % of the lowest-chrF 10 % and {100 * r['flagged_all']:.1f} % of all "
              f"{result['sentences']} sentences (precision {100 * r['precision']:.1f} %)")


if __name__ == "__main__":
    main()
