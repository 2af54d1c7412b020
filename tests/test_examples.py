"""Every example the page offers is one the shipped models translate well.

An example is translated as a visitor clicking it gets it: by the model "Best for the direction" picks, into
the page's default target (German; English for a German example), with the page's default beam search.  The
translation must score chrF >= ``MIN_CHRF`` against the example's reference (the same Multi30k caption in the
target language: ``EXAMPLES`` is four-way parallel) and hold the caption's key words, written here by hand:
chrF alone passed "Zuckerwatte" (cotton candy) for "cotton" at 63.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from space.page.examples import DOCUMENTATION, DOCUMENTATION_DOMAIN, EXAMPLES
from space.serving.choice import ModelChooser
from space.serving.model_store import ModelStore

MODELS = Path(__file__).resolve().parent.parent / "space" / "models"
MIN_CHRF = 40.0
# per example (the order of EXAMPLES) and target language: the words a right translation has; "a|b": either
KEY_WORDS = {
    "de": [["Kopfhörer", "Schultern"], ["Neoprenanzug", "Welle"], ["Rettungsweste|Schwimmweste", "Glatze|kahl", "Boot"],
           ["Kinder", "Fass"], ["Kinder", "Wasser", "Brücke"]],
    "en": [["boy", "headphones", "shoulders"], ["wetsuit", "surf", "wave"], ["bald", "life jacket", "boat"],
           ["children", "barrel"], ["children", "water", "bridge"]],
}
# the documentation lines (shown beside a model trained with the software domain): Format, Cells, Font, ...
DOCUMENTATION_WORDS = {
    "de": [["Format", "Zelle", "Schrift"], ["Zellen", "kopieren"], ["Extras", "Optionen"], ["Einfügen", "Bild|Grafik"],
           ["Text"]],
    "en": [["Format", "Cells", "Font"], ["cells", "copy"], ["menu", "Options"], ["Insert", "Image|picture"],
           ["text", "find|search"]],
}
pytestmark = pytest.mark.slow  # decodes every example with the shipped models


def default_target(source: str) -> str:
    """The target the Translate tab shows for an example of ``source``: German, or English for German."""
    return "en" if source == "de" else "de"


@pytest.fixture(scope="module")
def translations():
    if not (MODELS / "multilingual" / "model.safetensors").is_file():
        pytest.skip("the shipped models under space/models are missing")
    sacrebleu = pytest.importorskip("sacrebleu.metrics", reason="sacrebleu scores the examples")
    from transformer_hub import Transformer
    from transformer_hub.decoding import generate

    store = ModelStore(MODELS)
    chooser, models, found = ModelChooser(store), {}, {}
    software = any(DOCUMENTATION_DOMAIN in (store.config(n).domains or ()) for n in store.names())
    for domain, examples in ((None, EXAMPLES), (DOCUMENTATION_DOMAIN, DOCUMENTATION if software else {})):
        for source, lines in examples.items():
            target = default_target(source)
            name = chooser.best(source, target, domain)
            assert name is not None, (source, target)
            if name not in models:
                models[name] = Transformer.from_pretrained(str(store.spec(name).source))
            tagged = {"domain": domain} if domain in (models[name].config.domains or ()) else {}
            outputs = [r.text for r in generate(models[name], lines, strategy="beam", beam_size=4, length_penalty=0.6,
                                                src_lang=source, tgt_lang=target, **tagged)]
            found[domain, source] = (name, target, outputs)
    return found, sacrebleu.CHRF()


def test_the_examples_are_the_same_captions_in_every_language():
    counts = {lang: len(lines) for lang, lines in EXAMPLES.items()}
    assert set(counts) == {"en", "de", "fr", "cs"} and len(set(counts.values())) == 1, counts
    assert {len(words) for words in KEY_WORDS.values()} == {counts["en"]}


@pytest.mark.parametrize("source", sorted(EXAMPLES))
def test_every_example_is_translated_well(translations, source):
    check(translations, None, source, EXAMPLES, KEY_WORDS)


@pytest.mark.parametrize("source", sorted(DOCUMENTATION))
def test_every_documentation_example_is_translated_well_in_the_software_domain(translations, source):
    if (DOCUMENTATION_DOMAIN, source) not in translations[0]:
        pytest.skip("no shipped model was trained with the software domain: the page shows no documentation lines")
    check(translations, DOCUMENTATION_DOMAIN, source, DOCUMENTATION, DOCUMENTATION_WORDS)


def check(translations, domain, source, examples, key_words) -> None:
    found, chrf = translations
    name, target, outputs = found[domain, source]
    bad = []
    for index, (line, output) in enumerate(zip(examples[source], outputs)):
        score = chrf.sentence_score(output, [examples[target][index]]).score
        missing = [k for k in key_words[target][index] if not re.search(k, output, flags=re.IGNORECASE)]
        if score < MIN_CHRF or missing:
            bad.append(f"{line!r} -> {output!r} (chrF {score:.1f}, missing {missing})")
    assert not bad, f"{name} {source}->{target}:\n" + "\n".join(bad)

