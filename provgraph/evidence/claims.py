"""Numbers and registry names as texts write them (LaTeX, Markdown, plain text).

:func:`numbers` finds the values a reader would take as claims: named values
(``Q = 154.73``, ``n = 369``, ``p < 0.05``), fractions (``26/45``), percentages (``17%``,
LaTeX ``17\\%``) and decimals (``0.90``), each with the name written next to it and, for a
percentage, the denominator it is stated over (``17% (8/45)``, ``17% of 45``, ``17% (n = 45)``).
Bare integers are not claims (years, section and reference numbers), unless named. Versions
(``1.1.0``), dates, DOIs, identifiers (``GPT-4o``) and URLs are not numbers.

>>> [(n.text, n.label, str(n.value)) for n in numbers("Cochran Q = 182.29 over 26/45 tests")]
[('182.29', 'Q', '182.29'), ('26/45', None, '26')]
>>> [(n.text, n.n) for n in numbers("17\\\\% of 45 pairs", latex=True)]
[('17%', 45)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}

_URL = re.compile(r"\b(?:https?|ftp|doi):\S+|\bwww\.\S+|\b10\.\d{4,}/\S+")
_LATEX_CMD_OPTS = re.compile(r"\\[A-Za-z]+\*?\[[^\]]*\]")
_LATEX_LAYOUT = re.compile(
    r"\\(?:begin|end|label|ref|eqref|cite[a-z]*|includegraphics|input|include|vspace|hspace|"
    r"setlength|usepackage|documentclass)\*?(?:\{[^}]*\})+"
)
_LATEX_COMMENT = re.compile(r"(?<!\\)%.*$")
# A number token: not glued to a word, a dot, a slash, a hyphen or a colon on either side.
_LEFT = r"(?<![\w.\-/:^_])"
_RIGHT = r"(?![\w]|[.,]\d|/\w|-\w|:\d)"
_NUM = r"-?\d+(?:,\d{3})*(?:\.\d+)?"
_FRACTION = re.compile(_LEFT + r"(\d+)\s?/\s?(\d+)" + _RIGHT)
_PERCENT = re.compile(_LEFT + r"(" + _NUM + r")\s?%")
_NUMBER = re.compile(_LEFT + r"(" + _NUM + r")" + _RIGHT)
_NAME_BEFORE = re.compile(r"([A-Za-z][\w'\-]*(?:\^\{?\d\}?)?)\s*(=|<=|>=|≤|≥|<|>|≈|:)\s*$")
_AFTER_PERCENT_FRACTION = re.compile(r"^\s*\(\s*(\d+)\s?/\s?(\d+)\s*\)")
_AFTER_PERCENT_OF = re.compile(r"^\s*of\s+(?:the\s+|all\s+)?(\d+)(?![\d.,/%])")
_AFTER_PERCENT_N = re.compile(r"^\s*\(\s*[nN]\s*=\s*(\d+)\s*\)")
_BEFORE_PERCENT_FRACTION = re.compile(r"(\d+)\s?/\s?(\d+)(?:\s+[A-Za-z][\w-]*){0,2}\s*\(\s*$")
#: How far around a number its name, denominator or fraction is looked for. Bounded, so a line
#: costs time linear in its length (a 17 MiB line once took minutes: every number searched all
#: the text before it).
_WINDOW = 160
_RELATIONS = {"<=": "<=", ">=": ">=", "≤": "<=", "≥": ">=", "<": "<", ">": ">", "=": "=", "≈": "=", ":": "="}


@dataclass(frozen=True)
class Number:
    """One value as written, with what the text says around it."""

    text: str
    value: Decimal
    unit: str  # number | percent | fraction
    resolution: Decimal
    column: int
    label: str | None = None
    relation: str | None = None
    numerator: int | None = None
    n: int | None = None


def clean_line(line: str, latex: bool = False) -> str:
    """The line with URLs, DOIs and (for LaTeX) comments and layout commands blanked out.

    Blanking keeps columns: every removed character becomes a space.
    """

    def blank(m: re.Match[str]) -> str:
        return " " * len(m.group(0))

    if latex:
        line = _LATEX_COMMENT.sub(blank, line)
        line = _LATEX_LAYOUT.sub(blank, line)
        line = _LATEX_CMD_OPTS.sub(blank, line)
        line = line.replace("\\%", " %").replace("$", " ").replace("~", " ").replace("\\,", "  ")
    return _URL.sub(blank, line)


def _decimal(text: str) -> tuple[Decimal, Decimal]:
    plain = text.replace(",", "")
    value = Decimal(plain)
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    return value, Decimal(1).scaleb(-decimals)


def _label(prefix: str) -> tuple[str | None, str | None]:
    match = _NAME_BEFORE.search(prefix)
    if not match:
        return None, None
    return match.group(1), _RELATIONS[match.group(2)]


def numbers(line: str, latex: bool = False, table_label: bool = True) -> list[Number]:
    """The claims written on one line, left to right."""
    text = clean_line(line, latex)
    found: list[Number] = []
    taken = bytearray(len(text))  # 1 where an earlier (percent, fraction) match lies

    def free(start: int, end: int) -> bool:
        return not any(taken[start:end])

    def take(start: int, end: int) -> None:
        taken[start:end] = b"\1" * (end - start)

    def before(start: int) -> str:
        return text[max(0, start - _WINDOW) : start]

    row_label = _table_row_label(text) if table_label else None
    for m in _PERCENT.finditer(text):
        value, resolution = _decimal(m.group(1))
        after, prefix = text[m.end() : m.end() + _WINDOW], before(m.start())
        numerator = n = None
        frac = _AFTER_PERCENT_FRACTION.match(after) or _BEFORE_PERCENT_FRACTION.search(prefix)
        if frac:
            numerator, n = int(frac.group(1)), int(frac.group(2))
        elif of := (_AFTER_PERCENT_OF.match(after) or _AFTER_PERCENT_N.match(after)):
            n = int(of.group(1))
        label, relation = _label(prefix)
        found.append(
            Number(
                m.group(1).replace(",", "") + "%",
                value,
                "percent",
                resolution,
                m.start(),
                label or row_label,
                relation,
                numerator,
                n,
            )
        )
        take(m.start(), m.end())
    for m in _FRACTION.finditer(text):
        if not free(m.start(), m.end()):
            continue
        k, n = int(m.group(1)), int(m.group(2))
        label, relation = _label(before(m.start()))
        found.append(
            Number(
                f"{k}/{n}", Decimal(k), "fraction", Decimal(1), m.start(), label or row_label, relation, k, n
            )
        )
        take(m.start(), m.end())
    for m in _NUMBER.finditer(text):
        if not free(m.start(), m.end()):
            continue
        raw = m.group(1)
        label, relation = _label(before(m.start()))
        is_decimal = "." in raw
        if not is_decimal and label is None:
            continue  # a bare integer: a year, a section, a reference, not a claim
        value, resolution = _decimal(raw)
        found.append(
            Number(
                raw.replace(",", ""),
                value,
                "number",
                resolution,
                m.start(),
                label or (row_label if is_decimal else None),
                relation,
            )
        )
        take(m.start(), m.end())
    return sorted(found, key=lambda n: n.column)


def _table_row_label(text: str) -> str | None:
    """The first cell of a Markdown or LaTeX table row, when it is a name rather than a number."""
    stripped = text.strip()
    if stripped.startswith("|"):
        cells = [c.strip() for c in stripped.strip("|").split("|")]
    elif "&" in stripped and stripped.rstrip().endswith("\\\\"):
        cells = [c.strip() for c in stripped.rstrip("\\ ").split("&")]
    else:
        return None
    if len(cells) < 2 or not cells[0] or set(cells[0]) <= set("-: "):
        return None
    first = re.sub(r"[*_`]", "", cells[0]).strip()
    if not first or re.fullmatch(r"[\d.,%/\s-]+", first):
        return None
    return first


# --- the registry ------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryValue:
    name: str
    text: str
    status: str
    aliases: tuple[str, ...] = ()
    statistic: str | None = None

    def names(self) -> set[str]:
        return {self.name.lower(), *(a.lower() for a in self.aliases)}


@dataclass(frozen=True)
class Mention:
    """A registry entity as written: a name (spelled canonically or not) or a count."""

    entity: str
    text: str
    column: int
    value: int | None = None


@dataclass
class Entity:
    key: str
    canonical: str | None = None
    variants: tuple[str, ...] = ()
    count: int | None = None
    nouns: tuple[str, ...] = ()
    _patterns: list[tuple[re.Pattern[str], bool]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.canonical:
            self._patterns.append((_name_pattern(self.canonical, loose=True), True))
        for variant in self.variants:
            self._patterns.append((_name_pattern(variant, loose=False), False))
        if self.nouns:
            words = "|".join(sorted(WORDS, key=len, reverse=True))
            nouns = "|".join(re.escape(n) for n in sorted(self.nouns, key=len, reverse=True))
            self._count = re.compile(
                rf"(?<![\w.\-/])(\d+|{words})\s+(?:[A-Za-z][\w\-]*\s+)?(?:{nouns})\b", re.IGNORECASE
            )

    def mentions(self, text: str) -> list[Mention]:
        found: list[Mention] = []
        spans: list[tuple[int, int]] = []
        for pattern, _ in self._patterns:
            for m in pattern.finditer(text):
                if any(not (m.end() <= a or m.start() >= b) for a, b in spans):
                    continue
                spans.append((m.start(), m.end()))
                found.append(Mention(self.key, m.group(0), m.start()))
        if self.nouns:
            for m in self._count.finditer(text):
                word = m.group(1).lower()
                value = int(word) if word.isdigit() else WORDS[word]
                found.append(Mention(self.key, m.group(0), m.start(), value))
        return sorted(found, key=lambda x: x.column)


def _name_pattern(name: str, loose: bool) -> re.Pattern[str]:
    """A canonical name loosely (any case, any of ' -_.' or none between its parts) or a
    variant exactly, never inside a longer identifier."""
    if loose:
        parts = [p for p in re.split(r"[\s\-_.]+", name) if p]
        body = r"[\s\-_.]?".join(re.escape(p) for p in parts)
        flags = re.IGNORECASE
    else:
        body, flags = re.escape(name), 0
    return re.compile(rf"(?<![\w\-.]){body}(?![\w]|[\-.]\w)", flags)


class Registry:
    """The ``[release]`` registry: canonical/superseded/withdrawn values and entities."""

    def __init__(self, section: dict[str, Any] | None) -> None:
        section = section or {}
        self.values = [
            RegistryValue(
                v["name"],
                str(v["value"]),
                v.get("status", "current"),
                tuple(v.get("aliases", ())),
                v.get("statistic"),
            )
            for v in section.get("values", [])
        ]
        self.entities = [
            Entity(
                e["key"],
                e.get("canonical"),
                tuple(e.get("variants", ())),
                e.get("count"),
                tuple(e.get("nouns", ())),
            )
            for e in section.get("entities", [])
        ]
        self._by_text: dict[str, list[RegistryValue]] = {}
        for v in self.values:
            self._by_text.setdefault(normal_text(v.text), []).append(v)

    def match(self, number: Number) -> list[RegistryValue]:
        """Registry values a claim writes: same text; a matching name wins among several."""
        candidates = self._by_text.get(normal_text(number.text), [])
        if number.label and len(candidates) > 1:
            named = [v for v in candidates if number.label.lower() in v.names()]
            if named:
                return named
        return candidates

    def mentions(self, text: str) -> list[Mention]:
        found: list[Mention] = []
        for entity in self.entities:
            found += entity.mentions(text)
        return sorted(found, key=lambda m: m.column)


def normal_text(text: str) -> str:
    return re.sub(r"\s+", "", text).replace("\\%", "%")
