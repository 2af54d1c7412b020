"""The page with a model trained with domain tags beside one without (as v3 beside v2): the Translate tab's Domain
menu and documentation examples, the Inside tab's models and views, and the Playground, unaffected."""
from __future__ import annotations

import pytest

gr = pytest.importorskip("gradio")

from test_domain_choice import tagged_with_classifier  # noqa: E402,F401 - the fixture (a tagged model + classifier)
from test_domains import corpora, tagged  # noqa: E402,F401 - the fixtures it builds on
from space import build_demo  # noqa: E402
from space.page import inside  # noqa: E402
from space.page.examples import DOCUMENTATION, EXAMPLES, examples_in  # noqa: E402
from space.serving import service  # noqa: E402
from transformer_hub.tokenizer import source_tags  # noqa: E402

TEXT = "a man"


@pytest.fixture
def folders(tagged_with_classifier, make_model, tmp_path, monkeypatch):  # noqa: F811
    """Two models folders: ``plain`` (a model without domains) and ``both`` (the same beside a tagged one)."""
    monkeypatch.delenv("MODEL_IDS", raising=False)
    plain, both = tmp_path / "plain", tmp_path / "both"
    for root in (plain, both):
        make_model().save_pretrained(root / "en-de")
    tagged_with_classifier.save_pretrained(both / "tagged")
    return plain, both


def built(models_dir):
    demo = build_demo(models_dir=models_dir)
    return demo, demo.space_context


def samples(demo, elem_id: str) -> list:
    found = [b for b in demo.blocks.values() if isinstance(b, gr.Dataset) and b.elem_id == elem_id]
    return [row[0] for row in found[0].samples]


def dropdown(demo, elem_id: str):
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def test_the_documentation_examples_come_with_a_software_model_and_only_on_the_translate_tab(folders):
    plain, both = folders
    demo, ctx = built(plain)
    try:
        assert samples(demo, "translate-examples") == EXAMPLES["en"] and not dropdown(demo, "translate-domain").visible
    finally:
        ctx.close()
    demo, ctx = built(both)
    try:
        assert samples(demo, "translate-examples") == EXAMPLES["en"] + DOCUMENTATION["en"]
        assert samples(demo, "inside-examples") == EXAMPLES["en"]  # the other tabs read with the default model
        menu = dropdown(demo, "translate-domain")
        assert menu.visible and [v for _, v in menu.choices] == ["auto", "captions", "software"]
        assert "domain classifier" in menu.info and "names the model and the domain" in menu.info
    finally:
        ctx.close()
    assert examples_in("fr", ("captions", "software"))[-5:] == DOCUMENTATION["fr"]
    assert examples_in("auto", ("captions",)) == EXAMPLES["en"]  # "Detect language": the default source's


def test_the_documentation_examples_are_parallel_and_not_captions():
    assert {lang: len(lines) for lang, lines in DOCUMENTATION.items()} == {lang: 5 for lang in EXAMPLES}
    assert not set(DOCUMENTATION["en"]) & set(EXAMPLES["en"])


def test_inside_shows_the_tagged_model_with_its_tags(folders, tagged_with_classifier):  # noqa: F811
    demo, ctx = built(folders[1])
    try:  # "Best for the direction" is the cards' best for the pair, as without tags (test_shipped_models: with v3)
        assert inside.resolve_model(ctx, "auto", "en", "de") == ctx.chooser.best("en", "de") in ctx.model_names
        for view in inside.VIEWS:
            assert "tagged" in inside.shown_models(ctx, view)
        data = inside.attention_all(ctx, TEXT, "tagged", "en", "de")[2]
        model = tagged_with_classifier
        ids = source_tags(model.tokenizer, model.config, "de") + model.tokenizer.encode(TEXT, side="source") + \
            [model.config.eos_id]
        assert data["source_pieces"] == model.tokenizer.pieces(ids, side="source")  # as the model reads it
        assert model.tokenizer.pieces([model.tokenizer.domain_tag_id("captions")], "source")[0] \
            in data["source_pieces"]
        assert inside.positions(ctx, TEXT, "tagged", "en", "de")[1]
        assert inside.steps(ctx, TEXT, "tagged", "en", "de")[2]
        assert inside.recipe(ctx, TEXT, "tagged", "en", "de")[1]
        note = service.translate(ctx, TEXT, "tagged", "greedy", source_lang="en", target_lang="de")[2]
        assert "model **tagged**" in note and "short image descriptions" not in note
        data = service.translate_view(ctx, TEXT, "tagged", "greedy", source_lang="en", target_lang="de")[3]
        assert data["trained_on"] == "image captions and software documentation"
    finally:
        ctx.close()


def test_the_playground_trains_beside_a_tagged_model(folders):
    from transformer_hub.playground import RunConfig, train

    plain, both = folders
    demo, ctx = built(both)
    try:
        named = {fn.api_name for fn in demo.fns.values() if fn.api_name}
        assert {"playground_train", "playground_stop", "playground_predict"} <= named
        assert ctx.playground is not None
    finally:
        ctx.close()
    events = list(train(RunConfig(max_steps=3, report_every=1, eval_every=3)))  # what the tab's process runs
    assert getattr(events[-1], "model", None) is not None


def test_quality_best_reranks_with_the_model_of_the_texts_domain(folders, monkeypatch):
    """Both models tuned for en-de: a software text is reranked by the model the cards choose for software, as
    its fast translation is decoded by it (here the cards choose en-de for captions and tagged for software)."""
    from space.serving import quality
    from transformer_hub.rerank import DirectionWeights, RerankFile

    _, both = folders
    for name in ("en-de", "tagged"):
        RerankFile({"en-de": DirectionWeights()}, command="test").save(both / name / "rerank.json")
    demo, ctx = built(both)
    try:
        monkeypatch.setattr(ctx.chooser, "best", lambda s, t, domain=None: "tagged" if domain == "software" else "en-de")
        assert quality.best_model(ctx, None, "en", "de", "software") == "tagged"
        assert quality.best_model(ctx, None, "en", "de", "captions") == "en-de"
        assert quality.best_model(ctx, None, "en", "de") == "en-de"
        assert service.SpaceModels(ctx).choose("en", "de", "best", "software") == "tagged"
    finally:
        ctx.close()


def test_the_intro_names_software_documentation_only_when_a_model_knows_it(folders):
    from space.page.demo import intro

    plain, both = folders
    for root, says in ((plain, False), (both, True)):
        demo, ctx = built(root)
        try:
            shown = next(b.value for b in demo.blocks.values() if getattr(b, "elem_id", None) == "intro")
            assert shown.strip() == intro(["software"] if says else []).strip()
            assert ("LibreOffice's help (software documentation)" in shown) is says
        finally:
            ctx.close()
