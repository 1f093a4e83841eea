"""``provgraph stats``: recompute statistics from the keyed graph and show them beside the
reported values, with cohort, n and method."""

from __future__ import annotations

import json
import math

import click
from rich.table import Table
from rich.text import Text

from provgraph.cli import App, pass_app
from provgraph.cli.common import format_option, out

_SHORT = {"positional-truncation": "positional", "pairwise-available": "pairwise"}
_STATUS_STYLE = {"agrees": "green", "DIFFERS": "bold red", "POSITIONAL": "bold red", "no match": "yellow"}


@click.command("stats")
@click.option(
    "--all", "show_all", is_flag=True, help="List every recomputed statistic, not only reported ones."
)
@click.option(
    "--name", "names", multiple=True, metavar="NAME", help="Only statistics of this name (repeatable)."
)
@format_option("table for people, json for scripts.")
@pass_app
def command(app: App, show_all: bool, names: tuple[str, ...], fmt: str) -> int:
    """Recompute every statistic from keyed cells and reviews; show reported vs recomputed.

    Cells come from reference x candidate labels under the contract's declared endpoint (or
    from a reported confusion-cell matrix); matrices follow the declared cohort rule, with the
    positional-truncation and pairwise-available routes beside it as named sensitivity
    analyses. Each reported value is shown with the statistic it was matched to, its cohort,
    n and method, and whether it agrees within its written precision. The statistics are
    written to the store (``provgraph check`` reads them).
    """
    # imported here, not at the top: the engine pulls in numpy and the store, which every other
    # command would pay for at start-up
    from provgraph.stats.materialize import refresh

    store = app.open_store()
    outcome = refresh(store, force=True)
    rows = _comparisons(outcome, names)
    listing = (
        [_stat_row(s, outcome.base) for s in outcome.stats if not names or s.name in names]
        if show_all
        else []
    )
    if fmt == "json":
        click.echo(
            json.dumps(_json_doc(outcome, rows, listing if show_all else None), indent=2, allow_nan=True)
        )
        return 0
    if outcome.status in ("nothing", "removed"):
        out.print("nothing to recompute: the graph has no candidate labels, reported cells or reviews")
        for note in outcome.notes:
            out.print(Text(f"note: {note}", style="yellow"))
        return 0
    out.print(
        Text(
            f"recomputed {outcome.statistics} statistics"
            + (f" from {outcome.cells} cells ({outcome.source})" if outcome.source else "")
            + f"; {len(outcome.links)} reported values matched, {len(outcome.unmatched)} unmatched",
            style="bold",
        )
    )
    _print_matrices(outcome.matrices)
    if rows:
        _print_reported(rows)
    if show_all:
        _print_listing(listing)
    _print_texts(_text_rows(outcome))
    for r in rows:
        if r.get("note"):
            out.print(Text(f"{r['statistic']}: {r['note']}", style="red"))
    for note in outcome.notes:
        out.print(Text(f"note: {note}", style="yellow"))
    return 0


def _json_doc(outcome, rows: list[dict], listing: list[dict] | None) -> dict:
    """The ``--format json`` document (``listing`` only with ``--all``)."""
    doc = {
        "status": outcome.status,
        "cells": outcome.cells,
        "cell_source": outcome.source,
        "statistics": outcome.statistics,
        "matrices": [_matrix_row(m) for m in outcome.matrices],
        "reported": rows,
        **_text_rows(outcome),
        "notes": outcome.notes,
    }
    if listing is not None:
        doc["all"] = listing
    return doc


def _print_reported(rows: list[dict]) -> None:
    table = Table(title="reported vs recomputed", title_justify="left", title_style="bold", box=None)
    for col in ("statistic", "cohort", "n", "reported", "recomputed", "sensitivity", "status", "method"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            r["statistic"],
            r["cohort"] or "",
            "" if r["n"] is None else str(r["n"]),
            f"{r['reported']}" + (f"  [{r['where']}]" if r["where"] else ""),
            _fmt(r["recomputed"]),
            "; ".join(
                f"{_SHORT.get(k, k)} {_fmt(v['value'])} (n={v['n']})" for k, v in r["sensitivity"].items()
            ),
            Text(r["status"], style=_STATUS_STYLE.get(r["status"], "")),
            r["method"].split(";")[0] if r["method"] else r.get("reason", ""),
        )
    out.print(table)


