"""Statistics of a keyed cell grid: proportions and the omnibus test per cohort route, the
declared families of pairwise tests with their adjustments, and cluster-aware inference. The
matrices of the cohort routes are :mod:`provgraph.stats.matrices`.

Each statistic is derived from the matrix *columns* it used, and each column records exactly
which blocks it holds (the SHA-256 of their keys), so a McNemar test of conditions A and B
points at the A and B columns of its cohort and nothing else; the columns derive from the cell
grid, and the grid from every label row it used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from provgraph.rdf.terms import IRI
from provgraph.stats.core import cluster, paired
from provgraph.stats.core.grid import CellGrid
from provgraph.stats.matrices import ROUTE_METHOD, Matrix, Routes
from provgraph.stats.statistic import Stat, bootstrap_settings

VARIANT_METHOD = {
    "asymptotic": "McNemar chi-square (b-c)^2/(b+c), 1 df",
    "continuity-corrected": "McNemar chi-square with continuity correction (|b-c|-1)^2/(b+c), 1 df",
    "exact": "McNemar exact two-sided binomial",
    "mid-p": "McNemar exact mid-p",
}
ADJUST_METHOD = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg"}


@dataclass
class CellResults:
    """The matrices the statistics used, the statistics, and notes on what was left out."""

    matrices: list[Matrix]
    stats: list[Stat]
    notes: list[str]


def compute(grid: CellGrid, analysis: dict, base: str) -> CellResults:
    """Every statistic of the grid the analysis plan asks for."""
    routes = Routes(grid, base)
    conds = grid.condition_keys
    k = len(conds)
    stats: list[Stat] = []
    notes = list(grid.notes)
    primary = analysis.get("cohort_rule", "globally-complete")
    sensitivity = [r for r in analysis.get("sensitivity", []) if r != primary]
    alpha = float(analysis.get("alpha", 0.05))
    if k < 2:
        notes.append(f"{k} condition(s): no paired statistics")
        routes.matrix("globally-complete")
        return CellResults(list(routes.matrices.values()), stats, notes)

    # The omnibus test is defined on one common cohort: the globally complete blocks.
    omnibus_routes = ["globally-complete"] + [r for r in sensitivity if r == "positional-truncation"]
    primary_q: dict[str, Stat] = {}
    for route in omnibus_routes:
        m = routes.matrix(route)
        y = routes.y(route)
        role = "primary" if route == "globally-complete" else "sensitivity"
        inputs = tuple(c.iri for c in m.columns)
        for j, col in enumerate(m.columns):
            stats.append(
                Stat(
                    "proportion_correct",
                    float(y[:, j].mean()) if y.shape[0] else float("nan"),
                    "share of the cohort's blocks whose cell is 1 (TP or TN)",
                    n=int(y.shape[0]),
                    route=route,
                    conditions=(conds[j],),
                    role=role,
                    inputs=(col.iri,),
                    keyset=col.keyset,
                    cohort=m.iri,
                )
            )
        if not analysis.get("omnibus", True) or y.shape[0] == 0:
            continue
        q = paired.cochran_q(y)
        common = {
            "n": q.n,
            "route": route,
            "df": q.df,
            "role": role,
            "inputs": inputs,
            "keyset": m.keyset,
            "cohort": m.iri,
        }
        method = f"Cochran's Q over {k} conditions, chi-square({q.df}) reference; {ROUTE_METHOD[route]}"
        for name, value in (("cochran_q", q.q), ("cochran_q_p", q.p)):
            s = Stat(name, value, method, **common)  # type: ignore[arg-type]
            if role == "primary":
                primary_q[name] = s
            else:
                s.sensitivity_for = primary_q.get(name)
            stats.append(s)

    families = analysis.get("family") or [
        {
            "name": "all-pairs",
            "test": "mcnemar",
            "adjustments": ["holm", "bonferroni", "bh"],
            "implicit": True,
        }
    ]
    pair_stats: dict[tuple, Stat] = {}
    for fam in families:
        stats += _family(routes, fam, primary, sensitivity, alpha, pair_stats, notes)
    stats += list(pair_stats.values())
    stats += _clustered(routes, analysis, grid, notes)
    return CellResults(list(routes.matrices.values()), stats, notes)


def _family_pairs(fam: dict, conds: list[str], notes: list[str]) -> np.ndarray:
    """Positions (in pair_index order) of the family's pairs."""
    i, j = paired.pair_index(len(conds))
    if not fam.get("pairs"):
        return np.arange(i.size)
    position = {(conds[a], conds[b]): p for p, (a, b) in enumerate(zip(i, j, strict=True))}
    out = []
    for a, b in fam["pairs"]:
        p = position.get((a, b), position.get((b, a)))
        if p is None:
            notes.append(f"family {fam['name']}: pair {a} vs {b} has no two columns in the matrix")
        else:
            out.append(p)
    return np.array(sorted(set(out)), dtype=np.int64)


