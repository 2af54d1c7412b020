"""Words, not pieces: a hypothesis' words with their probabilities, the whole words the model would put in a
word's place, and the sentence-level doubt that one unlikely word raises.

    from transformer_hub.decoding.words import word_alternatives, words
    words(tokenizer.pieces(hyp.tokens), hyp.token_logprobs)      # [Word(text='Ein', probability=0.93, ...), ...]
    word_alternatives(model, "A hen is running.", 1, src_lang="en", tgt_lang="de")   # [WordChoice('Huhn', ...)]

A word is a run of pieces that starts at a piece with SentencePiece's word marker ("▁Hu", "nd"), or at a
punctuation piece ("."), which is a word of its own written without a space.  Its probability is the product
of its pieces' probabilities: the chance the model gave the whole word.

Word alternatives: at a word's first piece the model's K most likely pieces that also start a word ("▁La",
"▁C", ...) are each completed greedily, the model spelling the rest of the word (``prefix=`` with the piece
left open), and ranked by the probability of the whole word; spellings of the same word are merged (their
probabilities add up: they are different ways to the same text).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from .api import generate

WORD_START = "\u2581"
# pieces that are a word of their own, written without a space before them (closing punctuation)
_PUNCTUATION = set(".,;:!?…\"'“”„«»()[]")
# a completion the model gives less than this is a forced spelling ("Dräger" from "▁Dr"), not a word it considered
MIN_PROBABILITY = 0.005


@dataclass
class Word:
    """A run of output pieces ``tokens[start:end]`` read as one word."""

    text: str
    start: int
    end: int
    probability: float  # the product of its pieces' probabilities
    space: bool  # written with a space before it (it started with the word marker)


@dataclass
class WordChoice:
    """A whole word the model could put in a word's place, with its probability; ``current``: the word output."""

    text: str
    probability: float
    current: bool = False


def starts_word(piece: str) -> bool:
    """Whether ``piece`` begins a new word: the word marker, or a piece made only of punctuation."""
    return piece.startswith(WORD_START) or (bool(piece) and all(c in _PUNCTUATION for c in piece))


def words(pieces: Sequence[str], logprobs: Sequence[float]) -> List[Word]:
    """The words of an output: ``pieces`` (as ``tokenizer.pieces`` gives them) with each piece's log-probability
    (extra entries, such as eos's, are ignored)."""
    out: List[Word] = []
    for i, piece in enumerate(pieces):
        if not out or starts_word(piece):
            out.append(Word("", i, i, 1.0, piece.startswith(WORD_START)))
        word = out[-1]
        word.text += piece.replace(WORD_START, " ")
        word.end = i + 1
        word.probability *= math.exp(logprobs[i])
    for word in out:
        word.text = word.text.strip()
    return out


def join(items: Iterable[Tuple[str, bool]]) -> str:
    """Words as text: (text, space before it) pairs."""
    return "".join((" " if space and i else "") + text for i, (text, space) in enumerate(items))


def openings(tokenizer, ids_before: Sequence[int], alternatives: Sequence[Tuple[int, float]],
             special: Iterable[int] = ()) -> List[str]:
    """The prefixes to complete: the output before a word followed by each alternative piece that starts a word
    (special tokens and pieces that would glue onto the previous word left out), each word left open."""
    special = set(special)
    ids = [int(t) for t, _ in alternatives if int(t) not in special]
    pieces = tokenizer.pieces(ids, side="target")
    before = list(ids_before)
    keep = [t for t, p in zip(ids, pieces) if starts_word(p) and p.strip(WORD_START) and (before or p[0] == WORD_START)]
    return list(dict.fromkeys(tokenizer.decode(before + [t], side="target") for t in keep))


def _word_at(tokenizer, hyp, prefix: str) -> Optional[Word]:
    """The word of ``hyp`` that its (open) ``prefix`` started: the one after the prefix's complete words."""
    forced = tokenizer.pieces(tokenizer.encode(prefix, side="target"), side="target")
    index = max(len(words(forced, [0.0] * len(forced))) - 1, 0)
    found = words(tokenizer.pieces(hyp.tokens, side="target"), hyp.token_logprobs)
    return found[index] if index < len(found) else None


