"""The Space through its API: the app launched on 127.0.0.1, driven with ``gradio_client``.

It serves two tiny models trained for the purpose (cached in pytest's cache folder): an En->De one, and a
four-language one in a folder named ``multilingual`` whose output words say which language it chose.
"""
from __future__ import annotations

import importlib.util
import math
import re
import time

import numpy as np
import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from helpers.plotly_figures import heatmaps
from helpers.tolerances import f64
from helpers.multilingual import LEXICON, languages_of
from helpers.space_fixtures import LIMITS, app_models, model_for_tests, multilingual_for_tests, running_app
from space.pictures import word_view
from transformer_hub import Tokenizer

@pytest.fixture(scope="module")
def model_dir(request):
    return model_for_tests(*app_models(request))


@pytest.fixture(scope="module")
def multilingual_dir(request):
    return multilingual_for_tests(app_models(request)[0])


@pytest.fixture(scope="module")
def app(model_dir, multilingual_dir):
    with running_app(model_dir, LIMITS, extra=[multilingual_dir]) as running:
        yield running


@pytest.fixture(scope="module")
def client(app):
    return gradio_client.Client(app.url, verbose=False)


def translate(client, app, text, strategy="beam", **kw):
    args = dict(beam_size=4, length_penalty=0.6, temperature=1.0, top_p=0.9, max_length=0, source_lang="en")
    args.update(kw)
    extra = [args[k] for k in ("target_lang", "engine") if k in args]  # the page's defaults otherwise
    out, ms, _ = client.predict(text, app.model, strategy, args["beam_size"], args["length_penalty"],
                                args["temperature"], args["top_p"], args["max_length"], args["source_lang"], *extra,
                                api_name="/translate")
    return out, ms


