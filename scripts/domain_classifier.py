"""Train the domain classifier of a model trained with domain tags and write ``domains.json`` into its folder.

    python -m scripts.domain_classifier --model space/models/multilingual-v4 \\
        --data-dir captions=data/multi30k --data-dir software=data/libreoffice-help

It counts words and letter 4-grams on each domain's *train* split (every language of ``--langs``; several
``--data-dir`` of one name are one domain), and measures on each domain's *val* split, per language, the share of
sentences it puts in their own domain; the measurements go beside it as ``domains_results.json`` (and to stdout as
a table).  Only train and val are read.

It also calibrates the flag for text of neither domain (``transformer_hub.text.explained``): per domain and
language, the evidence that ``--share`` of the val sentences reach, stored as ``domains.json``'s ``explained``; the
results record the share each domain's val sentences pass in each language, how many short ones (under
``min_words``) would be flagged if they were judged, the pass rate on ``--check-dir NAME=PATH`` (held-out val
sentences of a domain that neither the counts nor the thresholds saw: e.g. Debian's message catalogs for
software), and how many of the ``--everyday`` sentences (a TSV of ``lang<TAB>sentence``: hand-written text of
neither domain) are flagged.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from transformer_hub.config import TransformerConfig
from transformer_hub.errors import UserError
from transformer_hub.hub.loading import CONFIG_JSON, DOMAINS_FILE
from transformer_hub.text import explained
from transformer_hub.text.domain import DomainClassifier
from transformer_hub.training.data import DataSource, corpus_file, parse_data_dirs, read_lines

RESULTS_FILE = "domains_results.json"


def train_texts(sources: Sequence[DataSource], langs: Sequence[str]) -> Dict[str, List[str]]:
    """Each domain's training sentences, every language together (folders of one name: one after the other)."""
    texts: Dict[str, List[str]] = {}
    for s in sources:
        texts.setdefault(s.domain, []).extend(line for lang in langs
                                              for line in read_lines(corpus_file(s.path, "train", lang)))
    return texts


def val_texts(sources: Sequence[DataSource], langs: Sequence[str]) -> Dict[str, Dict[str, List[str]]]:
    """Each domain's val sentences per language (folders of one name together)."""
    texts: Dict[str, Dict[str, List[str]]] = {}
    for s in sources:
        for lang in langs:
            texts.setdefault(s.domain, {}).setdefault(lang, []).extend(read_lines(corpus_file(s.path, "val", lang)))
    return texts


def accuracy(classifier: DomainClassifier, sources: Sequence[DataSource], langs: Sequence[str]) -> List[Dict]:
    """Per domain and language: val sentences, and the share classified as their own domain."""
    rows = []
    for source in sources:
        for lang in langs:
            val = read_lines(corpus_file(source.path, "val", lang))
            right = sum(found == source.domain for found, _ in classifier.predict(val))
            rows.append({"domain": source.domain, "lang": lang, "sentences": len(val),
                         "accuracy": round(100 * right / len(val), 2)})
    return rows


def read_everyday(path: Path) -> List[Tuple[str, str]]:
    """``--everyday``'s (lang, sentence) pairs: one ``lang<TAB>sentence`` a line; blank and ``#`` lines skipped."""
    pairs = []
    for number, line in enumerate(read_lines(path, allow_empty=True), 1):
        if line.strip() and not line.startswith("#"):
            lang, tab, sentence = line.partition("\t")
            if not tab or not lang.strip() or not sentence.strip():
                raise UserError(f"{path}:{number}: write lang<TAB>sentence, got {line[:80]!r}")
            pairs.append((lang.strip(), sentence.strip()))
    return pairs


def _rates(classifier: DomainClassifier, texts: Dict[str, Dict[str, List[str]]], **label: str) -> List[Dict]:
    """Per domain and language: the sentences judged and the share explained, and the short ones flagged."""
    rows = []
    for domain, per_lang in texts.items():
        for lang, sentences in per_lang.items():
            found = explained.passed(classifier, sentences, lang)
            rows.append({"domain": domain, **label, "lang": lang, **found,
                         "passed": round(100 * found["explained"] / max(1, found["judged"]), 2)})
    return rows


def calibration(classifier: DomainClassifier, val: Dict[str, Dict[str, List[str]]], checks: Sequence[DataSource],
                langs: Sequence[str], everyday: List[Tuple[str, str]]) -> Dict:
    """The results' ``explained``: the thresholds (already the classifier's), the val splits' pass rates, the
    short segments they would flag, the held-out checks' pass rates (per corpus, named by its folder) and the
    everyday sentences flagged."""
    rows = _rates(classifier, val)
    short = sum(r["short"] for r in rows)
    return {**classifier.explained, "val": rows,
            "short_flagged": round(100 * sum(r["short_flagged"] for r in rows) / max(1, short), 2),
            "short": short,
            "checks": [row for s in checks for row in _rates(classifier, val_texts([s], langs), corpus=s.path.name)],
            "everyday": _everyday(classifier, everyday)}


