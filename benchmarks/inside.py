"""Time of each "Inside the Transformer" view for one sentence (not a test), of the beam tree at beam 8, and of
the interactive attention figures against the static ones they replaced.

    python -m benchmarks inside [--model multilingual] [--words 15] [--repeat 3] [--parts views,figures,browser]
                                [--data-dir DIR] [--out docs/inside_benchmark.json]

Calls each view's handler as the server does (the library function in the Space's decoding worker, then
the pictures made and rendered to PNG in this process, as Gradio sends them) on the shipped model, for the first Multi30k validation sentence with
``--words`` words (its reference is used by the step view).  Prints per view the median wall time, the
part spent computing (the handler's own ``ms``) and drawing (the rest), and the ratio to the same library call made
directly in this process (the reference: no worker round trip, no drawing).  Then ``/beam_tree`` on the
longest validation sentence at beam 8, the case a visitor could use to hold the server.

``figures``: for the same sentence's attention (``transformer_hub.inside.attention_maps``, cross-attention,
layer 1, head 1), each picture as Gradio serves it (``gr.Plot``'s postprocessing: a static figure drawn to a
PNG data URL, a Plotly figure to its JSON), the static matplotlib one (``space.pictures.static_attention``) against the
interactive one (``space.pictures.attention``), interleaved (static, interactive, static, ...) so both see the same
load; medians, the ratio interactive / static and the bytes sent, written to ``--out``.  Then the browser's
share (``browser`` part, Chromium at ``$CHROMIUM_PATH``, default /usr/bin/chromium): the same served pictures put
on a 1280 px page, interleaved, each timed from receiving to painted (a PNG decoded and shown; a figure's JSON
parsed and drawn by ``Plotly.newPlot``, with the plotly.js that the plotly package ships, as Gradio's page
does with its own copy).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch
from matplotlib.figure import Figure

from benchmarks import inside_table
from space.pictures import attention as attention_plots, static_attention
from space.page import comparisons, inside
from space.serving.context import SpaceContext
from space.serving.decoder import Decoder
from space.hosting.limits import Limits
from space.serving.model_store import DEFAULT_MODELS_DIR, ModelStore
from transformer_hub import Transformer
from transformer_hub.training.data import default_data_dir, read_lines
from transformer_hub.inside import attention_maps, positional_encoding, step_by_step, teacher_forcing

ROOT = Path(__file__).resolve().parent.parent
FALLBACK = ("A young boy in a red shirt is kicking a soccer ball across the field.",
            "Ein kleiner Junge in einem roten Hemd kickt einen Fußball über das Feld.")


def sentence(data_dir: Path, words: int) -> Tuple[str, str]:
    """The first validation pair whose English side has ``words`` words, and the longest English line."""
    src, ref = data_dir / "val.en.gz", data_dir / "val.de.gz"
    if not (src.is_file() and ref.is_file()):
        return FALLBACK
    pairs = list(zip(read_lines(src), read_lines(ref)))
    return next(((s.strip(), r.strip()) for s, r in pairs if len(s.split()) == words), FALLBACK)


def longest(data_dir: Path, limit: int) -> str:
    path = data_dir / "val.en.gz"
    lines = [line.strip() for line in read_lines(path)] if path.is_file() else [FALLBACK[0] * 3]
    return max((line for line in lines if len(line) <= limit), key=len)


def as_served(out):
    """Render every figure as Gradio does with a handler's figures before sending them (PNG, Plotly JSON)."""
    for value in out if isinstance(out, tuple) else (out,):
        if isinstance(value, Figure):
            value.savefig(io.BytesIO(), format="png")
        elif hasattr(value, "to_plotly_json"):
            value.to_json()
    return out


def timed(fn: Callable, repeat: int) -> Tuple[float, object]:
    fn()  # warm-up: loads the model in the worker, fills caches
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = as_served(fn())
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times), out


def served(figure) -> str:
    """What Gradio sends for ``figure``: ``gr.Plot``'s own postprocessing (PNG data URL or Plotly JSON)."""
    import gradio as gr

    return gr.Plot().postprocess(figure).plot