def test_every_event_has_a_named_endpoint(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ("/translate", "/compare", "/variants", "/models", "/architecture", "/attention"):
        assert name in endpoints, sorted(endpoints)
    for name in ("/translate", "/compare", "/attention"):
        params = {p["parameter_name"]: p for p in endpoints[name]["parameters"]}
        assert list(params)[:2] == ["text", "model"]
        assert {"source_lang", "target_lang"} <= set(params)
        assert all(p["parameter_has_default"] for n, p in params.items() if n != "text"), name
        # the translate tab detects the source language by default; the one-sentence tabs start from English
        assert params["source_lang"]["parameter_default"] == ("auto" if name == "/translate" else "en")
        assert params["target_lang"]["parameter_default"] == "de"
    for name, default in (("/translate", "auto"), ("/compare", "pytorch")):  # plain translation: the fast engine
        engine = {p["parameter_name"]: p for p in endpoints[name]["parameters"]}["engine"]
        assert engine["parameter_default"] == default


def library(app, text, **options):
    """What the library's text pipeline gives for the page's options (its sentences in one call, the layout kept)."""
    from transformer_hub import Transformer, translate_texts

    model = Transformer.from_pretrained(app.model_dir)
    return translate_texts(model, [text], src_lang="en", tgt_lang="de", max_length=LIMITS.max_output_tokens,
                           **options)[0].text


def test_translate_is_the_librarys_generate_and_takes_time(client, app):
    text = "A group of people standing in front of an igloo."
    out, ms = translate(client, app, text, target_lang="de", engine="pytorch")
    assert out == library(app, text, strategy="beam", beam_size=4, length_penalty=0.6)
    assert isinstance(ms, (int, float)) and ms > 0


@pytest.mark.parametrize("strategy", ["greedy", "sample"])
def test_translate_strategies_are_the_librarys(client, app, strategy):
    """Greedy equals the library's greedy; sampling from a nucleus of one token (top-p 1e-6) is greedy too."""
    text = "A dog runs on the beach."
    out, _ = translate(client, app, text, strategy=strategy, temperature=0.7, top_p=1e-6, target_lang="de",
                       engine="pytorch")
    assert out == library(app, text, strategy="greedy", length_penalty=0.6)


def test_several_lines_are_one_batch_and_keep_their_places(client, app):
    out, _ = translate(client, app, "A man is riding a bicycle.\n\nTwo children play in the snow.", strategy="greedy")
    lines = out.split("\n")
    assert len(lines) == 3 and lines[0].strip() and lines[1] == "" and lines[2].strip()


def test_max_length_caps_the_output(client, app):
    out, _ = translate(client, app, "A man in an orange hat starring at something.", strategy="greedy", max_length=3)
    assert len(Tokenizer.from_directory(app.model_dir).encode(out, side="target")) <= 3


def test_compare_returns_both_outputs_and_scores(client, app):
    greedy, beam, table, nbest, verdict, data, _, tree = client.predict(
        "A Boston Terrier is running on lush green grass in front of a white fence.", app.model, 4, 0.6, 3, 0,
        api_name="/compare")
    assert isinstance(greedy, str) and greedy.strip() and isinstance(beam, str) and beam.strip()
    rows = {row[0]: row[1:] for row in table["data"]}
    assert set(rows) >= {"score", "normalized_score", "length", "ms"}
    for g, b in rows.values():
        assert isinstance(g, (int, float)) and isinstance(b, (int, float))
    assert rows["score"][0] <= 0 and rows["score"][1] <= 0  # sums of log-probabilities
    assert 1 <= len(nbest["data"]) <= 3
    assert nbest["data"][0][1] == beam
    normalised = [row[3] for row in nbest["data"]]
    assert normalised == sorted(normalised, reverse=True)
    assert data["differ"] == (greedy != beam)
    assert ("differ" in verdict) == data["differ"] and ("agree" in verdict) == (not data["differ"])
    assert data["greedy"]["text"] == greedy and data["beam"]["text"] == beam
    assert tree["translation"] == beam and tree["engine"] == "pytorch"  # the tree is the search beside it


def test_beam_vs_greedy_runs_one_beam_search_for_the_result_and_the_tree(app, monkeypatch):
    from space.page import comparisons

    ctx = app.demo.space_context
    searches = []
    generate = ctx.decoder.generate

    def counted(name, requests, config, **kwargs):
        searches.append((config.strategy, config.return_search, kwargs.get("engine")))
        return generate(name, requests, config, **kwargs)

    monkeypatch.setattr(ctx.decoder, "generate", counted)
    text = "Two dogs play in the snow."
    *_, verdict, data, _, tree = comparisons.compare(ctx, text, app.model, 3, 0.6, 2, 0)
    assert searches == [("greedy", False, "pytorch"), ("beam", True, "pytorch")]
    assert tree["translation"] == data["beam"]["text"] and "keeps no trace" not in verdict
    steps = tree["search"]["steps"]
    chosen = tree["chosen"]
    assert tree["chosen_path"][-1][1] == steps[chosen["step"]]["finished"][chosen["finished_index"]]["tokens"]
    if importlib.util.find_spec("ctranslate2") is not None:  # an engine without a trace: PyTorch's tree, said so
        searches.clear()
        *_, verdict, data, _, tree = comparisons.compare(ctx, text, app.model, 3, 0.6, 2, 0, engine="ctranslate2")
        assert searches == [("greedy", False, "ctranslate2"), ("beam", False, "ctranslate2"),
                            ("beam", True, "pytorch")]
        assert tree["engine"] == "pytorch" and "PyTorch's beam search" in verdict


def test_models_table_and_variants_side_by_side(client, app):
    table = client.predict(api_name="/models")
    assert "parameters" in table["headers"] and "positional" in table["headers"]
    names = [row[0] for row in table["data"]]
    assert app.model in names
    row = table["data"][names.index(app.model)]
    header = table["headers"]
    assert row[header.index("layout")] in ("encoder-decoder", "decoder-only")
    models = names[:2] if len(names) > 1 else [app.model, app.model]
    result = client.predict("People sit inside a train.", models, "greedy", 4, api_name="/variants")
    assert result["headers"][:3] == ["model", "engine", "translation"]
    assert [r[0] for r in result["data"]] == list(dict.fromkeys(models))
    assert all(isinstance(r[2], str) and r[2].strip() for r in result["data"])


def test_architecture_picture(client, app):
    picture = client.predict(app.model, api_name="/architecture")
    assert isinstance(picture, dict) and picture.get("type") == "matplotlib"
    assert str(picture["plot"]).startswith("data:image/")


@pytest.mark.parametrize("layer,head", [(0, 0), (1, 2)])
def test_attention_matrix_matches_the_tokens(client, app, layer, head):
    plot, data, translation = client.predict("A dog runs in the snow.", app.model, "greedy", 4, layer, head,
                                             api_name="/attention")
    (shown,) = heatmaps(plot)  # interactive (plotly): the float32 weights, the JSON's rounded to 4 decimals
    assert shown.shape == tuple(data["shape"]) and np.abs(shown - np.asarray(data["matrix"])).max() <= 5e-5 + 1e-7
    rows, cols = data["shape"]
    assert len(data["matrix"]) == rows == len(data["target_pieces"])
    assert all(len(r) == cols for r in data["matrix"]) and cols == len(data["source_pieces"])
    assert data["source_pieces"][-1] == "</s>"
    tokenizer = Tokenizer.from_directory(app.model_dir)
    assert cols == len(tokenizer.encode("A dog runs in the snow.")) + 1  # the source's pieces and its eos
    assert all(abs(sum(r) - 1.0) < 1e-2 for r in data["matrix"])  # rows are attention distributions
    assert data["translation"] == translation and (data["layer"], data["head"]) == (layer, head)


def test_attention_choices_follow_the_model(client, app):
    layers, heads = client.predict(app.model, api_name="/attention_choices")
    cfg = app.demo.space_context.store.config(app.model)
    assert len(layers["choices"]) == cfg.n_decoder_layers + 1 and len(heads["choices"]) == cfg.n_heads + 1
    assert layers["value"] == 0 and heads["value"] == 0  # reset to "average"


# ---------------------------------------------------------------------------- languages and engines
@pytest.mark.parametrize("source, target", [("de", "fr"), ("cs", "en"), ("en", "cs")])
def test_translate_takes_the_languages_by_name(client, source, target):

    text = " ".join(LEXICON[source][:4])
    out, ms, _ = client.predict(text=text, model="multilingual", source_lang=source, target_lang=target,
                                api_name="/translate")
    assert languages_of(out) == {target}, out  # the tag reached the model: every output word is in `target`


def test_compare_and_attention_take_the_languages(client):
    greedy, beam, _, _, _, data, *_ = client.predict(text="dea deb dec", model="multilingual", source_lang="de",
                                                   target_lang="fr", api_name="/compare")
    assert languages_of(greedy) == languages_of(beam) == {"fr"} and data["target_lang"] == "fr"
    _, data, translation = client.predict(text="fra frb", model="multilingual", source_lang="fr",
                                          target_lang="cs", api_name="/attention")
    assert languages_of(translation) == {"cs"} and data["target_pieces"][-1] == "</s>"


@pytest.mark.parametrize("kwargs, message", [
    (dict(source_lang="xx"), "source_lang must be one of en, de, fr, cs"),
    (dict(target_lang="english"), "target_lang must be one of en, de, fr, cs"),
    (dict(source_lang="de", target_lang="de"), "both 'de'"),
    (dict(source_lang="de", target_lang="fr", model=None), "does not translate de->fr; it serves en->de"),
    (dict(engine="onnx"), "engine must be one of auto, pytorch, ctranslate2"),
])
def test_bad_languages_and_engines_get_a_message(client, app, kwargs, message):
    kwargs = {k: (app.model if k == "model" and v is None else v) for k, v in kwargs.items()}
    kwargs.setdefault("model", "multilingual")
    with pytest.raises(Exception) as info:
        client.predict(text="A dog.", api_name="/translate", **kwargs)
    assert message.lower() in str(info.value).lower(), str(info.value)


def test_the_ctranslate2_engine_gives_the_pytorch_output(client, app):
    pytest.importorskip("ctranslate2")
    text = "A man is riding a bicycle."
    ours, _, note = client.predict(text=text, model=app.model, strategy="greedy", engine="pytorch",
                                   api_name="/translate")
    theirs, ms, note2 = client.predict(text=text, model=app.model, strategy="greedy", engine="ctranslate2",
                                       api_name="/translate")
    assert theirs == ours and "engine **pytorch**" in note and "engine **ctranslate2**" in note2 and ms > 0
    auto, _, note3 = client.predict(text=text, model=app.model, strategy="greedy", api_name="/translate")
    # "auto", the default, is CTranslate2 only when the call needs nothing PyTorch-only: the page's word view wants
    # each word's alternatives, so /translate runs PyTorch (the REST routes, which need none, run CTranslate2)
    assert auto == ours and "engine **pytorch**" in note3
    rows = client.predict(text, [app.model], "greedy", 4, "en", "de", ["pytorch", "ctranslate2"],
                          api_name="/variants")["data"]
    assert [(r[0], r[1]) for r in rows] == [(app.model, "pytorch"), (app.model, "ctranslate2")]
    assert rows[0][2] == rows[1][2] == ours


def test_language_pickers_follow_the_model(app):
    from space.page.tabs._common import _pickers, _swap

    ctx = app.demo.space_context
    source, target = _pickers(ctx, app.model, "fr", "cs")  # a bilingual model: narrowed to its pair
    assert [c[1] for c in source["choices"]] == ["en"] and [c[1] for c in target["choices"]] == ["de"]
    source, target = _pickers(ctx, "multilingual", "de", "fr")
    assert {c[1] for c in source["choices"]} == {"en", "de", "fr", "cs"} and (source["value"], target["value"]) == \
        ("de", "fr")
    assert {c[1] for c in target["choices"]} == {"en", "fr", "cs"}  # never the source itself
    source, target = _swap(ctx, "multilingual", "de", "fr")
    assert (source["value"], target["value"]) == ("fr", "de")


def test_examples_follow_the_source_language():
    from space.page.examples import EXAMPLES
    from space.page.tabs._common import examples_of

    assert set(EXAMPLES) == {"en", "de", "fr", "cs"} and all(3 <= len(v) <= 8 for v in EXAMPLES.values())
    assert examples_of("fr")[0] == [EXAMPLES["fr"][0]] and examples_of("cs") != examples_of("de")


# ---------------------------------------------------------------------------- bad input: a message, then service
BAD = {
    "empty": ("", "empty"),
    "spaces": ("   \n\t\n ", "empty"),
    "too long": ("word " * 200, "too long"),
    "too many lines": ("\n".join(["A dog."] * 20), "Too many lines"),
}


def test_detect_language_paragraph_layout_and_unserved_languages(client, app):
    text = "A man is riding a bicycle down the street. A dog runs after him.\n\nTwo children play in the snow."
    out, _, note = client.predict(text=text, model=app.model, strategy="greedy", source_lang="auto",
                                  api_name="/translate")
    assert re.search(r"Detected: English, (0\.9\d|1\.00)", note), note
    assert out.count("\n\n") == 1 and "\n" not in out.replace("\n\n", "")  # the paragraph break is kept
    with pytest.raises(Exception, match=r"looks like zh \(zh\), which the models do not read; they serve en, de, "
                                        r"fr, cs"):
        client.predict(text="一只狗在雪地里奔跑。", model=app.model, source_lang="auto", api_name="/translate")
    with pytest.raises(Exception, match=r"already in German \(detected, 1\.00\), the target language"):
        client.predict(text="Ein Mann fährt mit dem Fahrrad die Straße hinunter.", model=app.model,
                       source_lang="auto", target_lang="de", api_name="/translate")


def test_a_detected_language_the_model_does_not_read_is_named(client, app):
    with pytest.raises(Exception, match=r"This model does not translate fr->de; it serves en->de"):
        client.predict(text="Un homme descend la rue à vélo.", model=app.model, source_lang="auto",
                       api_name="/translate")


def test_the_page_translates_through_the_pipeline_each_detected_direction_with_its_model(client, app,
                                                                                       multilingual_dir, monkeypatch):
    """Source and model "auto": the text pipeline detects the language and picks the model for that direction
    (French -> German: only the multilingual model serves it), and the page shows what it chose."""
    from space.serving import service
    from transformer_hub import Transformer, translate_texts

    calls = []

    def recorded(*args, **kwargs):
        calls.append(service_pipeline(*args, **kwargs))
        return calls[-1]

    service_pipeline = service.translate_texts
    monkeypatch.setattr(service, "translate_texts", recorded)
    french = "Un homme descend la rue à vélo. Un chien court derrière lui."
    out, _, note = client.predict(text=french, model="auto", strategy="greedy", source_lang="auto",
                                  target_lang="de", engine="pytorch", api_name="/translate")
    assert re.search(r"Detected: French, (0\.9\d|1\.00)", note) and "model **multilingual**" in note, note
    model = Transformer.from_pretrained(multilingual_dir)
    assert out == translate_texts(model, [french], src_lang="fr", tgt_lang="de", strategy="greedy",
                                  length_penalty=0.6, max_length=LIMITS.max_output_tokens)[0].text
    assert [(r.src_lang, r.model, r.text) for (r,) in calls] == [("fr", "multilingual", out)]  # what the page showed
    english = "A man rides a bike down the street."
    _, _, note = client.predict(text=english, model="auto", strategy="greedy", source_lang="auto",
                                target_lang="de", engine="pytorch", api_name="/translate")
    chosen = app.demo.space_context.chooser.best("en", "de")
    assert "Detected: English" in note and f"model **{chosen}**" in note, note


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_gets_a_message_and_the_server_keeps_serving(client, app, name):
    text, message = BAD[name]
    with pytest.raises(Exception) as info:
        translate(client, app, text, strategy="greedy")
    assert message.lower() in str(info.value).lower()
    assert "Traceback" not in str(info.value)
    out, _ = translate(client, app, "A dog.", strategy="greedy")  # the next request still succeeds
    assert out.strip()


@pytest.mark.parametrize("text", ["\x00\x07A dog\x1b[31m runs.\x7f", "😀🐶 A dog runs! 🎉", "مرحبا، كلب يجري",
                                  "一只狗在雪地里奔跑。", "‮A dog‬ runs", "Ａ　ｄｏｇ"])
def test_unusual_unicode_is_translated(client, app, text):
    """Control characters are cleaned (``clean_text``); what remains is translated as the library would."""
    from space.hosting.limits import clean_text

    out, ms = translate(client, app, text, strategy="greedy", target_lang="de", engine="pytorch")
    assert out == library(app, "\n".join(clean_text(text, LIMITS).lines), strategy="greedy", length_penalty=0.6)
    assert ms >= 0


@pytest.mark.parametrize("endpoint,args,message", [
    ("/translate", ("A dog.", "no-such-model", "greedy", 4, 0.6, 1.0, 1.0, 0), "no-such-model"),
    ("/translate", ("A dog.", None, "nucleus", 4, 0.6, 1.0, 1.0, 0), "nucleus"),
    ("/translate", ("A dog.", None, "beam", 500, 0.6, 1.0, 1.0, 0), "beam size must be a whole number between 1"),
    ("/translate", ("A dog.", None, "sample", 4, 0.6, 0.0, 1.0, 0), "temperature must be a number in (0.0,"),
    ("/translate", ("A dog.", None, "greedy", 4, 0.6, 1.0, 1.0, 10_000), "max length must be a whole number"),
    ("/translate", ("A dog.", None, "beam", "4; rm -rf", 0.6, 1.0, 1.0, 0), "beam size must be a whole number"),
    ("/compare", ("A dog.", None, 4, -1.0, 3, 0), "length penalty must be a number in [0.0, 2.0], got -1.0"),
    ("/translate", ("A dog.", ["en-de"], "greedy", 4, 0.6, 1.0, 1.0, 0), "model must be given by its name"),
    ("/variants", ("A dog.", [], "beam", 4), "at least one model"),
    ("/variants", ("A dog.", [["en-de"]], "beam", 4), "models must be given by their names"),
    ("/attention", ("A dog.", None, "greedy", 4, 99, 0), "layer must be a whole number"),
])
def test_bad_options_get_a_message(client, app, endpoint, args, message):
    args = tuple(app.model if a is None else a for a in args)
    with pytest.raises(Exception) as info:
        client.predict(*args, api_name=endpoint)
    assert message.lower() in str(info.value).lower(), str(info.value)
    out, _ = translate(client, app, "A cat sleeps.", strategy="greedy")
    assert out.strip()


@pytest.mark.parametrize("options,message", [
    (dict(strategy="beam", beam_size=0), "beam size"), (dict(strategy="beam", beam_size=2.5), "beam size"),
    (dict(strategy="beam", length_penalty=float("nan")), "length penalty"),
    (dict(strategy="sample", temperature=0), "temperature"), (dict(strategy="sample", top_p=1.5), "top-p"),
    (dict(strategy="greedy", max_length=10_000), "max length"), (dict(strategy="nucleus"), "strategy"),
])
def test_handlers_check_options_themselves(app, options, message):
    """API callers can bypass the components' own checks: the handlers enforce the limits again."""
    from space.hosting.limits import RequestError
    from space.serving import service

    with pytest.raises(RequestError, match=message):
        service.decoding_config(app.demo.space_context, **options)


def test_concurrent_requests_all_succeed(app):
    from concurrent.futures import ThreadPoolExecutor

    clients = [gradio_client.Client(app.url, verbose=False) for _ in range(4)]
    sentences = ["A man sleeps.", "Two dogs play.", "A woman sings.", "Kids run outside."] * 2
    one_by_one = [translate(clients[0], app, s, strategy="beam")[0] for s in sentences[:4]] * 2
    batcher = app.demo.space_context.decoder.batcher
    calls = batcher.calls
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda i: translate(clients[i % 4], app, sentences[i], strategy="beam")[0],
                             range(len(sentences))))
    assert outs == one_by_one  # batched together, each request still gets its own translation
    assert 1 <= batcher.calls - calls <= len(sentences) and batcher._running == 0  # at most one call each


