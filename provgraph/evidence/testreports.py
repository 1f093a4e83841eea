"""Test reports as texts write them (statistic, df, p), checked the way statcheck checks them.

:func:`reports` finds ``χ2(1) = 4.21, p = .040``, ``$\\chi^2(1)=4.21$, $p<.05$``,
``chi-square(1, N = 90) = 4.21``, ``t(28) = 2.10``, ``F(2, 27) = 3.40``, ``z = 2.20``,
``Q(9) = 182.29``, ``Cochran's Q = 182.29 (9 degrees of freedom)`` and ``Q = 182.29, df = 9``,
each followed by ``p = .045``, ``p < .001``, ``p = 0.04`` or ``ns``. :func:`judge` recomputes p
with scipy over the rounding interval of the written statistic (two-sided for t and z unless
the line says one-sided / one-tailed) and applies statcheck's rules (R package statcheck,
``R/error_test.R`` and ``R/decision_error_test.R``, defaults alpha = .05, p = alpha counts as
significant, p = .000 is an error): an *inconsistency* when the reported p lies outside the
recomputed range at p's own precision, a *decision error* when it also flips significance.
Both rounding directions are accepted (a closed interval of half a unit), as statcheck's R
``round`` at a tie would be.

>>> [(r.test, r.df, str(r.statistic), r.p_relation, str(r.p)) for r in reports("t(28) = 2.20, p = .03")]
[('t', (28,), '2.20', '=', '0.03')]
>>> judge(reports("t(28) = 2.20, p = .03")[0]).inconsistent
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

ALPHA = Decimal("0.05")
_CHI = re.compile(
    r"\\chi\s*\^\s*\{?\s*2\s*\}?|χ\s*(?:\^\s*\{?\s*2\s*\}?|2|²)|\bchi[\s-]*squared?\b|\bchi\s*[_^]?\s*2\b|\bX\s*\^?\s*2(?=\s*\()",
    re.IGNORECASE,
)
_CHI_MARK = "\x01"
_MARKUP = re.compile(r"\\(?:left|right|mathrm|text|textit|mathit|,|;|!)|[${}~]")
_NUM = r"[-−–]?\s?(?:\d+(?:\.\d+)?|\.\d+)"
_REPORT = re.compile(
    r"(?<![A-Za-z])(?P<test>\x01|t|F|z|Z|Q|Cochran'?s\s+Q|Cochran\s+Q)\s*"
    r"(?:\(\s*(?P<df1>\d+(?:\.\d+)?)\s*(?:,\s*(?P<df2>\d+(?:\.\d+)?))?\s*(?:,\s*[Nn]\s*=\s*\d[\d,]*)?\s*\))?"
    r"\s*=\s*(?P<stat>" + _NUM + r")"
    r"(?:\s*\(\s*(?P<df3>\d+)\s+degrees?\s+of\s+freedom\s*\)|\s*,\s*df\s*=\s*(?P<df4>\d+))?"
    r"\s*[,;]?\s*\(?\s*(?:(?P<ns>n\.?\s?s\.?)(?![A-Za-z])|p\s*(?P<prel>=|<|>|≤|≥|<=|>=)\s*(?P<p>0?\.\d+|[01](?:\.\d+)?))"
)
#: a cheap test first: a line with no p (or ns) holds no complete report
_HINT = re.compile(r"(?<![A-Za-z])(?:p\s*[=<>≤≥]|n\.?\s?s\b)")
_ONE_SIDED = re.compile(r"one[\s-]?(?:sided|tailed)", re.IGNORECASE)
_RELATIONS = {"=": "=", "<": "<", ">": ">", "≤": "<", "≥": ">", "<=": "<", ">=": ">"}


@dataclass(frozen=True)
class Report:
    """One test report as written on a line."""

    test: str  # "chi2" | "t" | "F" | "z" | "Q"
    df: tuple[int, ...]  # (df,) or (df1, df2); () for z
    statistic: Decimal
    decimals: int
    p_relation: str  # "=" | "<" | ">" ("ns" is "> .05")
    p: Decimal
    p_decimals: int
    one_sided: bool
    column: int  # 0-based start on the line (as cleaned)
    text: str


@dataclass(frozen=True)
class Verdict:
    """statcheck's judgement of one report."""

    computed: float  # p at the written statistic
    low: float  # p range over the statistic's rounding interval
    high: float
    inconsistent: bool
    decision_error: bool


def normal_line(line: str) -> str:
    """The line with LaTeX math markup blanked and each chi-square spelling made one ``\\x01``,
    keeping every column (so a report's text is cut from the line as written)."""
    line = _CHI.sub(lambda m: _CHI_MARK + " " * (len(m.group(0)) - 1), line)
    line = _MARKUP.sub(lambda m: " " * len(m.group(0)), line)
    return line.replace("−", "-").replace("–", "-")


def reports(line: str) -> list[Report]:
    """Every complete test report (statistic, df where the test has one, p) on one line."""
    if not _HINT.search(line):
        return []
    text = normal_line(line)
    one_sided = bool(_ONE_SIDED.search(text))
    found = []
    for m in _REPORT.finditer(text):
        test = m.group("test")
        test = {_CHI_MARK: "chi2", "Z": "z"}.get(test, "Q" if test.lower().startswith("cochran") else test)
        dfs = [int(float(d)) for d in (m.group("df1"), m.group("df2"), m.group("df3"), m.group("df4")) if d]
        if len(dfs) != {"F": 2, "z": 0}.get(test, 1):
            continue  # an incomplete report: statcheck reads only complete ones
        stat_text = re.sub(r"\s", "", m.group("stat")).replace("−", "-").replace("–", "-")
        if m.group("ns"):
            relation, p_text = ">", "0.05"
        else:
            relation, p_text = _RELATIONS[m.group("prel")], m.group("p")
        found.append(
            Report(
                test,
                tuple(dfs),
                Decimal(stat_text),
                _decimals(stat_text),
                relation,
                Decimal(p_text),
                _decimals(p_text),
                one_sided,
                m.start(),
                line[m.start() : m.end()].strip(),
            )
        )
    return found


