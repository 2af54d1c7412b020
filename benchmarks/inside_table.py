"""The docs' table of ``python -m benchmarks inside``'s figures comparison, from its results file (no heavy
imports: ``tests/test_stated_numbers.py`` rebuilds it to check docs/benchmarks.md against the file)."""
from __future__ import annotations

from typing import Any, Dict

HEADER = ("| picture | static ms (matplotlib, PNG) | interactive ms (plotly) | ratio | browser ms, static / interactive "
          "| server + browser ms, static / interactive | ratio | kB sent, static / interactive |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |")


def markdown(report: Dict[str, Any]) -> str:
    """One row per picture: the server's drawing, the browser's, both together, and the bytes sent."""
    lines = [HEADER]
    for name, row in (report.get("figures") or {}).items():
        shown = (report.get("browser") or {}).get(name)
        both = row.get("with_browser")
        browser = f"{shown['static_ms']:.0f} / {shown['interactive_ms']:.0f}" if shown else "-"
        total = f"{both['static_ms']:.0f} / {both['interactive_ms']:.0f}" if both else "-"
        ratio = f"{both['ratio']:.2f}x" if both else "-"
        lines.append(f"| {name} | {row['static_ms']:.0f} | {row['interactive_ms']:.0f} | {row['ratio']:.2f}x | "
                     f"{browser} | {total} | {ratio} | "
                     f"{row['static_bytes'] / 1e3:.1f} / {row['interactive_bytes'] / 1e3:.1f} |")
    return "\n".join(lines)


VIEWS = {"/attention_all": "`/attention_all` (3 kinds, 4 layers x 4 heads; model view of one layer and head view, "
                           "interactive)",
         "/positions": "`/positions` (rotary)", "/steps": "`/steps` (top-5, beam 4, teacher forcing on the reference)",
         "/recipe": "`/recipe` (schedule, curves, smoothed target)",
         "/beam_tree": "`/beam_tree`, beam 8, the longest validation sentence ({words} words, {steps} steps)"}


def views_markdown(report: Dict[str, Any]) -> str:
    """One row per view: wall time, its computing and drawing parts, the library call alone."""
    lines = ["| view | wall ms | computing | drawing | library ms |", "| --- | --- | --- | --- | --- |"]
    for name, row in (report.get("views") or {}).items():
        library = row["library_ms"]
        shown = "-" if library is None else ("< 1" if library < 1 else f"{library:.0f}")
        lines.append(f"| {VIEWS[name].format(**row)} | {row['wall_ms']:.0f} | {row['compute_ms']:.0f} | "
                     f"{row['draw_ms']:.0f} | {shown} |")
    return "\n".join(lines)
