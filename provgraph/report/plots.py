"""Accounting plots as inline SVG, drawn with matplotlib (no pyplot, no global state).

Text stays text in the SVG (``svg.fonttype = none``) so the page can be searched and read at
any zoom; each figure has its own id salt so several can share one HTML page; output is
deterministic (no date in the metadata).

matplotlib is imported inside the functions that draw: it takes about half a second to load,
and a report whose panels have no evidence (or a CLI command that never draws) need not pay it.
"""

from __future__ import annotations

import io
import re

from provgraph.lineage.claims import NumberStatus
from provgraph.report.accounting import CLAIM_STATUSES, Blocks, OutputStates, Statistics

GOOD, BAD, WARN, MUTED, INK = "#3A7D44", "#C0392B", "#E08E0B", "#8A8F98", "#222222"
OUTPUT_COLOURS = {
    "nonempty": GOOD,
    "zero-byte": WARN,
    "missing": BAD,
    "failed": "#8E44AD",
    "no terminal record": MUTED,
}
CLAIM_COLOURS = {
    "retained": GOOD,
    "restricted": WARN,
    "unverifiable": MUTED,
    "withdrawn": BAD,
}
_RC = {
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",  # ships with matplotlib; the SVG falls back to the page's sans-serif
    "font.size": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure  # lazy: start-up time (module docstring)

    return Figure(figsize=(width, height), layout="constrained")


def to_svg(fig, salt: str, title: str) -> str:
    """The figure as an ``<svg>`` element for inline use, with an accessible title."""
    import matplotlib  # lazy: start-up time (module docstring)

    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "none"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = text.replace("'DejaVu Sans'", "'DejaVu Sans', 'Liberation Sans', Arial, sans-serif")
    text = scope_ids(text, f"{salt}-")
    return text.replace("<svg ", f'<svg role="img" aria-label="{_attr(title)}" class="plot" ', 1)


def scope_ids(svg: str, prefix: str) -> str:
    """Prefix every ``id`` of an SVG (and the in-document references to it), so several
    SVGs can share one HTML page without their ids colliding."""
    ids = set(re.findall(r'\sid="([^"]+)"', svg))
    svg = re.sub(r'(\sid=")([^"]+)"', lambda m: f'{m.group(1)}{prefix}{m.group(2)}"', svg)
    svg = re.sub(
        r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})" if m.group(1) in ids else m.group(0), svg
    )
    return re.sub(
        r'((?:xlink:)?href=")#([^"]+)"',
        lambda m: f'{m.group(1)}#{prefix}{m.group(2)}"' if m.group(2) in ids else m.group(0),
        svg,
    )


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _rc():
    import matplotlib  # lazy: start-up time (module docstring)

    return matplotlib.rc_context(_RC)


def _hbars(ax, labels: list[str], values: list[float], colours: list[str], fmt=str) -> None:
    from matplotlib.ticker import MaxNLocator  # lazy: start-up time (module docstring)

    positions = list(range(len(labels)))[::-1]
    ax.barh(positions, values, color=colours, height=0.62)
    ax.set_yticks(positions, labels)
    top = max(values) if values and max(values) > 0 else 1
    for y, v in zip(positions, values, strict=True):
        ax.text(v + top * 0.02, y, fmt(v), va="center", ha="left", color=INK, fontsize=11)
    ax.set_xlim(0, top * 1.18)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.tick_params(axis="y", length=0)
    ax.spines["left"].set_visible(False)


def output_plot(states: OutputStates) -> str:
    """Planned calls by output state (Figure 2b)."""
    with _rc():
        fig = _figure(4.0, 2.3)
        ax = fig.add_subplot()
        labels = list(states.counts)
        _hbars(ax, labels, [states.counts[k] for k in labels], [OUTPUT_COLOURS[k] for k in labels])
        ax.set_xlabel("planned calls")
        return to_svg(fig, "outputs", f"Output files: {states.nonempty} nonempty of {states.planned} planned")


def views_plot(views: dict[str, int]) -> str:
    from matplotlib.ticker import MaxNLocator  # lazy: start-up time (module docstring)

    with _rc():
        fig = _figure(4.0, 2.5)
        ax = fig.add_subplot()
        labels = list(views)
        values = [views[k] for k in labels]
        colours = [WARN if k == "undocumented" else "#4A6FA5" for k in labels]
        ax.bar(labels, values, color=colours, width=0.6)
        for x, v in enumerate(values):
            ax.text(x, v, str(v), ha="center", va="bottom", fontsize=11, color=INK)
        ax.set_ylim(0, max(values) * 1.2)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        ax.set_ylabel("studies (n)")
        return to_svg(fig, "views", f"View positions of {sum(values)} studies")


def blocks_plot(b: Blocks) -> str:
    with _rc():
        fig = _figure(4.0, 1.6)
        ax = fig.add_subplot()
        share = 100.0 * b.complete / b.total if b.total else 0.0
        ax.barh([0], [b.complete], color=GOOD, height=0.5)
        ax.barh([0], [b.incomplete], left=[b.complete], color=BAD, height=0.5)
        ax.text(b.complete / 2, 0, f"{b.complete} complete", ha="center", va="center", color="white")
        if b.incomplete:
            ax.text(
                b.complete + b.incomplete / 2,
                0.42,
                f"{b.incomplete} incomplete",
                ha="center",
                va="bottom",
                color=BAD,
            )
        ax.set_xlim(0, b.total)
        ax.set_ylim(-0.6, 0.9)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.set_xlabel("(case, finding) blocks")
        return to_svg(fig, "blocks", f"{share:.1f}% of blocks globally complete")


def statistics_plot(stats: Statistics) -> str | None:
    rows = [r for r in stats.paired if r.difference is not None]
    if not rows:
        return None
    with _rc():
        fig = _figure(6.4, 0.5 + 0.42 * len(rows))
        ax = fig.add_subplot()
        labels = [r.label for r in rows]
        diffs = [100.0 * (r.difference or 0.0) for r in rows]
        colours = [GOOD if r.agrees else BAD for r in rows]
        positions = list(range(len(rows)))[::-1]
        ax.barh(positions, diffs, color=colours, height=0.55)
        ax.axvline(0, color=INK, linewidth=0.8)
        ax.set_yticks(positions, labels)
        span = max(abs(d) for d in diffs) or 1.0
        for y, d, r in zip(positions, diffs, rows, strict=True):
            # the label goes on the empty side of zero, clear of the bar and the row names
            ax.text(
                span * 0.05 if d <= 0 else -span * 0.05,
                y,
                f"{r.reported_value} → {r.recomputed_shown}",
                va="center",
                ha="left" if d <= 0 else "right",
                fontsize=10,
            )
        ax.set_xlim(-span * 1.6, span * 1.6)
        ax.set_xlabel("recomputed − reported (% of reported)")
        return to_svg(fig, "statistics", "Reported vs recomputed statistics")


def claims_plot(rows: list[NumberStatus]) -> str:
    counts = {s: 0 for s in CLAIM_STATUSES}
    for r in rows:
        counts[r.status] += 1
    shown = [s for s in CLAIM_STATUSES if counts[s]]
    with _rc():
        fig = _figure(4.0, 0.6 + 0.4 * len(shown))
        ax = fig.add_subplot()
        _hbars(ax, shown, [counts[s] for s in shown], [CLAIM_COLOURS[s] for s in shown])
        ax.set_xlabel("claims")
        return to_svg(fig, "claims", f"Statuses of {len(rows)} claims")