# ---------------------------------------------------------------------------- the parts behind the app (no server)
def test_model_ids_parse_folders_repos_and_revisions(tmp_path, monkeypatch):
    from space.serving.model_store import model_ids_from_env, parse_model_id

    assert parse_model_id("user/repo@v1.0").source == "user/repo"
    assert parse_model_id("user/repo@v1.0").revision == "v1.0"
    assert parse_model_id("user/repo").revision is None
    folder = tmp_path / "my@model"
    folder.mkdir()
    assert parse_model_id(str(folder)).source == str(folder) and parse_model_id(str(folder)).revision is None
    monkeypatch.setenv("MODEL_IDS", " a/b@main, ,c/d ,")
    assert model_ids_from_env(["e/f"]) == ["a/b@main", "c/d", "e/f"]


def _fake_model_folder(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"")


def test_store_discovers_every_model_folder_then_variants(tmp_path):
    from space.serving.model_store import ModelStore

    for name in ("multilingual", "en-de", "variants/pre-norm", "variants/paper", "variants/not-a-model/x", "empty/x"):
        _fake_model_folder(tmp_path / name)
    store = ModelStore(tmp_path, ["user/repo@v2"])
    assert store.names() == ["en-de", "multilingual", "variants/paper", "variants/pre-norm", "user/repo@v2"]
    assert store.spec("user/repo@v2").revision == "v2"
    with pytest.raises(KeyError, match="available"):
        store.spec("nope")


