"""The Space's pictures: the beam tree stays readable and bounded whatever the search; the attention views are
interactive figures holding the weights they are given, labelled with words; the static ones they replaced
(the benchmark's reference) still draw."""
from __future__ import annotations

import numpy as np
import pytest

from space.pictures.labels import piece_label
from matplotlib.backends.backend_agg import FigureCanvasAgg

from helpers.plotly_figures import figure, heatmaps
from space.pictures import attention as attention_plots, static_attention
from space.pictures.beam_tree import MAX_NODES, PRUNED_SHOWN, WIDTH, beam_tree_figure
from transformer_hub.decoding.results import SearchNode, SearchStep, SearchTrace


def long_search(steps: int, k: int) -> SearchTrace:
    """A made-up beam search: k beams per step, each extended by its k best candidates (k*k - k pruned)."""
    trace, beams = SearchTrace(), [SearchNode([5], -1, 0.0)]
    for t in range(steps):
        candidates = [SearchNode(b.tokens + [10 + c], i, b.score - 0.1 * (c + 1) - 0.01 * i)
                      for i, b in enumerate(beams) for c in range(k)]
        candidates.sort(key=lambda n: -n.score)
        finished = [SearchNode(candidates[0].tokens[:-1] + [2], 0, candidates[0].score)] if t == steps - 1 else []
        beams = candidates[:k]
        trace.steps.append(SearchStep(beams=beams, finished=finished, pruned=candidates[k:]))
    return trace


def test_a_long_search_at_beam_8_draws_a_bounded_tree_at_the_spaces_width():
    trace = long_search(60, 8)
    fig = beam_tree_figure(trace, lambda ids: [f"w{i}" for i in ids], None, title="Beam search, k=8")
    ax = fig.axes[0]
    labels = [t for t in ax.texts if "\n" in t.get_text()]  # node labels: piece and score on two lines
    # too long for every pruned candidate: k kept per step, the first steps only, and the picture says so
    drawn = len(labels) // 8
    assert len(labels) <= MAX_NODES and len(labels) == 8 * drawn and drawn < 60
    assert fig.get_figwidth() <= WIDTH
    title = " ".join(fig._suptitle.get_text().split())
    assert f"the first {drawn} of 60 steps drawn" in title and "pruned candidates left out" in title
    renderer = FigureCanvasAgg(fig).get_renderer()  # the legend below the axes, the title above: neither covers it
    fig.draw(renderer)
    legend, axes = fig.legends[0].get_window_extent(renderer), ax.get_window_extent(renderer)
    title = fig._suptitle.get_window_extent(renderer)
    assert legend.y1 <= axes.y0 + 1 and title.y0 >= axes.y1 - 1


