"""Glob patterns of the ``[release]`` section as regular expressions.

The same expression is used by Python (the release builder) and by SPARQL ``REGEX`` in rules,
so it keeps to the syntax both share: ``^``, ``$``, ``.``, ``.*`` and escaped literals. Globs
follow :mod:`fnmatch` semantics like ``[ingest].exclude``: ``*`` matches any characters,
including ``/``, and ``?`` one character.
"""

from __future__ import annotations

import re

_SPECIAL = set("\\.^$|?*+()[]{}-")


def glob_regex(pattern: str) -> str:
    """A regular expression matching exactly the POSIX paths the glob matches.

    >>> glob_regex("figures/*.png")
    '^figures/.*\\\\.png$'
    >>> bool(re.match(glob_regex("figures/*.png"), "figures/a/b.png"))
    True
    """
    out = ["^"]
    for ch in pattern:
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch in _SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    out.append("$")
    return "".join(out).replace(".*.*", ".*")


def matcher(patterns: list[str]) -> re.Pattern[str] | None:
    """One compiled expression matching any of the globs (None for an empty list)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{glob_regex(p)})" for p in patterns))
