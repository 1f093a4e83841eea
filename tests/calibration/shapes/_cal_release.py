"""Shared pieces of the release shapes (dvc-tracked-builds, release-archive, git-release-states).

One benchmark stands behind all three: seven vision-language models read 412 frontal chest
radiographs; the manuscript reports a Cochran Q over the seven models, the 21 pairwise McNemar
tests (13 significant after Holm) and each model's accuracy. The registry (``[release]``) names
the current values, the superseded ones an earlier analysis wrote, and the canonical model names.

Formats: DVC 3 ``dvc.lock`` entries (``path``, ``hash: md5``, ``md5``, ``size``; a folder output
is ``<md5>.dir`` over DVC's JSON listing of ``{"md5", "relpath"}`` entries, with ``nfiles``), as
https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#dvclock-file and iterative/dvc-data
write them; GNU coreutils ``sha256sum`` lines (``<hex>  <path>``); deterministic tar.gz and zip
(sorted members, fixed times, owner 0, gzip header mtime 0).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import tarfile
import zipfile
from pathlib import Path

from provgraph.rdf.terms import mint

SEED = 20240611
N_STUDIES = 412
#: (registry key, canonical name, accuracy as a whole count over N_STUDIES)
MODELS = [
    ("gpt-4o", "GPT-4o", 294),
    ("claude", "Claude 3.5 Sonnet", 281),
    ("gemini", "Gemini 1.5 Pro", 270),
    ("llava-med", "LLaVA-Med", 203),
    ("medgemma", "MedGemma", 262),
    ("qwen", "Qwen2-VL", 231),
    ("chexagent", "CheXagent", 248),
]
Q_CURRENT, Q_SUPERSEDED = "97.41", "88.06"
SIG_CURRENT, SIG_SUPERSEDED = "13/21", "12/21"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def focus(kind: str, *keys: object) -> str:
    """A node IRI relative to the base IRI, minted as the importers mint it."""
    return mint("", kind, *keys)


def write(root: Path, rel: str, data: bytes | str) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return raw


def pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}"


# --- contract ---------------------------------------------------------------------------


def registry_toml() -> str:
    """The [release] registry: values (current and superseded) and entities."""
    values = [
        ("cochran_q", Q_CURRENT, "current", '["Q"]'),
        ("cochran_q", Q_SUPERSEDED, "superseded", '["Q"]'),
        ("mcnemar_significant", SIG_CURRENT, "current", "[]"),
        ("mcnemar_significant", SIG_SUPERSEDED, "superseded", "[]"),
    ]
    out = []
    for name, value, status, aliases in values:
        out.append(
            f'[[release.values]]\nname = "{name}"\nvalue = "{value}"\nstatus = "{status}"\n'
            f"aliases = {aliases}\n"
        )
    variants = {"gpt-4o": '["GPT4", "GPT-4", "GPT-4V"]', "gemini": '["Gemini Pro"]'}
    for key, name, _ in MODELS:
        out.append(
            f'[[release.entities]]\nkey = "{key}"\ncanonical = "{name}"\n'
            f"variants = {variants.get(key, '[]')}\n"
        )
    out.append(f'[[release.entities]]\nkey = "models"\ncount = {len(MODELS)}\nnouns = ["models", "VLMs"]\n')
    return "\n".join(out)


def contract(name: str, release_keys: str, extra: str = "") -> str:
    return (
        f'[project]\nname = "{name}"\nbase_iri = "https://example.org/{name}/"\n\n'
        f'[release]\nname = "{name}"\nversion = "1.1.0"\n{release_keys}\n{registry_toml()}{extra}'
    )


# --- benchmark data ---------------------------------------------------------------------


def predictions_csv() -> str:
    """Per-study correctness of every model, with exactly each model's accuracy count."""
    rng = random.Random(SEED)
    columns = {}
    for key, _, k in MODELS:
        col = [1] * k + [0] * (N_STUDIES - k)
        rng.shuffle(col)
        columns[key] = col
    head = "study_id," + ",".join(k for k, _, _ in MODELS)
    rows = [head]
    for i in range(N_STUDIES):
        rows.append(f"s{50_000_000 + 7919 * i}," + ",".join(str(columns[k][i]) for k, _, _ in MODELS))
    return "\n".join(rows) + "\n"


