"""A tiny multilingual model trained with domain tags (captions, software) on English, German and French
word-for-word corpora, and a project's entries in those languages (over words of their own, some with
placeholders), for ``adapt`` runs over several directions (about 5 s at one thread)."""
import gzip
import random
from pathlib import Path
from typing import Tuple

LANGS = ("en", "de", "fr")
CAPTIONS = {lang: [f"{lang}{w}" for w in "abcdefghij"] for lang in LANGS}
SOFTWARE = {lang: [f"{lang}{w}" for w in "klmnopqrst"] for lang in LANGS}
PROJECT = {"en": "commit branch merge push pull stash".split(), "de": "Einspielung Zweig Zusammenführung Hochladen "
           "Abholen Ablage".split(), "fr": "validation branche fusion pousser tirer remise".split()}
PIECES = ["%s", "<b>{name}</b>", "%(count)d"]  # a placeholder at the end of some entries


def entries(n=80, seed=5):
    """The project's entries: {lang: text}, the same English in both catalogs, a piece in every third."""
    rng = random.Random(seed)
    found = {}
    for k in range(n):
        row = [rng.randrange(6) for _ in range(rng.randint(2, 4))]
        piece = f" {PIECES[k % 3]}" if k % 3 == 0 else ""
        texts = {lang: " ".join(words[i] for i in row) + piece for lang, words in PROJECT.items()}
        found.setdefault(texts["en"], texts)
    return list(found.values())


def write_corpus(folder: Path, words, seed: int) -> Path:
    """A three-way word-for-word corpus in the Multi30k layout (train 120 rows, val 12)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", 120), ("val", 12)):
        rows = [[rng.randrange(10) for _ in range(rng.randint(2, 5))] for _ in range(count)]
        for lang in LANGS:
            text = "".join(" ".join(words[lang][i] for i in row) + "\n" for row in rows)
            (folder / f"{split}.{lang}.gz").write_bytes(gzip.compress(text.encode()))
    return folder


def train_tagged(root: Path) -> Tuple[Path, Path, Path]:
    """(the model's folder, the captions corpus, the software corpus): 3 updates on both corpora, every direction
    of en, de, fr, with domain tags."""
    from transformer_hub.training.trainer import main as train_main

    captions, software = write_corpus(root / "captions", CAPTIONS, 0), write_corpus(root / "software", SOFTWARE, 1)
    assert train_main(["--out", str(root / "run"), "--data-dir", f"captions={captions}", "--data-dir",
                       f"software={software}", "--langs", ",".join(LANGS), "--domain-tags", "--preset", "tiny",
                       "--vocab-size", "400", "--max-tokens", "300", "--warmup", "4", "--max-updates", "3",
                       "--final-beam", "0", "--threads", "1", "--bleu-every", "100", "--average-last", "1",
                       "--test-splits", ""]) == 0
    return root / "run" / "final", captions, software
