"""Mean SentencePiece pieces per word on each domain's val: ``python -m scripts.pieces_per_word --out docs``.

Two tokenizers: the shipped multilingual model's (``--model``, trained on Multi30k), and a joint one trained the
way the trainer trains one (``Tokenizer.train`` over every train sentence once per language, with the language
tags, at the shipped one's vocabulary size) on Multi30k's train and LibreOffice help's train together.  Words are
whitespace-separated; a line's pieces are its ids (no tag, no eos).  Each domain's val is read from its folder
(``--multi30k``; ``--corpus``, what ``python -m transformer_hub corpus libreoffice-help`` writes), and the JSON
(``OUT/pieces_per_word.json``) records their files' sha256 beside the figures.  ``--card FOLDER`` measures
nothing: it writes the figures of ``OUT/pieces_per_word.json`` into that model folder's card (its README.md).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from transformer_hub import Tokenizer
from transformer_hub.training.data import DataError, corpus_file, default_data_dir, read_lines

LANGS = ("en", "de", "fr", "cs")
RESULTS = "pieces_per_word.json"


def counts(tokenizer: Tokenizer, lines: Sequence[str]) -> Dict[str, float]:
    """Words, pieces and pieces per word of ``lines``."""
    words = sum(len(line.split()) for line in lines)
    pieces = sum(len(tokenizer.encode(line)) for line in lines)
    return {"words": words, "pieces": pieces, "pieces_per_word": round(pieces / max(words, 1), 4)}


def read_split(folder: Path, split: str, langs: Sequence[str]) -> Dict[str, List[str]]:
    return {lang: read_lines(corpus_file(folder, split, lang)) for lang in langs}


def train_joint(folders: Sequence[Path], split: str, langs: Sequence[str], vocab_size: int) -> Tokenizer:
    """A joint tokenizer over every ``split`` line of every folder, once per language (the trainer's texts)."""
    texts = [line for folder in folders for lines in read_split(folder, split, langs).values() for line in lines]
    return Tokenizer.train(texts, vocab_size=vocab_size, languages=list(langs))


def measure(tokenizers: Dict[str, Tokenizer], domains: Dict[str, Dict[str, List[str]]]) -> List[Dict[str, object]]:
    """One row per tokenizer, domain and language, and one per tokenizer and domain over all languages."""
    rows = []
    for name, tokenizer in tokenizers.items():
        for domain, texts in domains.items():
            for lang, lines in texts.items():
                rows.append({"tokenizer": name, "domain": domain, "lang": lang, **counts(tokenizer, lines)})
            every = [line for lines in texts.values() for line in lines]
            rows.append({"tokenizer": name, "domain": domain, "lang": "all", **counts(tokenizer, every)})
    return rows


def file_digests(folder: Path, split: str, langs: Sequence[str]) -> Dict[str, str]:
    return {corpus_file(folder, split, lang).name: hashlib.sha256(corpus_file(folder, split, lang).read_bytes())
            .hexdigest() for lang in langs}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.pieces_per_word", description=__doc__.split("\n")[0])
    p.add_argument("--model", type=Path, default=Path("space/models/multilingual"), help="the shipped tokenizer's model")
    p.add_argument("--multi30k", type=Path, default=default_data_dir())
    p.add_argument("--corpus", type=Path, default=Path("data/libreoffice-help"), help="LibreOffice help's folder")
    p.add_argument("--split", default="val", help="the split measured (default: val)")
    p.add_argument("--vocab-size", type=int, default=None, help="the joint tokenizer's (default: the model's)")
    p.add_argument("--save-tokenizer", type=Path, default=None, help="also save the joint tokenizer here")
    p.add_argument("--out", type=Path, default=Path("docs"), help=f"the folder of {RESULTS}")
    p.add_argument("--card", type=Path, default=None,
                   help=f"write OUT/{RESULTS}'s figures into this model folder's card (nothing is measured)")
    return p


def write_card(folder: Path, results: Path) -> None:
    """The card's Tokenizer table: pieces per word of each tokenizer on each domain's val (README.md only)."""
    from transformer_hub import Transformer
    from transformer_hub.hub import save_card

    record = json.loads(results.read_text(encoding="utf-8"))
    model = Transformer.from_pretrained(folder)
    model.card_data["tokenizer"] = {
        "command": record["command"], "split": record["split"],
        "tokenizers": {name: info["from"] for name, info in record["tokenizers"].items()},
        "rows": [{k: row[k] for k in ("tokenizer", "domain", "lang", "pieces_per_word")} for row in record["results"]]}
    save_card(model, folder)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.card is not None:
        if not (args.out / RESULTS).is_file() or not (args.card / "config.json").is_file():
            print(f"pieces_per_word: --card needs {args.out / RESULTS} and a model folder at {args.card}",
                  file=sys.stderr)
            return 2
        write_card(args.card, args.out / RESULTS)
        return 0
    try:
        shipped = Tokenizer.from_directory(args.model)
        folders = {"multi30k": args.multi30k, "libreoffice-help": args.corpus}
        domains = {name: read_split(folder, args.split, LANGS) for name, folder in folders.items()}
        vocab_size = args.vocab_size or shipped.src_vocab_size
        joint = train_joint(list(folders.values()), "train", LANGS, vocab_size)
    except (DataError, OSError, ValueError) as exc:
        print(f"pieces_per_word: {exc}", file=sys.stderr)
        return 2
    if args.save_tokenizer:
        joint.save(args.save_tokenizer)
    tokenizers = {"shipped": shipped, "joint": joint}
    record = {
        "command": "python -m scripts.pieces_per_word --out docs" + (f" --vocab-size {args.vocab_size}"
                                                                    if args.vocab_size else ""),
        "split": args.split, "words": "whitespace-separated", "pieces": "the tokenizer's ids of a line (no tag, no eos)",
        "tokenizers": {"shipped": {"from": "the shipped multilingual model (trained on Multi30k train)",
                                   "vocab_size": shipped.src_vocab_size},
                       "joint": {"from": "trained here on Multi30k train and LibreOffice help train together, "
                                         "every sentence once per language", "vocab_size": joint.src_vocab_size,
                                 "vocab_size_asked": vocab_size}},
        "files": {name: {**file_digests(folder, args.split, LANGS), **file_digests(folder, "train", LANGS)}
                  for name, folder in folders.items()},
        "results": measure(tokenizers, domains),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / RESULTS).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for row in record["results"]:
        if row["lang"] == "all":
            print(f"{row['tokenizer']:>8} {row['domain']:<17} {row['pieces_per_word']:.3f} pieces/word")
    return 0


if __name__ == "__main__":
    sys.exit(main())
