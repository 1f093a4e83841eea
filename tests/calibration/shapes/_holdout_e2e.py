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