def test_a_search_that_fits_without_its_pruned_candidates_keeps_every_step():
    trace = long_search(MAX_NODES // 8 - 2, 8)
    fig = beam_tree_figure(trace, lambda ids: [f"w{i}" for i in ids], None, title="k=8")
    assert "steps drawn" not in fig._suptitle.get_text()
    assert len([t for t in fig.axes[0].texts if "\n" in t.get_text()]) == 8 * len(trace.steps) + 1  # + finished


def test_a_short_search_is_drawn_whole():
    trace = long_search(6, 3)
    fig = beam_tree_figure(trace, lambda ids: [f"w{i}" for i in ids], (5, 0), title="k=3")
    assert "steps drawn" not in fig._suptitle.get_text()
    labels = [t for t in fig.axes[0].texts if "\n" in t.get_text()]
    assert len(labels) == 3 + 5 * (3 + PRUNED_SHOWN) + 1  # step 1: k kept; then k kept + best pruned; + finished


def test_every_text_of_the_beam_tree_is_at_least_11_pixels_at_its_drawn_size():
    """Before: 7.5-point labels, 10.4 px at 100 dpi (about 8 px once the page shrank the picture)."""
    fig = beam_tree_figure(long_search(6, 3), lambda ids: [f"w{i}" for i in ids], (5, 0), title="k=3")
    texts = [*fig.axes[0].texts, fig._suptitle, *fig.legends[0].get_texts()]
    smallest = min(t.get_fontsize() * fig.dpi / 72 for t in texts)
    assert smallest >= 11, smallest


def attention_data(layers=2, heads=3, s=4, t=3):
    row = lambda n: [1.0 / n] * n  # noqa: E731
    return {"source_pieces": [f"s{i}" for i in range(s)], "target_pieces": [f"t{i}" for i in range(t)],
            "encoder_self": [[[row(s)] * s] * heads] * layers, "decoder_self": [[[row(t)] * t] * heads] * layers,
            "cross": [[[row(s)] * t] * heads] * layers}


def varied_weights(layers=2, heads=3, s=4, t=3, seed=0):
    """Attention-like float32 weights (rows sum to 1), different in every layer, head and cell."""
    rng = np.random.default_rng(seed)
    def softmax(shape):  # noqa: E306
        e = np.exp(rng.normal(size=shape))
        return (e / e.sum(-1, keepdims=True)).astype(np.float32)
    return {"source_pieces": ["<2de>", "\u2581A", "\u2581you", "ng"][:s] + [f"s{i}" for i in range(4, s)],
            "target_pieces": ["<s>", "\u2581Ein", "\u2581jun"][:t] + [f"t{i}" for i in range(3, t)],
            "encoder_self": softmax((layers, heads, s, s)), "decoder_self": softmax((layers, heads, t, t)),
            "cross": softmax((layers, heads, t, s))}


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_head_view_holds_the_heads_weights_and_labels_both_axes_with_words(kind):
    maps = varied_weights()
    fig = figure(attention_plots.head_view(maps, kind, 2, 3).to_json())  # what gr.Plot sends
    (z,) = heatmaps(fig)
    assert z.dtype == np.float32 and np.array_equal(z, maps[kind][1][2])  # bit for bit: sent as float32
    rows, cols = attention_plots.axes_pieces(maps, kind)
    assert fig["layout"]["yaxis"]["ticktext"] == [piece_label(p) for p in rows]
    assert fig["layout"]["xaxis"]["ticktext"] == [piece_label(p) for p in cols]
    assert fig["layout"]["title"]["text"].endswith("<br>layer 2, head 3")
    text = fig["data"][0]["text"]  # hover: the query and the key, with the word a piece is part of
    assert len(text) == len(rows) and all(len(row) == len(cols) for row in text)
    assert not any("\u2581" in cell or "<2" in cell or "</s>" in cell for row in text for cell in row)


def test_hover_names_the_word_a_piece_belongs_to():
    assert attention_plots.hover_labels(["<2de>", "\u2581A", "\u2581you", "ng", ".", "</s>"]) == [
        "[to German]", "A", "you (in young)", "-ng (in young)", ".", "[end]"]


def test_model_view_is_every_head_of_one_layer_two_a_row_on_one_colour_scale():
    maps = varied_weights(layers=2, heads=3)
    fig = figure(attention_plots.model_view(maps, "cross", 2).to_json())
    tiles = heatmaps(fig)
    assert len(tiles) == 3 and all(np.array_equal(z, maps["cross"][1][h]) for h, z in enumerate(tiles))
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["head 1", "head 2", "head 3"]
    assert [t["showscale"] for t in fig["data"]] == [True, False, False]
    assert {(t["zmin"], t["zmax"]) for t in fig["data"]} == {(0.0, 1.0)}
    domains = [fig["layout"][f"xaxis{'' if h == 0 else h + 1}"]["domain"] for h in range(3)]
    assert domains[0][0] == 0.0 and domains[1][1] == 1.0 and domains[2] == domains[0]  # 2 a row: head 3 wraps


def test_the_static_views_the_benchmark_times_against_still_draw():
    maps = varied_weights(layers=2, heads=3)
    tiles = static_attention.model_view(maps, "cross").axes[0]
    assert [t.get_text() for t in tiles.get_xticklabels()] == ["head 1", "head 2", "head 3"]
    assert [t.get_text() for t in tiles.get_yticklabels()] == ["layer 1", "layer 2"]
    head = static_attention.head_view(maps, "cross", 2, 3).axes[0]
    assert np.array_equal(head.images[0].get_array(), maps["cross"][1][2])
    cross = static_attention.attention_figure(maps["cross"][0][0].tolist(), maps["source_pieces"],
                                              maps["target_pieces"], "t").axes[0]
    assert [t.get_text() for t in cross.get_xticklabels()] == [piece_label(p) for p in maps["source_pieces"]]


def test_pieces_are_labelled_as_a_visitor_reads_them():
    """No SentencePiece markup in any picture: word starts as their text, pieces inside a word after a hyphen,
    tags and the end of sentence in words; the beam chart's texts spell the words."""
    from space.pictures.labels import pieces_text

    assert [piece_label(p) for p in ["\u2581Ein", "ter", "<2de>", "</s>", "<s>", ".", "\u2581"]] == [
        "Ein", "-ter", "[to German]", "[end]", "[start]", ".", "[space]"]
    assert pieces_text(["<2fr>", "\u2581Un", "\u2581ch", "ien", ".", "</s>"]) == "Un chien."


def _recipe_data(smoothing: bool) -> dict:
    """The /recipe view's data as the page builds it: a card without a schedule (the variant study's)."""
    from transformer_hub.inside import smoothed_target, training_recipe
    from transformer_hub.config import TransformerConfig

    records = [{"kind": "train", "step": s, "loss": 9.0 - s / 100, "lr": 1e-4 * s} for s in (10, 20, 30)]
    records.append({"kind": "val", "step": 30, "val_loss": 7.5})
    config = TransformerConfig(src_vocab_size=40, tgt_vocab_size=40, d_model=16, n_heads=2, d_ff=32,
                               n_encoder_layers=1, n_decoder_layers=1)
    training = {"peak_lr": 0.001, "updates": 30, **({"label_smoothing": 0.1} if smoothing else {})}
    data = {**training_recipe(config, training, records).to_dict(), "smoothing": None}
    if smoothing:
        data["smoothing"] = {**smoothed_target(3, 40, 0.1).to_dict(), "pieces": ["▁Ein", "▁Der"], "ids": [3, 4],
                             "model_probs": [0.6, 0.2], "position": 1, "translation": "Ein"}
    return data


def _texts(fig) -> list:
    FigureCanvasAgg(fig).draw()
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]


def test_recipe_without_smoothing_draws_no_empty_panel_and_names_what_is_missing():
    from space.pictures.inside import recipe_figure

    fig = recipe_figure(_recipe_data(smoothing=False))
    texts = _texts(fig)
    assert len(fig.get_axes()) == 2  # the logged rate and the losses: no panel for the smoothing
    assert any("records no label smoothing" in t for t in texts) and any("records no warm-up" in t for t in texts)
    assert "training loss" in texts and not any("smoothed targets" in t for t in texts)  # the legend agrees


def test_recipe_with_smoothing_draws_it_and_the_legend_names_its_epsilon():
    from space.pictures.inside import recipe_figure

    fig = recipe_figure(_recipe_data(smoothing=True))
    texts = _texts(fig)
    assert len(fig.get_axes()) == 3
    assert "training loss (smoothed targets, ε = 0.1)" in texts
    assert not any("records no label smoothing" in t for t in texts)