def scores_json(q: str = Q_CURRENT) -> str:
    models = {
        key: {"correct": k, "n": N_STUDIES, "accuracy": round(k / N_STUDIES, 4)} for key, _, k in MODELS
    }
    return json.dumps({"cochran_q": float(q), "df": len(MODELS) - 1, "models": models}, indent=2) + "\n"


def accuracy_svg(title: str = "Accuracy by model") -> str:
    bars = [
        f'  <rect x="{40 + 50 * i}" y="{300 - k * 300 // N_STUDIES}" width="40" '
        f'height="{k * 300 // N_STUDIES}"><title>{name}: {pct(k, N_STUDIES)}%</title></rect>'
        for i, (_, name, k) in enumerate(MODELS)
    ]
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="420" height="320">\n'
        f"  <desc>{title}</desc>\n" + "\n".join(bars) + "\n</svg>\n"
    )


def mcnemar_table_tex() -> str:
    """Table 2: the significant pairs (counts, no decimals a reader would take for claims)."""
    lines = [r"\begin{tabular}{lll}", r"Model A & Model B & Holm-adjusted \\"]
    pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1 :]]
    for (_, a, _), (_, b, _) in pairs[:13]:
        lines.append(f"{a} & {b} & significant \\\\")
    lines.append(r"\end{tabular}")
    return "\n".join(lines) + "\n"


# --- texts --------------------------------------------------------------------------------


def manuscript_tex(q: str = Q_CURRENT, gpt: str = "GPT-4o", acc_pct: str | None = None) -> tuple[str, dict]:
    """The LaTeX manuscript and the line of each planted-able claim (1-based)."""
    k = MODELS[0][2]
    acc = acc_pct or pct(k, N_STUDIES)
    lines = [
        r"\documentclass{article}",
        r"\begin{document}",
        r"\title{Seven vision-language models on frontal chest radiographs}",
        r"\maketitle",
        r"\begin{abstract}",
        f"We compare {len(MODELS)} models on $n = {N_STUDIES}$ studies (Cochran's $Q = {q}$, $p < 0.001$).",
        r"\end{abstract}",
        r"\section{Results}",
        f"{gpt} answered {acc}\\% of {N_STUDIES} studies correctly, the highest accuracy.",
        f"After Holm correction {pct(13, 21)}\\% (13/21) of the pairwise McNemar tests were significant.",
        r"\input{tables/table2_mcnemar}",
        r"\includegraphics[width=\linewidth]{figures/fig2_accuracy}",
        r"\end{document}",
    ]
    where = {"q": 6, "acc": 9, "gpt": 9}
    return "\n".join(lines) + "\n", where


def readme_md(title: str, extra: list[str] | None = None, count_word: str = "7") -> tuple[str, dict]:
    """A README with the accuracy table (row labels are model names)."""
    lines = [
        f"# {title}",
        "",
        f"Benchmark of {count_word} VLMs on {N_STUDIES} frontal chest radiographs (release 1.1.0).",
        "",
        "| model | correct | accuracy |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {k}/{N_STUDIES} | {pct(k, N_STUDIES)}% |" for _, name, k in MODELS]
    lines += ["", f"Cochran's Q = {Q_CURRENT} over the seven models.", ""]
    lines += extra or []
    return "\n".join(lines) + "\n", {"count": 3, "extra": 17}


# --- archives -------------------------------------------------------------------------


def sha256sums(members: dict[str, bytes]) -> str:
    """GNU coreutils ``sha256sum`` text-mode lines, sorted by path."""
    return "".join(f"{sha256(data)}  {path}\n" for path, data in sorted(members.items()))


def targz(members: dict[str, bytes], mtime: int) -> bytes:
    """A deterministic tar.gz: sorted members, their folders first, fixed mtime, owner 0."""
    folders = sorted({"/".join(p.split("/")[:i]) for p in members for i in range(1, p.count("/") + 1)})
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folders + list(members)):
            info = tarfile.TarInfo(path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = mtime, 0, 0, "", ""
            if path in members:
                info.size, info.mode = len(members[path]), 0o644
                tar.addfile(info, io.BytesIO(members[path]))
            else:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9, filename="") as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def zipped(members: dict[str, bytes]) -> bytes:
    """A deterministic zip: sorted entries, 1980-01-01 timestamps, mode 0644, DEFLATE."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(members):
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr, info.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
            zf.writestr(info, members[path])
    return out.getvalue()