def figure_pairs(model, text: str, pair: Tuple[str, str]) -> Dict[str, Tuple[Callable, Callable]]:
    """Per picture, (static, interactive) makers of the same attention, each returning what is served."""
    maps = attention_maps(model, text, *pair)
    weights = {"source_pieces": maps.source_pieces, "target_pieces": maps.target_pieces,
               **{k: getattr(maps, k).float().numpy() for k in ("encoder_self", "decoder_self", "cross")}}
    rounded = maps.to_dict()  # what the static views were drawn from (the page's JSON)
    matrix = maps.cross.mean(dim=(0, 1)).tolist()  # the Attention tab's default: every layer and head averaged
    tab = (matrix, maps.source_pieces, maps.target_pieces, "Cross-attention")
    return {
        "Inside: model view and head view": (
            lambda: [served(static_attention.model_view(rounded, "cross")),
                     served(static_attention.head_view(rounded, "cross", 1, 1))],
            lambda: [served(attention_plots.model_view(weights, "cross", 1)),
                     served(attention_plots.head_view(weights, "cross", 1, 1))]),
        "Inside: head view (a slider move)": (
            lambda: [served(static_attention.head_view(rounded, "cross", 1, 1))],
            lambda: [served(attention_plots.head_view(weights, "cross", 1, 1))]),
        "Attention tab: cross-attention": (lambda: [served(static_attention.attention_figure(*tab))],
                                           lambda: [served(attention_plots.attention_figure(*tab))])}


DRAW_JS = """async ([kind, items]) => {
  const box = document.getElementById('box'); box.replaceChildren();
  const start = performance.now();
  for (const item of items) {
    if (kind === 'static') { const img = new Image(); img.src = item; await img.decode(); box.appendChild(img); }
    else { const f = JSON.parse(item); const div = document.createElement('div'); box.appendChild(div);
           await Plotly.newPlot(div, f.data, f.layout, {responsive: true}); }
  }
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));  // painted
  return performance.now() - start; }"""


def browser_times(served: Dict[str, Tuple[List[str], List[str]]], repeat: int) -> Dict[str, Dict[str, float]]:
    """Per picture, the browser's time to show the static and the interactive one (medians, ms, interleaved)."""
    import plotly
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
    script = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    rows = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_content("<div id='box' style='width: 1200px'></div>")
        page.add_script_tag(path=str(script))
        print(f"\n{'in the browser':36} {'static ms':>9} {'plotly ms':>9} {'ratio':>6}")
        for name, items in served.items():
            times: Tuple[List[float], List[float]] = ([], [])
            for round_ in range(repeat + 1):  # the first round warms up (fonts, plotly's first draw)
                for kind, label in enumerate(("static", "interactive")):
                    took = page.evaluate(DRAW_JS, [label, items[kind]])
                    if round_:
                        times[kind].append(took)
            static, plotly_ms = statistics.median(times[0]), statistics.median(times[1])
            rows[name] = {"static_ms": round(static, 1), "interactive_ms": round(plotly_ms, 1),
                          "ratio": round(plotly_ms / static, 3)}
            print(f"{name:36} {static:9.1f} {plotly_ms:9.1f} {plotly_ms / static:6.2f}")
        browser.close()
    return rows


def figures(model, text: str, pair: Tuple[str, str], repeat: int, browser: bool = False):
    """Static against interactive, interleaved: per picture, medians (ms), ratio and bytes served; with
    ``browser``, also the browser's time to show each (else None)."""
    rows, served = {}, {}
    print(f"\n{'picture':36} {'static ms':>9} {'plotly ms':>9} {'ratio':>6} {'static kB':>9} {'plotly kB':>9}")
    for name, makers in figure_pairs(model, text, pair).items():
        times: Tuple[List[float], List[float]] = ([], [])
        served[name] = tuple(make() for make in makers)  # warm-up, and what is sent
        sizes = [sum(len(part) for part in parts) for parts in served[name]]
        for _ in range(repeat):
            for kind, make in enumerate(makers):
                start = time.perf_counter()
                make()
                times[kind].append((time.perf_counter() - start) * 1000.0)
        static, plotly = statistics.median(times[0]), statistics.median(times[1])
        rows[name] = {"static_ms": round(static, 1), "interactive_ms": round(plotly, 1),
                      "ratio": round(plotly / static, 3), "static_bytes": sizes[0], "interactive_bytes": sizes[1]}
        print(f"{name:36} {static:9.1f} {plotly:9.1f} {plotly / static:6.2f} {sizes[0] / 1e3:9.1f} "
              f"{sizes[1] / 1e3:9.1f}")
    shown = browser_times(served, repeat) if browser else None
    for name, row in rows.items() if shown else ():  # what a visitor waits for: the server's drawing, then the browser's
        static, plotly = row["static_ms"] + shown[name]["static_ms"], row["interactive_ms"] + shown[name]["interactive_ms"]
        row["with_browser"] = {"static_ms": round(static, 1), "interactive_ms": round(plotly, 1),
                               "ratio": round(plotly / static, 3)}
        print(f"server + browser, {name:36} {static:9.1f} {plotly:9.1f} {plotly / static:6.2f}")
    return rows, shown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="multilingual", help="a model under space/models (picker name)")
    parser.add_argument("--words", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts", default="views,figures,browser",
                        help="comma-separated: views, figures, browser (the figures' drawing in Chromium)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "inside_benchmark.json",
                        help="where the results are written (the docs' tables are made from it)")


