"""``[factors]``: a factorial design expands at load time into the ``[conditions]`` a hand-crossed
contract states, so the check gives the same verdict and the same rule results on one bundle.

The bundle's files follow the fixture pair of ``prompt-identical-across-conditions``
(tests/fixtures/rules/prompt-identical-across-conditions/flawed: canonical call records in
``calls.jsonl``, README "What gets imported"), crossed over 3 prompts x 2 models x 3 replicates.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import REPO, ingest_bundle, write_bundle

from provgraph.bundle.contract import load_contract
from provgraph.errors import ContractError
from provgraph.lineage.gate import run_gate
from provgraph.rules import load_rules

HEAD = """[project]
name = "vlm"
base_iri = "https://example.org/vlm/"
[models.gpt4o]
requested = "gpt-4o-2024-08-06"
[models.sonnet]
requested = "claude-3-5-sonnet-20241022"
"""
DESIGN = (
    HEAD
    + """[factors]
system_prompt = { A = "prompts/A.txt", B = "prompts/B.txt", C = "prompts/C.txt" }
model = ["gpt4o", "sonnet"]
replicates = 3
[plan]
cases = ["s1", "s2"]
decoding = { temperature = 0, max_tokens = 512 }
"""
)
PROMPTS = {
    "A": "You are a radiologist. Describe every finding on this chest radiograph.",
    "B": "You are a radiologist. List only the abnormal findings on this chest radiograph.",
    "C": "You are a radiologist. Answer normal or abnormal for this chest radiograph.",
}
MODELS = {"gpt4o": "gpt-4o-2024-08-06", "sonnet": "claude-3-5-sonnet-20241022"}


def hand_crossed() -> str:
    """The six conditions written out by hand, with their ``differs_from`` lists."""
    text = HEAD + '[plan]\ncases = ["s1", "s2"]\nreplicates = 3\n'
    text += "decoding = { temperature = 0, max_tokens = 512 }\n"
    keys = [(p, m) for p in PROMPTS for m in MODELS]
    for i, (p, m) in enumerate(keys):
        others = [f'"{q}.{n}"' for q, n in keys[i + 1 :] if q != p]
        text += f'[conditions."{p}.{m}"]\nsystem_prompt = "prompts/{p}.txt"\nmodel = "{m}"\n'
        text += f"differs_from = [{', '.join(others)}]\n"
    return text


def bundle_files(sent: dict[str, str]) -> dict[str, str]:
    """Prompt files, outputs and one call record per planned call; ``sent`` maps a prompt
    level to the text its calls actually sent (the flawed run sends A's text for B)."""
    files = {f"prompts/{p}.txt": text + "\n" for p, text in PROMPTS.items()}
    records = []
    for p in PROMPTS:
        for m, model in MODELS.items():
            for case in ("s1", "s2"):
                for rep in (1, 2, 3):
                    cid = f"{p}.{m}--{case}--{rep}"
                    out = f"Study {case}, condition {p}.{m}: no acute cardiopulmonary abnormality."
                    files[f"outputs/{cid}.txt"] = out
                    records.append(
                        {
                            "call_id": cid,
                            "status": "ok",
                            "output": f"outputs/{cid}.txt",
                            "request_id": f"req-{cid}",
                            "finish_reason": "stop",
                            "requested_model": model,
                            "resolved_model": model,
                            "prompt": {"system": sent[p], "user": f"Study {case}: frontal chest radiograph."},
                            "prompt_source": "request",
                            "decoding": {"temperature": 0, "max_tokens": 512},
                            "output_sha256": hashlib.sha256(out.encode()).hexdigest(),
                            "output_bytes": len(out.encode()),
                        }
                    )
    files["calls.jsonl"] = "".join(json.dumps(r) + "\n" for r in records)
    return files


def check(root: Path):
    store, results, problems = ingest_bundle(root)
    rejected = [str(p) for r in results for p in r.problems]
    assert not problems and not rejected, rejected
    report = run_gate(store, load_rules(), record=False)
    found = {
        r.rule.id: (r.outcome, sorted((report.short(v.focus), v.message) for v in r.violations))
        for r in report.results
    }
    return report.passed, found


def test_a_3x2x3_design_fits_in_15_lines() -> None:
    lines = [line for line in DESIGN.splitlines() if line.strip()]
    assert len(lines) <= 15, len(lines)


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_design_checks_like_the_hand_crossed_conditions(twin: str, tmp_path: Path) -> None:
    sent = dict(PROMPTS, B=PROMPTS["A"]) if twin == "flawed" else PROMPTS
    files = bundle_files(sent)
    by_design = check(write_bundle(tmp_path / "design", files, DESIGN))
    by_hand = check(write_bundle(tmp_path / "hand", files, hand_crossed()))
    assert by_design == by_hand
    passed, results = by_design
    identical = results["prompt-identical-across-conditions"]
    if twin == "flawed":
        assert not passed
        # B sent A's prompt: each A x B pair of conditions fails, and only those
        foci = [focus for focus, _ in identical[1]]
        assert identical[0] == "violated" and len(foci) == 4, identical
        assert all(f.startswith("condition-pair/A.") and "/B." in f for f in foci), foci
    else:
        assert passed and identical == ("pass", [])
        outcomes = {outcome for outcome, _ in results.values()}
        assert outcomes <= {"pass", "skipped", "not-applicable"}, results


def test_expansion_gives_the_crossed_conditions(tmp_path: Path) -> None:
    path = tmp_path / "provgraph.toml"
    path.write_text(DESIGN, encoding="utf-8")
    data = load_contract(path).data
    assert list(data["conditions"]) == ["A.gpt4o", "A.sonnet", "B.gpt4o", "B.sonnet", "C.gpt4o", "C.sonnet"]
    assert data["conditions"]["B.sonnet"] == {
        "system_prompt": "prompts/B.txt",
        "model": "sonnet",
        "differs_from": ["C.gpt4o", "C.sonnet"],
    }
    assert data["plan"]["replicates"] == 3
    assert "prompt" in load_contract(path).clauses()


@pytest.mark.parametrize(
    ("change", "new", "reason", "at"),
    [
        ('model = ["gpt4o", "sonnet"]', 'model = ["gpt4o", "opus"]', "no [models.opus] entry", "model ="),
        ("replicates = 3", "replicates = 0", "minimum of 1", "replicates ="),
        ('{ A = "prompts/A.txt"', '{ "A.1" = "prompts/A.txt"', "A.1", "system_prompt ="),
        ("replicates = 3", "replicates = 3\ncolour = 2", "unknown key 'colour'", "colour ="),
        ("[plan]", '[conditions.x]\nsystem_prompt = "p"\n[plan]', "[factors] or [conditions]", "[factors]"),
        ('cases = ["s1", "s2"]', 'cases = ["s1"]\nreplicates = 2', "3 replicates here but 2", "replicates ="),
        (
            'cases = ["s1", "s2"]',
            'cases = ["s1"]\nconditions = ["A.gpt4o", "D.gpt4o"]',
            "'D.gpt4o' is not",
            "conditions =",
        ),
    ],
)
def test_bad_design_names_file_and_line(tmp_path: Path, change: str, new: str, reason: str, at: str) -> None:
    text = DESIGN.replace(change, new)
    path = tmp_path / "provgraph.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContractError) as err:
        load_contract(path)
    message = str(err.value)
    number = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(at))
    assert message.startswith(f"{path}:{number}:") and reason in message, message


