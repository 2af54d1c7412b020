"""Beam vs greedy: one sentence decoded both ways, side by side, with scores and the beam's n-best list."""
from __future__ import annotations

import gradio as gr

from ...serving import service
from .. import comparisons
from ..registry import tab
from ._common import bind, clear_on_failure, decode_event, sentence_inputs


@tab("compare", title="Beam vs greedy", order=20, description="the same sentence, two decoders")
def render(ctx) -> None:
    gr.Markdown("Greedy decoding takes the most likely token at each step; beam search keeps the *k* best "
                "prefixes and ranks finished ones by log-probability divided by the GNMT length penalty "
                "((5 + |Y|) / 6)^α. Scores are sums of token log-probabilities (higher is better).")
    with gr.Row():
        with gr.Column():
            model, source, target, text = sentence_inputs(ctx, "compare", example=2)
        with gr.Column():
            with gr.Row():
                beam_size = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="Beam size")
                length_penalty = gr.Slider(0.0, 2.0, value=0.6, step=0.1, label="Length penalty α")
            with gr.Row():
                n_best = gr.Slider(1, ctx.limits.max_beam, value=4, step=1, label="n-best shown")
                max_length = gr.Slider(0, ctx.limits.max_output_tokens, value=0, step=1,
                                       label="Max output tokens (0 = auto)")
            engine = gr.Radio(list(service.ENGINE_NAMES), value=service.DEFAULT_ENGINE, label="Engine",
                              elem_id="compare-engine")
    button = gr.Button("Compare", variant="primary", elem_id="compare-button")
    verdict = gr.Markdown(elem_id="compare-verdict")
    with gr.Row():
        greedy = gr.Textbox(label="Greedy", interactive=False, elem_id="compare-greedy")
        beam = gr.Textbox(label="Beam search", interactive=False, elem_id="compare-beam")
    scores = gr.Dataframe(headers=["", "greedy", "beam"], datatype=["str", "number", "number"],
                          label="Scores, lengths (tokens incl. eos) and time (ms)", interactive=False)
    nbest = gr.Dataframe(headers=["rank", "hypothesis", "score", "normalised score", "length"],
                         datatype=["number", "str", "number", "number", "number"],
                         label="Beam n-best list", interactive=False, wrap=True)
    with gr.Accordion("All of it as JSON", open=False):
        data = gr.JSON(label="compare result")
    inputs = [text, model, beam_size, length_penalty, n_best, max_length, source, target, engine]
    gr.Markdown("#### The beam search as a tree\nThe beam search above, step by step (PyTorch's search: with another "
                "engine PyTorch searches again for the tree, as that engine keeps no trace). Steps run down the page. "
                "Kept beams in blue, the two best pruned candidates of each step in grey, finished hypotheses as "
                "green squares, the returned translation's path in red; labels: the piece and the total "
                "log-probability so far.")
    tree = gr.Plot(show_label=False, elem_id="compare-tree")  # the heading above names it: no label over the legend
    with gr.Accordion("The search trace as JSON", open=False):
        trace = gr.JSON(label="beam search steps")
    compared = button.click(bind(ctx, comparisons.compare), inputs,
                            [greedy, beam, scores, nbest, verdict, data, tree, trace], api_name="compare",
                            **decode_event(ctx))
    clear_on_failure(compared, [greedy, beam, scores, nbest, data, tree, trace], verdict)
    tree_api = gr.Button(visible=False)  # /beam_tree for API callers: the page's tree comes with /compare
    tree_api.click(bind(ctx, comparisons.beam_tree), [text, beam_size, model, source, target, length_penalty,
                                                     max_length], [tree, trace], api_name="beam_tree",
                   **decode_event(ctx))
