"""transformer_hub.text.verbatim: wordless pieces inside a sentence come out of its translation as they went in."""
from __future__ import annotations

import torch

from transformer_hub.decoding import generate
from transformer_hub.text import translate_texts
from transformer_hub.text.verbatim import restore, wordless_pieces

SOURCE = "Meet me at 12:45 now."
SOURCE_PIECES = ["▁Meet", "▁me", "▁at", "▁12", ":", "45", "▁now", ".", "</s>"]


def attention_on(rows: int, columns: int, hot_row: int, hot_columns) -> torch.Tensor:
    """(2 layers, 2 heads, rows, columns) attention, each row uniform except ``hot_row`` on ``hot_columns``."""
    att = torch.full((2, 2, rows, columns), 1.0 / columns)
    att[:, :, hot_row] = 0.0
    att[:, :, hot_row, list(hot_columns)] = 1.0 / len(hot_columns)
    return att


def test_wordless_pieces_are_what_has_no_words_less_the_sentence_punctuation():
    sentence = "Mail anna@example.cz now, at (12:45), 😀 - ok... see https://x.cz/a. Bye!"
    assert wordless_pieces(sentence) == ["anna@example.cz", "12:45", "😀", "https://x.cz/a"]
    assert wordless_pieces("A dog runs - fast!") == []


def test_a_lost_piece_is_inserted_before_the_word_attending_to_it_most():
    targets = ["▁Triff", "▁mich", "▁am", "▁Fluss", "▁jetzt", ".", "</s>"]
    att = attention_on(len(targets), len(SOURCE_PIECES), hot_row=4, hot_columns=[3, 4, 5])  # "jetzt"
    assert restore(SOURCE, "Triff mich am Fluss jetzt.", att, SOURCE_PIECES, targets) == \
        "Triff mich am Fluss 12:45 jetzt."
    att = attention_on(len(targets), len(SOURCE_PIECES), hot_row=1, hot_columns=[4])  # "mich", on ":" alone
    assert restore(SOURCE, "Triff mich am Fluss jetzt.", att, SOURCE_PIECES, targets) == \
        "Triff 12:45 mich am Fluss jetzt."


def test_a_mangled_piece_is_replaced_keeping_its_punctuation_and_words_are_never_changed():
    targets = ["▁Triff", "▁mich", "▁um", "▁12", "45", ".", "</s>"]
    att = attention_on(len(targets), len(SOURCE_PIECES), hot_row=4, hot_columns=[3, 4, 5])
    assert restore(SOURCE, "Triff mich um 1245.", att, SOURCE_PIECES, targets) == "Triff mich um 12:45."
    att = attention_on(len(targets), len(SOURCE_PIECES), hot_row=2, hot_columns=[3, 4, 5])  # "um": a word
    assert restore(SOURCE, "Triff mich um 1245.", att, SOURCE_PIECES, targets) == "Triff mich 12:45 um 1245."


def test_a_piece_spelled_in_bytes_is_found_and_the_eos_row_is_never_picked():
    source, pieces = "Ein 😀 hier.", ["▁Ein", "▁", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>", "▁hier", ".", "</s>"]
    targets = ["▁One", "▁here", ".", "</s>"]
    att = attention_on(len(targets), len(pieces), hot_row=1, hot_columns=[3, 4])  # two bytes of the emoji
    att[:, :, 3] = 0.0
    att[:, :, 3, 2:6] = 0.25  # eos looks at the emoji harder still: it is no place in the text
    assert restore(source, "One here.", att, pieces, targets) == "One 😀 here."


def test_what_is_kept_or_cannot_be_aligned():
    assert restore(SOURCE, "Triff mich um 12:45.") == "Triff mich um 12:45."  # already there: as it is
    assert restore("A dog runs.", "Ein Hund rennt.") == "Ein Hund rennt."
    # no attention (an engine that gives none): the same relative place
    assert restore("At 12:45 we meet.", "Wir treffen uns.") == "Wir 12:45 treffen uns."
    mismatched = attention_on(3, 4, 0, [0])  # not this sentence's attention: ignored, the fallback used
    assert restore("At 12:45 we meet.", "Wir treffen uns.", mismatched, SOURCE_PIECES, ["▁Wir"]) == \
        "Wir 12:45 treffen uns."


def test_the_split_path_keeps_pieces_inside_sentences_verbatim(tiny_model):
    texts = ["Mail anna@example.cz now.", "Meet me at 12:45 😀 by the river. A dog runs."]
    results = translate_texts(tiny_model, texts, max_length=12)
    plain = generate(tiny_model, ["Mail anna@example.cz now.", "Meet me at 12:45 😀 by the river.", "A dog runs."],
                     max_length=12)
    for result, pieces in zip(results, (["anna@example.cz"], ["12:45", "😀"])):
        assert all(piece in result.text for piece in pieces), result.text
    # words never change: what the model said, less its wordless tokens, is still there in order
    for restored, alone in zip([results[0].text, results[1].sentences[0].text], plain[:2]):
        kept = [w for w in alone.text.split() if not wordless_pieces(w)]
        assert [w for w in restored.split() if not wordless_pieces(w)] == kept
    assert results[1].sentences[1].text == plain[2].text  # a sentence without such pieces: untouched
    assert results[0].best.attention is None  # asked for only to align, not handed out
    asked = translate_texts(tiny_model, texts[:1], max_length=12, return_attention=True)
    assert asked[0].sentences[0].best.attention is not None