def _everyday(classifier: DomainClassifier, everyday: List[Tuple[str, str]]) -> Dict:
    """How many of the (lang, sentence) pairs are judged and flagged, per language too, and those not flagged."""
    fits = [explained.fit(classifier, text, lang) for lang, text in everyday]
    flagged = [f is not None and not f.explained for f in fits]
    by_lang: Dict[str, List[int]] = {}
    for (lang, _), bad in zip(everyday, flagged):
        by_lang.setdefault(lang, [0, 0])[0] += bad
        by_lang[lang][1] += 1
    return {"sentences": len(everyday), "judged": sum(f is not None for f in fits), "flagged": sum(flagged),
            "flagged_by_lang": by_lang, "not_flagged": [t for (_, t), bad in zip(everyday, flagged) if not bad]}


def check_domains(model: Path, names: Sequence[str]) -> None:
    """The data's domain names must be the model's (its config's ``domains``), in any order (a name may repeat:
    folders of one name are one domain's)."""
    config = TransformerConfig.from_json_file(str(model / CONFIG_JSON))
    if sorted(config.domains or ()) != sorted(set(names)):
        raise UserError(f"{model} was trained with domains {list(config.domains or ())}, but --data-dir names "
                        f"{list(names)}: name each directory by its domain (NAME=PATH)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a save_pretrained folder trained with domains")
    parser.add_argument("--data-dir", action="append", required=True, metavar="NAME=PATH",
                        help="one per domain, named as the model's domains")
    parser.add_argument("--langs", default="en,de,fr,cs", help="the languages whose sentences are counted")
    parser.add_argument("--features", type=int, default=8000, help="features kept per domain")
    parser.add_argument("--share", type=float, default=explained.SHARE,
                        help="of each domain's val sentences (per language) the text-of-neither-domain flag passes")
    parser.add_argument("--check-dir", action="append", default=[], metavar="NAME=PATH",
                        help="held-out val sentences of a domain, only measured (neither counted nor calibrated on)")
    parser.add_argument("--everyday", type=Path, help="lang<TAB>sentence lines of neither domain: how many are flagged")
    args = parser.parse_args(argv)
    try:
        sources = parse_data_dirs(args.data_dir)
        check_domains(args.model, [s.domain for s in sources])
        langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
        command = "python -m scripts.domain_classifier " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        checks = parse_data_dirs(args.check_dir) if args.check_dir else []
        if any(s.domain not in {t.domain for t in sources} for s in checks):
            raise UserError("name each --check-dir by one of the domains of --data-dir (NAME=PATH)")
        classifier = DomainClassifier.train(train_texts(sources, langs), args.features, made_by=command)
        rows = accuracy(classifier, sources, langs)
        val = val_texts(sources, langs)
        found = None  # one domain: nothing to compare a text's evidence with, nothing flagged
        if len(classifier.domains) > 1:
            classifier.explained = explained.calibrate(classifier, val, args.share)
            found = calibration(classifier, val, checks, langs, read_everyday(args.everyday) if args.everyday else [])
    except (UserError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    classifier.save(args.model)
    (args.model / RESULTS_FILE).write_text(json.dumps({"command": command, "features": len(classifier.vocabulary),
                                                       "val": rows, "explained": found}, indent=1) + "\n",
                                           encoding="utf-8")
    report(args.model, classifier, rows, found)
    return 0


def report(model: Path, classifier: DomainClassifier, rows: List[Dict], found: Optional[Dict]) -> None:
    """The table on stdout: the classifier's accuracy, then the flag's pass rates and everyday sentences flagged."""
    print(f"{model / DOMAINS_FILE}: {len(classifier.vocabulary)} features")
    for row in rows:
        print(f"{row['domain']:>10} {row['lang']}: {row['accuracy']:6.2f}% of {row['sentences']} val sentences")
    if found is None:
        return
    print(f"text of neither domain: {100 * found['share']:g}% of each domain's val sentences pass")
    for domain, row in classifier.explained["thresholds"].items():
        print(f"{domain:>10} thresholds: " + ", ".join(f"{lang} {value:.4f}" for lang, value in row.items()))
    print(explained_table(found))
    every = found["everyday"]
    print(f"short segments (under {found['min_words']} words, not judged) it would flag: {found['short_flagged']}% "
          f"of {found['short']}; everyday sentences flagged: {every['flagged']} of {every['judged']} judged")


def explained_table(found: Dict) -> str:
    """The docs' table of the flag for text of neither domain: per domain's val split (and held-out check corpus),
    the share of sentences of ``min_words`` words or more that pass, per language."""
    langs = list(dict.fromkeys(r["lang"] for r in found["val"] + found["checks"]))
    lines = ["| sentences | " + " | ".join(langs) + " |", "|---|" + "---|" * len(langs)]
    for rows, kind in ((found["val"], "val"), (found["checks"], "check")):
        for name in dict.fromkeys((r["domain"], r.get("corpus")) for r in rows):
            cells = {r["lang"]: f"{r['passed']:.2f} % of {r['judged']}" for r in rows
                     if (r["domain"], r.get("corpus")) == name}
            label = f"{name[0]} {kind}" + (f" ({name[1]})" if name[1] else "")
            lines.append(f"| {label} | " + " | ".join(cells.get(lang, "-") for lang in langs) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