def run(args: argparse.Namespace) -> int:
    parts = set(args.parts.split(","))
    torch.set_num_threads(1)
    store = ModelStore(DEFAULT_MODELS_DIR, [])
    ctx = SpaceContext(store=store, limits=Limits(), decoder=Decoder(store, threads=1))
    text, reference = sentence(args.data_dir, args.words)
    model = Transformer.from_pretrained(store.spec(args.model).source)
    pair = ("en", "de")
    print(f"model {args.model}; sentence ({len(text.split())} words): {text}\nreference: {reference}\n")
    report = {"command": "python -m benchmarks inside " + " ".join(sys.argv[2:]),
              "model": args.model, "sentence": text, "repeat": args.repeat}
    try:
        if "figures" in parts:
            report["figures"], report["browser"] = figures(model, text, pair, args.repeat, "browser" in parts)
        if "views" in parts:
            report["views"] = views(ctx, model, (text, reference), pair, args)
    finally:
        ctx.decoder.close()
    report.update(load_average=[round(x, 2) for x in os.getloadavg()], cores=os.cpu_count())
    print(f"load average during the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"written to {args.out}; the docs' tables:\n{inside_table.markdown(report)}\n\n"
          f"{inside_table.views_markdown(report)}")
    return 0


def views(ctx, model, sentence: Tuple[str, str], pair: Tuple[str, str], args) -> Dict[str, Dict[str, float]]:
    """Each view's handler as the server calls it, against the library call alone; then the beam tree."""
    text, reference = sentence
    calls: Dict[str, Tuple[Callable, Callable]] = {
        "/attention_all": (lambda: inside.attention_all(ctx, text, args.model, *pair),
                           lambda: attention_maps(model, text, *pair)),
        "/positions": (lambda: inside.positions(ctx, text, args.model, *pair), lambda: positional_encoding(model)),
        "/steps": (lambda: inside.steps(ctx, text, args.model, *pair, reference=reference),
                   lambda: (step_by_step(model, text, *pair, k=5, beam_size=4, max_length=ctx.limits.max_output_tokens),
                            teacher_forcing(model, text, reference, *pair))),
        "/recipe": (lambda: inside.recipe(ctx, text, args.model, *pair), None)}
    rows = {}
    print(f"\n{'view':16} {'wall ms':>8} {'compute':>8} {'draw':>8} {'library ms':>11} {'ratio':>6}")
    for name, (handler, library) in calls.items():
        wall, out = timed(handler, args.repeat)
        data = next(o for o in out if isinstance(o, dict))
        ref = timed(library, args.repeat)[0] if library else None
        rows[name] = {"wall_ms": round(wall, 1), "compute_ms": data["ms"], "draw_ms": round(wall - data["ms"], 1),
                      "library_ms": None if ref is None else round(ref, 2)}
        ratio = f"{wall / ref:6.2f}" if ref else "     -"
        print(f"{name:16} {wall:8.0f} {data['ms']:8.0f} {wall - data['ms']:8.0f} "
              f"{(f'{ref:.0f}' if ref else '-'):>11} {ratio}")
    long = longest(args.data_dir, ctx.limits.max_chars)
    wall, (_, data) = timed(lambda: comparisons.beam_tree(ctx, long, 8, args.model, *pair), 1)
    rows["/beam_tree"] = {"wall_ms": round(wall, 1), "compute_ms": data["ms"], "draw_ms": round(wall - data["ms"], 1),
                          "library_ms": None, "words": len(long.split()), "steps": len(data["search"]["steps"])}
    print(f"\n/beam_tree, beam 8, {len(long.split())} words ({len(data['search']['steps'])} steps): "
          f"{wall:.0f} ms wall, {data['ms']:.0f} ms decoding, {wall - data['ms']:.0f} ms drawing")
    return rows

