"""Helpers of the holdout-e2e shapes: file writing, hashes, DVC folder md5s, SHA256SUMS,
deterministic tar.gz archives and focus IRIs (relative to the contract's base_iri)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from provgraph.rdf.terms import mint

#: a fixed clock for every timestamp the shapes write
EPOCH = "2026-03-02T09:00:00"
FAMILY = "mcnemar-all-pairs"
#: the MIMIC-CXR CheXpert table's finding columns, in its order
ALL_FINDINGS = [
    "Atelectasis",
    "Cardiomegaly",
    "Consolidation",
    "Edema",
    "Enlarged Cardiomediastinum",
    "Fracture",
    "Lung Lesion",
    "Lung Opacity",
    "No Finding",
    "Pleural Effusion",
    "Pleural Other",
    "Pneumonia",
    "Pneumothorax",
    "Support Devices",
]


def focus(kind: str, *keys: object) -> str:
    """A node IRI relative to the base IRI, minted as the importers mint it."""
    return mint("", kind, *keys)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def write_json(root: Path, rel: str, value: Any) -> Path:
    return write(root, rel, json.dumps(value, indent=2) + "\n")


def write_jsonl(root: Path, rel: str, values: Iterable[dict[str, Any]]) -> Path:
    return write(root, rel, "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values))


def write_csv(root: Path, rel: str, header: list[str], rows: Iterable[Iterable[object]]) -> Path:
    lines = [",".join(header)] + [",".join(str(c) for c in row) for row in rows]
    return write(root, rel, "\n".join(lines) + "\n")


def dvc_file(root: Path, rel: str) -> dict[str, Any]:
    """A dvc.lock dep/out entry of one file (DVC 3: ``hash: md5``)."""
    data = (root / rel).read_bytes()
    return {"path": rel, "hash": "md5", "md5": md5(data), "size": len(data)}


def dvc_folder(root: Path, rel: str) -> dict[str, Any]:
    """A dvc.lock entry of a folder: the md5 of its ``.dir`` listing (iterative/dvc-data
    ``hashfile/tree.py``: JSON list of {md5, relpath} sorted by relpath, sort_keys)."""
    folder = root / rel
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    listing = [{"md5": md5(p.read_bytes()), "relpath": p.relative_to(folder).as_posix()} for p in files]
    listing.sort(key=lambda e: e["relpath"])
    digest = md5(json.dumps(listing, sort_keys=True).encode())
    size = sum(p.stat().st_size for p in files)
    return {"path": rel, "hash": "md5", "md5": digest + ".dir", "size": size, "nfiles": len(files)}


def dvc_lock(stages: dict[str, dict[str, Any]]) -> str:
    """dvc.lock text (DVC 3 writes ``schema: '2.0'`` and one mapping per stage)."""
    import yaml

    return yaml.safe_dump({"schema": "2.0", "stages": stages}, sort_keys=False)


def sha256sums(entries: dict[str, bytes]) -> str:
    """GNU coreutils ``sha256sum`` text: ``<hex>  <path>`` per line."""
    return "".join(f"{sha256(data)}  {name}\n" for name, data in sorted(entries.items()))


def tar_gz(members: dict[str, bytes]) -> bytes:
    """A deterministic tar.gz: sorted members, fixed mtime, mode 0644, gzip without a timestamp."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), 1767225600, 0o644
            tar.addfile(info, io.BytesIO(members[name]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def build_record(root: Path, output: str, inputs: list[str], script: str, params: dict[str, Any]) -> dict:
    """A canonical build record (provgraph ``*.build.json``) of files as they are now."""

    def ref(rel: str) -> dict[str, str]:
        return {"path": rel, "sha256": sha256((root / rel).read_bytes())}

    return {
        "output": ref(output),
        "inputs": [ref(i) for i in inputs],
        "script": ref(script),
        "parameters": params,
        "time": EPOCH + "Z",
        "command": f"python {script}",
    }


def registry(
    values: list[tuple[str, str, list[str]]],
    names: list[tuple[str, str, list[str]]],
    counts: list[tuple[str, int, list[str]]],
) -> str:
    """``[[release.values]]`` and ``[[release.entities]]`` tables of a contract."""

    def toml(table: str, **keys: object) -> str:
        return f"[[release.{table}]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())

    out = [toml("values", name=n, value=v, aliases=a) for n, v, a in values]
    out += [toml("entities", key=k, canonical=c, variants=v) for k, c, v in names]
    out += [toml("entities", key=k, count=n, nouns=w) for k, n, w in counts]
    return "\n".join(out)


def svg_bars(title: str, bars: list[tuple[str, float]]) -> str:
    """A small bar chart as SVG text (what a plotting script would write)."""
    rows = [f'<svg xmlns="http://www.w3.org/2000/svg" width="420" height="{40 + 24 * len(bars)}">']
    rows.append(f'<text x="10" y="20">{title}</text>')
    for i, (label, value) in enumerate(bars):
        y = 34 + 24 * i
        rows.append(f'<rect x="150" y="{y}" width="{value * 250:.1f}" height="18"/>')
        rows.append(f'<text x="10" y="{y + 14}">{label}</text>')
    rows.append("</svg>")
    return "\n".join(rows) + "\n"


def fixed_clock(sidecar: Path) -> None:
    """Pin a rendering record's ``rendered_at`` (the shapes use no clock)."""
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    record["rendered_at"] = EPOCH + "+00:00"
    sidecar.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


class FakeClient:
    """A deterministic stand-in for the OpenAI and Anthropic SDKs: answers from a script."""

    def __init__(self, answers: dict[str, str], fail_once: set[str], resolved: dict[str, str]):
        self.answers, self.fail_once, self.serial = answers, set(fail_once), 0
        self.resolved = resolved

    def openai(self, key: str, *, model: str, messages: list, **_: Any) -> dict:
        text, self.serial = self.answers[key], self.serial + 1
        msg = {"role": "assistant", "content": text, "refusal": None}
        return {
            "id": f"chatcmpl-{self.serial:06d}",
            "model": self.resolved["openai"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": msg}],
        }

    def anthropic(self, key: str, *, model: str, system: str, messages: list, **_: Any) -> dict:
        if key in self.fail_once:
            self.fail_once.discard(key)
            raise RuntimeError("Error code: 529 - {'type': 'overloaded_error', 'message': 'Overloaded'}")
        text, self.serial = self.answers[key], self.serial + 1
        blocks = [{"type": "text", "text": text}] if text else []
        return {
            "id": f"msg_{self.serial:06d}",
            "model": self.resolved["anthropic"],
            "stop_reason": "end_turn",
            "content": blocks,
        }


def team_statistics(
    grid: dict[tuple[str, str, str], str], conds: list[str], flawed: bool
) -> tuple[list[dict], dict[str, str]]:
    """The team's statistics on the blocks scored under every condition (statsmodels): Cochran's
    Q, proportions, exact McNemar per pair, Holm; ``flawed`` transposes two digits of Q."""
    import numpy as np
    from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
    from statsmodels.stats.multitest import multipletests

    blocks = sorted({(s, f) for s, f, _ in grid if all((s, f, c) in grid for c in conds)})
    y = np.array([[grid[s, f, c] in ("TP", "TN") for c in conds] for s, f in blocks], dtype=int)
    q = cochrans_q(y)
    q_text = f"{q.statistic:.2f}"
    if flawed:  # transcribed by hand into the results sheet
        q_text = q_text[:-2] + q_text[-1] + q_text[-2] if q_text[-1] != q_text[-2] else q_text[:-1] + "9"
    common = {"n": len(blocks), "cohort_rule": "globally-complete"}
    stats = [
        {"name": "cochran_q", "value": q_text, "df": len(conds) - 1, **common},
        {"name": "cochran_q_p", "value": f"{q.pvalue:.4f}", **common},
    ]
    for j, c in enumerate(conds):
        stats.append(
            {"name": "proportion_correct", "condition": c, "value": f"{y[:, j].mean():.4f}", **common}
        )
    pairs, pvals = [], []
    for a in range(len(conds)):
        for b in range(a + 1, len(conds)):
            table = [[int(((y[:, a] == i) & (y[:, b] == k)).sum()) for k in (1, 0)] for i in (1, 0)]
            p = mcnemar(table, exact=True).pvalue
            pairs.append((conds[a], conds[b]))
            pvals.append(p)
            stats.append(
                {
                    "name": "mcnemar_p",
                    "conditions": [conds[a], conds[b]],
                    "test_variant": "exact",
                    "value": f"{p:.4f}",
                    **common,
                }
            )
    reject = multipletests(pvals, alpha=0.05, method="holm")[0]
    stats.append(
        {
            "name": "significant_count",
            "test_variant": "exact",
            "adjustment": "holm",
            "family": FAMILY,
            "family_size": len(pairs),
            "value": str(int(reject.sum())),
            **common,
        }
    )
    raw = sum(p < 0.05 for p in pvals)
    stats.append(
        {
            "name": "significant_count",
            "test_variant": "exact",
            "adjustment": "none",
            "family": FAMILY,
            "family_size": len(pairs),
            "value": str(raw),
            **common,
        }
    )
    facts = {
        "q": q_text,
        "p": f"{q.pvalue:.4f}",
        "n": str(len(blocks)),
        "holm": str(int(reject.sum())),
        "raw": str(raw),
    }
    for j, c in enumerate(conds):
        facts[c] = f"{int(y[:, j].sum())}/{len(blocks)} ({100 * y[:, j].mean():.1f}%)"
    return stats, facts