def _family(
    routes: Routes,
    fam: dict,
    primary: str,
    sensitivity: list[str],
    alpha: float,
    pair_stats: dict[tuple, Stat],
    notes: list[str],
) -> list[Stat]:
    """The family's McNemar tests (into ``pair_stats``, once per identity), their adjusted
    p-values and significant counts, on its cohort route and each sensitivity route."""
    family_route = fam.get("cohort_rule") or primary
    todo = [family_route] + [r for r in sensitivity if r != family_route]
    positions = _family_pairs(fam, routes.grid.condition_keys, notes)
    out: list[Stat] = []
    primary_by_key: dict[tuple, Stat] = {}
    for route in todo:
        role = "primary" if route == family_route else "sensitivity"
        used = _pair_tests(routes, route, role, positions, pair_stats)
        out += _adjusted(
            routes, route, role, fam, positions, tuple(dict.fromkeys(used)), alpha, primary_by_key
        )
    _link_pair_sensitivity(pair_stats)
    return out


def _pair_tests(
    routes: Routes, route: str, role: str, positions: np.ndarray, pair_stats: dict[tuple, Stat]
) -> list[IRI]:
    """Every McNemar variant of the pairs at ``positions``; returns the columns they used."""
    conds = routes.grid.condition_keys
    m = routes.matrix(route)
    result, columns = routes.pairwise(route)
    used: list[IRI] = []
    for p in positions:
        a, b = conds[int(result.i[p])], conds[int(result.j[p])]
        inputs = tuple(c.iri for c in columns[p])
        used += inputs
        for variant, (stat, pv) in result.variants.items():
            entries = [("mcnemar_p", float(pv[p]))]
            if variant in ("asymptotic", "continuity-corrected"):
                entries.append(("mcnemar_chi2", float(stat[p])))
            for stat_name, value in entries:
                s = Stat(
                    stat_name,
                    value,
                    f"{VARIANT_METHOD[variant]} (b={int(result.b[p])}, c={int(result.c[p])}); "
                    f"{ROUTE_METHOD[route]}",
                    n=int(result.n[p]),
                    route=route,
                    variant=variant,
                    conditions=(a, b),
                    role=role,
                    inputs=inputs,
                    keyset=columns[p][0].keyset,
                    cohort=m.iri,
                )
                pair_stats.setdefault(s.identity(), s)
    return used