def rank(tokenizer, prefixes: Sequence[str], completions: Sequence, current: Optional[Word] = None,
         current_tokens: Sequence[int] = (), k: int = 5, least: float = MIN_PROBABILITY) -> List[WordChoice]:
    """The completed words (``completions[i]``: the best hypothesis decoded with ``prefixes[i]``) and the
    ``current`` word, merged by text and ranked by probability, most likely first; at most ``k``, none below
    ``least`` (but the current word)."""
    spellings: dict = {}  # text -> {pieces: probability}
    if current is not None:
        spellings.setdefault(current.text, {})[tuple(current_tokens)] = current.probability
    for prefix, hyp in zip(prefixes, completions):
        word = _word_at(tokenizer, hyp, prefix)
        if word is not None and word.text and any(c.isalnum() for c in word.text) == _wordy(current):
            spellings.setdefault(word.text, {})[tuple(hyp.tokens[word.start:word.end])] = word.probability
    ranked = sorted(((text, math.fsum(paths.values())) for text, paths in spellings.items()),
                    key=lambda item: -item[1])
    mine = current.text if current is not None else None
    return [WordChoice(text, p, text == mine) for text, p in ranked if p >= least or text == mine][:k]


def _wordy(word: Optional[Word]) -> bool:
    return word is None or any(c.isalnum() for c in word.text)


def word_alternatives(model, text: str, word: int, k: int = 5, *, src_lang=None, tgt_lang=None,
                      **options) -> List[WordChoice]:
    """The ``k`` most likely whole words at word ``word`` (0-based) of ``text``'s greedy translation, its own
    word marked ``current``; ``options`` are ``generate``'s (engine, max_length, ...)."""
    tokenizer = model.tokenizer
    options = dict(options, src_lang=src_lang, tgt_lang=tgt_lang, strategy="greedy")
    hyp = generate(model, [text], return_alternatives=k, **options)[0].best
    found = words(tokenizer.pieces(hyp.tokens, side="target"), hyp.token_logprobs)
    if not 0 <= word < len(found):
        raise ValueError(f"word {word} is out of range: the translation has {len(found)} words")
    target = found[word]
    cfg = model.config
    prefixes = openings(tokenizer, hyp.tokens[:target.start], hyp.alternatives[target.start],
                        (cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id))
    completed = [r.best for r in generate(model, [text] * len(prefixes), prefix=prefixes, **options)] if prefixes else []
    return rank(tokenizer, prefixes, completed, target, hyp.tokens[target.start:target.end], k)


# A sentence is unsure when its least likely word or its mean token probability is below these: chosen on the
# val splits of both domains, Multi30k and LibreOffice's help (en<->de/fr/cs, the v3 model, beam 4), to flag each
# domain's sentences of lowest chrF, by scripts/unsure_flag.py at commit 6d4edca (docs/unsure_flag.json; docs/design.md).
LOWEST_WORD_THRESHOLD = 0.005
MEAN_THRESHOLD = 0.63


@dataclass
class Doubt:
    """How sure the model was of a sentence: its mean token probability and its least likely word."""

    mean: float  # the mean probability of the output tokens, eos included (``Hypothesis.confidence``)
    lowest_word: float  # the probability of its least likely word (1.0 for an empty output)
    word: str = ""  # that word

    def unsure(self, lowest_word: float = None, mean: float = None) -> bool:
        """Below either threshold (the module's, unless given)."""
        lowest_word = LOWEST_WORD_THRESHOLD if lowest_word is None else lowest_word
        return self.lowest_word < lowest_word or self.mean < (MEAN_THRESHOLD if mean is None else mean)


def doubt(hyp, tokenizer) -> Optional[Doubt]:
    """The :class:`Doubt` of a hypothesis (None for an output with no tokens at all)."""
    if hyp.confidence is None:
        return None
    found = words(tokenizer.pieces(hyp.tokens, side="target"), hyp.token_logprobs)
    low = min(found, key=lambda w: w.probability, default=None)
    return Doubt(hyp.confidence, 1.0 if low is None else low.probability, "" if low is None else low.text)