#: a table column's header (in ``statnames.normal_name`` form) -> the test its values are
_TEST_HEADERS = {
    **dict.fromkeys(("q", "cochran q", "cochran's q", "cochrans q", "q statistic"), "Q"),
    **dict.fromkeys(("chi2", "χ2", "χ²", "chi^2", "x2", "chi-square", "chi square", "chi-squared"), "chi2"),
    **dict.fromkeys(("t", "t statistic", "t-statistic"), "t"),
    **dict.fromkeys(("f", "f statistic"), "F"),
    "z": "z",
}
DF_HEADERS = frozenset({"df", "d.f", "dof", "degrees of freedom"})
P_HEADERS = frozenset({"p", "p-value", "p value", "p-values"})
_CELL_P = re.compile(r"^\s*(?:p\s*)?(=|<=|>=|<|>|≤|≥)?\s*(0?\.\d+|[01](?:\.\d+)?)\s*$")
_CELL_NUM = re.compile(r"^\s*(" + _NUM + r")\s*$")


def test_of_header(header: str) -> str | None:
    """The test a column holds the statistic of (``Q``, ``chi2``...), from its normal header."""
    return _TEST_HEADERS.get(header)


def cell_report(test: str, statistic: str, df: str | None, p: str, one_sided: bool = False) -> Report | None:
    """A report from one table row's cells (the statistic, df and p as written), or None when
    they are not a complete report."""
    stat_m, p_m = _CELL_NUM.match(statistic), _CELL_P.match(p)
    dfs = [int(d) for d in re.findall(r"\d+", df or "")]
    if not stat_m or not p_m or len(dfs) != {"F": 2, "z": 0}.get(test, 1):
        return None
    stat_text = re.sub(r"\s", "", stat_m.group(1)).replace("−", "-").replace("–", "-")
    p_text = p_m.group(2)
    relation = _RELATIONS[p_m.group(1) or "="]
    text = f"{test}{'(' + ', '.join(map(str, dfs)) + ')' if dfs else ''} = {stat_text}, p {relation} {p_text}"
    return Report(
        test, tuple(dfs), Decimal(stat_text), _decimals(stat_text), relation, Decimal(p_text),
        _decimals(p_text), one_sided, 0, text,
    )  # fmt: skip


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def p_value(test: str, statistic: float, df: tuple[int, ...], one_sided: bool = False) -> float:
    """p of a test statistic, as statcheck's ``compute_p`` (R's pt / pf / pnorm / pchisq)."""
    from scipy import stats  # why: scipy loads in ~0.3 s, needed only when a line has a report

    if test == "t":
        p = float(stats.t.sf(abs(statistic), df[0]))
    elif test == "z":
        p = float(stats.norm.sf(abs(statistic)))
    elif test == "F":
        p = float(stats.f.sf(statistic, df[0], df[1]))
    else:
        p = float(stats.chi2.sf(statistic, df[0]))
    return p if test in ("F", "chi2", "Q") or one_sided else 2 * p


def judge(report: Report, alpha: Decimal = ALPHA) -> Verdict:
    """statcheck's error and decision error for a report with an exact ('=') statistic."""
    stat, half = float(report.statistic), 0.5 / 10**report.decimals
    if report.test in ("F", "chi2", "Q") and stat - half < 0:
        low_stat = 0.0
    else:
        low_stat = stat - half if stat >= 0 else stat + half
    up_stat = stat + half if stat >= 0 else stat - half
    high = p_value(report.test, low_stat, report.df, report.one_sided)
    low = p_value(report.test, up_stat, report.df, report.one_sided)
    computed = p_value(report.test, stat, report.df, report.one_sided)
    reported, p_half = float(report.p), 0.5 / 10**report.p_decimals
    if report.p_relation == "=":
        # statcheck: reported > round(up_p) or < round(low_p); either rounding of a tie passes
        error = reported <= 0 or reported > high + p_half * (1 + 1e-9) or reported < low - p_half * (1 + 1e-9)
    elif report.p_relation == "<":
        error = reported <= 0 or reported < low
    else:
        error = reported > high
    a = float(alpha)
    decision = False
    if error:
        if report.p_relation == "=":
            decision = (reported <= a < computed) or (computed <= a < reported)
        elif report.p_relation == "<":
            decision = reported <= a < computed
        else:
            decision = reported >= a >= computed
    return Verdict(computed, low, high, error, decision)


def describe(report: Report, verdict: Verdict) -> str:
    """``t(28) = 2.20, p = .03``: recomputed p = 0.036 (0.032 to 0.041 over t 2.195 to 2.205)."""
    sides = " one-sided" if report.one_sided and report.test in ("t", "z") else ""
    kind = "decision error" if verdict.decision_error else "inconsistent"
    return (
        f"{report.text}: {kind}, recomputed{sides} p = {verdict.computed:.4g} "
        f"({verdict.low:.4g} to {verdict.high:.4g} over the written statistic's rounding)"
    )