def test_the_default_model_is_the_one_serving_most_directions(tmp_path, make_model):
    from space.serving.model_store import ModelStore

    make_model().save_pretrained(tmp_path / "en-de")
    assert ModelStore(tmp_path).default() == "en-de"
    make_model(src_lang=None, tgt_lang=None, languages=["en", "de", "fr"]).save_pretrained(tmp_path / "zz-multi")
    assert ModelStore(tmp_path).default() == "zz-multi"


def test_the_server_process_reads_configs_and_never_loads_weights(tmp_path, make_model, monkeypatch):
    from space.serving.model_store import ModelStore
    from transformer_hub import Transformer

    make_model(languages=["en", "de"], src_lang=None, tgt_lang=None).save_pretrained(tmp_path / "m")
    monkeypatch.setattr(Transformer, "from_pretrained", lambda *a, **k: pytest.fail("weights loaded"))
    store = ModelStore(tmp_path)
    assert store.config("m").pairs() == [("en", "de"), ("de", "en")]
    assert store.tokenizer("m").pieces([4], side="target")  # the tokenizer files alone
    from space.serving import describe
    from space.serving.context import SpaceContext

    row = dict(zip(describe.MODEL_COLUMNS, describe.describe_models(SpaceContext(store))[0]))
    assert row["languages"] == "en, de" and row["parameters"] == f"{make_model().num_parameters():,}"