def test_plan_conditions_may_name_a_subset_of_the_design(tmp_path: Path) -> None:
    path = tmp_path / "provgraph.toml"
    path.write_text(
        DESIGN.replace("[plan]", '[plan]\nconditions = ["A.gpt4o", "C.sonnet"]'), encoding="utf-8"
    )
    contract = load_contract(path)
    assert contract.data["plan"]["conditions"] == ["A.gpt4o", "C.sonnet"]
    assert len(contract.data["conditions"]) == 6


def test_replicates_need_a_plan(tmp_path: Path) -> None:
    path = tmp_path / "provgraph.toml"
    path.write_text(DESIGN.split("[plan]")[0], encoding="utf-8")
    with pytest.raises(ContractError, match=r":11: factors.replicates: replicates need a \[plan\]"):
        load_contract(path)


def test_a_design_needs_a_factor(tmp_path: Path) -> None:
    path = tmp_path / "provgraph.toml"
    path.write_text(HEAD + "[factors]\n", encoding="utf-8")
    with pytest.raises(ContractError, match="at least one factor"):
        load_contract(path)


def test_a_design_crossing_to_too_many_conditions_is_refused_before_expansion(tmp_path: Path) -> None:
    levels = ", ".join(f'p{i} = "p{i}.txt"' for i in range(40))
    path = tmp_path / "provgraph.toml"
    path.write_text(HEAD + f"[factors]\nsystem_prompt = {{ {levels} }}\nuser_prompt = {{ {levels} }}\n")
    with pytest.raises(ContractError, match="crosses to 1600 conditions, more than the 1000 allowed"):
        load_contract(path)