def _adjusted(
    routes: Routes,
    route: str,
    role: str,
    fam: dict,
    positions: np.ndarray,
    family_inputs: tuple[IRI, ...],
    alpha: float,
    primary_by_key: dict[tuple, Stat],
) -> list[Stat]:
    """Adjusted p-values of the family's tests and how many are significant, per variant."""
    conds = routes.grid.condition_keys
    name = fam["name"]
    m = routes.matrix(route)
    result, columns = routes.pairwise(route)
    size = int(positions.size)
    ns = {int(result.n[p]) for p in positions}
    out: list[Stat] = []
    for variant, (_, pv) in result.variants.items():
        pvals = pv[positions]
        counts = [("none", pvals)]
        for adjustment in fam.get("adjustments", ["holm"]):
            adjusted = paired.adjust(pvals, adjustment)
            counts.append((adjustment, adjusted))
            for p, value in zip(positions, adjusted, strict=True):
                a, b = conds[int(result.i[p])], conds[int(result.j[p])]
                s = Stat(
                    "mcnemar_p_adjusted",
                    float(value),
                    f"{ADJUST_METHOD[adjustment]} over the {size} tests of family {name}; "
                    f"{VARIANT_METHOD[variant]}",
                    n=int(result.n[p]),
                    route=route,
                    variant=variant,
                    conditions=(a, b),
                    adjustment=adjustment,
                    family=name,
                    family_size=size,
                    role=role,
                    inputs=family_inputs,
                    keyset=columns[p][0].keyset,
                    cohort=m.iri,
                )
                out.append(_link(s, role, primary_by_key))
        for adjustment, values in counts:
            s = Stat(
                "significant_count",
                float(int((values < alpha).sum())),
                f"tests of family {name} with "
                f"{'unadjusted' if adjustment == 'none' else ADJUST_METHOD[adjustment]} "
                f"p < {alpha}; {VARIANT_METHOD[variant]}",
                n=min(ns) if len(ns) == 1 else None,
                route=route,
                variant=variant,
                adjustment=adjustment,
                family=name,
                family_size=size,
                alpha=alpha,
                role=role,
                inputs=family_inputs,
                keyset=m.keyset,
                cohort=m.iri,
            )
            out.append(_link(s, role, primary_by_key))
    return out


def _link_pair_sensitivity(pair_stats: dict[tuple, Stat]) -> None:
    """Point each sensitivity pair test at the primary test of the same name, pair and variant."""
    for s in pair_stats.values():
        if s.role == "sensitivity" and s.sensitivity_for is None:
            key = (s.name, s.conditions, s.variant)
            for t in pair_stats.values():
                if t.role == "primary" and (t.name, t.conditions, t.variant) == key:
                    s.sensitivity_for = t
                    break


def _link(s: Stat, role: str, primary_by_key: dict[tuple, Stat]) -> Stat:
    key = (s.name, s.conditions, s.variant, s.adjustment, s.family)
    if role == "primary":
        primary_by_key[key] = s
    else:
        s.sensitivity_for = primary_by_key.get(key)
    return s


def _clustered(routes: Routes, analysis: dict, grid: CellGrid, notes: list[str]) -> list[Stat]:
    """Cluster-aware inference on the globally complete cohort, by study and by patient."""
    out: list[Stat] = []
    m = routes.matrix("globally-complete")
    y = routes.y("globally-complete")
    if y is None or y.shape[0] == 0:
        return out
    rows = routes.complete_rows
    resamples, seed, level = bootstrap_settings(analysis)
    for unit in analysis.get("clusters", []):
        codes = _cluster_codes(grid, rows, unit, notes)
        if codes is None:
            continue
        common = {"route": "globally-complete", "cluster": unit, "cohort": m.iri, "keyset": m.keyset}
        if analysis.get("omnibus", True):
            out += _clustered_omnibus(y, codes, unit, m, common)
        out += _clustered_pairs(y, codes, unit, m, common)
        if resamples:
            out += _clustered_intervals(y, codes, unit, m, common, resamples, seed, level)
    return out