def test_results_json_is_read_through_the_library_schema(tmp_path):
    import json

    from space.serving.model_store import ModelStore
    from transformer_hub.hub import results as results_json

    _fake_model_folder(tmp_path / "variants" / "paper")
    results_json.save(results_json.Results(
        models=[results_json.ModelResult(name="paper", path="paper", parameters=12),
                results_json.ModelResult(name="paper-seed2")],
        results=[results_json.Score("paper", "test_2016_flickr", "bleu", 35.1, "en-de")]),
        tmp_path / "variants" / "results.json")
    found = ModelStore(tmp_path).results()
    assert [m.name for m in found.models] == ["variants/paper", "variants/paper-seed2"]
    assert found.score("variants/paper", "bleu") == 35.1
    for bad in ({"paper": {"bleu": 35.1}}, "{not json"):  # no other shape is guessed at: ignored with a warning
        (tmp_path / "variants" / "results.json").write_text(bad if isinstance(bad, str) else json.dumps(bad))
        assert ModelStore(tmp_path).results().models == []


def test_a_broken_model_gives_a_clear_message(tmp_path, make_model):
    import gradio as gr

    from space.page.tabs._common import handler
    from space.serving import describe, service
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore

    make_model().save_pretrained(tmp_path / "en-de")
    (tmp_path / "en-de" / "model.safetensors").write_bytes(b"not safetensors")
    ctx = SpaceContext(ModelStore(tmp_path))
    try:
        for _ in range(2):  # reported each time, and the decoding worker keeps serving
            with pytest.raises(gr.Error, match="could not be loaded"):
                handler(service.translate)(ctx, "A dog.", "en-de", "greedy")
        assert describe.describe_models(ctx)[0][:3] == ["en-de", "en->de", "encoder-decoder"]  # config.json only
        (tmp_path / "en-de" / "config.json").write_text("{not json")
        ctx.store._configs.clear()
        rows = describe.describe_models(ctx)
        assert rows[0][0] == "en-de" and "unreadable" in rows[0][1]
    finally:
        ctx.decoder.close()


def test_a_hub_model_with_a_revision_is_served(hub_server, make_model, tmp_path):
    from huggingface_hub import HfApi

    from space.page.tabs._common import handler
    from space.serving import service
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore

    model = make_model()
    model.save_pretrained(tmp_path / "v1")
    api = HfApi()
    api.create_repo("user/tiny-en-de")
    api.upload_folder(repo_id="user/tiny-en-de", folder_path=str(tmp_path / "v1"))
    api.create_tag("user/tiny-en-de", tag="v1")
    ctx = SpaceContext(ModelStore(tmp_path / "none", ["user/tiny-en-de@v1"]))
    try:
        text, ms, note = handler(service.translate)(ctx, "A dog runs.", "user/tiny-en-de@v1", "greedy",
                                                            max_length=5)
        assert isinstance(text, str) and ms > 0 and "model **user/tiny-en-de@v1**" in note
        assert ctx.store.config("user/tiny-en-de@v1") == model.config
    finally:
        ctx.decoder.close()


