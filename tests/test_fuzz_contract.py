"""Fuzzing the contract loader (issue 22 item 6): valid contracts, mutated byte by byte and with
hostile tokens (deep brackets, huge numbers and strings, broken quotes and escapes), are either
accepted or refused with a :class:`~provgraph.errors.ContractError` (exit 2) whose every line
names the contract file; never another exception (exit 3), never a slow parse."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import CONTRACT, REPO, RULE_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provgraph.bundle.contract.load import MAX_CONTRACT_BYTES, load_contract
from provgraph.errors import ExitCode, ProvgraphError

SEEDS = [
    CONTRACT.encode(),
    *(p.read_bytes() for p in sorted(REPO.glob("examples/*/*/provgraph.toml"))),
    *(p.read_bytes() for p in sorted(RULE_FIXTURES.glob("analysis-*/flawed/provgraph.toml"))[:2]),
    *(p.read_bytes() for p in sorted(RULE_FIXTURES.glob("cohort-*/flawed/provgraph.toml"))[:1]),
]
#: Pieces that break parsers: nesting, quotes, escapes, huge values, control and non-UTF-8 bytes.
TOKENS = [
    b"[" * 2000,
    b"{a=" * 2000,
    b"[[",
    b"]]",
    b"=",
    b"\n[",
    b"\n[[analysis.family]]\n",
    b'"',
    b"'''",
    b'"""',
    b"\\",
    b"\\u",
    b"\\UFFFFFFFF",
    b"9" * 5000,
    b"1e999999",
    b"nan",
    b"1979-05-27T07:32:00Z",
    b"\x00",
    b"\t",
    b"\r",
    b"\xed\xa0\x80",  # a UTF-8 encoded surrogate
    b"\xff",
    b"#",
    b"x" * 100_000,
    b"a.b.c.d.e.f.g.h = 1\n",
]
SLOW = 10.0  # seconds: far above a normal load (milliseconds); the bound for a hang
CAP = 2 * MAX_CONTRACT_BYTES  # repeated lines grow fast: past the size limit all is refused alike

mutation = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.sampled_from(TOKENS)),
    st.tuples(st.just("value"), st.integers(0, 10**6), st.sampled_from(TOKENS)),
    st.tuples(st.just("bytes"), st.integers(0, 10**6), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 40)),
    st.tuples(st.just("repeat"), st.integers(0, 10**6), st.integers(2, 400)),
)


def mutate(seed: bytes, steps: list[tuple]) -> bytes:
    data = seed
    for kind, at, arg in steps:
        at %= len(data) + 1
        if kind == "value":  # the token opens the value of one key, where nesting is legal
            starts = [i + 2 for i in range(len(data)) if data[i : i + 2] == b"= "]
            at = starts[at % len(starts)] if starts else at
            data = data[:at] + arg + data[at:]
        elif kind in ("insert", "bytes"):
            data = data[:at] + arg + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + arg :]
        else:  # repeat the line holding `at`
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end + 1
            data = data[:start] + data[start:end] * arg + data[end:]
        data = data[:CAP]
    return data


def check_one(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    started = time.monotonic()
    try:
        load_contract(path)
    except ProvgraphError as err:
        assert err.exit_code == ExitCode.USAGE, err
        lines = str(err).splitlines()
        assert lines, "an empty error"
        for line in lines:  # each problem one line naming the file
            assert line.startswith(str(path)), line
    assert time.monotonic() - started < SLOW


@pytest.fixture(scope="module")
def contract_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "provgraph.toml"


def test_the_seeds_are_valid_contracts(contract_path: Path) -> None:
    assert len(SEEDS) >= 4
    for seed in SEEDS:
        contract_path.write_bytes(seed)
        load_contract(contract_path)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SEEDS), st.lists(mutation, min_size=1, max_size=4))
def test_mutated_contracts_never_give_an_internal_error(contract_path: Path, seed: bytes, steps) -> None:
    check_one(contract_path, mutate(seed, steps))


@pytest.mark.parametrize(
    "data",
    [
        b"x = " + b"[" * 400_000,
        b"x = " + b"{a=" * 200_000,
        b'x = "' + b"a" * MAX_CONTRACT_BYTES + b'"',
        SEEDS[0] + b"x = " + b"9" * 100_000,
        SEEDS[0] + b"[a]\n" + b"b = 1\n" * 100_000,
        SEEDS[0] + b"[[analysis.family]]\nbogus = 1\n" * 10_000,  # 20,000 schema violations
    ],
    ids=["deep-array", "deep-table", "huge-string", "huge-integer", "duplicate-keys", "many-problems"],
)
def test_hostile_contracts(contract_path: Path, data: bytes) -> None:
    check_one(contract_path, data)
