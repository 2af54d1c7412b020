"""Train the domain classifier of a model trained with domain tags and write ``domains.json`` into its folder.

    python -m scripts.domain_classifier --model space/models/multilingual-v3 \\
        --data-dir captions=data/multi30k --data-dir software=data/libreoffice-help

It counts words and letter 4-grams on each domain's *train* split (every language of ``--langs``), and measures
on each domain's *val* split, per language, the share of sentences it puts in their own domain; the measurements
go beside it as ``domains_results.json`` (and to stdout as a table).  Only train and val are read.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from transformer_hub.config import TransformerConfig
from transformer_hub.errors import UserError
from transformer_hub.hub.loading import CONFIG_JSON, DOMAINS_FILE
from transformer_hub.text.domain import DomainClassifier
from transformer_hub.training.data import DataSource, corpus_file, parse_data_dirs, read_lines

RESULTS_FILE = "domains_results.json"


def train_texts(sources: Sequence[DataSource], langs: Sequence[str]) -> Dict[str, List[str]]:
    """Each domain's training sentences, every language together."""
    return {s.domain: [line for lang in langs for line in read_lines(corpus_file(s.path, "train", lang))]
            for s in sources}


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


def check_domains(model: Path, names: Sequence[str]) -> None:
    """The data's domain names must be the model's (its config's ``domains``), in any order."""
    config = TransformerConfig.from_json_file(str(model / CONFIG_JSON))
    if sorted(config.domains or ()) != sorted(names):
        raise UserError(f"{model} was trained with domains {list(config.domains or ())}, but --data-dir names "
                        f"{list(names)}: name each directory by its domain (NAME=PATH)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a save_pretrained folder trained with domains")
    parser.add_argument("--data-dir", action="append", required=True, metavar="NAME=PATH",
                        help="one per domain, named as the model's domains")
    parser.add_argument("--langs", default="en,de,fr,cs", help="the languages whose sentences are counted")
    parser.add_argument("--features", type=int, default=8000, help="features kept per domain")
    args = parser.parse_args(argv)
    try:
        sources = parse_data_dirs(args.data_dir)
        check_domains(args.model, [s.domain for s in sources])
        langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
        command = "python -m scripts.domain_classifier " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        classifier = DomainClassifier.train(train_texts(sources, langs), args.features, made_by=command)
        rows = accuracy(classifier, sources, langs)
    except (UserError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    classifier.save(args.model)
    (args.model / RESULTS_FILE).write_text(json.dumps({"command": command, "features": len(classifier.vocabulary),
                                                       "val": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"{args.model / DOMAINS_FILE}: {len(classifier.vocabulary)} features")
    for row in rows:
        print(f"{row['domain']:>10} {row['lang']}: {row['accuracy']:6.2f}% of {row['sentences']} val sentences")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
