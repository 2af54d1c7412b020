"""The docs' table of ``python -m benchmarks hostile``'s figures, from its results file (no heavy imports:
``tests/test_stated_numbers.py`` rebuilds it to check docs/hosting.md against docs/hostile.json)."""
from __future__ import annotations

from typing import Any, Dict, List

# The report measured by hand on main before the fix (as reported: not re-measured, the old code is
# gone); per format the worst case it gave. None: the issue gave no figure.
BEFORE = {
    ".odt": {"case": "odt-empty-paragraphs", "outcome": "client gave up after 240 s", "rss_above_idle_mb": 2300,
             "languages_failed": 10},
    ".epub": {"case": "epub-empty-paragraphs", "outcome": "still running 7 min after the client left",
              "rss_above_idle_mb": 1900, "languages_failed": None},
    ".docx": {"case": "docx-empty-paragraphs", "outcome": "200 after 73 s", "rss_above_idle_mb": 750,
              "languages_failed": None},
}
FIGURES = ("cpu_s", "rss_above_idle_mb", "pss_above_idle_mb", "rss_after_mb", "languages_ms")  # worst of each
TARGETS = {"cpu_s": 10.0, "rss_above_idle_mb": 500.0, "rss_after_mb": 50.0, "languages_ms": 1000.0}
HEADER = ("| format | cases | statuses | worst CPU s | worst memory above idle, MB: RSS / PSS | worst RSS after, MB "
          "| worst `/languages` ms (failed) | before the fix |\n| --- | --- | --- | --- | --- | --- | --- | --- |")


def per_format(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The worst of each figure over the uploads of each format (hostile cases and the valid document alike)."""
    out: Dict[str, Dict[str, Any]] = {}
    for row in report["uploads"]:
        worst = out.setdefault(row["suffix"], {"cases": 0, "statuses": [], "languages_failed": 0,
                                               **{key: 0.0 for key in FIGURES}})
        worst["cases"] += 1
        if row["status"] not in worst["statuses"]:
            worst["statuses"].append(row["status"])
        for key in FIGURES:
            worst[key] = max(worst[key], row[key])
        worst["languages_failed"] += row["languages_failed"]
    return out


def _before(suffix: str) -> str:
    old = BEFORE.get(suffix)
    if old is None:
        return "-"
    return f"{old['outcome']}, RSS +{old['rss_above_idle_mb']:,} MB kept"


def markdown(report: Dict[str, Any]) -> str:
    """One row per format: how many uploads, their statuses, the worst figures; the issue's before figures."""
    lines: List[str] = [HEADER]
    for suffix, worst in sorted(per_format(report).items()):
        statuses = ", ".join(str(s) for s in sorted(worst["statuses"]))
        memory = f"{worst['rss_above_idle_mb']:.0f} / {worst['pss_above_idle_mb']:.0f}"
        lines.append(f"| {suffix} | {worst['cases']} | {statuses} | {worst['cpu_s']:.2f} | {memory} | "
                     f"{worst['rss_after_mb']:.0f} | {worst['languages_ms']:.0f} ({worst['languages_failed']}) | "
                     f"{_before(suffix)} |")
    return "\n".join(lines)


def flood_markdown(report: Dict[str, Any]) -> str:
    """The /suggest flood's line: clients, seconds, answers by status, the database before and after."""
    flood = report["suggest_flood"]
    answers = ", ".join(f"{n:,} x {status}" for status, n in sorted(flood["statuses"].items()))
    return (f"{flood['clients']} clients for {flood['seconds']:g} s, each suggestion {flood['bytes_each']:,} bytes "
            f"(the per-field limits): {answers}; database {flood['db_before_mb']:.2f} -> {flood['db_after_mb']:.2f} "
            f"MB (cap {flood['cap_mb']:g} MB; before the fix: 967 suggestions, 0.3 -> 166.7 MB)")
