"""The Space's pictures: the beam tree stays readable and bounded whatever the search; inside views draw from JSON."""
from __future__ import annotations

import pytest

from space.plots import piece_label
from matplotlib.backends.backend_agg import FigureCanvasAgg

from space import inside_plots
from space.tree_plot import MAX_NODES, PRUNED_SHOWN, WIDTH, beam_tree_figure
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


def attention_data(layers=2, heads=3, s=4, t=3):
    row = lambda n: [1.0 / n] * n  # noqa: E731
    return {"source_pieces": [f"s{i}" for i in range(s)], "target_pieces": [f"t{i}" for i in range(t)],
            "encoder_self": [[[row(s)] * s] * heads] * layers, "decoder_self": [[[row(t)] * t] * heads] * layers,
            "cross": [[[row(s)] * t] * heads] * layers}


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_head_view_labels_both_axes_with_the_pieces(kind):
    fig = inside_plots.head_view(attention_data(), kind, 2, 3)
    ax = fig.axes[0]
    rows, cols = inside_plots.axes_pieces(attention_data(), kind)
    assert [t.get_text() for t in ax.get_yticklabels()] == [piece_label(p) for p in rows]
    assert [t.get_text() for t in ax.get_xticklabels()] == [piece_label(p) for p in cols]
    assert ax.get_title().endswith("layer 2, head 3")


def test_model_view_is_one_tile_per_layer_and_head():
    fig = inside_plots.model_view(attention_data(layers=2, heads=3), "cross")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["head 1", "head 2", "head 3"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["layer 1", "layer 2"]
    image = ax.images[0].get_array()
    assert image.shape == (2 * 3 + 1, 3 * 4 + 2) and int(image.mask.sum()) == 1 * 14 + 2 * 3 * 2  # the gutters


def test_pieces_are_labelled_as_a_visitor_reads_them():
    """No SentencePiece markup in any picture: word starts as their text, pieces inside a word after a hyphen,
    tags and the end of sentence in words; the beam chart's texts spell the words."""
    from space.plots import pieces_text

    assert [piece_label(p) for p in ["\u2581Ein", "ter", "<2de>", "</s>", "<s>", ".", "\u2581"]] == [
        "Ein", "-ter", "[to German]", "[end]", "[start]", ".", "[space]"]
    assert pieces_text(["<2fr>", "\u2581Un", "\u2581ch", "ien", ".", "</s>"]) == "Un chien."