def _text_rows(outcome) -> dict[str, list[dict]]:
    """The texts' numbers (``bound``: file:line:col, written, recomputed; ``unbound``: why) and
    the registry's statistic references (``registry``: as written, resolved or why not)."""
    base = outcome.base
    bound, unbound = [], []
    for b in outcome.bindings:
        c = b.claim
        if b.stat is None:
            unbound.append(
                {"where": c.where, "written": c.text, "column": c.column, "row": c.row,
                 "statistic_name": b.name, "condition": b.condition, "reason": b.note}
            )  # fmt: skip
            continue
        v, s = b.value, b.stat
        differs = s.value != s.value or abs(v.value - s.value) > v.tolerance * 1.000001
        differs = differs or (v.n is not None and s.n is not None and v.n != s.n)
        bound.append(
            {"where": c.where, "written": c.text, "statistic": s.title(), "iri": s.iri(base)[len(base) :],
             "value": v.value, "tolerance": v.tolerance, "recomputed": s.value,
             "recomputed_as_written": b.recomputed_text(), "n": s.n,
             "status": "DIFFERS" if differs else "agrees"}
        )  # fmt: skip
    registry = [
        {"node": r.node[len(base) :] if r.node.startswith(base) else r.node, "written": r.ref,
         "statistic": r.stat.iri(base)[len(base) :] if r.stat else None, "note": r.note}
        for r in outcome.resolved
    ]  # fmt: skip
    return {"bound": bound, "unbound": unbound, "registry": registry}


def _print_texts(doc: dict[str, list[dict]]) -> None:
    if doc["bound"]:
        table = Table(title="numbers in texts", title_justify="left", title_style="bold", box=None)
        for col in ("where", "written", "recomputed", "status", "statistic"):
            table.add_column(col, overflow="fold")
        for r in doc["bound"]:
            shown = f"{r['recomputed_as_written']} ({_fmt(r['recomputed'])})"
            status = Text(r["status"], style=_STATUS_STYLE.get(r["status"], ""))
            table.add_row(r["where"], r["written"], shown, status, r["statistic"])
        out.print(table)
    if doc["unbound"]:
        table = Table(title="numbers not bound", title_justify="left", title_style="bold", box=None)
        for col in ("where", "written", "why"):
            table.add_column(col, overflow="fold")
        for r in doc["unbound"]:
            table.add_row(r["where"], r["written"], r["reason"])
        out.print(table)
    for r in doc["registry"]:
        if r["statistic"] is None:
            out.print(Text(f"registry {r['node']}: {r['note']}", style="yellow"))


def _print_listing(listing: list[dict]) -> None:
    table = Table(title="all recomputed statistics", title_justify="left", title_style="bold", box=None)
    for col in ("statistic", "value", "n", "role", "method"):
        table.add_column(col, overflow="fold")
    for s in listing:
        table.add_row(
            s["statistic"], _fmt(s["value"]), "" if s["n"] is None else str(s["n"]), s["role"], s["method"]
        )
    out.print(table)


def _fmt(value) -> str:
    if value is None:
        return ""
    if value != value:
        return "undefined"
    if value == 0 or 1e-4 <= abs(value) < 1e6:
        return f"{value:.6g}"
    return f"{value:.4e}"


