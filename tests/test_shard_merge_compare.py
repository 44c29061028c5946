"""Shards merge back into the unsharded run; compare pairs runs and gates exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.cli import main
from pytest_agentbench.plan.shard import parse_shard, shard_tasks
from pytest_agentbench.scoring.configurations import load_source, merge
from pytest_agentbench.scoring.merged import build_document

BASE = ["-p", "no:randomly", "--agent=mock", "--sandbox=tmp", "--tasks=tiny-tasks", "--repeats=3"]
GATES = """
[[gate]]
name = "first exact holds"
metric = "first_exact"
bound = "lower"
margin = -0.02
[[gate]]
name = "token ceiling"
metric = "tokens"
bound = "upper"
factor = 1.3
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    return make_tasks(pytester.path, 13)


def test_shards_partition_tasks_evenly() -> None:
    ids = [f"task-{i}" for i in range(13)]
    shards = [shard_tasks(ids, i, 3) for i in (1, 2, 3)]
    assert set().union(*shards) == set(ids)
    assert sum(len(s) for s in shards) == 13
    assert sorted(len(s) for s in shards) == [4, 4, 5]
    assert shard_tasks(reversed(ids), 2, 3) == shards[1]
    with pytest.raises(pytest.UsageError, match="expected I/N"):
        parse_shard("0/3")


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_three_shards_merge_into_the_unsharded_run(
    pytester: pytest.Pytester, suite: Path, dist: list[str]
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=full", "--agentbench-json=full.json")
    for index in (1, 2, 3):
        result = pytester.runpytest_subprocess(
            *BASE, f"--agentbench-shard={index}/3", f"--agentbench-dir=shard{index}", *dist
        )
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) in (12, 15)
    out = pytester.path / "merged.json"
    shards = [str(pytester.path / f"shard{i}") for i in (1, 2, 3)]
    assert main(["merge", *shards, "-o", str(out)]) == 0
    full, merged = (json.loads((pytester.path / n).read_text()) for n in ("full.json", out))
    assert merged["summary"] == full["summary"]
    assert merged["tasks"] == full["tasks"]
    assert len(merged["observations"]) == 39
    assert merged["summary"]["tasks_declared"] == 13  # every shard declares the whole suite
    assert main(["merge", *shards, *shards, "-o", str(out)]) == 0  # each trial counts once
    assert json.loads(out.read_text())["summary"] == full["summary"]


def test_different_identities_stay_separate_configurations(
    pytester: pytest.Pytester, suite: Path
) -> None:
    for prob in ("0.9", "0.3"):
        pytester.runpytest_subprocess(
            *BASE, "--agent-opt", f"pass_prob={prob}", f"--agentbench-dir=p{prob}"
        )
    configs = merge([*load_source(pytester.path / "p0.9"), *load_source(pytester.path / "p0.3")])
    document = build_document(configs)
    reports = document["configurations"]
    assert [r["run"]["name"] for r in reports] == ["mock pass_prob=0.9", "mock pass_prob=0.3"]
    assert [r["run"]["rank"] for r in reports] == [1, 2]
    per_config = [
        {t["id"]: t["first_exact"] for t in r["tasks"]} for r in reports
    ]  # each scored on its own
    combined = {t["id"]: t["first_exact"] for t in document["combined"]["tasks"]}
    for task_id, rate in combined.items():
        assert rate == pytest.approx((per_config[0][task_id] + per_config[1][task_id]) / 2)
    assert document["combined"]["first_exact"] == pytest.approx(sum(combined.values()) / 13)


def test_quarantine_keeps_a_stopped_configuration_out_of_the_ranking(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest_subprocess(*BASE, "--repeats=4", "--agentbench-dir=ok")
    pytester.runpytest_subprocess(*BASE, "--repeats=4", "--model=m2", "--agentbench-dir=stop")
    records = pytester.path / "stop" / "observations.jsonl"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    for row in rows[:11]:  # 11 of 52 trials (>= 20%) were provider stops
        row.update(status="provider_stop", cause="429 rate limited")
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    document = build_document(
        merge([*load_source(pytester.path / "ok"), *load_source(pytester.path / "stop")])
    )
    ok, stopped = document["configurations"]
    assert ok["run"]["rank"] == 1 and ok["run"]["quarantined"] is False
    assert stopped["run"]["rank"] is None and stopped["run"]["quarantined"] is True
    assert "11 of 52 trials were provider stops" in stopped["run"]["quarantine"]["reason"]
    assert stopped["summary"]["provider_stops"] == 11  # still visible, with its figures
    assert document["combined"]["first_exact"] == pytest.approx(ok["summary"]["first_exact"])


def test_compare_gates_exit_codes(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for prob in ("0.9", "0.3"):
        pytester.runpytest_subprocess(
            *BASE, "--agent-opt", f"pass_prob={prob}", f"--agentbench-dir=p{prob}"
        )
    gates = pytester.path / "gates.toml"
    gates.write_text(GATES)
    weak, strong = str(pytester.path / "p0.3"), str(pytester.path / "p0.9")
    assert main(["compare", weak, strong, "--gates", str(gates)]) == 0
    out = capsys.readouterr().out
    assert "gate first exact holds: pass" in out and "(13 task pairs)" in out
    assert main(["compare", strong, weak, "--gates", str(gates)]) == 1
    assert "gate first exact holds: FAIL" in capsys.readouterr().out
    pytester.runpytest_subprocess(
        *BASE, "--agent-opt", "pass_prob=0.9", "--agentbench-dir=few", "-k", "t00 or t01 or t02"
    )
    assert main(["compare", weak, str(pytester.path / "few"), "--gates", str(gates)]) == 3
    out = capsys.readouterr().out
    assert "undetermined: too few tasks (3 < 6 pairs)" in out
    # -k narrows what runs, not what the candidate declared: t05 is its task, unobserved
    assert "t05 (all): not declared in candidate" not in out
    both = str(pytester.path / "both.json")
    assert main(["merge", weak, strong, "-o", both]) == 0
    capsys.readouterr()
    assert main(["compare", both, strong]) == 2
    assert "has several configurations; pick one with" in capsys.readouterr().err
    picked = ["compare", f"{both}=mock pass_prob=0.3", f"{both}=mock pass_prob=0.9"]
    assert main([*picked, "--gates", str(gates)]) == 0
    assert "gate first exact holds: pass" in capsys.readouterr().out


def test_compare_refuses_runs_that_cannot_be_paired(
    pytester: pytest.Pytester, suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.runpytest_subprocess(*BASE, "--agentbench-dir=a")
    pytester.runpytest_subprocess(*BASE, "--oracle-recoveries=1", "--agentbench-dir=b")
    assert main(["compare", str(pytester.path / "a"), str(pytester.path / "b")]) == 2
    err = capsys.readouterr().err
    assert "cannot be paired" in err and "oracle_recoveries: recorded 0, now 1" in err


def test_bad_gate_names_the_file_gate_and_field(tmp_path: Path) -> None:
    from pytest_agentbench.scoring.gates import load_gates

    path = tmp_path / "gates.toml"
    path.write_text('[[gate]]\nname = "tok"\nmetric = "tokens"\nbound = "upper"\nmargin = 1\n')
    with pytest.raises(ValueError, match=r"gates.toml:5: gate 1 \(tok\): metric tokens takes"):
        load_gates(path)
