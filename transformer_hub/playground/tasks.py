"""Synthetic tasks small enough to learn in a minute on one CPU core, over one tiny fixed vocabulary.

Each task maps a sequence of digits to a sequence of tokens: *copy* (the same digits), *reverse*, *sort*,
and *number-to-words* ("312" -> "three hundred twelve"), which, like translation, changes the length and
needs more than one source token per output token ("13" -> "thirteen", "40" -> "forty").  Examples are
drawn from a seeded ``random.Random``; the held-out set is drawn first and never appears in training.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Set, Tuple

import torch

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]  # pad 0, bos 1, eos 2, unk 3: TransformerConfig's defaults
PAD, BOS, EOS, UNK = range(4)
DIGITS = [str(d) for d in range(10)]
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
WORDS = ONES + TENS[2:] + ["hundred", "thousand"]
VOCAB: List[str] = SPECIALS + DIGITS + WORDS  # one vocabulary for sources and targets (40 tokens)
TOKEN_ID: Dict[str, int] = {token: i for i, token in enumerate(VOCAB)}
MAX_WORD_DIGITS = 6  # number-to-words speaks numbers below a million


def _below_thousand(n: int) -> List[str]:
    words: List[str] = []
    if n >= 100:
        words += [ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(TENS[n // 10])
        n %= 10
        if n:
            words.append(ONES[n])
    elif n or not words:
        words.append(ONES[n])
    return words


def number_words(n: int) -> List[str]:
    """English number names, without "and" or hyphens: 312 -> three hundred twelve, 40 -> forty."""
    if not 0 <= n < 10 ** MAX_WORD_DIGITS:
        raise ValueError(f"number-to-words speaks numbers from 0 to {10 ** MAX_WORD_DIGITS - 1}, got {n}")
    if n < 1000:
        return _below_thousand(n)
    rest = _below_thousand(n % 1000) if n % 1000 else []
    return _below_thousand(n // 1000) + ["thousand"] + rest


def _digits(rng: random.Random, length: int) -> List[str]:
    return [DIGITS[rng.randrange(10)] for _ in range(length)]


def _number(rng: random.Random, length: int) -> List[str]:
    first = rng.randrange(1, 10) if length > 1 else rng.randrange(10)  # no leading zero
    return [DIGITS[first]] + _digits(rng, length - 1)


def _spoken(digits: List[str]) -> List[str]:
    return number_words(int("".join(digits)))


@dataclass(frozen=True)
class Task:
    """A source sampler (digits of a given length) and the rule that maps a source to its target."""

    name: str
    description: str
    sample: Callable[[random.Random, int], List[str]]
    target: Callable[[List[str]], List[str]]
    max_length: int  # the longest source this task can draw
    lengths: Tuple[int, int] = (3, 12)  # the default source lengths

    def example(self, rng: random.Random, min_len: int, max_len: int) -> Tuple[List[str], List[str]]:
        source = self.sample(rng, rng.randint(min_len, max_len))
        return source, self.target(source)

    def target_length(self, source_length: int) -> int:
        """The longest target a source of this length can have (for decoding caps)."""
        return 2 * source_length if self.name == "number-to-words" else source_length  # 999999: nine words


TASKS: Dict[str, Task] = {task.name: task for task in (
    Task("copy", "repeat the digits", _digits, list, 20),
    Task("reverse", "the digits in reverse order", _digits, lambda s: s[::-1], 20),
    Task("sort", "the digits in increasing order", _digits, sorted, 20),
    # from 100 up: the few one- and two-digit numbers would be held out whole, never seen in training
    Task("number-to-words", "the number in English words: 312 -> three hundred twelve", _number, _spoken,
         MAX_WORD_DIGITS, (3, MAX_WORD_DIGITS)),
)}


def get_task(name: str) -> Task:
    """The task called ``name``; an unknown name is a ``ValueError`` listing the known ones."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; tasks: {', '.join(TASKS)}")
    return TASKS[name]


def encode(tokens: Sequence[str]) -> List[int]:
    """Token strings -> ids (unknown tokens -> <unk>)."""
    return [TOKEN_ID.get(t, UNK) for t in tokens]


def decode(ids: Sequence[int]) -> List[str]:
    """Ids -> token strings, specials dropped."""
    return [VOCAB[i] for i in ids if i >= len(SPECIALS) and i < len(VOCAB)]


def pad_rows(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    """(B, longest) LongTensor of ``rows`` padded with <pad>."""
    out = torch.full((len(rows), max(len(r) for r in rows)), PAD, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, :len(row)] = torch.tensor(row, dtype=torch.long)
    return out


@dataclass
class Batch:
    """Teacher forcing: the source ends in </s>; the decoder reads <s> + target and predicts target + </s>."""

    src: torch.Tensor      # (B, S)
    tgt_in: torch.Tensor   # (B, T)
    tgt_out: torch.Tensor  # (B, T)
    targets: List[List[int]]  # without specials, for exact match

    @classmethod
    def of(cls, pairs: Sequence[Tuple[List[str], List[str]]]) -> "Batch":
        sources = [encode(s) + [EOS] for s, _ in pairs]
        targets = [encode(t) for _, t in pairs]
        return cls(pad_rows(sources), pad_rows([[BOS] + t for t in targets]), pad_rows([t + [EOS] for t in targets]),
                   targets)


class TaskData:
    """A seeded stream of training batches and a fixed held-out set disjoint from it."""

    def __init__(self, task: Task, min_len: int, max_len: int, seed: int, held_out: int) -> None:
        self.task, self.min_len, self.max_len = task, min_len, max_len
        self.rng = random.Random(seed)
        held: Dict[Tuple[str, ...], List[str]] = {}
        for _ in range(50 * held_out):  # short lengths have few distinct sources: stop when they run out
            if len(held) == held_out:
                break
            source, target = task.example(self.rng, min_len, max_len)
            held.setdefault(tuple(source), target)
        self.held_out_pairs = [(list(s), t) for s, t in held.items()]
        self._held: Set[Tuple[str, ...]] = set(held)
        self.held_out = Batch.of(self.held_out_pairs)

    def train_batch(self, size: int) -> Batch:
        """``size`` fresh examples, none of them a held-out source."""
        pairs: List[Tuple[List[str], List[str]]] = []
        while len(pairs) < size:
            source, target = self.task.example(self.rng, self.min_len, self.max_len)
            if tuple(source) not in self._held:
                pairs.append((source, target))
        return Batch.of(pairs)
