"""The "Inside the Transformer" tab through its API (``/attention_all``, ``/positions``, ``/steps``, ``/recipe``).

The app is launched on 127.0.0.1 with the tiny models of ``test_app.py``; each view's JSON is checked
against what other endpoints and the model's own files say.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from helpers.plotly_figures import heatmaps
from helpers.tolerances import f32, f64, rounded
from helpers.space_fixtures import LIMITS, app_models, model_for_tests, multilingual_for_tests, running_app
from space.page.examples import EXAMPLES
from transformer_hub.hub import card_data_from_file
from transformer_hub.training.schedule import lr_factor, noam_lr

TEXT = "A man in a blue shirt is sitting on a bench."
pytestmark = pytest.mark.slow  # a server and its decoding worker


@pytest.fixture(scope="module")
def app(request):
    source = app_models(request)
    with running_app(model_for_tests(*source), LIMITS, extra=[multilingual_for_tests(source[0])]) as running:
        yield running


@pytest.fixture(scope="module")
def client(app):
    return gradio_client.Client(app.url, verbose=False)


def greedy(client, app, text, strategy="greedy", beam_size=4):
    """The /translate output with the PyTorch engine (the one the inside views use)."""
    return client.predict(text=text, model=app.model, strategy=strategy, beam_size=beam_size, length_penalty=0.6,
                          engine="pytorch", api_name="/translate")[0]


def is_picture(value) -> bool:
    return isinstance(value, dict) and value.get("type") == "matplotlib" and str(value["plot"]).startswith("data:image/")


def test_the_views_are_named_endpoints_with_the_common_parameters(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name in ("/attention_all", "/positions", "/steps", "/recipe"):
        params = [p["parameter_name"] for p in endpoints[name]["parameters"]]
        assert params[:4] == ["text", "model", "source_lang", "target_lang"], (name, params)


def test_attention_all_gives_the_three_kinds_on_the_models_own_translation(client, app):
    model_view, head_view, data, target = client.predict(text=TEXT, model=app.model, kind="decoder_self", layer=2,
                                                         head=1, api_name="/attention_all")
    # the pictures are interactive: the model view holds layer 2's heads, the head view head 1, as float32;
    # the JSON rounds them to 4 decimals (within 5e-5 of the pictures')
    tiles, (head,) = heatmaps(model_view), heatmaps(head_view)
    assert len(tiles) == len(data["decoder_self"][1]) and all(t.dtype == np.float32 for t in tiles)
    for tile, rounded_tile in zip(tiles, data["decoder_self"][1]):
        assert np.abs(tile - np.asarray(rounded_tile)).max() <= 5e-5 + 1e-7
    assert np.array_equal(head, tiles[0])
    assert target == data["target"] == greedy(client, app, TEXT)  # teacher-forced on the greedy output
    S, T = len(data["source_pieces"]), len(data["target_pieces"])
    assert data["shapes"]["encoder_self"][2:] == [S, S] and data["shapes"]["decoder_self"][2:] == [T, T]
    assert data["shapes"]["cross"][2:] == [T, S] and data["target_pieces"][0] == "<s>"
    for kind in ("encoder_self", "decoder_self", "cross"):  # rounded to 4 decimals: sums within S * 5e-5
        for layer in data[kind]:
            for head in layer:
                assert all(abs(sum(row) - 1.0) <= 1e-3 for row in head), kind
    assert all(v == 0.0 for layer in data["decoder_self"] for head in layer
               for i, row in enumerate(head) for v in row[i + 1:])


def test_attention_all_teacher_forces_a_given_translation(client, app):
    data, target = client.predict(text=TEXT, model=app.model, target="Ein Mann sitzt auf einer Bank.",
                                  api_name="/attention_all")[2:]
    assert target == "Ein Mann sitzt auf einer Bank."
    assert "".join(data["target_pieces"][1:]).replace("\u2581", " ").strip() == target


@pytest.mark.parametrize("kwargs, message", [
    (dict(text=""), "input is empty"),
    (dict(kind="sideways"), "kind must be one of encoder_self, decoder_self, cross"),
    (dict(layer=0), "layer must be a whole number between 1 and 64"),
])
def test_attention_all_refuses_bad_input_with_a_message(client, app, kwargs, message):
    with pytest.raises(Exception, match=message):
        client.predict(**{"text": TEXT, "model": app.model, **kwargs}, api_name="/attention_all")


def test_positions_are_the_models_sinusoids(client, app):
    picture, data = client.predict(text=TEXT, model=app.model, length=30, dims="2,8", api_name="/positions")
    assert is_picture(picture) and data["kind"] == "added" and data["positional"] == "sinusoidal"
    assert len(data["encoding"]) == 30 and list(data["curves"]) == ["2", "8"]
    d = len(data["encoding"][0])
    assert data["encoding"][7][8] == rounded(math.sin(7 / 10000 ** (8 / d)), 4)
    assert data["sentence_tokens"] >= len(TEXT.split()) + 1  # pieces and eos
    with pytest.raises(Exception, match="dims must be whole numbers"):
        client.predict(text=TEXT, model=app.model, dims="x", api_name="/positions")


def test_steps_show_greedys_top_k_and_the_beams_and_use_the_examples_reference(client, app):
    text = EXAMPLES["en"][0]
    step_plot, forcing_plot, data = client.predict(text=text, model=app.model, k=3, beam_size=3, step=2,
                                                   api_name="/steps")
    assert is_picture(step_plot) and is_picture(forcing_plot)
    assert data["greedy"] == greedy(client, app, text) and data["beam"] == greedy(client, app, text, "beam", 3)
    assert all(len(step) <= 3 for step in data["top"]) and data["steps"] == max(len(data["top"]), len(data["beams"]))
    assert all(len(step["kept"]) <= 3 for step in data["beams"])
    assert [step[0][1] for step in data["top"]] == data["greedy_pieces"]  # greedy takes the most likely
    forcing = data["forcing"]
    assert data["reference"] == EXAMPLES["de"][0] == forcing["reference"]
    assert len(forcing["forced_probs"]) == len(forcing["reference_pieces"]) and forcing["reference_pieces"][-1] == "</s>"
    assert forcing["greedy_pieces"] == data["greedy_pieces"]


def test_steps_without_a_reference_skip_teacher_forcing(client, app):
    _, forcing_plot, data = client.predict(text=TEXT, model=app.model, api_name="/steps")
    assert forcing_plot is None and data["forcing"] is None and data["reference"] is None


def test_recipe_draws_the_models_own_schedule_and_smoothing(client, app):
    picture, data = client.predict(text=TEXT, model=app.model, position=1, api_name="/recipe")
    facts = card_data_from_file(str(app.model_dir / "README.md"))["training"]
    assert is_picture(picture)
    assert (data["warmup"], data["peak_lr"], data["updates"]) == (facts["warmup"], facts["peak_lr"], facts["updates"])
    factor = lr_factor(facts["peak_lr"], data["d_model"], facts["warmup"])
    assert data["lr"] == f64([noam_lr(s, data["d_model"], facts["warmup"], factor) for s in data["steps"]],
                             scale=facts["peak_lr"])
    train = data["logged"]["train"]
    assert train["step"] and data["lr"][data["steps"].index(facts["warmup"])] == f64(facts["peak_lr"],
                                                                                             scale=facts["peak_lr"])
    for step, lr in zip(train["step"], train["lr"]):  # what the trainer used
        assert noam_lr(step, data["d_model"], facts["warmup"], factor) == f64(lr, scale=lr)
    smoothing = data["smoothing"]
    eps, vocab = facts["label_smoothing"], smoothing["vocab_size"]
    assert smoothing["epsilon"] == eps and smoothing["on_target"] == f32(1 - eps + eps / vocab)
    assert smoothing["total"] == f32(1.0) and smoothing["position"] == 1  # float32 terms, summed in float64
    assert smoothing["translation"] == greedy(client, app, TEXT)
    assert smoothing["model_probs"][0] == max(smoothing["model_probs"])  # greedy's token: the most likely
