"""What ``dvc status`` says of each stage of a DVC project, computed from its files alone.

The semantics are DVC's own (iterative/dvc ``dvc/stage/__init__.py`` ``Stage.status``,
``dvc/output.py`` ``Output.status`` / ``workspace_status``, ``dvc/dependency/param.py``
``ParamsDependency.workspace_status``, checked against dvc 3.67): a stage's deps, outs and
params come from ``dvc.yaml``, their recorded hashes and values from ``dvc.lock``;

* a dep is ``deleted`` (missing) or ``modified`` (its md5, or a folder's ``.dir`` md5 as
  :mod:`provgraph.evidence.dvcdir` computes it, differs from the lock's);
* an out is ``not in cache`` when ``.dvc/cache`` lacks its object (whether or not it is in the
  workspace), else ``deleted`` / ``modified`` like a dep (``cache: false`` outs skip the cache);
* a params file is ``deleted``, or each param is ``modified`` / ``new`` / ``deleted``;
* ``changed command``: the ``cmd`` of ``dvc.yaml`` differs from the lock's.

:func:`stage_status` gives the stage's entries in the shape of ``dvc status --json``
(``[{"changed deps": {...}}, {"changed outs": {...}}, "changed command"]``; DVC reports a
changed param under "changed deps" as ``{"params.yaml": {"prepare.seed": "modified"}}``).
:func:`dvcfile_status` does the same for a ``.dvc`` file that ``dvc add`` wrote. Not handled (the
status is then the reason why not): ``foreach`` / ``matrix`` stages and ``${...}`` templating
(DVC resolves them from params first), ``dvc import`` files, and ``.dvcignore``.
"""

from __future__ import annotations

import json
import posixpath
import shlex
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from provgraph.evidence.buildnodes import StageStatus
from provgraph.evidence.dvcdir import file_md5s, folder_md5s, in_cache
from provgraph.importers.dvcyaml import load

#: Suffixes of the files DVC users list as a stage's code (``deps: [src/train.py]``).
CODE_SUFFIXES = frozenset(
    {".py", ".r", ".sh", ".ipynb", ".jl", ".m", ".js", ".ts", ".rb", ".pl", ".java", ".scala"}
    | {".c", ".cc", ".cpp", ".go", ".rs", ".sql", ".do", ".sas", ".ps1", ".bat", ".mk"}
)
#: Largest params or dvc.yaml file read.
MAX_PARAMS_BYTES = 16 << 20
#: DVC's default params file, relative to the stage's wdir.
DEFAULT_PARAMS = "params.yaml"


def is_code(path: str) -> bool:
    """Whether a dep is code as DVC users write it (a source file, or a ``src``-like folder)."""
    name = PurePosixPath(path)
    return name.suffix.lower() in CODE_SUFFIXES or name.name in {"src", "scripts", "code", "Makefile"}


def code_dep(paths: list[str], cmd: str) -> str | None:
    """The stage's code: a code dep named in the command, else the first code dep; None if none."""
    try:
        words = set(shlex.split(cmd))
    except ValueError:
        words = set(cmd.split())
    code = [p for p in paths if is_code(p)]
    return next((p for p in code if p in words or f"./{p}" in words), code[0] if code else None)


def read_params(path: Path) -> Any:
    """A params file (YAML, JSON or TOML by suffix) as data; raises ValueError when unreadable."""
    if path.stat().st_size > MAX_PARAMS_BYTES:
        raise ValueError(f"larger than {MAX_PARAMS_BYTES >> 20} MiB")
    text = path.read_text(encoding="utf-8", errors="replace")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json.loads(text)
    if suffix == ".toml":
        return tomllib.loads(text)
    import yaml  # lazy: pyyaml is loaded only when a DVC file is read

    try:
        return load(text)[1]
    except yaml.YAMLError as err:
        raise ValueError(" ".join(str(err).split())) from err


def _entry_path(item: Any) -> tuple[str, dict[str, Any]] | None:
    if isinstance(item, str):
        return item, {}
    if isinstance(item, dict) and len(item) == 1:
        path, opts = next(iter(item.items()))
        return str(path), opts if isinstance(opts, dict) else {}
    return None


def _workspace(top: Path, md5: str | None) -> str | None:
    if not top.exists():
        return "deleted"
    if not md5:
        return "modified"  # no recorded hash: DVC's hash_info != the current one
    if md5.endswith(".dir"):
        return None if top.is_dir() and md5.lower() in folder_md5s(top) else "modified"
    return None if top.is_file() and md5.lower() in file_md5s(top.read_bytes()) else "modified"


def _lookup(data: Any, key: str) -> tuple[bool, Any]:
    """A dotted param (``train.seed``) in a params file, as DVC's dpath lookup finds it."""
    if isinstance(data, dict) and key in data:
        return True, data[key]
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def _params(spec: Any) -> dict[str, list[str]]:
    """``params:`` of dvc.yaml as file -> keys ([] tracks the whole file)."""
    found: dict[str, list[str]] = {}
    for item in spec or []:
        if isinstance(item, str):
            found.setdefault(DEFAULT_PARAMS, []).append(item)
        elif isinstance(item, dict):
            for name, keys in item.items():
                found.setdefault(str(name), []).extend(str(k) for k in keys or [])
    return found


