"""Parallel text: reading Multi30k-style corpora or any aligned pair of files, and token-based batching.

A corpus directory holds ``{split}.{lang}.gz`` (or plain ``{split}.{lang}``)
files, one sentence a line, aligned across languages.  Batches are built by
number of tokens from length buckets (little padding), in an order fixed by
``(seed, epoch)`` so that a resumed run sees exactly the batches it would have.
"""
from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import sys
import tempfile
import urllib.request
import zlib
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch

from ..config import DOMAIN_NAME
from ..errors import UserError

PathLike = Union[str, Path]
MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{name}"
MULTI30K_SPLITS = ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
MULTI30K_LANGS = ("en", "de", "fr", "cs")
DATA_ENV = "TRANSFORMER_HUB_DATA"


def default_data_dir() -> Path:
    """Where Multi30k is looked for without ``--data-dir``: ``$TRANSFORMER_HUB_DATA``, else ``data/multi30k``
    (relative to the working directory: the folder ``python -m transformer_hub download`` fills)."""
    return Path(os.environ.get(DATA_ENV) or Path("data") / "multi30k")


class DataError(UserError, ValueError):
    """A corpus file is missing, empty, undecodable or misaligned; the message names the file and line."""


def read_lines(path: PathLike, errors: str = "strict", allow_empty: bool = False) -> List[str]:
    """All lines of a UTF-8 text file without line endings; gzip is decompressed; ``-`` reads stdin.

    Lines end at "\\n" only (a "\\r" before it is dropped; a final newline adds no empty line).  ``errors``:
    ``"strict"`` (corpora: a bad byte is a ``DataError`` naming file and line) or ``"replace"`` (text to
    translate: U+FFFD instead).  An empty file is a ``DataError`` unless ``allow_empty``.
    """
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    name = "stdin" if str(path) == "-" else str(path)
    try:
        if name == "stdin":
            data = sys.stdin.buffer.read()
        else:
            data = Path(path).read_bytes()
        if name.endswith(".gz") or data[:2] == b"\x1f\x8b":  # a .gz name, or gzip's magic number
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise DataError(f"cannot read {name}: no such file") from None
    except (OSError, EOFError, zlib.error) as exc:  # a directory, no permission, a truncated or fake .gz
        raise DataError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(f"{name}:{line}: not valid UTF-8 ({exc.reason}); fix the file or convert it to UTF-8") from exc
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines and not allow_empty:
        raise DataError(f"{name}: the file is empty")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_parallel(src_path: PathLike, tgt_path: PathLike) -> List[Tuple[str, str]]:
    """Aligned (source, target) pairs from two files with the same number of lines."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: the files are not aligned")
    for number, (s, t) in enumerate(zip(src, tgt), start=1):
        if bool(s.strip()) != bool(t.strip()):
            empty = src_path if not s.strip() else tgt_path
            raise DataError(f"{empty}:{number}: empty line whose translation is not empty (misaligned files?)")
    return [(s, t) for s, t in zip(src, tgt) if s.strip()]


def corpus_file(data_dir: PathLike, split: str, lang: str) -> Path:
    """``{split}.{lang}.gz`` or ``{split}.{lang}`` inside ``data_dir``."""
    data_dir = Path(data_dir)
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (data_dir / name).is_file():
            return data_dir / name
    if not data_dir.is_dir():
        raise DataError(f"no Multi30k at {data_dir}: run `python -m transformer_hub download`, "
                        "or pass --data-dir / --train-src")
    if (data_dir / "manifest.json").is_file():  # a corpus ``python -m transformer_hub corpus`` built
        splits = sorted({path.name.split(".")[0] for path in data_dir.glob("*.gz")})
        raise DataError(f"{data_dir}: no {split}.{lang}.gz: this corpus has the splits {', '.join(splits)} "
                        f"(see its manifest.json); choose among them")
    raise DataError(f"{data_dir}: no {split}.{lang}.gz or {split}.{lang}: run `python -m transformer_hub download "
                    f"--langs {lang} --dest {data_dir}`, or pass --data-dir / --train-src")


def load_split(data_dir: PathLike, split: str, src_lang: str, tgt_lang: str) -> List[Tuple[str, str]]:
    """The (source, target) pairs of one split of a corpus folder: rows where both are non-empty."""
    return load_directions(data_dir, split, [(src_lang, tgt_lang)])[(src_lang, tgt_lang)]


def parse_directions(langs: Sequence[str], directions: Optional[str] = None) -> List[Tuple[str, str]]:
    """Every ordered pair of ``langs``, or the comma-separated ``src-tgt`` list ``directions`` (checked)."""
    if len(set(langs)) != len(langs) or len(langs) < 2:
        raise ValueError(f"--langs needs at least two different languages, got {','.join(langs)}")
    if not directions:
        return [(s, t) for s in langs for t in langs if s != t]
    pairs = []
    for item in directions.split(","):
        pair = tuple(item.strip().split("-"))
        if len(pair) != 2 or pair[0] == pair[1] or not set(pair) <= set(langs):
            raise ValueError(f"direction {item!r} is not 'src-tgt' with two different languages of {','.join(langs)}")
        pairs.append(pair)
    return pairs


def load_directions(data_dir: PathLike, split: str, directions: Sequence[Tuple[str, str]]
                    ) -> Dict[Tuple[str, str], List[Tuple[str, str]]]:
    """Aligned pairs of each direction from a folder of ``{split}.{lang}`` files (each file read once)."""
    texts: Dict[str, List[str]] = {}
    result = {}
    for src_lang, tgt_lang in directions:
        for lang in (src_lang, tgt_lang):
            if lang not in texts:
                texts[lang] = read_lines(corpus_file(data_dir, split, lang))
        result[(src_lang, tgt_lang)] = _aligned(texts[src_lang], texts[tgt_lang], f"{split}.{src_lang}",
                                                 f"{split}.{tgt_lang}")
    return result


def _aligned(src: List[str], tgt: List[str], src_name: str, tgt_name: str) -> List[Tuple[str, str]]:
    if len(src) != len(tgt):
        raise DataError(f"{src_name} has {len(src)} lines but {tgt_name} has {len(tgt)}: the files are not aligned")
    return [(s, t) for s, t in zip(src, tgt) if s.strip() and t.strip()]


class Track(NamedTuple):
    """One stream of pairs: a direction, and the corpus (domain) it comes from ("" for a run on one corpus)."""

    src: str
    tgt: str
    domain: str = ""

    @property
    def name(self) -> str:
        """"en-de", or "en-de@software" for a named corpus (metrics and per-direction validation use it)."""
        return f"{self.src}-{self.tgt}" + (f"@{self.domain}" if self.domain else "")


@dataclass(frozen=True)
class DataSource:
    """A corpus folder and its name (``--data-dir NAME=PATH``): the domain tag it gets with ``--domain-tags``,
    else the label of its validation numbers; "" when the run reads one unnamed folder."""

    path: Path
    domain: str = ""

    def describe(self) -> Dict[str, str]:
        """The model card's line for this corpus: its name, domain, licence and source (from the corpus builder's
        ``manifest.json``; a folder without one, as Multi30k's, by its folder name)."""
        manifest = self.path / "manifest.json"
        try:
            found = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
        except (OSError, ValueError):
            found = {}
        name = str(found.get("corpus") or self.path.name)
        record = {"corpus": name, "domain": self.domain or "captions"}
        licence = (found.get("licence") or {}).get("license") or KNOWN_TERMS.get(name.lower())
        packages = (found.get("source") or {}).get("packages") or {}
        if licence:
            record["licence"] = licence
        if packages:
            record["source"] = "Debian packages " + ", ".join(f"{p} {v.get('version', '')}".strip()
                                                            for p, v in sorted(packages.items()))
        return record