def test_clean_text_keeps_lines_and_drops_control_characters():
    from space.hosting.limits import Limits, RequestError, clean_text

    clean = clean_text("\r\n A dog\x00 runs.\x1b \r\n\r\n\tTwo  cats.\u200f\n\n", Limits())
    assert clean.lines == ["A dog runs.", "", "Two cats.\u200f"] and clean.removed_controls == 2
    assert clean.sentences == ["A dog runs.", "Two cats.\u200f"]
    assert clean_text("one\ntwo", Limits(), single=True).lines == ["one"]
    with pytest.raises(RequestError, match="empty"):
        clean_text("\x00\x01", Limits())
    with pytest.raises(RequestError, match="too long"):
        clean_text("x" * 11, Limits(max_chars=10))
    with pytest.raises(RequestError, match="must be text"):
        clean_text(42, Limits())


def test_micro_batcher_merges_waiting_requests_and_keeps_their_order():
    import threading

    from space.serving.batching import MicroBatcher

    batcher = MicroBatcher(max_parallel=1, max_sentences=100)
    calls, started, gate = [], threading.Event(), threading.Event()

    def decode(texts):
        calls.append(list(texts))
        if len(calls) == 1:
            started.set()
            assert gate.wait(30)  # hold the only slot until everyone else is queued
        return [t.upper() for t in texts]

    out = {}
    first = threading.Thread(target=lambda: out.setdefault("first", batcher.run("k", decode, ["a"])))
    first.start()
    assert started.wait(30)  # the first request is decoding: the next ones must wait
    others = [threading.Thread(target=lambda i=i: out.setdefault(i, batcher.run("k", decode, [f"s{i}", f"t{i}"])))
              for i in range(5)]
    for t in others:
        t.start()
    assert batcher.wait_until(lambda b: b.waiting == 5, timeout=30)  # woken by each request that queues
    gate.set()
    for t in [first, *others]:
        t.join(30)
        assert not t.is_alive()
    assert out["first"] == ["A"] and all(out[i] == [f"S{i}", f"T{i}"] for i in range(5))
    assert len(calls) == 2 and sorted(calls[1]) == sorted(s for i in range(5) for s in (f"s{i}", f"t{i}"))
    assert batcher.merged == 4 and batcher.waiting == 0


def test_micro_batcher_hands_errors_to_every_member_and_keeps_working():
    from space.serving.batching import MicroBatcher

    batcher = MicroBatcher()

    def broken(texts):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        batcher.run("k", broken, ["a"])
    assert batcher.run("k", lambda texts: texts[::-1][::-1], ["x", "y"]) == ["x", "y"]
    assert batcher.unique_key() != batcher.unique_key()
    assert batcher._running == 0 and not batcher._queues


def test_micro_batcher_decodes_a_failed_merged_batch_request_by_request():
    from space.serving.batching import MicroBatcher, _Item

    calls = []

    def decode(texts):
        calls.append(list(texts))
        if "bad" in texts:
            raise ValueError("sentence 2: prefix too long")
        return [t.upper() for t in texts]

    items = [_Item(["a", "b"]), _Item(["bad"]), _Item(["c"])]  # three requests merged into one call
    MicroBatcher._decode(decode, items)
    assert calls == [["a", "b", "bad", "c"], ["a", "b"], ["bad"], ["c"]]
    assert items[0].results == ["A", "B"] and items[2].results == ["C"] and items[0].error is None
    assert isinstance(items[1].error, ValueError) and items[1].results is None


def test_handler_tells_bad_input_from_bugs(caplog):
    """The page's one mapping: the Space's refusal as Gradio's error with its message, the library's ValueError as
    "Invalid request", a bug in one line with its traceback logged; a stream keeps its updates until it fails."""
    import gradio as gr

    from space.hosting.limits import RequestError
    from space.page.tabs._common import handler

    def refused():
        raise RequestError("Pick at least one engine.")

    def stream():
        yield 1
        raise RequestError("The training run failed: out of memory")

    with pytest.raises(gr.Error) as shown_error:
        handler(refused)()
    assert shown_error.value.message == "Pick at least one engine."  # the same words, nothing added
    shown = handler(stream)()
    assert next(shown) == 1
    with pytest.raises(gr.Error) as shown_error:
        next(shown)
    assert shown_error.value.message == "The training run failed: out of memory"

    def bad_input():
        raise ValueError("beam size must be positive")

    def bug():
        raise TypeError("unsupported operand")

    with pytest.raises(gr.Error, match="Invalid request: beam size must be positive"):
        handler(bad_input)()
    with caplog.at_level("ERROR", logger="space.page.tabs._common"):
        with pytest.raises(gr.Error, match=r"Sorry, something went wrong \(TypeError: unsupported operand\)"):
            handler(bug)()
    assert [r.exc_info[0] for r in caplog.records if r.levelname == "ERROR"] == [TypeError]  # with its traceback


