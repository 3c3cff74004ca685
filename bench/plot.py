"""A small SVG writer for the bench results: each ratio to its floor against its bar.

One row per ratio: a line from the lowest to the highest round, a dot at the median, and a tick at the bar
(green when the median holds it, red when it misses, grey for a ratio that is only reported). The ratio axis
is logarithmic: the figures run from under 1x to hundreds.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

ROW = 22
LABEL_WIDTH = 560
PLOT_WIDTH = 520
VALUE_WIDTH = 230
TOP = 54
COLOURS = {"holds": "#1a7f37", "missed": "#cf222e", "reported": "#6e7781"}


def rows_of(results: dict) -> list[dict]:
    """Every ratio of every run in RESULTS.json, in a stable order: run, bench, then as the bench reported."""
    rows = []
    for run_key in sorted(results.get("runs", {})):
        run = results["runs"][run_key]
        for bench_name, bench in run.get("benches", {}).items():
            for ratio in bench.get("ratios", []):
                rows.append({**ratio, "run": run_key, "bench": bench_name})
            labelled = {r["label"] for r in bench.get("ratios", [])}
            for bar in bench.get("bars", []):  # a bar kept as one value, without its rounds
                if bar.get("unit") == "x" and bar["label"] not in labelled:
                    value = bar["value"]
                    rows.append(
                        {
                            "label": bar["label"],
                            "min": value,
                            "median": value,
                            "max": value,
                            "rounds": 1,
                            "limit": bar["limit"],
                            "holds": bar["holds"],
                            "run": run_key,
                            "bench": bench_name,
                        }
                    )
    return rows


def write_svg(results: dict, path: Path, title: str = "NovelGraph benches: each ratio to its floor") -> None:
    rows = [r for r in rows_of(results) if _finite(r["min"]) and _finite(r["max"]) and r["max"] > 0]
    highest = max([r["max"] for r in rows] + [r["limit"] or 1 for r in rows] + [4.0])
    lowest = min([r["min"] for r in rows] + [0.5])
    lo, hi = math.log10(lowest * 0.8), math.log10(highest * 1.25)

    def x(value: float) -> float:
        return LABEL_WIDTH + (math.log10(max(value, 1e-9)) - lo) / (hi - lo) * PLOT_WIDTH

    width = LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH
    height = TOP + ROW * len(rows) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="15" font-weight="bold">{escape(title)}</text>',
        '<text x="10" y="38" fill="#57606a">line: lowest to highest round; dot: median; '
        "tick: the bar (green holds, red missed); grey: reported, no bar. Log scale.</text>",
    ]
    for tick in _ticks(lowest * 0.8, highest * 1.25):
        tx = x(tick)
        out.append(f'<line x1="{tx:.1f}" y1="{TOP - 6}" x2="{tx:.1f}" y2="{height - 34}" stroke="#eaeef2"/>')
        out.append(f'<text x="{tx:.1f}" y="{height - 20}" text-anchor="middle" fill="#57606a">{tick:g}x</text>')
    for index, row in enumerate(rows):
        y = TOP + ROW * index + ROW / 2
        state = "reported" if row.get("limit") is None else ("holds" if row.get("holds") else "missed")
        colour = COLOURS[state]
        label = f"{row['run']} · {row['bench']}: {row['label']}"
        if len(label) > 88:
            label = label[:87] + "…"
        out.append(f'<text x="10" y="{y + 4:.1f}">{escape(label)}</text>')
        out.append(
            f'<line x1="{x(row["min"]):.1f}" y1="{y:.1f}" x2="{x(row["max"]):.1f}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="3"/>'
        )
        out.append(f'<circle cx="{x(row["median"]):.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
        if row.get("limit") is not None:
            bx = x(row["limit"])
            out.append(f'<line x1="{bx:.1f}" y1="{y - 8:.1f}" x2="{bx:.1f}" y2="{y + 8:.1f}" stroke="black"/>')
        value = f"{row['median']:.2f}x ({row['min']:.2f}-{row['max']:.2f})"
        if row.get("limit") is not None:
            value += f" bar {row['limit']:g}x"
        out.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH + 10}" y="{y + 4:.1f}" fill="{colour}">{escape(value)}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def _finite(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _ticks(low: float, high: float) -> list[float]:
    ticks = []
    decade = 10 ** math.floor(math.log10(low))
    while decade <= high:
        for step in (1, 2, 5):
            value = step * decade
            if low <= value <= high:
                ticks.append(value)
        decade *= 10
    return ticks
