"""The report's release section: what changed since the previous release.

The release is the one the contract names (:func:`provgraph.lineage.history.contract_release`)
unless one is given; the previous one is given (``provgraph report --since``) or, for a git
tag, the tag of the same repository committed before it. The tables are those of
``provgraph diff`` (:mod:`provgraph.lineage.releasediff`).
"""

from __future__ import annotations

from provgraph.lineage.history import contents, contract_release, find_release, previous_release, releases
from provgraph.lineage.releasediff import Diff, claim_statuses, compare
from provgraph.report.markup import esc
from provgraph.store.base import Store


def release_section(store: Store, since: str | None = None, release: str | None = None) -> str:
    """The section, or one saying which release is missing; no section without any release."""
    if not releases(store) and since is None and release is None:
        return ""
    if release is not None:
        current, wanted = find_release(store, release), []
    else:
        current, wanted = contract_release(store)
    if current is None:
        looked = ", ".join(wanted) if wanted else "no [release].version in the contract"
        return _absent(f"the contract's release is not in the store (looked for: {esc(looked)}).")
    previous = find_release(store, since) if since is not None else previous_release(store, current)
    if previous is None:
        return _absent(
            f"no release before {esc(current.id)} (name one with <code>provgraph report --since "
            "RELEASE</code>; archives carry no order)."
        )
    found = compare(contents(store, previous), contents(store, current))
    found.statuses = claim_statuses(store, found)  # the report ran the check: current statuses
    return _section(found)


def _absent(why: str) -> str:
    return f"""<section id="release-diff"><h2>Changes since the previous release</h2>
<div class="panel absent" id="panel-release-diff"><p>Not shown: {why}</p></div></section>"""


def _section(found: Diff) -> str:
    doc = found.to_dict()
    a, b = doc["a"]["id"], doc["b"]["id"]
    parts = [f"<p class='sub'>From <code>{esc(a)}</code> (A) to <code>{esc(b)}</code> (B), as "
             f"<code>provgraph diff {esc(a)} {esc(b)}</code> lists it.</p>"]  # fmt: skip
    if doc["texts_not_read"]:
        parts.append(
            f"<p>Numbers and names not compared: the texts of {esc(', '.join(doc['texts_not_read']))} "
            "were not read (of a repository only the release tag's are).</p>"
        )
    for section in ("numbers", "names") if not doc["texts_not_read"] else ():
        rows = "".join(
            f"<tr><td>{esc(c['change'])}</td><td><code>{esc(c['member'])}</code></td>"
            + "".join(_side(c[s]) for s in ("a", "b"))
            + "</tr>"
            for c in doc[section]
        )
        parts.append(_table(section, rows, "<th>line A</th><th>A</th><th>line B</th><th>B</th>"))
    rows = "".join(
        f"<tr><td>{esc(f['change'])}</td><td><code>{esc(f['path'])}</code></td>"
        + "".join(f"<td><code>{esc((f[s] or '')[:12])}</code></td>" for s in ("a", "b"))
        + "</tr>"
        for f in doc["files"]
    )
    parts.append(_table("files", rows, "<th>sha256 in A</th><th>sha256 in B</th>"))
    return f"""<section id="release-diff"><h2>Changes since the previous release</h2>
<div class="panel" id="panel-release-diff">{"".join(parts)}</div></section>"""


def _side(side: dict | None) -> str:
    if side is None:
        return "<td></td><td></td>"
    status = ", ".join(side[k] for k in ("status", "registry") if side.get(k))
    status = f" <span class='sub'>({esc(status)})</span>" if status else ""
    return f"<td class='num'>{side['line']}</td><td>{esc(side['text'])}{status}</td>"


def _table(name: str, rows: str, heads: str) -> str:
    if not rows:
        return f"<h3>{esc(name)}</h3><p>No change.</p>"
    return (
        f"<h3>{esc(name)}</h3><div class='scroll'><table id='release-diff-{esc(name)}'><thead><tr>"
        f"<th>change</th><th>file</th>{heads}</tr></thead><tbody>{rows}</tbody></table></div>"
    )
