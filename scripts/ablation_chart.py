#!/usr/bin/env python3
"""The ablation as a chart: scripts/ablation.sh's ablation.json -> SVG.

Two panels: output tokens/s per step (one bar per table in each step's
group: under the GPU memory budget and fully resident) and time to first
token p50. Standard library only, so it runs wherever the benchmark does.

Usage: scripts/ablation_chart.py ablation.json out.svg [--scale auto|linear|log]
"""
import argparse
import json
import math
import sys
from xml.sax.saxutils import escape

# One colour per table, in the order the JSON lists them.
COLOURS = ["#d9663a", "#3a7bd9", "#5aa85a", "#8a5ad9"]
WIDTH = 960
PANEL_H = 300
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 80, 20, 40, 70
SHORT = {
    "naive": "0 naive",
    "pinned": "1 pinned",
    "async": "2 async",
    "graphs": "3 graphs",
    "batch4": "4 batch 4",
    "shm": "5 shm ring",
}


def nice_step(v, ticks=5):
    """A 1, 2 or 5 x 10^k tick spacing giving about `ticks` ticks up to v."""
    if v <= 0:
        return 1.0
    raw = v / ticks
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * 10**exp >= raw:
            return m * 10**exp
    return 10 ** (exp + 1)


def fmt(v):
    if v == 0:
        return "0"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def panel(svg, top, title, unit, tables, key, scale):
    """One bar panel: a group per step, a bar per table; failed steps are
    marked instead of drawn as zero (a zero would read as a measurement)."""
    steps = []
    for t in tables:
        for s in t["steps"]:
            if s["name"] not in steps:
                steps.append(s["name"])
    values = [
        s.get(key) for t in tables for s in t["steps"] if s.get("ok") and s.get(key) is not None
    ]
    vmax = max(values) if values else 1.0
    vmin = min((v for v in values if v > 0), default=1.0)
    use_log = scale == "log" or (scale == "auto" and vmin > 0 and vmax / vmin > 100)
    plot_w = WIDTH - MARGIN_L - MARGIN_R
    plot_h = PANEL_H - MARGIN_T - MARGIN_B
    x0, y0 = MARGIN_L, top + MARGIN_T
    if use_log:
        lo = 10 ** math.floor(math.log10(vmin))
        hi = 10 ** math.ceil(math.log10(vmax))
        if hi <= lo:
            hi = lo * 10

        def y_of(v):
            v = max(v, lo)
            return y0 + plot_h * (1 - (math.log10(v) - math.log10(lo)) / math.log10(hi / lo))

        ticks = [lo * 10**i for i in range(int(round(math.log10(hi / lo))) + 1)]
    else:
        step = nice_step(vmax * 1.08)
        n = max(1, math.ceil(vmax * 1.08 / step))
        hi = step * n

        def y_of(v):
            return y0 + plot_h * (1 - v / hi)

        ticks = [step * i for i in range(n + 1)]

    svg.append(
        f'<text x="{x0}" y="{top + 22}" font-size="15" font-weight="bold">{escape(title)}'
        f'{" (log scale)" if use_log else ""}</text>'
    )
    for tv in ticks:
        y = y_of(tv)
        svg.append(
            f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + plot_w}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        svg.append(
            f'<text x="{x0 - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{tv:g}</text>'
        )
    svg.append(
        f'<text x="{x0 - 58}" y="{y0 + plot_h / 2:.1f}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 {x0 - 58} {y0 + plot_h / 2:.1f})">{escape(unit)}</text>'
    )
    group_w = plot_w / max(len(steps), 1)
    bar_w = group_w * 0.8 / max(len(tables), 1)
    for gi, name in enumerate(steps):
        gx = x0 + gi * group_w + group_w * 0.1
        for ti, t in enumerate(tables):
            s = next((s for s in t["steps"] if s["name"] == name), None)
            bx = gx + ti * bar_w
            colour = COLOURS[ti % len(COLOURS)]
            if s is None:
                continue
            v = s.get(key)
            if not s.get("ok") or v is None:
                svg.append(
                    f'<text x="{bx + bar_w / 2:.1f}" y="{y0 + plot_h - 4:.1f}" font-size="10" '
                    f'text-anchor="middle" fill="{colour}">n/a</text>'
                )
                continue
            y = y_of(v)
            svg.append(
                f'<rect x="{bx:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" '
                f'height="{max(y0 + plot_h - y, 0.5):.1f}" fill="{colour}">'
                f"<title>{escape(t['title'])}, step {s['step']}: {fmt(v)} {escape(unit)}</title>"
                "</rect>"
            )
            svg.append(
                f'<text x="{bx + bar_w / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
                f'text-anchor="middle">{fmt(v)}</text>'
            )
        label = SHORT.get(name, name)
        svg.append(
            f'<text x="{gx + group_w * 0.4:.1f}" y="{y0 + plot_h + 16:.1f}" font-size="12" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    svg.append(
        f'<line x1="{x0}" y1="{y0 + plot_h}" x2="{x0 + plot_w}" y2="{y0 + plot_h}" '
        'stroke="#333"/>'
    )


def render(doc, scale):
    tables = doc.get("tables", [])
    height = 2 * PANEL_H + 70
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" font-size="16" text-anchor="middle" font-weight="bold">'
        f"{escape(doc.get('model', ''))}: input {doc.get('input_len', '?')}, output "
        f"{doc.get('output_len', '?')} tokens; {escape(doc.get('device', ''))}</text>",
    ]
    panel(svg, 30, "Output tokens/s (higher is better)", "tokens/s", tables, "tokens_per_s", scale)
    panel(
        svg, 30 + PANEL_H, "Time to first token, p50 (lower is better)", "ms", tables,
        "ttft_p50_ms", scale,
    )
    # Legend.
    lx = MARGIN_L
    ly = height - 18
    for ti, t in enumerate(tables):
        colour = COLOURS[ti % len(COLOURS)]
        svg.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{colour}"/>')
        svg.append(f'<text x="{lx + 18}" y="{ly}" font-size="12">{escape(t["title"])}</text>')
        lx += 30 + 7 * len(t["title"])
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="ablation.json from scripts/ablation.sh")
    ap.add_argument("svg", help="SVG file to write")
    ap.add_argument(
        "--scale", choices=["auto", "linear", "log"], default="auto",
        help="value axis; auto: log when the largest bar is over 100x the smallest",
    )
    args = ap.parse_args()
    try:
        with open(args.json) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"ablation_chart: {args.json}: {e}", file=sys.stderr)
        return 1
    if not doc.get("tables"):
        print(f"ablation_chart: {args.json}: no tables", file=sys.stderr)
        return 1
    with open(args.svg, "w") as f:
        f.write(render(doc, args.scale))
    print(f"ablation_chart: wrote {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
