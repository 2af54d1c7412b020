"""Sentences for the tests: varied synthetic pairs (every fixture model is trained on them, with or without a
corpus beside the checkout), the Multi30k and LibreOffice help corpora for the tests marked ``data``; pytest's cache."""
from __future__ import annotations

import gzip
import os
import random
from pathlib import Path
from typing import List, Optional, Tuple

REPO_ROOT = Path(__file__).resolve().parents[2]
# The corpus comes through the environment, as for the library: $TRANSFORMER_HUB_DATA, else data/multi30k in the
# checkout (what `python -m transformer_hub download --dest data/multi30k` fills).  Only the tests marked ``data``
# read it (.ci/run runs them in a second pass with the corpus); no fixture depends on it, so a fresh clone and CI
# test the same models.  Skip messages name no path outside the checkout.
MULTI30K = Path(os.environ.get("TRANSFORMER_HUB_DATA") or REPO_ROOT / "data" / "multi30k")
MULTI30K_MISSING = ("Multi30k corpus not found: run `python -m transformer_hub download --dest data/multi30k` "
                    "or set TRANSFORMER_HUB_DATA")
# The second domain's corpus, built from Debian's packages (.ci/run builds it where apt-get download works).
LIBREOFFICE_HELP = Path(os.environ.get("TRANSFORMER_HUB_LIBREOFFICE_HELP") or REPO_ROOT / "data" / "libreoffice-help")
LIBREOFFICE_HELP_MISSING = ("LibreOffice help corpus not found: run `python -m transformer_hub corpus libreoffice-help "
                            "--out data/libreoffice-help` or set TRANSFORMER_HUB_LIBREOFFICE_HELP")
# The third: Debian's message catalogs (a few GB of packages to download; built by hand, not in CI).
DEBIAN_CATALOGS = Path(os.environ.get("TRANSFORMER_HUB_DEBIAN_CATALOGS") or REPO_ROOT / "data" / "debian-catalogs")
DEBIAN_CATALOGS_MISSING = ("Debian catalogs corpus not found: run `python -m transformer_hub corpus debian-catalogs "
                           "--out data/debian-catalogs` or set TRANSFORMER_HUB_DEBIAN_CATALOGS")

def cache_folder(request, name: str) -> Optional[Path]:
    """pytest's cache folder ``name``, or None when the cache provider is off (``-p no:cacheprovider``)."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir(name) if cache is not None else None


# --------------------------------------------------------------------------- text
def read_multi30k(split: str, lang: str, limit: Optional[int] = None) -> Optional[List[str]]:
    """The first ``limit`` lines of ``{split}.{lang}.gz``, or None when the corpus is absent."""
    path = MULTI30K / f"{split}.{lang}.gz"
    if not path.is_file():
        return None
    lines = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            lines.append(line.strip())
            if limit is not None and len(lines) >= limit:
                break
    return lines


_SUBJECTS = [("A man", "Ein Mann"), ("A woman", "Eine Frau"), ("Two children", "Zwei Kinder"),
             ("A small dog", "Ein kleiner Hund"), ("An old man", "Ein alter Mann"), ("A girl", "Ein Mädchen"),
             ("Three boys", "Drei Jungen"), ("A brown cat", "Eine braune Katze"), ("The workers", "Die Arbeiter"),
             ("A young musician", "Ein junger Musiker"), ("Several people", "Mehrere Leute")]
_VERBS = [("is riding", "fährt"), ("is holding", "hält"), ("is looking at", "betrachtet"), ("is painting", "malt"),
          ("is carrying", "trägt"), ("is throwing", "wirft"), ("is cleaning", "putzt"), ("is selling", "verkauft")]
_OBJECTS = [("a red bicycle", "ein rotes Fahrrad"), ("a large ball", "einen großen Ball"),
            ("a wooden boat", "ein Holzboot"), ("a blue guitar", "eine blaue Gitarre"),
            ("some fresh fruit", "etwas frisches Obst"), ("a heavy box", "eine schwere Kiste"),
            ("a white wall", "eine weiße Wand"), ("the street", "die Straße")]
_PLACES = [("in the park", "im Park"), ("on the beach", "am Strand"), ("near a river", "in der Nähe eines Flusses"),
           ("at the market", "auf dem Markt"), ("in front of a shop", "vor einem Geschäft"),
           ("under a tree", "unter einem Baum"), ("during the winter", "während des Winters"), ("", "")]


def synthetic_pairs(n: int = 300, seed: int = 0) -> List[Tuple[str, str]]:
    """Varied (English, German) sentence pairs built from phrase tables (umlauts and ß included)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        (se, sd), (ve, vd), (oe, od), (pe, pd) = (rng.choice(t) for t in (_SUBJECTS, _VERBS, _OBJECTS, _PLACES))
        en = " ".join(w for w in (se, ve, oe, pe) if w) + rng.choice([".", ".", "!"])
        de = " ".join(w for w in (sd, vd, od, pd) if w) + "."
        pairs.append((en, de))
    return pairs
