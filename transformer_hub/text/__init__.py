"""Text around the model: sentences out of a text and back with its layout (``segmentation.py``), its language
detected (``detection.py``), and the pipeline that translates texts with them (``pipeline.py``: split, detect,
choose the model, decode, join), with a glossary's terms as each sentence's constraints (``glossary.py``).
Segmentation, detection and glossaries import nothing else of ours.

    from transformer_hub.text import translate_texts, split_sentences, detect_language
    translate_texts(model, [paragraph], src_lang="auto", tgt_lang="de")[0].text
"""
from .detection import Detected, detect_language, too_short_to_detect, unserved_language
from .glossary import Entry, Glossary
from .models import Models, ModelSet, OneModel
from .pipeline import TextError, translate_texts
from .segmentation import (LANGUAGE_NAMES, UNSERVED_RATIO, UNSERVED_THRESHOLD, Segmented, has_words, language_name,
                           split_sentences)

__all__ = ["translate_texts", "TextError", "Models", "OneModel", "ModelSet", "split_sentences",
           "Segmented", "detect_language", "Detected", "unserved_language", "too_short_to_detect",
           "has_words", "language_name", "LANGUAGE_NAMES", "UNSERVED_THRESHOLD", "UNSERVED_RATIO",
           "Glossary", "Entry"]
