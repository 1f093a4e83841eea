"""The sorted ``case<TAB>finding`` lines of a grid's blocks, and SHA-256 over any subset of them.

A matrix column names the blocks it holds by the SHA-256 of their sorted lines. The lines are
held as one UTF-8 buffer with an offset per line, not one string per block (1.4 million of
them at 10^6 calls); a subset is hashed run by run of adjacent lines, which gives the digest
of the joined text.
"""

from __future__ import annotations

import hashlib

import numpy as np


def sorted_lines(
    case_keys: list[str], finding_keys: list[str], block_case: np.ndarray, block_finding: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank of each block in sorted line order, the lines' UTF-8 buffer, line offsets)."""
    case_rank = np.argsort(np.argsort(np.array(case_keys, dtype=object)))
    finding_rank = np.argsort(np.argsort(np.array(finding_keys, dtype=object)))
    width = max(1, len(finding_keys))
    order = np.argsort(case_rank[block_case] * width + finding_rank[block_finding], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    cases = [f"{c}\t".encode() for c in case_keys]
    findings = [f"{f}\n".encode() for f in finding_keys]
    case_len = np.array([len(b) for b in cases], dtype=np.int64)
    finding_len = np.array([len(b) for b in findings], dtype=np.int64)
    c_order, f_order = block_case[order], block_finding[order]
    offsets = np.zeros(order.size + 1, dtype=np.int64)
    if order.size:
        np.cumsum(case_len[c_order] + finding_len[f_order], out=offsets[1:])
    buf = bytearray()
    for c, f in zip(c_order.tolist(), f_order.tolist(), strict=True):
        buf += cases[c]
        buf += findings[f]
    return rank, np.frombuffer(bytes(buf), dtype=np.uint8), offsets


def sha256_of(lines: np.ndarray, offsets: np.ndarray, positions: np.ndarray) -> str:
    """SHA-256 (hex) of the joined lines at sorted ``positions``."""
    h = hashlib.sha256()
    if positions.size:
        view = memoryview(lines)
        breaks = np.flatnonzero(np.diff(positions) != 1)
        starts = positions[np.concatenate([[0], breaks + 1])]
        ends = positions[np.concatenate([breaks, [positions.size - 1]])] + 1
        for a, b in zip(offsets[starts].tolist(), offsets[ends].tolist(), strict=True):
            h.update(view[a:b])
    return h.hexdigest()