def test_one_broken_model_does_not_hide_the_others_in_the_variants_table(tmp_path, make_model):
    from space.page import comparisons
    from space.page.tabs._common import handler
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore

    make_model().save_pretrained(tmp_path / "good")
    make_model(seed=1).save_pretrained(tmp_path / "broken")
    (tmp_path / "broken" / "model.safetensors").write_bytes(b"not safetensors")
    ctx = SpaceContext(ModelStore(tmp_path))
    try:
        rows = handler(comparisons.variants_translate)(ctx, "A dog.", ["good", "broken"], "greedy")
    finally:
        ctx.decoder.close()
    assert [row[:2] for row in rows] == [["good", "pytorch"], ["broken", "pytorch"]]
    assert rows[0][3] is not None and "could not load the model" in rows[1][2] and rows[1][3] is None


def test_a_slow_model_download_does_not_hold_up_the_others(tmp_path, make_model):
    from space.serving.model_store import ModelStore

    make_model().save_pretrained(tmp_path / "en-de")
    store = ModelStore(tmp_path)
    with store._lock_for("hub-model"):  # as if another request were fetching a Hub model's files
        assert store.config("en-de").src_lang == "en"  # answered at once: no shared lock


def wait_for_output(proc, text: str, timeout: float) -> str:
    """Read ``proc``'s output until a line contains ``text``; its output so far (AssertionError on exit or timeout).

    A reader thread hands lines over a queue, so the wait ends on whichever comes first: the line, the
    process's exit (end of its output), or the timeout.
    """
    import queue
    import threading

    lines: "queue.Queue" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put(None)], daemon=True).start()
    seen, deadline = [], time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            raise AssertionError(f"no {text!r} in the output of {proc.args} (exit status {proc.poll()}):\n"
                                 + "".join(seen)[-3000:])
        seen.append(line)
        if text in line:
            return "".join(seen)


