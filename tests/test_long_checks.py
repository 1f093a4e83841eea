"""A long check (minutes at 10^6 calls) says what it is doing, and Ctrl-C ends it at once.

Interrupting: a rule the engine evaluates for minutes (at 10^6 calls a rule that groups every
record takes that long) used to hold the interrupt: the command waited for every running rule,
and with one reader thread the engine, evaluating on the main thread, did not even see it. Here
a rule that counts a five-way cross product of the store's triples runs for hours; the command
is sent SIGINT once the rules are running, as a terminal's Ctrl-C does.

Progress: the gate names each step as it starts (:func:`provgraph.lineage.gate.run_gate`), and
``provgraph check`` draws them on a terminal's stderr (a pseudo-terminal here), not in a pipe.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ingest_bundle, write_bundle

from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

PLAN = "call_id,case,condition,replicate\n" + "".join(f"C{i},s{i},A,1\n" for i in range(20))
RECORDS = "".join(
    json.dumps({"call_id": f"C{i}", "status": "ok", "output": f"out{i}.txt"}) + "\n" for i in range(20)
)
# every quad of the store joined with every other, five times over: about 10^14 rows counted
SLOW_RULE = """# id: output-counts-forever
# clause: output
# severity: info
# title: Counts a cross product of the whole store
# remedy: Nothing: a test rule that runs for hours.
# why: a rule as slow as a grouping rule at 10^6 calls, to interrupt
PREFIX pg: <https://w3id.org/provgraph/ns#>
SELECT ?focus ?message WHERE {
  { SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?o ?p } }
  BIND(<urn:example:store> AS ?focus)
  BIND(STR(?n) AS ?message)
}
"""


def _provgraph(root: Path, *args: str, stderr_to: int = subprocess.PIPE, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "provgraph", "-C", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=stderr_to,
        text=True,
        **kwargs,
    )


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_ends_a_check_whose_rule_runs_for_hours(tmp_path: Path, workers: str) -> None:
    files = {"plan.csv": PLAN, "calls.jsonl": RECORDS} | {f"out{i}.txt": f"answer {i}\n" for i in range(20)}
    root = write_bundle(tmp_path / "b", files)
    done = subprocess.run(
        [sys.executable, "-m", "provgraph", "-C", str(root), "ingest"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    rules = tmp_path / "rules" / "output"
    rules.mkdir(parents=True)
    (rules / "output-counts-forever.rq").write_text(SLOW_RULE)
    temp = tmp_path / "tmp"
    temp.mkdir()
    # (one worker: the rule is the only thing running; two: it runs beside the view steps' end)
    env = os.environ | {"PROVGRAPH_WORKERS": workers, "TMPDIR": str(temp)}
    check = _provgraph(root, "check", "--rules-dir", str(tmp_path / "rules"), "--clause", "output", env=env)
    try:
        time.sleep(6)  # ingest is done, the views take well under a second here: the rule runs
        assert check.poll() is None, check.communicate()
        check.send_signal(signal.SIGINT)
        _, err = check.communicate(timeout=30)
    finally:
        if check.poll() is None:
            check.kill()
    assert check.returncode == 130, err
    assert err.rstrip().endswith("provgraph: interrupted; the store keeps its last complete state")
    assert list(temp.iterdir()) == [], "the run's temporary files were left behind"
    # the store was closed and left whole: the shipped rules check it as before
    again = subprocess.run(
        [sys.executable, "-m", "provgraph", "-C", str(root), "check", "--format", "json", "--no-record"],
        capture_output=True,
        text=True,
    )
    assert again.returncode in (0, 1), again.stderr
    assert json.loads(again.stdout)["gate"] in ("pass", "fail")


def test_the_gate_names_each_step_as_it_starts(tmp_path: Path) -> None:
    files = {"plan.csv": PLAN, "calls.jsonl": RECORDS} | {f"out{i}.txt": f"answer {i}\n" for i in range(20)}
    store, _, _ = ingest_bundle(write_bundle(tmp_path / "b", files))
    rules = load_rules()
    steps: list[str] = []  # (list.append is atomic: the view steps call it from reader threads)
    results: list[object] = []
    run_gate(store, rules, on_step=steps.append, on_result=results.append)
    views = {"per-call evidence", "per-case evidence", "pixel verdicts", "statistics", "file classes"}
    views.add("decoding settings")
    assert steps[0] == "compacting the store" and steps[1] == "per-call evidence"
    assert set(steps[1:-2]) == views and len(steps) == len(views) + 3
    assert steps[-2:] == ["rules", "recording the check"]
    assert len(results) == len(rules)
    # nothing imported since: no compaction, the same steps (each finds its view current)
    steps.clear()
    run_gate(store, rules, record=False, on_step=steps.append)
    assert steps[0] == "per-call evidence" and steps[-1] == "rules" and len(steps) == len(views) + 1


def test_check_draws_its_progress_on_a_terminal_only(tmp_path: Path) -> None:
    files = {"plan.csv": PLAN, "calls.jsonl": RECORDS} | {f"out{i}.txt": f"answer {i}\n" for i in range(20)}
    root = write_bundle(tmp_path / "b", files)
    done = subprocess.run(
        [sys.executable, "-m", "provgraph", "-C", str(root), "ingest"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    main, terminal = pty.openpty()
    env = os.environ | {"TERM": "xterm", "COLUMNS": "120"}
    check = _provgraph(root, "check", "--no-record", env=env, stderr_to=terminal)
    os.close(terminal)
    drawn = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal's other end closed: the command is done
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main)
    out, _ = check.communicate(timeout=60)
    text = drawn.decode("utf-8", "replace")
    # (frames are drawn ten times a second, so which evidence step one caught varies; the last
    # frame, drawn as the check ends, is the rules' count)
    assert f"rules: {len(load_rules())} of {len(load_rules())} done" in text
    assert check.returncode in (0, 1) and out.splitlines()[-1].startswith("gate: ")
    # in a pipe (CI logs) nothing is drawn
    piped = subprocess.run(
        [sys.executable, "-m", "provgraph", "-C", str(root), "check", "--no-record"],
        capture_output=True,
        text=True,
    )
    assert "deriving evidence" not in piped.stderr and "rules:" not in piped.stderr