def _param_status(wdir: Path, spec: Any, recorded: Any) -> dict[str, Any]:
    status: dict[str, Any] = {}
    recorded = recorded if isinstance(recorded, dict) else {}
    for name, keys in _params(spec).items():
        path = wdir / PurePosixPath(name)
        if not path.is_file():
            status[name] = "deleted"
            continue
        try:
            actual = read_params(path)
        except (ValueError, OSError) as err:
            # DVC stops here; no recorded value can be confirmed, so the file counts as modified
            status[name] = f"modified (unreadable: {err})"
            continue
        info = recorded.get(name) if isinstance(recorded.get(name), dict) else {}
        names = keys or list(dict.fromkeys([*(actual or {}), *info]))
        found: dict[str, str] = {}
        for key in names:
            present, value = (
                _lookup(actual, key) if keys else (key in (actual or {}), (actual or {}).get(key))
            )
            if not present:
                found[key] = "deleted"
            elif key not in info:
                found[key] = "new"
            elif value != info[key] and not (isinstance(value, tuple) and list(value) == info[key]):
                found[key] = "modified"
        if found:
            status[name] = found
    return status


def stage_status(root: Path, wdir: str, project: str, spec: Any, lock: Any) -> StageStatus | str:
    """``dvc status`` of one stage: ``spec`` from dvc.yaml, ``lock`` from dvc.lock (or None).

    ``wdir`` is the stage's working folder and ``project`` the DVC root (holding ``.dvc/``),
    both relative to ``root``. Returns why not when the stage cannot be evaluated."""
    if not isinstance(spec, dict):
        return "expected a mapping"
    if "foreach" in spec or "matrix" in spec:
        return "foreach/matrix stages are not expanded"
    if "${" in json.dumps(spec, default=str):
        return "${...} templating is not resolved"
    lock = lock if isinstance(lock, dict) else {}
    base = root / PurePosixPath(wdir) if wdir else root
    cache_root = root / PurePosixPath(project) if project else root
    result = StageStatus()

    def shown(path: str) -> str:  # DVC names a dep or out by its path from the DVC root
        return posixpath.relpath(joined(wdir, path), project or ".")

    recorded = {
        str(e.get("path")): e.get("md5")
        for key in ("deps", "outs")
        for e in lock.get(key) or []
        if isinstance(e, dict)
    }
    deps: dict[str, Any] = {}
    for item in spec.get("deps") or []:
        entry = _entry_path(item)
        if entry is None:
            continue
        path = entry[0]
        word = _workspace(base / PurePosixPath(path), recorded.get(path))
        if word:
            deps[shown(path)] = result.words[path] = word
            result.changes.append(f"changed deps: {path} {word}")
    for name, params in _param_status(base, spec.get("params"), lock.get("params")).items():
        deps[shown(name)] = params if not isinstance(params, str) else params.split(" (")[0]
        detail = params if isinstance(params, str) else ", ".join(f"{k} {w}" for k, w in params.items())
        result.changes.append(f"changed params: {name} {detail}")
    outs: dict[str, str] = {}
    for key in ("outs", "metrics", "plots"):
        for item in spec.get(key) or []:
            entry = _entry_path(item)
            if entry is None:
                continue
            path, opts = entry
            md5 = recorded.get(path)
            uses_cache = opts.get("cache", key == "outs") is not False
            if md5 and uses_cache and not in_cache(cache_root, str(md5)):
                word: str | None = "not in cache"
            else:
                word = _workspace(base / PurePosixPath(path), md5)
            if word:
                outs[shown(path)] = result.words[path] = word
                result.changes.append(f"changed outs: {path} {word}")
    if deps:
        result.entries.append({"changed deps": deps})
    if outs:
        result.entries.append({"changed outs": outs})
    if lock and lock.get("cmd") != spec.get("cmd"):
        result.entries.append("changed command")
        result.changes.append("changed command")
    return result


def dvc_root(root: Path, folder: str) -> str:
    """The DVC root of a file in ``folder``: the nearest folder at or above it with ``.dvc/``."""
    parts = folder.split("/") if folder else []
    for i in range(len(parts), -1, -1):
        candidate = "/".join(parts[:i])
        if (root / PurePosixPath(candidate) / ".dvc").is_dir() if candidate else (root / ".dvc").is_dir():
            return candidate
    return folder


def joined(folder: str, *paths: str) -> str:
    """Bundle-relative join ("" for the bundle root)."""
    path = posixpath.normpath(posixpath.join(folder or ".", *paths))
    return "" if path == "." else path


def dvcfile_status(root: Path, rel: str, project: str) -> StageStatus | str:
    """``dvc status`` of a ``.dvc`` file (what ``dvc add`` writes: ``outs`` with their md5),
    addressed by DVC as the file's path; ``rel`` is bundle-relative."""
    path = root / PurePosixPath(rel)
    try:
        data = read_params(path)  # YAML (read_params reads any suffix but .json and .toml as YAML)
    except (ValueError, OSError) as err:
        return f"unreadable ({err})"
    if not isinstance(data, dict):
        return "expected a mapping with 'outs'"
    if any(isinstance(e, dict) and "repo" in e for e in data.get("deps") or []):
        return "a `dvc import` (its dep is another repository's file, which DVC checks over the network)"
    spec = {
        k: [e["path"] for e in data.get(k) or [] if isinstance(e, dict) and "path" in e]
        for k in ("deps", "outs")
    }
    return stage_status(
        root, posixpath.dirname(rel), project, spec, {k: data.get(k) for k in ("deps", "outs")}
    )
