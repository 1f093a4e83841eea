"""Helpers of the holdout-batch shapes (``openai-responses-batch-jpeg``,
``anthropic-batch-llm-judge``): deterministic ids, JSONL and CSV writing, small JPEGs.

Nothing here knows a rule: it only writes files the way a harness would.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_text(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_jsonl(root: Path, rel: str, rows: Iterable[dict[str, Any]]) -> Path:
    """One compact JSON object a line, as the provider SDKs write batch files."""
    lines = [json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in rows]
    return write_text(root, rel, "".join(line + "\n" for line in lines))


def write_csv(root: Path, rel: str, header: list[str], rows: Iterable[list[Any]]) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return write_text(root, rel, out.getvalue())


def hex_id(rng: random.Random, prefix: str, n: int = 24) -> str:
    """A provider-looking object id (``batch_req_…``, ``resp_…``, ``msg_…``) from ``rng``."""
    return prefix + "".join(rng.choice("0123456789abcdef") for _ in range(n))


def b62_id(rng: random.Random, prefix: str, n: int = 24) -> str:
    """An Anthropic-looking id (``msg_01…``, ``req_01…``)."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return prefix + "01" + "".join(rng.choice(alphabet) for _ in range(n))


def jpeg_bytes(seed: int, size: int = 48, quality: int = 90) -> bytes:
    """A small grey JPEG (a stand-in for a downsampled radiograph), the same bytes per seed."""
    from PIL import Image

    rng = random.Random(seed)
    img = Image.new("L", (size, size))
    centre = rng.uniform(0.3, 0.7) * size
    img.putdata(
        [
            max(0, min(255, int(200 - abs(x - centre) * 5 + y + rng.randint(-12, 12))))
            for y in range(size)
            for x in range(size)
        ]
    )
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=quality, optimize=False, progressive=False)
    return out.getvalue()


def data_url(data: bytes, mime: str = "image/jpeg") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
