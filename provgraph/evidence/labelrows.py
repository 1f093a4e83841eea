"""Label rows: the labels one labeller gave one report (or one case), as one node.

Label cells dominate a benchmark's size (14 findings per call: at a million calls, tens of
millions of labels), so a label is not a node of its own. A *label row* holds the states of
every finding it labels as two literals::

    pg:findingOrder "|Atelectasis|Cardiomegaly|Edema|"
    pg:labelStates  "PNM"

One letter per finding, in order: ``P`` POSITIVE, ``N`` NEGATIVE, ``U`` UNCERTAIN, ``M``
NOT_MENTIONED. Each position is one label (a ``pg:Label`` in the ontology's sense); rules reach
it with string functions (``CONTAINS(?states, "U")``), the statistics engine decodes rows
in bulk (:func:`decode_matrix`), and lineage reaches every label through its row.

>>> order, states = encode([("Edema", "POSITIVE"), ("Cardiomegaly", "NOT_MENTIONED")])
>>> order, states
('|Edema|Cardiomegaly|', 'PM')
>>> decode(order, states)
[('Edema', 'POSITIVE'), ('Cardiomegaly', 'NOT_MENTIONED')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

#: label state -> its letter in pg:labelStates
CODE = {"POSITIVE": "P", "NEGATIVE": "N", "UNCERTAIN": "U", "NOT_MENTIONED": "M"}
STATE = {v: k for k, v in CODE.items()}
#: state index used by :func:`decode_matrix` (-1: no label for that finding)
INDEX = {"P": 0, "N": 1, "U": 2, "M": 3}
STATE_NAMES = ("POSITIVE", "NEGATIVE", "UNCERTAIN", "NOT_MENTIONED")
SEPARATOR = "|"


def encode(labels: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """``(finding order, states)`` literals of a row from ``(finding, state)`` pairs.

    A finding name may not contain ``|`` (the separator).
    """
    findings, codes = [], []
    for finding, state in labels:
        if SEPARATOR in finding:
            raise ValueError(f"finding {finding!r} contains {SEPARATOR!r}")
        findings.append(finding)
        codes.append(CODE[state])
    return SEPARATOR + SEPARATOR.join(findings) + SEPARATOR, "".join(codes)


def findings_of(order: str) -> list[str]:
    return order.strip(SEPARATOR).split(SEPARATOR) if order.strip(SEPARATOR) else []


def decode(order: str, states: str) -> list[tuple[str, str]]:
    """The ``(finding, state)`` pairs of a row (inverse of :func:`encode`)."""
    findings = findings_of(order)
    if len(findings) != len(states):
        raise ValueError(f"row of {len(findings)} findings holds {len(states)} states")
    return [(f, STATE[c]) for f, c in zip(findings, states, strict=True)]


def decode_matrix(orders: Sequence[str], states: Sequence[str], findings: Sequence[str]) -> np.ndarray:
    """States of many rows as an ``rows x len(findings)`` int8 matrix of :data:`INDEX` codes
    (-1 where a row does not label that finding)."""
    codes: dict[str, int] = {}
    order = np.fromiter((codes.setdefault(o, len(codes)) for o in orders), dtype=np.int64, count=len(orders))
    return decode_coded(order, list(codes), states, findings)


def decode_coded(
    order: np.ndarray, order_names: Sequence[str], states: Sequence[str], findings: Sequence[str]
) -> np.ndarray:
    """:func:`decode_matrix` of rows whose finding orders come as codes into ``order_names``.
    Rows sharing a finding order (the usual case: one labeller file) are decoded together."""
    column = {f: j for j, f in enumerate(findings)}
    out = np.full((len(states), len(findings)), -1, dtype=np.int8)
    lut = np.full(256, -1, dtype=np.int8)
    for letter, code in INDEX.items():
        lut[ord(letter)] = code
    for code in np.unique(order).tolist():
        names = findings_of(order_names[code])
        wanted = [(k, column[f]) for k, f in enumerate(names) if f in column]
        if not wanted:
            continue
        idx = np.flatnonzero(order == code)
        width = len(names)
        blob = "".join(states[i] for i in idx.tolist()).encode("ascii")
        if len(blob) != width * idx.size:
            raise ValueError(f"a row of finding order {order_names[code]!r} does not hold {width} states")
        codes = lut[np.frombuffer(blob, dtype=np.uint8)].reshape(idx.size, width)
        src = np.array([k for k, _ in wanted])
        dst = np.array([j for _, j in wanted])
        out[idx[:, None], dst[None, :]] = codes[:, src]
    return out
