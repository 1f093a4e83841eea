"""statcheck-style checks of written test reports (provgraph.evidence.testreports).

The cases are statcheck's own documented examples: its test suite
(github.com/MicheleNuijten/statcheck, tests/testthat/test-error.R, test-decisionerror.R,
test-extract-chi2-tests.R, test-extract-Q-tests.R); the p values are held against scipy.
"""

from __future__ import annotations

import pytest
from scipy import stats

from provgraph.evidence.testreports import describe, judge, p_value, reports


def one(text: str):
    found = reports(text)
    assert len(found) == 1, (text, found)
    return judge(found[0])


@pytest.mark.parametrize(
    "text",
    [
        "t(28) = 2.20, p = .03",
        "F(2, 28) = 2.20, p = .15",
        "chi2(28) = 22.20, p = .79",
        " z = 2.20, p = .04",
        "Q(28) = 22.20, p = .79",
        "t(28) = -2.20, p = .03",
        "t(28) = 2.20, ns",
        "t(28) = 2.20, p > .05",
        "t(28) = 1.20, p = .03",
        "t(28) = 22.20, p = .000",
        "t(28) = 2.2, p = .08",
        "t(28) = 2.2, p = .02",
        "t(28) = 2.2, p > .08",
        "t(28) = 2.2, p < .02",
    ],
)
def test_statcheck_errors_are_errors(text: str) -> None:
    """statcheck test-error.R: these are inconsistencies."""
    assert one(text).inconsistent


@pytest.mark.parametrize(
    "text",
    [
        " Z = -2.42, p = 0.016",
        "t(28) = 2.0, p < .05",
        "t(28) = 2, p = .02",
        "t(28) = 2, p = .14",
        "t(28) = 2.2, p = .03",
        "t(28) = 2.2, p = .04",
        "t(28) = 2.20, p = .036",
        "t(28) = 2.20, p = .037",
        "t(28) = 2.2, p = .036",
        "t(28) = 2.2, p < .08",
        "t(28) = 2.2, p > .02",
    ],
)
def test_statcheck_correct_reports_pass(text: str) -> None:
    """statcheck test-error.R: correctly rounded p values are not errors."""
    assert not one(text).inconsistent


@pytest.mark.parametrize(
    "text",
    [
        "t(28) = 2.20, p = .06",
        "t(28) = 1.20, p = .03",
        "F(2, 28) = 22.20, p = .06",
        "F(2, 28) = 2.20, p = .03",
        "chi2(28) = 2.20, p = .03",
        "chi2(28) = 52.20, p = .06",
        " z = 1.20, p = .03",
        " z = 2.20, p = .06",
        "Q(28) = 2.20, p = .03",
        "Q(28) = 52.20, p = .06",
    ],
)
def test_statcheck_decision_errors(text: str) -> None:
    """statcheck test-decisionerror.R: significance at .05 flips."""
    verdict = one(text)
    assert verdict.inconsistent and verdict.decision_error


def test_p_equal_alpha_is_significant() -> None:
    """statcheck's default pEqualAlphaSig: t(28) = 2.20, p = .05 is no decision error."""
    verdict = one("t(28) = 2.20, p = .05")
    assert verdict.inconsistent and not verdict.decision_error


def test_one_sided_when_written() -> None:
    """statcheck OneTailedTxt: p = .018 is the one-tailed p of t(28) = 2.20."""
    assert one("t(28) = 2.20, p = .018").inconsistent
    assert not one("t(28) = 2.20, p = .018, one-tailed").inconsistent
    assert not one("a one-sided test gave t(28) = 2.20, p = .018").inconsistent


@pytest.mark.parametrize(
    "text, test, df",
    [
        ("chi2(28, N = 129) = 2.2, p = .03", "chi2", (28,)),
        ("chi2(1, N = 11,455) = 16.78, p <.001", "chi2", (1,)),
        ("chi2(1, n = 81) = 3.25, p = 0.07", "chi2", (1,)),
        ("X2(28) = 2.20, p = .03", "chi2", (28,)),
        ("χ2(1) = 4.21, p = .040", "chi2", (1,)),
        ("χ²(1) = 4.21, p = .040", "chi2", (1,)),
        ("$\\chi^2(1)=4.21$, $p=.040$", "chi2", (1,)),
        ("$\\chi^{2}(1) = 4.21, p = .040$", "chi2", (1,)),
        ("chi-square(1, N = 90) = 4.21, p = .04", "chi2", (1,)),
        (" chi2 ( 28 ) = 2.20 , p = .03", "chi2", (28,)),
        ("Q(2)=2.20,p=.03", "Q", (2,)),
        ("Cochran's Q = 182.29 (9 degrees of freedom), p < .001", "Q", (9,)),
        ("Cochran Q = 182.29, df = 9, p < 0.001", "Q", (9,)),
        ("F(2, 27) = 3.40, p = .048", "F", (2, 27)),
        ("t(28) = 2.10, p = .045", "t", (28,)),
    ],
)
def test_spellings_are_read(text: str, test: str, df: tuple[int, ...]) -> None:
    (report,) = reports(text)
    assert (report.test, report.df) == (test, df)


def test_incomplete_or_lookalike_reports_are_not_read() -> None:
    assert reports("t = 2.20, p = .03") == []  # t without df
    assert reports("F(2) = 2.20, p = .03") == []  # F needs two df
    assert reports("GPT-4o + taxonomy | 94% | 17% | 0.90") == []
    assert reports("Q = 182.29 over 45 tests") == []  # no p


def test_p_values_agree_with_scipy() -> None:
    assert p_value("t", 2.1, (28,)) == pytest.approx(2 * stats.t.sf(2.1, 28))
    assert p_value("t", -2.1, (28,), one_sided=True) == pytest.approx(stats.t.sf(2.1, 28))
    assert p_value("F", 3.4, (2, 27)) == pytest.approx(stats.f.sf(3.4, 2, 27))
    assert p_value("chi2", 4.21, (1,)) == pytest.approx(stats.chi2.sf(4.21, 1))
    assert p_value("Q", 182.29, (9,)) == pytest.approx(stats.chi2.sf(182.29, 9))
    assert p_value("z", 1.96, ()) == pytest.approx(2 * stats.norm.sf(1.96))
    verdict = one("chi2(1) = 4.21, p = .040")
    assert not verdict.inconsistent
    assert verdict.low <= stats.chi2.sf(4.21, 1) <= verdict.high


def test_description_names_the_recomputed_p() -> None:
    (report,) = reports("t(28) = 2.20, p = .03")
    text = describe(report, judge(report))
    assert text.startswith("t(28) = 2.20, p = .03: inconsistent, recomputed p = 0.03")


def test_report_text_is_cut_from_the_line_as_written() -> None:
    """The message quotes the report as the text writes it, markup and all."""
    (report,) = reports("lowered false positives, χ2(1) = 4.21, p = .01.")
    assert report.text == "χ2(1) = 4.21, p = .01"
    (report,) = reports("$\\chi^{2}(1) = 4.21$, $p = .040$")
    assert report.text.startswith("\\chi^{2}(1) = 4.21")