# Terms of corpora that ship no manifest, from their own README.
KNOWN_TERMS = {"multi30k": "non-commercial research and education (Multi30k's README; the images are Flickr30K's)"}

def parse_data_dirs(values: Sequence[str]) -> List[DataSource]:
    """``--data-dir`` values (``PATH`` or ``NAME=PATH``) as sources; several need a name each (folders of one
    name are one corpus: their directions' pairs are read together)."""
    sources = []
    for value in values:
        name, sep, path = value.partition("=")
        if sep and DOMAIN_NAME.match(name):
            sources.append(DataSource(Path(path), name))
        else:
            sources.append(DataSource(Path(value)))
    names = [s.domain for s in sources]
    if len(sources) > 1 and not all(names):
        raise DataError("several --data-dir folders need a name each: --data-dir captions=PATH "
                        "--data-dir software=PATH (a name is a lowercase word; folders of one name are one corpus)")
    return sources


def load_mixed(sources: Sequence[DataSource], split: str, directions: Sequence[Tuple[str, str]]
               ) -> Dict[Track, List[Tuple[str, str]]]:
    """Every direction of every corpus: {Track(src, tgt, corpus name): pairs}, corpus by corpus (the folders of
    one name in the order given)."""
    mixed: Dict[Track, List[Tuple[str, str]]] = {}
    for source in sources:
        for (s, t), pairs in load_directions(source.path, split, directions).items():
            mixed.setdefault(Track(s, t, source.domain), []).extend(pairs)
    return mixed


