"""A run's label: given with --agentbench-label or the ini, else made from the agent and its
model; it names the run in the summary, the JSON and every report, merge, compare and status."""

from __future__ import annotations

import json

import pytest
from tiny_tasks import make_tasks

from pytest_agentbench.cli import main
from pytest_agentbench.settings import Settings

DISTS = pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
RUN = ["-p", "no:cacheprovider", "--sandbox=tmp", "--tasks=tiny-tasks", "--repeats=2"]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    main(list(args))
    return capsys.readouterr().out.splitlines()


@DISTS
def test_a_label_names_the_run_everywhere(pytester, capsys, dist) -> None:
    make_tasks(pytester.path, 3)
    args = ["--agent=mock", "--agentbench-label=guidance-v2", "--agentbench-dir=run"]
    result = pytester.runpytest_subprocess(*RUN, *args, "--agentbench-json=r.json", *dist)
    result.stdout.fnmatch_lines(["guidance-v2: agent mock  model default  repeats 2  *"])
    assert json.loads((pytester.path / "r.json").read_text())["run"]["name"] == "guidance-v2"
    run = str(pytester.path / "run")
    assert "guidance-v2: agent mock  model default: 6/6 trials done" in cli(capsys, "status", run)
    merged = cli(capsys, "merge", run, "-o", str(pytester.path / "m.json"))
    assert merged[0] == "guidance-v2: 6 trials, 3 tasks from 1 source"
    report = "\n".join(cli(capsys, "report", run, "--format", "md"))
    assert "| guidance-v2 " in report and "None" not in report


def test_the_ini_gives_the_label(pytester) -> None:
    make_tasks(pytester.path, 1)
    pytester.makeini("[pytest]\nagentbench_label = nightly\n")
    result = pytester.runpytest_subprocess(*RUN, "--agent=mock")
    result.stdout.fnmatch_lines(["nightly: agent mock  *"])


def test_two_commands_named_apart_are_merged_and_compared_by_their_names(pytester, capsys) -> None:
    """Without labels both are `command`, told apart by a hash; with them, by name."""
    make_tasks(pytester.path, 2)
    for name, command in (("noop", "true"), ("echo", "echo hi")):
        pytester.runpytest_subprocess(
            *RUN,
            "--agent=command",
            f"--agent-cmd={command}",
            f"--agentbench-label={name}",
            f"--agentbench-dir={name}",
        )
    noop, echo = str(pytester.path / "noop"), str(pytester.path / "echo")
    merged = cli(capsys, "merge", noop, echo, "-o", str(pytester.path / "m.json"))
    assert [line.split(":")[0] for line in merged[:2]] == ["noop", "echo"]
    compared = cli(capsys, "compare", noop, echo)
    assert compared[:2] == ["base      noop", "candidate echo"]
    assert not any("#" in line for line in merged + compared)


def test_runs_of_one_label_pool_and_runs_named_apart_do_not(pytester, capsys) -> None:
    make_tasks(pytester.path, 2)
    for index, name in enumerate(("a", "a", "b")):
        pytester.runpytest_subprocess(
            *RUN, "--agent=mock", f"--agentbench-label={name}", f"--agentbench-dir=r{index}"
        )
    runs = [str(pytester.path / f"r{index}") for index in range(3)]
    merged = cli(capsys, "merge", *runs, "-o", str(pytester.path / "m.json"))
    assert merged == [
        "a: 8 trials, 2 tasks from 2 sources",
        "b: 4 trials, 2 tasks from 1 source",
        "wrote m.json (2 configurations)".replace("m.json", str(pytester.path / "m.json")),
    ]


@pytest.mark.parametrize(
    ("settings", "label"),
    [
        (Settings(agent="mock"), "mock"),
        (
            Settings(agent="codex", model="gpt-5", reasoning="high"),
            "codex model=gpt-5 reasoning=high",
        ),
        (Settings(agent="mock", agent_opts={"seed": "3"}), "mock seed=3"),
        (Settings(agent="codex", model="gpt-5", label="mine"), "mine"),
    ],
)
def test_the_default_label_is_the_agent_and_its_model(settings, label) -> None:
    assert settings.run_label() == label


def test_no_rendering_prints_python_none(pytester, capsys) -> None:
    """Unmeasured usage and settings one side lacks read as unknown or unset, never None."""
    make_tasks(pytester.path, 2)
    texts = [
        pytester.runpytest_subprocess(*RUN, *args, f"--agentbench-dir={name}").stdout.str()
        for name, args in (
            ("plain", ["--agent=oracle"]),
            ("other", ["--agent=mock", "--agent-opt=usage=off", "--model=m1", "-k", "t00"]),
        )
    ]
    plain, other = str(pytester.path / "plain"), str(pytester.path / "other")
    for command in (
        ["status", other],
        ["report", other],
        ["report", other, "--format", "md"],
        ["compare", plain, other],
        ["merge", plain, other, "-o", str(pytester.path / "m.json")],
    ):
        texts.append("\n".join(cli(capsys, *command)))
    assert all("None" not in text for text in texts), [t for t in texts if "None" in t]