@pytest.mark.slow
def test_app_py_serves_on_the_host_and_port_gradio_reads(model_dir, tmp_path):
    """``python app.py``: GRADIO_SERVER_NAME/PORT choose where it listens; MODEL_IDS and --model add models; SIGTERM
    stops it with nothing on stderr."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from helpers.space_fixtures import free_port

    root = Path(__file__).resolve().parents[1]
    port = free_port()
    other = tmp_path / "second-model"
    other.symlink_to(Path(model_dir).resolve(), target_is_directory=True)
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "MODEL_IDS": str(model_dir), "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "app.py", "--model", str(other)], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for_output(proc, f"http://127.0.0.1:{port}", timeout=120)  # Gradio prints it once it listens
        client = gradio_client.Client(url, verbose=False)
        table = client.predict(api_name="/models")
        names = [row[0] for row in table["data"]]
        assert Path(model_dir).name in names and "second-model" in names
        out, _, _ = client.predict("A dog runs.", "second-model", "greedy", 4, 0.6, 1.0, 1.0, 0,
                                   api_name="/translate")
        assert out.strip()
    finally:
        proc.terminate()  # SIGTERM, as a host stops it
        rest, _ = proc.communicate(timeout=60)
    # stopped cleanly: the decoding worker's queues let go (no "resource_tracker: ... leaked semaphore"), no traceback
    assert "leaked" not in rest and "Traceback" not in rest, rest


def test_variants_table_shows_configuration_and_measurements(tmp_path, make_model):
    from space.serving import describe
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore
    from transformer_hub.hub import results as results_json

    make_model().save_pretrained(tmp_path / "en-de")
    make_model(norm="pre", positional="rope", feed_forward="swiglu").save_pretrained(tmp_path / "variants" / "paper")
    results_json.save(results_json.Results(
        models=[results_json.ModelResult(name="paper", path="paper", parameters=1234567,
                                         training={"train_seconds": 600}, decoding={"sentences_per_s": 88.8})],
        results=[results_json.Score("paper", "test_2016_flickr", m, v, "en-de")
                 for m, v in (("bleu", 35.25), ("bleu_lowercase", 36.0), ("chrf", 60.1))]),
        tmp_path / "variants" / "results.json")
    rows = {r[0]: dict(zip(describe.MODEL_COLUMNS, r))
            for r in describe.describe_models(SpaceContext(ModelStore(tmp_path)))}
    assert list(rows) == ["en-de", "variants/paper"]
    paper = rows["variants/paper"]
    assert (paper["norm"], paper["positional"], paper["feed-forward"]) == ("pre", "rope", "swiglu")
    assert paper["parameters"] == "1,234,567" and paper["test BLEU"] == "35.25" and paper["test chrF"] == "60.10"
    assert paper["training time"] == "10.0 min" and paper["decoding speed"] == "88.8 sent/s"
    shipped = rows["en-de"]
    assert shipped["test BLEU"] == "—" and shipped["parameters"] == f"{make_model().num_parameters():,}"


def test_variants_table_reads_a_models_own_card_for_its_measurements(tmp_path, make_model):
    from space.serving import describe
    from space.serving.context import SpaceContext
    from space.serving.model_store import ModelStore

    model = make_model()
    results = [("val", "bleu", "sacreBLEU (cased)", 40.5), ("test_2016_flickr", "bleu", "sacreBLEU (cased)", 41.06),
               ("test_2016_flickr", "bleu", "sacreBLEU (lowercased)", 41.53), ("test_2016_flickr", "chrf", "chrF", 64.78)]
    model.card_data = {"results": [{"split": s, "metric": m, "metric_name": n, "value": v} for s, m, n, v in results],
                       "training": {"train_wall_minutes": 120.0, "train_tokens_per_s": 4291}}
    model.save_pretrained(tmp_path / "en-de")
    (tmp_path / "broken").mkdir()
    model.save_pretrained(tmp_path / "broken")
    (tmp_path / "broken" / "README.md").write_text("---\nnot: [valid yaml\n---\n")
    store = ModelStore(tmp_path, [str(tmp_path / "broken")])
    rows = {r[0]: dict(zip(describe.MODEL_COLUMNS, r)) for r in describe.describe_models(SpaceContext(store))}
    shipped = rows["en-de"]
    assert (shipped["test BLEU"], shipped["test chrF"]) == ("41.06", "64.78")  # cased test BLEU, not val or lowercased
    assert shipped["training time"] == "120.0 min" and shipped["training speed"] == "4,291 tok/s"
    assert shipped["decoding speed"] == "—"  # a training speed is not a decoding one
    page = dict(zip(describe.PAGE_COLUMNS, describe.page_rows([[shipped[c] for c in describe.MODEL_COLUMNS]])[0]))
    assert page["training (tokens/s)"] == "4,291" and page["training (min)"] == "120.0"
    assert page["architecture"].startswith("encoder-decoder, sinusoidal positions, post-norm")
    broken = rows[store.name_of(str(tmp_path / "broken"))]
    assert broken["test BLEU"] == "—" and broken["layout"] == "encoder-decoder"  # a bad card hides nothing else


# ---------------------------------------------------------------------------- interactive translation
def test_tokens_gives_one_entry_per_output_piece_with_alternatives(client, app):
    words, data = client.predict(text="A man is riding a bicycle.", model=app.model, api_name="/tokens")
    pieces = Tokenizer.from_directory(app.model_dir).pieces([t["token"] for t in data["tokens"]], side="target")
    assert [t["piece"] for t in data["tokens"]] == pieces and len(pieces) > 0
    # the view colours whole words: each word's pieces in order, its probability their product
    assert [i for w in data["words"] for i in w["tokens"]] == list(range(len(pieces)))
    # a full stop is a word of its own (its alternatives are punctuation), shown with the word before it
    assert [w["token"].strip() for w in words if w["class_or_confidence"] != word_view.UNSURE] == data["translation"].split()
    assert "".join((" " if w["space"] and i else "") + w["text"] for i, w in enumerate(data["words"])) == \
        data["translation"]
    for word in data["words"]:
        assert word["probability"] == f64(math.prod(data["tokens"][i]["probability"] for i in word["tokens"]))
    for entry in data["tokens"]:
        probabilities = [a["probability"] for a in entry["alternatives"]]
        assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1.0001
        assert entry["token"] in [a["token"] for a in entry["alternatives"]]  # the emitted token is among them
        assert entry["probability"] == next(a["probability"] for a in entry["alternatives"]
                                            if a["token"] == entry["token"])


def test_alternatives_are_words_to_continue_from(client, app):
    _, data = client.predict(text="Two dogs play in the snow.", model=app.model, api_name="/tokens")
    special = {0, 1, 2, 3}  # pad, bos, eos, unk: picking one would not continue the translation
    assert all(a["token"] not in special for entry in data["tokens"] for a in entry["alternatives"])


def test_a_prefix_is_checked_like_any_input(client, app):
    with pytest.raises(Exception, match="too long"):
        client.predict(text="A dog.", prefix="Hund " * 400, model=app.model, api_name="/continue")
    translation, _, _ = client.predict(text="A dog.", prefix="Ein\u0007 Hund", model=app.model, api_name="/continue")
    assert translation.startswith("Ein Hund")  # control characters are removed from a prefix too


def test_the_beam_tree_uses_the_options_of_the_beam_search_beside_it(client, app):
    text = "A Boston Terrier is running on lush green grass in front of a white fence."
    for penalty, max_length in ((2.0, 0), (0.0, 6)):
        beam = client.predict(text, app.model, 3, penalty, 1, max_length, api_name="/compare")[1]
        tree = client.predict(text=text, beam_size=3, model=app.model, length_penalty=penalty,
                              max_length=max_length, api_name="/beam_tree")[1]
        assert tree["translation"] == beam


def test_continue_keeps_and_completes_the_prefix(client, app):
    _, data = client.predict(text="A man is riding a bicycle.", model=app.model, api_name="/tokens")
    first = data["tokens"][0]
    tokenizer = Tokenizer.from_directory(app.model_dir)
    other = next(a for a in first["alternatives"]  # a word that shows (not a bare space or an end mark)
                 if a["token"] != first["token"] and tokenizer.decode([a["token"]], side="target").strip())
    prefix = tokenizer.decode([other["token"]], side="target")
    translation, words, after = client.predict(text="A man is riding a bicycle.", prefix=prefix, model=app.model,
                                               api_name="/continue")
    assert translation.startswith(prefix.strip()) and after["tokens"][0]["token"] == other["token"]
    with pytest.raises(Exception, match="prefix"):
        client.predict(text="A dog.", prefix="  ", model=app.model, api_name="/continue")


def test_beam_tree_returns_a_picture_and_its_trace(client, app):
    picture, data = client.predict(text="Two dogs play in the snow.", beam_size=3, model=app.model,
                                   api_name="/beam_tree")
    assert picture["type"] == "matplotlib" and str(picture["plot"]).startswith("data:image/")
    steps = data["search"]["steps"]
    assert steps and all(len(s["beams"]) <= 3 for s in steps)
    chosen = data["chosen"]
    assert chosen is not None and data["chosen_path"][-1][1] == steps[chosen["step"]]["finished"][
        chosen["finished_index"]]["tokens"]
    languages = client.predict(text="dea deb", model="multilingual", source_lang="de", target_lang="cs",
                               api_name="/beam_tree")[1]
    assert languages_of(languages["translation"]) == {"cs"}