def fetch_url(url: str) -> bytes:
    """The body of ``url``; network failures are ``OSError`` (``URLError``, timeouts)."""
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - the fixed https URL above
        return response.read()


def download_multi30k(dest: PathLike, langs: Sequence[str] = ("en", "de"), splits: Sequence[str] = MULTI30K_SPLITS,
                      fetch: Optional[Callable[[str], bytes]] = None) -> List[Path]:
    """Fetch the official Multi30k task-1 raw files into ``dest`` (skipping ones already there).

    Each download is checked (gzip that decodes as UTF-8 text) before it is
    moved into place, so a broken transfer never leaves a corrupt file.
    ``fetch`` (url -> bytes; default ``fetch_url``) is injectable for offline tests.
    """
    fetch = fetch or fetch_url
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for split in splits:
        for lang in langs:
            if split.startswith("test_2017") and lang == "cs":
                continue  # not published for Czech
            name = f"{split}.{lang}.gz"
            if (dest / name).is_file():
                continue
            url = MULTI30K_URL.format(name=name)
            try:
                payload = fetch(url)
            except OSError as exc:
                raise DataError(f"cannot download {url}: {getattr(exc, 'reason', None) or exc}; check the "
                                f"connection, or copy the Multi30k files into {dest}") from exc
            with tempfile.NamedTemporaryFile(dir=dest, suffix=".gz", delete=False) as tmp:
                tmp.write(payload)
            try:
                read_lines(tmp.name)
            except DataError as exc:
                os.unlink(tmp.name)
                raise DataError(f"download of {name} is not a valid gzip text file: {exc}") from exc
            shutil.move(tmp.name, dest / name)
            written.append(dest / name)
    return written


# --------------------------------------------------------------------------- batching
@dataclass(slots=True)
class Example:
    # Ids as compact arrays (2 bytes an id for vocabularies under 65,536): a corpus of millions of pairs held as
    # lists of Python ints took ~10 GB, as arrays ~3 GB.  Any sequence of ints works (tests give lists).
    src: Sequence[int]  # source ids (a multilingual model's start with the target-language tag), ending with eos
    tgt: Sequence[int]  # target ids, bos ... eos
    direction: str = ""  # "src-tgt" for multilingual corpora (per-direction validation)
    forced: int = 0  # leading target tokens after bos that are given, not predicted (a decoder-start tag)


