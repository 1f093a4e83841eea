"""Mutation fuzzing of every importer through a real `provgraph ingest` (issue 22); not part of
the test suite.

    .venv/bin/python bench/fuzz.py                        # 10^4 cases per importer (the long run)
    .venv/bin/python bench/fuzz.py --cases 200 --jobs 2   # a smoke run
    .venv/bin/python bench/fuzz.py --importers calls,plan --cases 50

Seeds are the valid inputs of the rule fixtures (``tests/fixtures/rules/*/flawed``) and the
examples (``examples/*/{clean,flawed}``), planned as a bundle to learn which importer reads
which file. Each case copies one seed source and its bundle's contract into a fresh folder and
mutates one file of it, deterministically from ``--seed``, the importer and the case number:

  flip       1 to 8 random bytes xor-ed with a random value
  truncate   cut at a random offset
  duplicate  one line (record) repeated in place
  nesting    one value replaced by 100,000 nested brackets
  number     one value replaced by a 5,000 or 100,000 digit integer
  surrogate  one string given a lone surrogate (a JSON \\udc80 escape, raw CESU bytes elsewhere)
  string     one value replaced by a 17 MiB string

The case is ingested by ``provgraph --store :memory: ingest PATH --importer NAME`` in a worker
child process (one interpreter reused between cases for speed; a case that runs over
``--timeout`` seconds is a hang: the worker is killed with SIGKILL and replaced). Outcomes:

  ok          exit 0
  rejected    exit 2, every stderr line one `provgraph: ...` line
  multiline   exit 2 but a message spread over several lines, or a non-`provgraph:` line
  file-loss   a one-value or one-line mutation of a line-record file (.jsonl, .csv, ...) with
              >= 2 records lost more than one record (the unmutated seed's count is the reference)
  internal    exit 3 (or any other code)
  hang        over ``--timeout`` seconds, or the worker died (memory limit, signal)

A table by importer and outcome is printed and written, with up to 3 examples per importer
and failing outcome, to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

KINDS = ("flip", "truncate", "duplicate", "nesting", "number", "surrogate", "string")
WEIGHTS = (3, 2, 2, 2, 2, 2, 1)  # the 17 MiB strings cost most: half as often
LOCAL = {"duplicate", "nesting", "number", "surrogate", "string"}  # touch one value or line
#: Files whose records are lines: there, a local mutation must cost at most its own record. In a
#: single document (a .json, a dvc.lock) a broken line can break the document: not counted.
LINE_RECORDS = (".jsonl", ".ndjson", ".csv", ".tsv")
OUTCOMES = ("ok", "rejected", "multiline", "file-loss", "internal", "hang")
NEST = 100_000
HUGE_STRING = 17 << 20
MEMORY_LIMIT = 4 << 30  # address space of a worker: a memory bomb fails there, not the machine
SEEDS_PER_IMPORTER = 8


@dataclass(frozen=True)
class Seed:
    """One valid source an importer reads: its bundle, its path and the file to mutate."""

    importer: str
    bundle: Path
    rel: str  # the source (a file or a folder), relative to the bundle
    targets: tuple[str, ...]  # the file a case mutates: the source, or one member of a folder


# -- seeds -------------------------------------------------------------------------------------


def generated_bundles(out: Path) -> list[Path]:
    """The examples' generated bundles (flawed twins), generated once into ``out``."""
    roots = []
    for example in ("cxr_pilot", "llm_review"):
        dest = out / example
        if not (dest / "flawed" / "provgraph.toml").is_file():
            script = REPO / "examples" / example / "generate.py"
            cmd = [sys.executable, str(script), "--twin", "flawed", "--out", str(dest)]
            subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        roots.append(dest / "flawed")
    return roots


def seed_bundles(generated: Path) -> list[Path]:
    roots = generated_bundles(generated.resolve())
    roots += sorted((REPO / "tests" / "fixtures" / "rules").glob("*/flawed"))
    roots += sorted((REPO / "tests" / "fixtures" / "records").glob("*/flawed"))  # declared records
    roots += sorted(p for p in (REPO / "examples").glob("*/*") if p.name in ("clean", "flawed"))
    roots += sorted(p for p in (REPO / "examples").glob("*") if (p / "provgraph.toml").is_file())
    return [r for r in roots if (r / "provgraph.toml").is_file()]


