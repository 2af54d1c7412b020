"""REST's ``domain`` extension over a model trained with domain tags: "auto" (the default) tells each text's
domain from its words, a named domain is that model's tag, and the answer says which each text got."""
import urllib.request

import pytest
import requests
import torch

from helpers.space_fixtures import LIMITS, serving
from test_domain_choice import tagged_with_classifier  # noqa: F401 - the fixture (a tagged model + classifier)
from test_domains import SOFT_EN, corpora, tagged  # noqa: F401 - the fixtures it builds on
from helpers.training import EN
from space.hosting.limits import RequestError
from space.serving import service
from test_rest import call
from transformer_hub.decoding import DecodingConfig, generate
from transformer_hub.hub.loading import DOMAINS_FILE

pytestmark = pytest.mark.slow  # starts a server


@pytest.fixture(scope="module")
def scrambled(tagged_with_classifier, tmp_path_factory):  # noqa: F811
    """The tagged model with large random weights: its (garbage) outputs are long and differ with the domain tag,
    which the barely trained model's (empty) outputs do not."""
    model = tagged_with_classifier
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:  # matrices at 3x their usual scale; the norms stay as trained
                p.copy_(torch.randn(p.shape, generator=generator) * 3 / p.shape[-1] ** 0.5)
    folder = tmp_path_factory.mktemp("scrambled") / "tagged"
    model.save_pretrained(folder)
    assert (folder / DOMAINS_FILE).is_file()
    return model, folder


@pytest.fixture(scope="module")
def served(scrambled):
    with serving([scrambled[1]], LIMITS) as running:
        yield running


def library(model, text, domain):
    config = DecodingConfig(strategy="beam", beam_size=4, length_penalty=0.6, max_length=LIMITS.max_output_tokens)
    return generate(model, [text], config, src_lang="en", tgt_lang="de", domain=domain)[0].text


def test_auto_names_each_texts_domain_and_decodes_with_its_tag(served, scrambled):
    model, _ = scrambled
    texts = [" ".join(SOFT_EN[:5]), " ".join(EN[:5])]
    for text in texts:  # the tag matters: else this test could not tell the domains apart
        assert library(model, text, "captions") != library(model, text, "software")
    status, answer, _ = call(served, "/translate", {"q": texts, "source": "en", "target": "de"})
    assert status == 200 and answer["domain"] == ["software", "captions"]
    assert answer["translatedText"] == [library(model, t, d) for t, d in zip(texts, answer["domain"])]
    status, given, _ = call(served, "/translate", {"q": texts[1], "source": "en", "target": "de",
                                                    "domain": "software"})
    assert status == 200 and given["domain"] == "software"
    assert given["translatedText"] == library(model, texts[1], "software")


@pytest.mark.parametrize("domain", ["legal", 7, "x" * 5000])
def test_an_unknown_domain_is_a_400_naming_the_choices(served, domain):
    status, answer, _ = call(served, "/translate", {"q": "click", "source": "en", "target": "de", "domain": domain})
    assert status == 400
    assert answer["error"].startswith("Invalid request: domain must be auto, captions, software, got ")
    assert len(answer["error"]) < 120


SOFT, CAPTION = " ".join(SOFT_EN[:5]), " ".join(EN[:5])


def translate_file(served, name: str, data: bytes, **fields):
    form = {"source": "en", "target": "de", **fields}
    return requests.post(served.url.rstrip("/") + "/translate_file", files={"file": (name, data)}, data=form,
                         timeout=120)


def test_a_document_is_read_as_the_domain_of_its_whole_text(served, scrambled):
    model, _ = scrambled
    lines = [" ".join(SOFT_EN[i:i + 4]) for i in (0, 4, 8)] + ["a dog"]  # one caption-like line among software
    answer = translate_file(served, "help.txt", "\n".join(lines).encode()).json()
    assert answer["domain"] == "software"
    with urllib.request.urlopen(answer["translatedFileUrl"], timeout=60) as response:
        got = response.read().decode().splitlines()
    # every line as the library translates it with the software tag, the caption-like one too: the document's domain
    # (a document's translation holds no line break of its own: the writer folds its whitespace)
    assert got == [" ".join(library(model, line, "software").split()) for line in lines]
    given = translate_file(served, "help.txt", "\n".join(lines).encode(), domain="captions").json()
    assert given["domain"] == "captions"
    bad = translate_file(served, "help.txt", b"click", domain="legal")
    assert bad.status_code == 400 and bad.json()["error"].startswith("Invalid request: domain must be auto")


def test_format_html_tells_each_documents_domain(served, scrambled):
    model, _ = scrambled
    status, answer, _ = call(served, "/translate", {"q": [f"<p>{SOFT}</p>", f"<p>{CAPTION}</p>"], "source": "en",
                                                    "target": "de", "format": "html"})
    assert status == 200 and answer["domain"] == ["software", "captions"]
    assert answer["translatedText"] == [f"<p>{' '.join(library(model, SOFT, 'software').split())}</p>",
                                        f"<p>{' '.join(library(model, CAPTION, 'captions').split())}</p>"]


def test_the_page_offers_the_domains_and_names_the_one_it_used(served, scrambled):
    model, _ = scrambled
    ctx = served.demo.space_context
    assert service.domain_choices(ctx) == [("Automatic (told from the text)", "auto"), ("Image captions", "captions"),
                                           ("Software documentation", "software")]
    options = dict(strategy="beam", beam_size=4, length_penalty=0.6, max_length=LIMITS.max_output_tokens,
                   source_lang="en", target_lang="de", engine="pytorch")
    text, _, note, _ = service.translate_view(ctx, SOFT, "auto", **options)
    assert text == library(model, SOFT, "software")
    assert "domain **software documentation** (told from the text, " in note
    text, _, note, _ = service.translate_view(ctx, SOFT, "auto", **options, domain="captions")
    assert text == library(model, SOFT, "captions") and "domain **image captions** ·" in note
    with pytest.raises(RequestError, match="domain must be one of auto, captions, software; got 'legal'"):
        service.translate_view(ctx, SOFT, "auto", **options, domain="legal")
