"""``provgraph query``: run a SPARQL query against the store."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import click
import pyoxigraph as ox
from rich.table import Table

from provgraph.cli import App, pass_app
from provgraph.cli.common import out
from provgraph.errors import UsageError
from provgraph.rdf.vocab import short

_FORM = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE|INSERT|DELETE|LOAD|CLEAR|DROP|CREATE)\b", re.I)


def query_form(text: str) -> str:
    """The query form (SELECT, ASK, CONSTRUCT, DESCRIBE) ignoring comments, IRIs and strings."""
    stripped = re.sub(r"#[^\n]*", " ", text)
    stripped = re.sub(r"<[^>\s]*>", " ", stripped)
    stripped = re.sub(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", " ", stripped)
    match = _FORM.search(stripped)
    if not match:
        raise UsageError("not a SPARQL query: expected SELECT, ASK, CONSTRUCT or DESCRIBE")
    form = match.group(1).upper()
    if form not in ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE"):
        raise UsageError(f"{form} is an update; `provgraph query` only reads the store")
    return form


def query_text(query: str) -> str:
    """The SPARQL text of QUERY: the file it names (``.rq``, or any existing file), or itself."""
    try:
        is_file = query.endswith(".rq") or Path(query).is_file()
    except (OSError, ValueError):  # SPARQL text longer than a file name may be, or with a NUL
        is_file = False
    if not is_file:
        return query
    try:
        return Path(query).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise UsageError(f"cannot read query file {query}: {reason}") from err


def parse_param(text: str) -> tuple[str, ox.NamedNode | ox.Literal]:
    name, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UsageError(f"--param {text!r}: expected NAME=VALUE")
    if value.startswith("<") and value.endswith(">"):
        return name, ox.NamedNode(value[1:-1])
    return name, ox.Literal(value)


def term_json(term: object) -> dict[str, str]:
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    assert isinstance(term, ox.Literal)
    out_: dict[str, str] = {"type": "literal", "value": term.value}
    if term.language:
        out_["xml:lang"] = term.language
    elif term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
        out_["datatype"] = term.datatype.value
    return out_


@click.command("query")
@click.argument("query")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="Output for SELECT results (json = SPARQL 1.1 JSON results).",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Pre-bind ?NAME (repeatable): VALUE is a string literal, or an IRI in <...>. "
    "Values are bound, never pasted into the query text.",
)
@pass_app
def command(app: App, query: str, fmt: str, params: tuple[str, ...]) -> int:
    """Run QUERY: a .rq file or SPARQL text, over the union of all imported graphs.

    \b
    Examples:
      provgraph query 'SELECT ?c (COUNT(*) AS ?n) WHERE { ?s a ?c } GROUP BY ?c'
      provgraph query provgraph/data/rules/output/output-unplanned-record.rq --format json
      provgraph query 'SELECT * WHERE { ?r pg:callId ?id }' --param id=C001
    """
    # lazy: only the command that runs loads its engine (start-up time)
    from provgraph.rdf.vocab import PREFIXES
    from provgraph.store.catalog import base_iri

    text = query_text(query)
    form = query_form(text)
    declared = set(re.findall(r"PREFIX\s+([A-Za-z][\w-]*)?:", text, re.I))
    prologue = "".join(f"PREFIX {p}: <{ns}>\n" for p, ns in PREFIXES.items() if p not in declared)
    text = prologue + text
    bindings = dict(parse_param(p) for p in params)
    store = app.open_store()
    try:
        with store.snapshot():  # on a shared server: one state, or an error
            base = base_iri(store)
            if form == "ASK":
                answer = store.ask(text, bindings)
            elif form in ("CONSTRUCT", "DESCRIBE"):
                triples = list(store.construct(text, bindings))
            else:
                rows = store.select(text, bindings)
    except SyntaxError as err:
        raise UsageError(f"query does not parse: {err}") from err
    if form == "ASK":
        click.echo(json.dumps({"boolean": answer}) if fmt == "json" else str(answer).lower())
        return 0
    if form in ("CONSTRUCT", "DESCRIBE"):
        click.echo(ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES).decode(), nl=False)
        return 0
    variables = rows.variables
    if fmt == "json":
        doc = {
            "head": {"vars": variables},
            "results": {
                "bindings": [{k: term_json(v) for k, v in row.items() if v is not None} for row in rows]
            },
        }
        click.echo(json.dumps(doc, indent=2))
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(variables)
        for row in rows:
            writer.writerow(["" if row.get(v) is None else row[v].value for v in variables])
        click.echo(buf.getvalue(), nl=False)
    else:
        table = Table(*variables, box=None)
        for row in rows:
            table.add_row(*[_show(row.get(v), base) for v in variables])
        out.print(table)
        out.print(f"{len(rows)} row{'s' if len(rows) != 1 else ''}", style="dim")
    return 0


def _show(term: object, base: str) -> str:
    if term is None:
        return ""
    if isinstance(term, ox.NamedNode):
        return short(term.value, base)
    return term.value  # type: ignore[attr-defined]