def find_seeds(generated: Path) -> dict[str, list[Seed]]:
    """Up to SEEDS_PER_IMPORTER seeds per importer, the smallest sources first."""
    # here, not at the top: the worker must set its memory limit before provgraph loads
    from provgraph.bundle.layout import Bundle
    from provgraph.ingest.planner import plan_bundle

    found: dict[str, dict[str, Seed]] = defaultdict(dict)
    for root in seed_bundles(generated):
        try:
            bundle = Bundle.open(root)
            plan, _ = plan_bundle(bundle, None, {})
        except Exception as err:  # a fixture that is not a bundle on its own: skip it
            print(f"skipping {root}: {err}", file=sys.stderr)
            continue
        for path, importer in plan:
            rel = bundle.relpath(path)
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            if not files or rel == "images.toml":
                continue
            seed = Seed(importer.name, root, rel, tuple(str(p.relative_to(root)) for p in files[:50]))
            first = files[0]
            digest = f"{seed.rel}:{first.stat().st_size}:{first.read_bytes()[:4096].hex()}"
            found[importer.name].setdefault(digest, seed)
    # one folder per run: concurrent chunked runs (--offset) must not rewrite each other's seeds
    # (a git seed rewritten under a running chunk lost its objects and stopped that run)
    for seed in synthetic_seeds(generated.resolve() / f"synthetic-{os.getpid()}"):
        found[seed.importer].setdefault(seed.rel, seed)
    for seed in harness_log_seeds(generated.resolve() / f"harness-logs-{os.getpid()}"):
        found[seed.importer].setdefault(seed.rel, seed)
    return {
        name: sorted(seeds.values(), key=lambda s: (size(s), str(s.bundle)))[:SEEDS_PER_IMPORTER]
        for name, seeds in sorted(found.items())
    }


def size(seed: Seed) -> int:
    return sum((seed.bundle / t).stat().st_size for t in seed.targets)


FINDINGS = (
    "No Finding,Enlarged Cardiomediastinum,Cardiomegaly,Lung Lesion,Lung Opacity,Edema,Consolidation,"
    "Pneumonia,Atelectasis,Pneumothorax,Pleural Effusion,Pleural Other,Fracture,Support Devices"
)


def _message(text: str) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-sonnet-20241022",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }


