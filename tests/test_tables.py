"""Tables in texts parsed into cells (provgraph/evidence/tables.py and its format modules).

Fixtures are real shapes: excerpts of the public Replication Trap repository
(tests/fixtures/replication_trap/tables/ORIGIN.md), the GFM spec's table examples
(https://github.github.com/gfm/#tables-extension-), LaTeX tables as booktabs, longtable and
tabularx document them, and the texts the project's own examples generate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from examples_support import generator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provgraph.evidence.claimnodes import text_format
from provgraph.evidence.claims import numbers
from provgraph.evidence.tablehtml import view
from provgraph.evidence.tables import FORMATS, Table, find_tables

TRAP = Path(__file__).parent / "fixtures" / "replication_trap" / "tables"


def lines_of(text: str) -> list[tuple[int, str]]:
    return list(enumerate(text.splitlines(), start=1))


def read(name: str) -> list[tuple[int, str]]:
    return lines_of((TRAP / name).read_text(encoding="utf-8"))


def assert_numbers_in_one_cell(lines: list[tuple[int, str]], tables: list[Table], fmt: str) -> None:
    """Every number the line scan reads on a body-row line is in exactly one cell, at its column;
    every number of a cell is one the line scan reads (or an integer-only cell's)."""
    seen = dict(view(lines, fmt))
    in_cells: dict[tuple[int, int], int] = {}
    for table in tables:
        for row in table.rows:
            for cell in row.cells:
                for number, line in zip(cell.numbers, cell.number_lines, strict=True):
                    in_cells[(line, number.column)] = in_cells.get((line, number.column), 0) + 1
    assert set(in_cells.values()) <= {1}
    body_lines = {line for line, _ in in_cells}
    body_lines |= {c.line for t in tables for r in t.rows for c in r.cells if c.span and c.text}
    for line in body_lines:
        scanned = {n.column for n in numbers(seen[line], latex=fmt == "latex")}
        cells_here = {column for (at, column) in in_cells if at == line}
        assert scanned <= cells_here, (line, seen[line])


# --- Markdown ------------------------------------------------------------------------------


def test_replication_trap_readme_table() -> None:
    """README.md results table of jheuer/replication-trap: group rows ("**Claude**" over empty
    cells), a bold cell (``**17%**``), labels with versions."""
    lines = read("README_results.md")
    (table,) = find_tables(lines, "markdown")
    assert (table.format, table.line, table.caption) == ("markdown", 1, None)
    assert table.columns == ("Model / Condition", "Detection", "FPR", "F1")
    assert len(table.rows) == 10  # the three group rows are not rows
    assert [(r.index, r.group) for r in table.rows][::4] == [(1, "Claude"), (5, "Claude"), (9, "Google")]
    gpt = table.rows[6]
    assert (gpt.label, gpt.group) == ("GPT-4o + taxonomy", "OpenAI")
    fpr = gpt.cells[2]
    assert (fpr.text, fpr.line, fpr.column) == ("17%", 11, 29)  # the cell's first character: "*"
    assert lines[10][1][fpr.column - 1 :].startswith("**17%**")
    (number,) = fpr.numbers
    assert (number.text, number.unit, number.column) == ("17%", "percent", 30)
    assert [c.text for c in table.rows[0].cells] == ["Claude Sonnet 4.6", "100%", "39%", "0.84"]
    assert str(table.rows[0].cells[3].numbers[0].resolution) == "0.01"
    assert_numbers_in_one_cell(lines, [table], "markdown")


def test_gfm_spec_examples() -> None:
    """GFM spec, tables extension: inconsistent outer pipes with alignment colons (example 199),
    escaped pipes also inside code and emphasis (200), the table broken at a block quote (201)
    and by a blank line, a pipe-less line still a row (202), a header that does not match the delimiter
    row is no table (203), short rows padded and long rows cut (204)."""
    (t,) = find_tables(lines_of("| abc | defghi |\n:-: | -----------:\nbar | baz\n"), "markdown")
    assert t.columns == ("abc", "defghi") and [c.text for c in t.rows[0].cells] == ["bar", "baz"]
    (t,) = find_tables(lines_of("| f\\|oo  |\n| ------ |\n| b `\\|` az |\n| b **\\|** im |\n"), "markdown")
    assert t.columns == ("f|oo",) and [r.cells[0].text for r in t.rows] == ["b | az", "b | im"]
    (t,) = find_tables(lines_of("| abc | def |\n| --- | --- |\n| bar | baz |\n> bar\n"), "markdown")
    assert len(t.rows) == 1
    # a pipe-less line is a row (here, with only its first cell, a group row); the blank line ends
    (t,) = find_tables(
        lines_of("| abc | def |\n| --- | --- |\nbar\n| x | 0.5 |\n\n| y | 0.6 |\n"), "markdown"
    )
    assert [(r.label, r.group) for r in t.rows] == [("x", "bar")]
    assert find_tables(lines_of("| abc | def |\n| --- |\n| bar |\n"), "markdown") == []
    text = "| abc | def |\n| --- | --- |\n| 0.5 |\n| bar | baz | boo |\n"
    (t,) = find_tables(lines_of(text), "markdown")
    assert [[c.text for c in r.cells] for r in t.rows] == [["0.5", ""], ["bar", "baz"]]


def test_markdown_is_not_read_inside_code_fences_or_from_rules() -> None:
    """A table shown in a fenced code block (CommonMark fences) is an example, not a table; a
    thematic break under a line is a setext heading, not a delimiter row."""
    text = (
        "```\n| a | b |\n|---|---|\n| x | 0.5 |\n```\n\n"
        "Title\n---\n\n| m | *F1* |\n|:--|--:|\n| `x` | 0.7 |\n"
    )
    (t,) = find_tables(lines_of(text), "markdown")
    assert (t.line, t.columns) == (10, ("m", "F1"))
    assert t.rows[0].label == "x" and t.rows[0].cells[1].numbers[0].text == "0.7"


def test_integer_cells_are_numbers_but_not_in_the_first_column() -> None:
    """A cell that writes one integer (a count, a percentage under ``DR (%)``) is a number; the
    line scan alone reads no bare integer. A first-column integer is a row number."""
    text = "| # | Model | TP | DR (%) |\n|---|---|---|---|\n| 1 | A | **17** | 94 |\n"
    (t,) = find_tables(lines_of(text), "markdown")
    row = t.rows[0]
    assert row.label is None and row.cells[0].numbers == ()
    assert [(c.numbers[0].text, c.numbers[0].column) for c in row.cells[2:]] == [("17", 12), ("94", 19)]
    assert t.units == (None, None, None, "percent")


# --- LaTeX ---------------------------------------------------------------------------------


def test_replication_trap_main_table() -> None:
    """research_note.tex table 1 of jheuer/replication-trap: caption of the table float,
    booktabs rules, \\multicolumn group rows, ``39\\% [17--63]`` cells, ``Sonnet ($n{=}3$)``."""
    lines = read("main_table.tex")
    (table,) = find_tables(lines, "latex")
    assert table.line == 10  # \begin{tabular}
    assert table.caption is not None and table.caption.startswith("All conditions. Cats = categories")
    assert "(≥2/3 variants flagged)" in table.caption and table.caption.endswith("(CIs overlap at n=18).")
    assert table.columns == ("Condition", "Cats", "DR", "FPR [95% CI]", "F1")
    assert [r.group for r in table.rows] == ["Claude"] * 5 + ["OpenAI"] * 2 + ["Google"] * 3
    sonnet3 = table.rows[2]
    assert sonnet3.label == "Sonnet (n=3)"
    assert [c.text for c in sonnet3.cells] == ["Sonnet (n=3)", "6/6", "100%", "50% [27--73]", "0.80"]
    fpr = table.rows[0].cells[3]
    assert (fpr.text, fpr.line, fpr.column) == ("39% [17--63]", 15, 38)
    (number,) = fpr.numbers
    assert (number.text, number.unit, number.column) == ("39%", "percent", 37)
    cats = table.rows[0].cells[1].numbers[0]
    assert (cats.unit, cats.numerator, cats.n) == ("fraction", 6, 6)
    assert_numbers_in_one_cell(lines, [table], "latex")


def test_replication_trap_stacked_multicolumn_headers() -> None:
    """research_note.tex table 2: \\multicolumn{2}{c}{\\textbf{Sonnet}} over ``TP/3 & FP/3``,
    \\cmidrule(lr){2-3} between the two header rows."""
    lines = read("category_table.tex")
    (table,) = find_tables(lines, "latex")
    assert table.columns[:3] == ("Category", "Sonnet / TP/3", "Sonnet / FP/3")
    assert table.columns[-1] == "Gem 3 / FP/3" and len(table.columns) == 11
    assert [r.label for r in table.rows] == [
        "Data leakage", "P-hacking", "Circular validation", "Pseudoreplication",
        "Survivorship bias", "Wrong test assumption",
    ]  # fmt: skip
    opus_survivorship = table.rows[4].cells[3]
    assert opus_survivorship.text == "2/3" and opus_survivorship.numbers[0].numerator == 2
    assert table.caption is not None and table.caption.startswith("Per-category results")
    assert_numbers_in_one_cell(lines, [table], "latex")


def test_latex_rows_over_lines_hline_header_and_escapes() -> None:
    """A row over several source lines (each number keeps its own line), a header ended by the
    \\hline after the first row, ``\\&`` in a label, ``\\\\[2pt]``, a comment, a nested tabular in
    a cell (one cell of the outer table), a multirow label."""
    text = (
        "\\begin{tabular}{|l|c|c|}\\hline\n"
        "Model & DR (\\%) & F1 \\\\ \\hline\n"
        "R\\&D model & 94 &\n"
        "  0.91 \\\\[2pt]\n"
        "% B & 0.11 & 0.22 \\\\\n"
        "\\begin{tabular}{@{}c@{}}C\\\\v2\\end{tabular} & 88 & 0.85 \\\\\n"
        "\\multirow{2}{*}{D} & 70 & 0.70 \\\\\n"
        " & 71 & 0.71 \\\\ \\hline\n"
        "\\end{tabular}\n"
    )
    lines = lines_of(text)
    (table,) = find_tables(lines, "latex")
    assert table.columns == ("Model", "DR (%)", "F1") and table.units == (None, "percent", None)
    assert [r.label for r in table.rows] == ["R&D model", "C v2", "D", "D"]  # \multirow covers the row below
    first = table.rows[0]
    assert [(c.line, c.column) for c in first.cells] == [(3, 1), (3, 14), (4, 3)]
    assert first.cells[2].number_lines == (4,) and first.cells[2].numbers[0].column == 2
    assert [c.numbers[0].text for c in first.cells[1:]] == ["94", "0.91"]
    assert_numbers_in_one_cell(lines, [table], "latex")


def test_longtable_caption_row_and_tabularx_arguments() -> None:
    """longtable's \\caption{..}\\\\ is the caption, not a row (longtable manual, section 3);
    \\endhead repeats the header; tabularx takes a width before its column spec."""
    text = (
        "\\begin{longtable}{lr}\n\\caption{Runs per model}\\\\\n"
        "\\toprule\nModel & Acc \\\\\n\\midrule\\endhead\n"
        "A & 0.75 \\\\\n\\bottomrule\n\\end{longtable}\n"
        "\\begin{table}\\caption{X}\\begin{tabularx}{\\linewidth}{lX}\n"
        "k & 0.5 \\\\\n\\end{tabularx}\\end{table}\n"
    )
    long, wide = find_tables(lines_of(text), "latex")
    assert (long.caption, long.columns, long.rows[0].cells[1].text) == (
        "Runs per model",
        ("Model", "Acc"),
        "0.75",
    )
    assert (wide.caption, wide.columns, wide.rows[0].label) == ("X", ("", ""), "k")


def test_unclosed_latex_tables_are_not_tables() -> None:
    """An unclosed environment, or a spec brace that never closes, yields no table, no error."""
    assert find_tables(lines_of("\\begin{tabular}{ll}\na & 0.5 \\\\\n"), "latex") == []
    assert find_tables(lines_of("\\begin{tabular}{ll\na & 0.5 \\\\\n\\end{tabular}\n"), "latex") == []


# --- HTML ----------------------------------------------------------------------------------

HTML = (
    '<html><body><p>Images at <img width="0.5" src="a.png"> scale.</p>\n'
    "<table>\n<caption>Main results &amp; more</caption>\n"
    '<thead><tr><th rowspan=2>Model</th><th colspan="2">Rates</th></tr>\n'
    "<tr><th>DR (%)</th><th>FPR</th></tr></thead>\n"
    "<tbody><tr><td>Claude</td><td></td><td></td></tr>\n"
    "<tr><th>A</th><td><b>94</b></td><td>17&#37;</td></tr>\n"
    "<tr><td>B &lt;v2&gt;</td><td>88</td><td>\n  0.25</td></tr>\n"
    "</tbody></table></body></html>\n"
)


def test_html_table_caption_headers_colspan_entities_positions() -> None:
    """HTML tables as the HTML Living Standard writes them (section 4.9: caption, thead, th,
    colspan; th as a row header in the body); positions from html.parser's getpos()."""
    lines = lines_of(HTML)
    (table,) = find_tables(lines, "html")
    assert (table.format, table.line, table.caption) == ("html", 2, "Main results & more")
    assert table.columns == ("Model", "Rates / DR (%)", "Rates / FPR")
    assert table.units == (None, "percent", None)
    a, b = table.rows
    assert (a.label, a.group, b.label) == ("A", "Claude", "B <v2>")
    assert [(c.text, c.line, c.column) for c in a.cells] == [("A", 7, 9), ("94", 7, 22), ("17%", 7, 37)]
    assert a.cells[2].numbers[0].text == "17%" and a.cells[2].numbers[0].column == 36
    late = b.cells[2]
    assert (late.line, late.column, late.numbers[0].text, late.number_lines) == (9, 3, "0.25", (9,))
    assert_numbers_in_one_cell(lines, [table], "html")


def test_html_markup_is_no_claim() -> None:
    """The view numbers are read from blanks tags (``width="0.5"``) and writes entities as
    their character, keeping every column."""
    seen = dict(view(lines_of(HTML), "html"))
    assert [n.text for n in numbers(seen[1])] == []
    assert seen[7].index("17%") == HTML.splitlines()[6].index("17&#37;")


def test_raw_html_table_in_markdown() -> None:
    """GFM allows raw HTML blocks (spec section 4.6): a <table> in a README is a table; markup
    outside tables is left as it is."""
    text = (
        "Some <b>0.3</b>\n\n<table>\n<tr><th>m</th><th>F1</th></tr>\n"
        "<tr><td>a</td><td>0.84</td></tr>\n</table>\n"
    )
    lines = lines_of(text)
    (table,) = find_tables(lines, "markdown")
    assert (table.format, table.columns, table.rows[0].cells[1].text) == ("html", ("m", "F1"), "0.84")
    seen = dict(view(lines, "markdown"))
    assert seen[1] == "Some <b>0.3</b>" and seen[5].rstrip() == "|   |   a|    |   0.84|    |"


# --- CSV -----------------------------------------------------------------------------------


def test_csv_text_is_one_table_and_a_ragged_row_is_a_problem() -> None:
    """RFC 4180 CSV (Python's csv module): the first record is the header, quoted fields keep
    their commas; a record with another number of fields is reported, not raised."""
    text = 'model,DR (%),F1\nA,94,0.84\n"B, large","1,000.5",0.5\nC,1\n'
    problems: list[tuple[int, str]] = []
    lines = lines_of(text)
    (table,) = find_tables(lines, "csv", problem=lambda line, why: problems.append((line, why)))
    assert table.columns == ("model", "DR (%)", "F1") and table.units[1] == "percent"
    assert [r.label for r in table.rows] == ["A", "B, large"]
    b = table.rows[1].cells
    assert [(c.text, c.column) for c in b] == [("B, large", 1), ("1,000.5", 12), ("0.5", 22)]
    assert b[1].numbers[0].text == "1000.5"
    assert [n.text for n in table.rows[0].cells[1].numbers] == ["94"]
    assert problems == [(4, "a row of 2 fields under a header of 3; not read as a table row")]
    assert_numbers_in_one_cell(lines, [table], "csv")


def test_tsv_text_is_one_table_as_pandas_writes_it() -> None:
    """TSV as ``pandas.DataFrame.to_csv(sep="\\t")`` writes it (Python's csv module underneath:
    a field holding a tab or a quote is quoted, ``""`` escapes a quote); a comma is no
    delimiter, so ``1,000.5`` is one number in one cell."""
    text = 'model\tDR (%)\tF1\nA\t94\t0.84\n"B\tlarge"\t1,000.5\t0.5\nC\t1\n'
    problems: list[tuple[int, str]] = []
    lines = lines_of(text)
    (table,) = find_tables(lines, "tsv", problem=lambda line, why: problems.append((line, why)))
    assert table.format == "tsv" and table.columns == ("model", "DR (%)", "F1")
    assert table.units[1] == "percent"
    assert [r.label for r in table.rows] == ["A", "B large"]  # a cell's white space is one space
    b = table.rows[1].cells
    assert [(c.text, c.column) for c in b] == [("B large", 1), ("1,000.5", 11), ("0.5", 19)]
    assert b[1].numbers[0].text == "1000.5"
    assert problems == [(4, "a row of 2 fields under a header of 3; not read as a table row")]
    assert_numbers_in_one_cell(lines, [table], "tsv")


def test_text_format_from_the_name() -> None:
    names = ("a.tex", "A.HTM", "r.html", "t.csv", "r.TSV", "r.tab", "README.md", "n.txt")
    assert [text_format(p) for p in names] == [
        "latex", "html", "html", "csv", "tsv", "tsv", "markdown", "markdown",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown table format"):
        find_tables([], "docx")


# --- the project's own examples ------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "rel", "columns"),
    [
        ("llm_review", "README.md", ("Condition", "Runs", "Detection rate", "FPR", "Precision", "F1")),
        ("cxr_pilot", "tables/table2.md", ("statistic", "value")),
    ],
)
def test_example_texts(example: str, rel: str, columns: tuple[str, ...], tmp_path: Path) -> None:
    """The tables examples/<example>/generate.py writes into its texts."""
    root = tmp_path / example
    generator(example).generate(root, "clean")
    lines = lines_of((root / rel).read_text(encoding="utf-8"))
    (table,) = find_tables(lines, text_format(rel))
    assert table.columns == columns and table.rows
    assert all(r.label for r in table.rows)
    assert_numbers_in_one_cell(lines, [table], text_format(rel))


# --- the graph: a bundle ingested, the triples read back -----------------------------------

CONTRACT = (
    '[project]\nname = "t"\nbase_iri = "https://example.org/t/"\n\n[release]\ninclude = ["*"]\n'
    'texts = ["README.md", "note.tex", "results.html", "results.csv"]\n'
)
CELL_QUERY = """
SELECT ?claim ?text ?line ?col ?row ?column ?label ?group ?header ?unit ?format ?caption WHERE {
  ?claim a pg:Claim ; pg:text ?text ; pg:sourceFile ?file ; pg:sourceLine ?line ; pg:sourceColumn ?col ;
         pg:inTable ?table ; pg:tableRow ?row ; pg:tableColumn ?column .
  ?table a pg:Table ; pg:sourceFile ?file ; pg:tableFormat ?format .
  ?file pg:path ?path .
  OPTIONAL { ?claim pg:rowLabel ?label } OPTIONAL { ?claim pg:rowGroup ?group }
  OPTIONAL { ?claim pg:columnLabel ?header } OPTIONAL { ?claim pg:columnUnit ?unit }
  OPTIONAL { ?table pg:caption ?caption }
  FILTER(?path = ?want)
} ORDER BY ?line ?col
"""


def cells(ingested, path: str) -> list[dict[str, str | None]]:
    query = CELL_QUERY.replace("?want", f'"{path}"')
    return ingested.select(query)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """The Replication Trap excerpts as a README and a note, with an HTML and a CSV text."""
    from provgraph.ingest.testing import ingest_bundle, write_bundle

    files = {
        "README.md": (TRAP / "README_results.md").read_text(encoding="utf-8") + "\nQ = 154.73 over 26/45.\n",
        "note.tex": (TRAP / "main_table.tex").read_text(encoding="utf-8"),
        "results.html": HTML,
        "results.csv": 'model,DR (%),F1\nA,94,0.84\n"B, large","1,000.5",0.5\nC,1\n',
    }
    root = write_bundle(tmp_path_factory.mktemp("tables") / "b", files, CONTRACT)
    result = ingest_bundle(root)
    yield result
    result.close()


def test_markdown_cells_in_the_graph(ingested) -> None:
    """Each table cell's claim carries its table, row, column, labels; the claim IRIs are the
    ones the line scan has always minted (file, line, text, occurrence)."""
    assert {r.rel: r.importer for r in ingested.results if r.rel != "provgraph.toml"} == dict.fromkeys(
        ["README.md", "note.tex", "results.csv", "results.html"], "texts"
    )
    rows = cells(ingested, "README.md")
    fpr = next(r for r in rows if r["line"] == "11" and r["text"] == "17%")
    assert fpr["claim"] == "https://example.org/t/claim/README.md/11/17%25/1"
    assert (fpr["row"], fpr["column"], fpr["col"]) == ("7", "3", "31")
    assert (fpr["label"], fpr["group"], fpr["header"], fpr["format"]) == (
        "GPT-4o + taxonomy",
        "OpenAI",
        "FPR",
        "markdown",
    )
    assert len([r for r in rows if r["column"] != "1"]) == 30  # 10 rows x 3 value columns
    prose = ingested.select(
        "SELECT ?c ?col ?label WHERE { ?c a pg:Claim ; pg:text '154.73' ; pg:sourceColumn ?col ; "
        "pg:label ?label "
        "FILTER NOT EXISTS { ?c pg:inTable ?t } }"
    )
    assert [(r["col"], r["label"]) for r in prose] == [("5", "Q")]


def test_latex_html_csv_cells_in_the_graph(ingested) -> None:
    """LaTeX (caption, group from \\multicolumn), HTML (tags are no claims, entities decoded,
    header % as the column unit of an integer cell), CSV (quoted fields, integer cells)."""
    tex = {(r["line"], r["text"]): r for r in cells(ingested, "note.tex")}
    f1 = tex[("17", "0.80")]
    assert (f1["label"], f1["group"], f1["header"], f1["row"], f1["column"]) == (
        "Sonnet (n=3)",
        "Claude",
        "F1",
        "3",
        "5",
    )
    assert f1["caption"].startswith("All conditions.") and f1["col"] == "54"
    html = [
        (r["text"], r["line"], r["col"], r["header"], r["unit"], r["group"])
        for r in cells(ingested, "results.html")
    ]
    assert html == [
        ("94", "7", "22", "Rates / DR (%)", "percent", "Claude"),
        ("17%", "7", "37", "Rates / FPR", None, "Claude"),
        ("88", "8", "30", "Rates / DR (%)", "percent", "Claude"),
        ("0.25", "9", "3", "Rates / FPR", None, "Claude"),
    ]
    everywhere = {r["t"] for r in ingested.select(
        "SELECT ?t WHERE { ?c a pg:Claim ; pg:text ?t ; pg:sourceFile/pg:path 'results.html' }"
    )}  # fmt: skip
    assert everywhere == {"94", "17%", "88", "0.25"}  # not width="0.5"
    csv_cells = [
        (r["text"], r["line"], r["col"], r["label"], r["header"]) for r in cells(ingested, "results.csv")
    ]
    assert csv_cells == [
        ("94", "2", "3", "A", "DR (%)"), ("0.84", "2", "6", "A", "F1"),
        ("1000.5", "3", "13", "B, large", "DR (%)"), ("0.5", "3", "22", "B, large", "F1"),
    ]  # fmt: skip
    assert [(p.path, p.line) for p in ingested.problems + ingested.rejected] == [("results.csv", 4)]


# --- bad and hostile input -----------------------------------------------------------------

_PIECES = [
    "|", "---", ":-:", "\\|", "**", "*", "`", "&", "\\\\", "\\\\[2pt]", "\\hline", "\\midrule",
    "\\begin{tabular}{ll}", "\\end{tabular}", "\\multicolumn{2}{c}{", "}", "{", "%", "\\%",
    "<table>", "</table>", "<tr>", "<td colspan=x>", "<th>", "</td>", "<!--", "-->", "&amp;",
    "&#99999999;", "<", ">", '"', ",", "\t", "0.5", "17%", "3/4", "n = 5", "\n", " ", "x",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.sampled_from(FORMATS))
def test_any_text_parses_without_error_and_numbers_stay_in_one_cell(pieces: list[str], fmt: str) -> None:
    """Fragments of every format's syntax, shuffled: find_tables never raises, and no number is
    in two cells."""
    lines = lines_of("".join(pieces))
    tables = find_tables(lines, fmt, problem=lambda _line, _why: None)
    seen: set[tuple[int, int]] = set()
    for table in tables:
        assert len(table.columns) == len(table.units)
        for row in table.rows:
            assert len(row.cells) == len(table.columns)
            for cell in row.cells:
                for number, line in zip(cell.numbers, cell.number_lines, strict=True):
                    assert (line, number.column) not in seen
                    seen.add((line, number.column))


def test_unclosed_html_markup_is_read_as_text_not_as_cells_of_its_own() -> None:
    """An unclosed comment hides the rest of the table (as a browser does); a ``<`` that opens
    no tag is text. Both once made html.parser rescan the text per later ``<``."""
    (table,) = find_tables(lines_of("<table><tr><td>0.5</td><td><!-- 0.7 <td>0.9\n"), "html")
    assert [[n.text for c in r.cells for n in c.numbers] for r in table.rows] == [["0.5"]]
    (table,) = find_tables(lines_of("<table><tr><td>a <td 0.25 <td>0.75</td></tr></table>\n"), "html")
    assert [c.text for c in table.rows[0].cells] == ["a <td 0.25", "0.75"]


def test_html_rowspan_covers_the_cells_below() -> None:
    """HTML omits the cells a rowspan covers (HTML Living Standard, 4.9.11 "forming a table"):
    the cells after it shift right, and the covered row's label is the spanning cell's."""
    text = (
        "<table><tr><th>Model</th><th>Prompt</th><th>F1</th></tr>\n"
        "<tr><td rowspan=2>GPT-4o</td><td>plain</td><td>0.84</td></tr>\n"
        "<tr><td>taxonomy</td><td>0.90</td></tr></table>\n"
    )
    (table,) = find_tables(lines_of(text), "html")
    assert table.columns == ("Model", "Prompt", "F1")
    assert [(r.label, [c.text for c in r.cells]) for r in table.rows] == [
        ("GPT-4o", ["GPT-4o", "plain", "0.84"]),
        ("GPT-4o", ["", "taxonomy", "0.90"]),
    ]
    assert table.rows[1].cells[0].span == 0


def test_a_table_is_read_with_at_most_max_columns() -> None:
    """A hostile row of 10^4 cells: the table keeps MAX_COLUMNS columns (every row is padded to
    the width); the numbers past it are still claims of the line scan, just without a cell."""
    from provgraph.evidence.tables import MAX_COLUMNS

    width = 10_000
    text = "|" + " h |" * width + "\n" + "|-" * width + "|\n" + "| 0.5 " * width + "|\n| x | 0.6 |\n"
    (table,) = find_tables(lines_of(text), "markdown")
    assert len(table.columns) == MAX_COLUMNS and [len(r.cells) for r in table.rows] == [MAX_COLUMNS] * 2


def test_markdown_captions() -> None:
    """Pandoc's table_captions extension (a paragraph ``Table: ...`` or ``: ...`` before or after
    the table, pandoc.org/MANUAL.html#extension-table_captions), and the ``**Table 2.** ...``
    line papers' READMEs write above a table."""
    above = "Table: Detection by model\n\n| m | DR |\n|---|---|\n| a | 0.5 |\n"
    below = "| m | DR |\n|---|---|\n| a | 0.5 |\n: Detection *by* model\n"
    numbered = "**Table 2.** Detection by model\n| m | DR |\n|---|---|\n| a | 0.5 |\n\nText.\n"
    for text, caption in ((above, "Detection by model"), (below, "Detection by model")):
        (table,) = find_tables(lines_of(text), "markdown")
        assert (table.caption, len(table.rows)) == (caption, 1)
    (table,) = find_tables(lines_of(numbered), "markdown")
    assert table.caption == "Table 2. Detection by model"
    (table,) = find_tables(lines_of("Some prose.\n\n| m | DR |\n|---|---|\n| a | 0.5 |\n"), "markdown")
    assert table.caption is None


def test_html_cells_do_not_lend_their_numbers_to_each_other() -> None:
    """``<td>17%</td><td>(8/45)</td>`` are two cells: the percentage has no denominator of its
    own, and 8/45 is a claim of its own (as ``| 17% | (8/45) |`` in Markdown)."""
    lines = lines_of(
        "<table><tr><th>m</th><th>FPR</th><th>k/n</th></tr>\n<tr><td>a</td><td>17%</td><td>(8/45)</td></tr></table>\n"
    )
    seen = dict(view(lines, "html"))
    found = [(n.text, n.n) for n in numbers(seen[2])]
    assert found == [("17%", None), ("8/45", 45)]
    (table,) = find_tables(lines, "html")
    assert [[n.text for n in c.numbers] for c in table.rows[0].cells] == [[], ["17%"], ["8/45"]]
