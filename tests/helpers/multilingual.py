"""A four-way "corpus" over disjoint lexicons: word i of every language means the same thing, so the words of an
output say which language the model chose (and whether the target-language tag reached it)."""
import random
from pathlib import Path

LANGS = ("en", "de", "fr", "cs")
LEXICON = {lang: [f"{lang}{word}" for word in "abcdefghij"] for lang in LANGS}


def four_way_corpus(folder: Path, n: int = 200, seed: int = 0) -> Path:
    rng = random.Random(seed)
    for split, count in (("train", n), ("val", 16), ("test_2016_flickr", 8)):
        rows = [[rng.randrange(10) for _ in range(rng.randint(2, 5))] for _ in range(count)]
        for lang in LANGS:
            lines = [" ".join(LEXICON[lang][i] for i in row) for row in rows]
            (folder / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def languages_of(text: str) -> set:
    """The languages of a multilingual test model's output words."""
    return {word[:2] for word in text.split()}


def train_four_way(folder: Path) -> Path:
    """Train a tiny multilingual model on ``four_way_corpus(folder)`` long enough to follow its tags (about
    20 s at one thread); returns its ``final/`` folder."""
    from transformer_hub.training.trainer import main as train_main

    data = four_way_corpus(folder)
    assert train_main(["--out", str(folder / "run"), "--data-dir", str(data), "--langs", ",".join(LANGS),
                       "--preset", "tiny", "--vocab-size", "300", "--max-tokens", "400", "--warmup", "30",
                       "--peak-lr", "0.005", "--max-updates", "150", "--final-beam", "0", "--threads", "1",
                       "--bleu-every", "1000", "--average-last", "1", "--test-splits", ""]) == 0
    return folder / "run" / "final"