def test_user_and_model_factors_cross_and_only_prompt_levels_must_differ(tmp_path: Path) -> None:
    path = tmp_path / "provgraph.toml"
    design = '[factors]\nmodel = ["gpt4o", "sonnet"]\nuser_prompt = { short = "s.txt", long = "l.txt" }\n'
    path.write_text(HEAD + design, encoding="utf-8")
    conditions = load_contract(path).data["conditions"]
    assert conditions == {
        "gpt4o.short": {
            "model": "gpt4o",
            "user_prompt": "s.txt",
            "differs_from": ["gpt4o.long", "sonnet.long"],
        },
        "gpt4o.long": {"model": "gpt4o", "user_prompt": "l.txt", "differs_from": ["sonnet.short"]},
        "sonnet.short": {"model": "sonnet", "user_prompt": "s.txt", "differs_from": ["sonnet.long"]},
        "sonnet.long": {"model": "sonnet", "user_prompt": "l.txt", "differs_from": []},
    }
    path.write_text(HEAD + '[factors]\nmodel = ["gpt4o", "sonnet"]\n', encoding="utf-8")
    assert all(c["differs_from"] == [] for c in load_contract(path).data["conditions"].values())


@pytest.mark.parametrize("twin", ["flawed", "clean"])
def test_cli_check_exits_alike_for_design_and_hand_crossed(cli, twin: str, tmp_path: Path) -> None:
    sent = dict(PROMPTS, B=PROMPTS["A"]) if twin == "flawed" else PROMPTS
    codes = []
    for name, contract in (("design", DESIGN), ("hand", hand_crossed())):
        root = write_bundle(tmp_path / name, bundle_files(sent), contract)
        assert cli("-C", str(root), "ingest").code == 0
        codes.append(cli("-C", str(root), "check").code)
    assert codes == ([1, 1] if twin == "flawed" else [0, 0])


def test_plan_file_names_a_subset_and_rows_outside_the_design_are_problems(tmp_path: Path) -> None:
    contract = DESIGN.replace('cases = ["s1", "s2"]', 'file = "plan.csv"')
    plan = "call_id,case,condition,replicate\n"
    plan += "A.gpt4o--s1--1,s1,A.gpt4o,1\nB.sonnet--s2--3,s2,B.sonnet,3\n"
    plan += "D.gpt4o--s1--1,s1,D.gpt4o,1\nA.gpt4o--s1--4,s1,A.gpt4o,4\n"
    root = write_bundle(tmp_path / "b", {"plan.csv": plan, **bundle_files(PROMPTS)}, contract)
    ingested = ingest_bundle(root)
    found = [(p.line, p.reason) for p in ingested.rejected]
    assert found == [
        (
            4,
            "condition 'D.gpt4o' is not a cell of [factors] "
            "(A.gpt4o, A.sonnet, B.gpt4o, B.sonnet, ... 6 in all)",
        ),
        (5, "replicate 4 is beyond the 3 of [factors]"),
    ], found
    planned = ingested.select("SELECT ?c WHERE { ?c a pg:PlannedCall ; pg:callId ?id } ORDER BY ?id")
    assert len(planned) == 2
    ingested.close()


def test_readme_design_is_the_tested_one_and_expands(tmp_path: Path) -> None:
    """The README's example is this file's 3 x 2 x 3 design (comments aside), so it stays true."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("### Factorial designs (`[factors]`)")
    block = readme[
        readme.index("```toml\n", start) + 8 : readme.index("```\n", readme.index("```toml\n", start) + 8)
    ]
    bare = [line.split("  #")[0].rstrip() for line in block.splitlines()]
    assert bare == DESIGN.replace("decoding = { temperature = 0, max_tokens = 512 }\n", "").splitlines()
    assert f"(the whole contract, {len(bare)} lines)" in readme[start : start + 300]
    path = tmp_path / "provgraph.toml"
    path.write_text(block, encoding="utf-8")
    assert len(load_contract(path).data["conditions"]) == 6