def _comparisons(outcome, names) -> list[dict]:
    rows = []
    sensitivity: dict[int, dict] = {}
    for s in outcome.stats:
        if s.sensitivity_for is not None:
            sensitivity.setdefault(id(s.sensitivity_for), {})[s.route] = {"value": s.value, "n": s.n}
    for r, s in outcome.links:
        if names and s.name not in names:
            continue
        tol = r.tolerance if r.tolerance is not None else _tolerance(r.lexical)
        differs = s.value != s.value or abs(r.value - s.value) > tol * 1.000001
        status = "DIFFERS" if differs else "agrees"
        note = ""
        pos = sensitivity.get(id(s), {}).get("positional-truncation")
        if r.fields.get("route") == "positional-truncation":
            status, note = "POSITIONAL", "the report declares a positional join"
        elif differs and pos and abs(r.value - pos["value"]) <= tol * 1.000001:
            status, note = "POSITIONAL", "the reported value reproduces the positional-truncation route"
        rows.append(
            {
                "statistic": s.title(),
                "iri": s.iri(outcome.base)[len(outcome.base) :],
                "cohort": s.route,
                "n": s.n,
                "reported": _written(r, tol),
                "where": r.where,
                "recomputed": s.value,
                "tolerance": tol,
                "sensitivity": sensitivity.get(id(s), {}),
                "status": status,
                "note": note,
                "method": s.method,
            }
        )
    rows.sort(key=lambda r: (r["where"] or "", r["statistic"]))
    for r, reason in outcome.unmatched:
        if names and r.name not in names:
            continue
        rows.append(
            {
                "statistic": r.title(),
                "cohort": r.fields.get("route"),
                "n": r.n,
                "reported": r.lexical,
                "where": r.where,
                "recomputed": None,
                "tolerance": r.tolerance,
                "sensitivity": {},
                "status": "no match",
                "method": "",
                "reason": reason,
            }
        )
    return rows


def _written(r, tol: float | None) -> str:
    """A reported value with the precision it was written with (the store keeps decimals in
    canonical form, so 17.20 reads back as 17.2; its tolerance remembers the digits)."""
    if not tol or tol >= 0.5 or not (1e-4 <= abs(r.value) < 1e12 or r.value == 0):
        return r.lexical
    places = round(-math.log10(2 * tol))
    return f"{r.value:.{places}f}" if 0 < places <= 12 else r.lexical


def _tolerance(lexical: str) -> float:
    # lazy for start-up time, like the engine in command()
    from provgraph.stats.materialize import tolerance_of

    return tolerance_of(lexical)


def _stat_row(s, base: str) -> dict:
    iri = s.iri(base)
    return {
        "statistic": s.title(),
        "iri": iri[len(base) :],  # relative to the base IRI, as a release registry names it
        "value": s.value,
        "n": s.n,
        "role": s.role,
        "method": s.method,
    }


def _matrix_row(m) -> dict:
    return {
        "cohort_rule": m.route,
        "n": m.n,
        "blocks": m.block_count,
        "conditions": len(m.conditions),
        "mispaired_positions": m.mispaired,
        "missing": [{"cause": c, "condition": k, "cells": n} for (c, k), n in sorted(m.missing.items())],
    }


def _print_matrices(matrices) -> None:
    if not matrices:
        return
    table = Table(title="keyed matrices", title_justify="left", title_style="bold", box=None)
    for col in ("cohort rule", "blocks used", "of", "conditions", "note"):
        table.add_column(col)
    for m in matrices:
        note = ""
        if m.mispaired is not None:
            note = f"{m.mispaired} positions pair different (case, finding) blocks"
        elif m.route == "pairwise-available":
            note = "n differs per pair (largest shown)"
        table.add_row(m.route, str(m.n), str(m.block_count), str(len(m.conditions)), note)
    out.print(table)
    causes: dict[str, int] = {}
    for (cause, _), n in matrices[0].missing.items():
        causes[cause] = causes.get(cause, 0) + n
    if causes:
        miss = Table(title="missing cells by cause", title_justify="left", title_style="bold", box=None)
        miss.add_column("cause")
        miss.add_column("cells", justify="right")
        for cause, n in sorted(causes.items(), key=lambda kv: -kv[1]):
            miss.add_row(cause, str(n))
        out.print(miss)