def _cluster_codes(grid: CellGrid, rows: np.ndarray, unit: str, notes: list[str]) -> np.ndarray | None:
    """The cluster of each cohort block (by study, or by patient when every case has one):
    codes in the sorted order of the cluster names, computed on integer ranks of the names."""
    cohort_case = grid.block_case[rows]
    if unit == "study":
        # case keys are distinct, so their ranks order the cases as their names do
        by_case = np.argsort(np.argsort(np.array(grid.case_keys, dtype=object), kind="stable"))
    else:
        in_cohort = np.unique(cohort_case)
        keys = grid.case_keys
        missing = sorted(keys[c] for c in in_cohort.tolist() if keys[c] not in grid.patients)
        if missing:
            notes.append(
                f"no clustering by patient: {len(missing)} case(s) of the cohort have no pg:patient link "
                f"(e.g. {missing[0]})"
            )
            return None
        names = np.array([grid.patients.get(c, "") for c in grid.case_keys], dtype=object)
        by_case = np.unique(names, return_inverse=True)[1] if names.size else np.empty(0, dtype=np.int64)
    return np.unique(np.asarray(by_case)[cohort_case], return_inverse=True)[1]


def _clustered_omnibus(y: np.ndarray, codes: np.ndarray, unit: str, m: Matrix, common: dict) -> list[Stat]:
    q = cluster.clustered_cochran(y, codes)
    method = (
        f"cluster-robust score test of equal proportions across {len(m.conditions)} conditions "
        f"(row-centred {unit} totals, chi-square({q.df})); "
        "reduces to McNemar/Durkalski for 2 conditions"
    )
    inputs = tuple(c.iri for c in m.columns)
    return [
        Stat(
            name,
            value,
            method,
            n=int(y.shape[0]),
            variant="cluster-robust",
            df=q.df,
            cluster_count=q.clusters,
            inputs=inputs,
            **common,
        )  # type: ignore[arg-type]
        for name, value in (("cochran_q", q.statistic), ("cochran_q_p", q.p))
    ]


def _clustered_pairs(y: np.ndarray, codes: np.ndarray, unit: str, m: Matrix, common: dict) -> list[Stat]:
    out: list[Stat] = []
    conds = m.conditions
    stat, p, g = cluster.clustered_mcnemar(y, codes)
    i, j = paired.pair_index(len(conds))
    for pos in range(i.size):
        a, b = int(i[pos]), int(j[pos])
        pair_inputs = (m.columns[a].iri, m.columns[b].iri)
        for name, value in (("mcnemar_chi2", stat[pos]), ("mcnemar_p", p[pos])):
            out.append(
                Stat(
                    name,
                    float(value),
                    f"clustered McNemar (Durkalski 2003), clusters = {unit}, chi-square(1)",
                    n=int(y.shape[0]),
                    variant="clustered",
                    conditions=(conds[a], conds[b]),
                    cluster_count=int(g[pos]),
                    inputs=pair_inputs,
                    **common,
                )  # type: ignore[arg-type]
            )
    return out


def _clustered_intervals(
    y: np.ndarray,
    codes: np.ndarray,
    unit: str,
    m: Matrix,
    common: dict,
    resamples: int,
    seed: int,
    level: float,
) -> list[Stat]:
    """Cluster-bootstrap intervals of each condition's proportion correct."""
    out: list[Stat] = []
    conds = m.conditions
    sums, sizes = cluster.cluster_sums(y, codes)
    ci = cluster.cluster_bootstrap_ratios(
        sums,
        np.repeat(sizes[:, None], len(conds), axis=1),
        resamples,
        cluster.seed_for(seed, "proportion_correct", unit),
        level,
    )
    for jj, cond in enumerate(conds):
        for name, value in (
            ("proportion_correct_ci_low", ci.low[jj]),
            ("proportion_correct_ci_high", ci.high[jj]),
        ):
            out.append(
                Stat(
                    name,
                    float(value),
                    f"{level:.0%} percentile interval, cluster bootstrap resampling {unit} clusters "
                    f"({resamples} resamples, seed {seed})",
                    n=int(y.shape[0]),
                    conditions=(cond,),
                    cluster_count=ci.clusters,
                    resamples=resamples,
                    seed=seed,
                    level=level,
                    inputs=(m.columns[jj].iri,),
                    **common,
                )  # type: ignore[arg-type]
            )
    return out