def synthetic_seeds(root: Path) -> list[Seed]:
    """Seeds for importers no fixture or example feeds: written here, in the formats the
    importers' own tests use."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    shutil.copy2(REPO / "examples" / "output_gate" / "flawed" / "provgraph.toml", root / "provgraph.toml")
    calls = [f"C00{i}" for i in range(1, 5)]
    files = {
        "labeled_reports.csv": f"Reports,{FINDINGS}\n"
        + "".join(f"report {i} clear,1.0,,0.0,,,0.0,,0.0,,,0.0,,,\n" for i in range(6)),
        "chexbert.csv": f"Report Impression,{FINDINGS}\n"
        + "".join(f"r{i},1,0,2,3,0,0,0,0,0,0,0,0,0,0\n" for i in range(6)),
        "requests.jsonl": "".join(
            json.dumps(
                {
                    "custom_id": c,
                    "params": {
                        "model": "claude-3-5-sonnet-20241022",
                        "max_tokens": 64,
                        "messages": [{"role": "user", "content": f"case {c}"}],
                    },
                }
            )
            + "\n"
            for c in calls
        ),
        "results.jsonl": "".join(
            json.dumps({"custom_id": c, "result": {"type": "succeeded", "message": _message(f"out {c}")}})
            + "\n"
            for c in calls
        ),
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    repo = root / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    git = ["git", "-C", str(repo), "-c", "user.name=fuzz", "-c", "user.email=fuzz@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    repo_files = sorted(str(p.relative_to(root)) for p in repo.rglob("*") if p.is_file())
    return [
        Seed("chexpert-labels", root, "labeled_reports.csv", ("labeled_reports.csv",)),
        Seed("chexbert-labels", root, "chexbert.csv", ("chexbert.csv",)),
        Seed("anthropic-batch-requests", root, "requests.jsonl", ("requests.jsonl",)),
        Seed("anthropic-batch-results", root, "results.jsonl", ("results.jsonl",)),
        Seed("git", root, "repo", tuple(repo_files)),
    ]


def harness_log_seeds(root: Path) -> list[Seed]:
    """Seeds for the Inspect AI and reviewer-harness importers: their real vendored files, and a
    ``.eval`` stored uncompressed so that mutations reach the JSON inside the zip."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    shutil.copy2(REPO / "examples" / "output_gate" / "flawed" / "provgraph.toml", root / "provgraph.toml")
    logs = REPO / "tests" / "fixtures" / "inspect_ai"
    shutil.copy2(logs / "log_formats.json", root / "log_formats.json")
    shutil.copy2(logs / "popularity.eval", root / "popularity.eval")
    stored = zipfile.ZipFile(root / "stored.eval", "w", zipfile.ZIP_STORED)
    with zipfile.ZipFile(logs / "mmlu-summary-choices.eval") as src, stored as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    shutil.copytree(REPO / "tests" / "fixtures" / "replication_trap", root, dirs_exist_ok=True)
    return [
        Seed("inspect-log", root, "log_formats.json", ("log_formats.json",)),
        Seed("inspect-log", root, "popularity.eval", ("popularity.eval",)),
        Seed("inspect-log", root, "stored.eval", ("stored.eval",)),
        Seed("reviews", root, "audit_results/reviews.json", ("audit_results/reviews.json",)),
        Seed("audit-report", root, "audit_results/audit_report.md", ("audit_results/audit_report.md",)),
    ]


# -- mutations ---------------------------------------------------------------------------------

_JSON_VALUE = re.compile(rb'(:\s*)("(?:[^"\\\n]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)')
_KEY_VALUE = re.compile(rb"((?:=|:)[ \t]+)([^\r\n#]+)")
_CSV_FIELD = re.compile(rb"(,)([^,\r\n]*)")


def _value_spans(data: bytes) -> list[tuple[int, int]]:
    for pattern in (_JSON_VALUE, _KEY_VALUE, _CSV_FIELD):
        # A CSV header names the columns: a changed name is a changed format, whose refusal of
        # the whole file is right (and was counted as file-loss). Values only, after line 1.
        start = data.find(b"\n") + 1 if pattern is _CSV_FIELD else 0
        spans = [m.span(2) for m in pattern.finditer(data, start, 4 << 20)]
        if spans:
            return spans
    return []


def mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    """``data`` with one mutation of ``kind`` (see the module docstring)."""
    if not data:
        return b"\xed\xb2\x80" if kind == "surrogate" else data + b"x"
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= rng.randint(1, 255)
        return bytes(out)
    if kind == "truncate":
        return data[: rng.randrange(len(data))]
    if kind == "duplicate":
        lines = data.splitlines(keepends=True)
        i = rng.randrange(len(lines))
        line = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
        return b"".join([*lines[:i], line, *lines[i:]])
    spans = _value_spans(data)
    start, end = rng.choice(spans) if spans else (len(data) // 2, len(data) // 2)
    old = data[start:end]
    quoted = old.startswith(b'"')
    if kind == "nesting":
        new = b"[" * NEST + b"]" * NEST
    elif kind == "number":
        new = b"9" * rng.choice((5_000, 100_000))
    elif kind == "surrogate":
        new = b'"\\udc80' + old[1:] if quoted else b"\xed\xb2\x80" + old
    else:
        new = b'"' + b"A" * HUGE_STRING + b'"' if quoted else b"A" * HUGE_STRING
    return data[:start] + new + data[end:]


def case_kind(rng: random.Random) -> str:
    return rng.choices(KINDS, WEIGHTS)[0]


def write_case(seed: Seed, kind: str | None, rng: random.Random, base: Path) -> Path:
    """A fresh bundle folder: the seed's contract and source, one file mutated (none: as is)."""
    root = Path(tempfile.mkdtemp(prefix="case-", dir=base))
    src = seed.bundle / seed.rel
    if seed.rel != "provgraph.toml":
        shutil.copy2(seed.bundle / "provgraph.toml", root / "provgraph.toml")
    if src.is_dir():
        shutil.copytree(src, root / seed.rel, symlinks=True, ignore=shutil.ignore_patterns(".provgraph"))
    else:
        (root / seed.rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, root / seed.rel)
    if kind is not None:
        target = root / rng.choice(seed.targets)
        target.write_bytes(mutate(target.read_bytes(), kind, rng))
    return root


# -- the worker: one interpreter that runs `provgraph ingest` case after case ---------------------


def worker() -> None:
    """Read case lines (JSON) on stdin, answer one JSON line each on the original stdout."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    proto = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the CLI's tables go nowhere; answers go to `proto`
    # imported only now: under the memory limit, and after fd 1 is redirected
    import provgraph.ingest.run as run
    from provgraph.cli import main

    seen: list = []
    real = run.ingest_paths

    def recording(*args, **kwargs):  # the real ingest; only its results are kept for counting
        answer = real(*args, **kwargs)
        seen.append(answer)
        return answer

    run.ingest_paths = recording
    for line in sys.stdin:
        case = json.loads(line)
        seen.clear()
        err = io.StringIO()
        args = [
            "-C",
            case["root"],
            "--store",
            ":memory:",
            "ingest",
            case["path"],
            "--importer",
            case["importer"],
        ]
        with contextlib.redirect_stderr(err):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException as exc:  # reported as an internal error
                code, err = 3, io.StringIO(f"worker: {type(exc).__name__}: {exc}")
        records = sum(r.records for r in seen[0][0]) if seen else 0
        lines = err.getvalue().splitlines()
        proto.write(json.dumps({"code": code, "records": records, "stderr": lines[:20]}) + "\n")
        proto.flush()


class Worker:
    """The parent's handle on a worker process, restarted after a hang or a death."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )

    def run(self, case: dict, timeout: float) -> dict | None:
        """The worker's answer, or None when it hung or died (it is then replaced)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(case) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else ""
        except BrokenPipeError:
            line = ""
        if line:
            return json.loads(line)
        self.stop()
        return None

    def stop(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None


# -- classification and the run ----------------------------------------------------------------


def classify(answer: dict | None, local: bool, baseline: int) -> str:
    """The outcome of one case; ``local``: the mutation touched one value or line of a file
    source (in a folder source, such as a git repository, a file is not a record)."""
    if answer is None:
        return "hang"
    code, lines = answer["code"], answer["stderr"]
    if code not in (0, 2):
        return "internal"
    if local and baseline >= 2 and answer["records"] < baseline - 1:
        return "file-loss"
    if code == 0:
        return "ok"
    if lines and all(line.startswith("provgraph: ") for line in lines):
        return "rejected"
    return "multiline"


def run_importer(name: str, seeds: list[Seed], cases: int, args, worker: Worker, base: Path) -> dict:
    counts: Counter[str] = Counter()
    examples: dict[str, list[dict]] = defaultdict(list)
    baselines = {}
    for seed in seeds:
        root = write_case(seed, None, random.Random(0), base)
        answer = worker.run({"root": str(root), "path": str(root / seed.rel), "importer": name}, args.timeout)
        baselines[seed] = answer["records"] if answer else 0
        shutil.rmtree(root, ignore_errors=True)
    t0 = time.perf_counter()
    for i in range(args.offset, args.offset + cases):
        rng = random.Random(f"{args.seed}:{name}:{i}")
        seed = seeds[i % len(seeds)]
        kind = case_kind(rng)
        root = write_case(seed, kind, rng, base)
        answer = worker.run({"root": str(root), "path": str(root / seed.rel), "importer": name}, args.timeout)
        local = kind in LOCAL and seed.rel.endswith(LINE_RECORDS) and (seed.bundle / seed.rel).is_file()
        outcome = classify(answer, local, baselines[seed])
        counts[outcome] += 1
        if outcome not in ("ok", "rejected") and len(examples[outcome]) < 3:
            examples[outcome].append(
                {
                    "case": i,
                    "kind": kind,
                    "seed": os.path.relpath(seed.bundle / seed.rel, REPO),
                    "records": answer["records"] if answer else None,
                    "baseline": baselines[seed],
                    "stderr": (answer["stderr"][:2] if answer else ["(timeout or worker died)"]),
                }
            )
        shutil.rmtree(root, ignore_errors=True)
    return {
        "counts": {o: counts[o] for o in OUTCOMES},
        "seconds": round(time.perf_counter() - t0, 1),
        "seeds": len(seeds),
        "examples": dict(examples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=10_000, help="cases per importer")
    parser.add_argument(
        "--offset",
        type=int,
        default=0,
        help="first case number: a long run split into chunks (--offset 0, 2500, ...) covers the "
        "same cases as one run; --merge adds their outputs up",
    )
    parser.add_argument("--merge", type=Path, nargs="+", help="print the summed table of these outputs")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a case is a hang")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (importers in parallel)")
    parser.add_argument("--importers", default="", help="comma-separated names (default: all with seeds)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "fuzz.json")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    if args.merge:
        print_table(merge(args.merge))
        return
    seeds = find_seeds(args.out.parent / "fuzz-seeds")
    wanted = [n for n in args.importers.split(",") if n] or list(seeds)
    todo = [n for n in wanted if n in seeds]
    missing = [n for n in wanted if n not in seeds]
    results: dict[str, dict] = {}
    lock = threading.Lock()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="provgraph-fuzz-") as tmp:

        def drive() -> None:
            worker = Worker()
            try:
                while True:
                    with lock:
                        if not todo:
                            return
                        name = todo.pop(0)
                    result = run_importer(name, seeds[name], args.cases, args, worker, Path(tmp))
                    with lock:
                        results[name] = result
                        print(
                            f"{name}: {result['counts']} ({result['seconds']} s)", file=sys.stderr, flush=True
                        )
                        write_report(args, results, missing, t0)  # a stopped run keeps what it did
            finally:
                worker.stop()

        threads = [threading.Thread(target=drive) for _ in range(max(1, args.jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    shutil.rmtree(args.out.parent / "fuzz-seeds" / f"synthetic-{os.getpid()}", ignore_errors=True)
    print_table(write_report(args, results, missing, t0))


def write_report(args, results: dict[str, dict], missing: list[str], t0: float) -> dict:
    report = {
        "cases_per_importer": args.cases,
        "offset": args.offset,
        "seed": args.seed,
        "timeout": args.timeout,
        "seconds": round(time.perf_counter() - t0, 1),
        "without_seeds": missing,
        "importers": dict(sorted(results.items())),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    return report


def merge(paths: list[Path]) -> dict:
    """The outputs of chunked runs as one report (counts and seconds summed per importer)."""
    merged: dict[str, dict] = {}
    for path in paths:
        report = json.loads(path.read_text(encoding="utf-8"))
        for name, result in report["importers"].items():
            into = merged.setdefault(
                name,
                {
                    "counts": dict.fromkeys(OUTCOMES, 0),
                    "seconds": 0.0,
                    "seeds": result["seeds"],
                    "examples": {},
                },
            )
            for outcome in OUTCOMES:
                into["counts"][outcome] += result["counts"][outcome]
            into["seconds"] += result["seconds"]
            for outcome, cases in result["examples"].items():
                into["examples"].setdefault(outcome, []).extend(cases)
    return {"seconds": sum(r["seconds"] for r in merged.values()), "importers": dict(sorted(merged.items()))}


def print_table(report: dict) -> None:
    print(f"| importer | seeds | {' | '.join(OUTCOMES)} |")
    print("|---|---|" + "---|" * len(OUTCOMES))
    total: Counter[str] = Counter()
    for name, result in report["importers"].items():
        total.update(result["counts"])
        row = " | ".join(str(result["counts"][o]) for o in OUTCOMES)
        print(f"| {name} | {result['seeds']} | {row} |")
    print(f"| **all** | | {' | '.join(str(total[o]) for o in OUTCOMES)} |")
    if report.get("without_seeds"):
        print(f"no seed file for: {', '.join(report['without_seeds'])}")


if __name__ == "__main__":
    main()