def encode_pairs(pairs: Sequence[Tuple[str, str]], tokenizer, bos: int, eos: int, max_len: int,
                 tags: Sequence[int] = (), direction: str = "",
                 cache: Optional[Dict[Tuple[str, str], List[int]]] = None, sample: bool = False,
                 tag_in_decoder: bool = False) -> List[Example]:
    """Tokenize pairs (``tags``: ids put before every source, ``tokenizer.source_tags``'s); examples longer than
    ``max_len`` are dropped.

    ``tag_in_decoder``: the first tag (the target language's) follows bos in the target instead (``forced``: the
    loss does not ask for it); the rest (a domain tag) stay at the source start.

    ``cache`` ((side, text) -> ids), shared across calls, encodes each sentence of a many-way corpus once.
    ``sample``: the sides ``tokenizer.sampling`` covers are segmented by ``tokenizer.sample`` (a fresh draw for
    every occurrence, never cached).
    """
    examples = []
    tags = list(tags)
    prefix = tags[1:] if tags and tag_in_decoder else tags
    start = [bos, tags[0]] if tags and tag_in_decoder else [bos]
    cache = {} if cache is None else cache
    sampled = tokenizer.sampling.sides if sample and tokenizer.sampling is not None else ()

    sizes = (getattr(tokenizer, "src_vocab_size", None), getattr(tokenizer, "tgt_vocab_size", None))
    code = "H" if all(size is not None and size <= 1 << 16 for size in sizes) else "i"

    def encode(text: str, side: str) -> Sequence[int]:
        if side in sampled:
            return tokenizer.sample(text, side)
        if (side, text) not in cache:
            cache[(side, text)] = array(code, tokenizer.encode(text, side=side))
        return cache[(side, text)]

    for src, tgt in pairs:
        s = array(code, prefix)
        s.extend(encode(src, "source"))
        s.append(eos)
        t = array(code, start)
        t.extend(encode(tgt, "target"))
        t.append(eos)
        if len(s) <= max_len and len(t) <= max_len:
            examples.append(Example(s, t, direction, len(start) - 1))
    return examples


def token_batches(examples: Sequence[Example], max_tokens: int, seed: int, epoch: int,
                  shuffle: bool = True) -> List[List[int]]:
    """Indices grouped so that ``batch_size * longest <= max_tokens``, sorted by length with seeded noise.

    The same ``(seed, epoch)`` always gives the same batches in the same order.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(examples)))
    if shuffle:
        rng.shuffle(order)  # random tie-breaking inside a length bucket
    order.sort(key=lambda i: (len(examples[i].src), len(examples[i].tgt)))
    batches: List[List[int]] = []
    batch: List[int] = []
    longest = 0
    for i in order:
        size = max(len(examples[i].src), len(examples[i].tgt))
        if batch and max(longest, size) * (len(batch) + 1) > max_tokens:
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, size)
    if batch:
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


def collate(examples: Sequence[Example], pad_id: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """-> src (B, S), tgt_in (B, T) = bos..., tgt_out (B, T) = ...eos, all right-padded with ``pad_id``."""
    S = max(len(e.src) for e in examples)
    T = max(len(e.tgt) for e in examples) - 1
    src = torch.full((len(examples), S), pad_id, dtype=torch.long)
    tgt_in = torch.full((len(examples), T), pad_id, dtype=torch.long)
    tgt_out = torch.full((len(examples), T), pad_id, dtype=torch.long)
    for row, e in enumerate(examples):
        src[row, : len(e.src)] = torch.tensor(e.src)
        tgt_in[row, : len(e.tgt) - 1] = torch.tensor(e.tgt[:-1])
        tgt_out[row, : len(e.tgt) - 1] = torch.tensor(e.tgt[1:])
        tgt_out[row, : e.forced] = pad_id  # given tokens (a decoder-start tag) are not predicted: no loss
    return src, tgt_in, tgt_out


def iterate_batches(examples: Sequence[Example], max_tokens: int, seed: int, epoch: int, pad_id: int,
                    start: int = 0, rank: int = 0, world_size: int = 1
                    ) -> Iterator[Tuple[int, Tuple[torch.Tensor, torch.Tensor, torch.Tensor]]]:
    """Yield ``(batch_index, tensors)`` from batch ``start`` on; with several processes each takes every
    ``world_size``-th group of batches (the batch list is cut to a multiple of ``world_size``)."""
    batches = token_batches(examples, max_tokens, seed, epoch)
    usable = len(batches) - len(batches) % world_size
    for index in range(start, usable // world_size):
        yield index, collate([examples[i] for i in batches[index * world_size + rank]], pad_id)
