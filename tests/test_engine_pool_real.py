"""A pool of real Docker engines: the machine's, a second dockerd on TLS TCP at 127.0.0.1
(tests/docker_engines.py) and a third reached over ssh://localhost (tests/ssh_engine.py).
40 trials spread over them within their slots, with the results of a one-engine run; under
-n 2 the workers share one placement; and an engine killed mid-run makes its trials
infrastructure failures run again on the other, the engine named down in the run's summary,
its status and engines.json."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from docker_engines import SecondEngine, second_engine
from ssh_engine import SshEngine, ssh_engine, why_no_sshd
from test_concurrency import HALF_SOLVES, comparable, load

from conftest import AGENT_IMAGE, BACKGROUND_RUNS, TEST_IMAGE, simple_tasks, skip_unless_sandbox

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

MAIN = "unix:///var/run/docker.sock"


@pytest.fixture
def engine() -> Iterator[SecondEngine]:
    skip_unless_sandbox("docker")
    try:
        with second_engine(TEST_IMAGE) as started:
            yield started
    except RuntimeError as error:
        pytest.skip(f"no second Docker engine: {error}")


def _tasks(pytester: pytest.Pytester, count: int) -> Path:
    prefix = f"p{uuid.uuid4().hex[:6]}"
    tasks = pytester.path / "tasks"
    simple_tasks(tasks, count)
    for task in tasks.iterdir():
        task.rename(tasks / f"{prefix}-{task.name}")
    return tasks


def _common(tasks: Path, agent_cmd: str = HALF_SOLVES) -> list[str]:
    return [
        "-p",
        "no:cacheprovider",
        "--agent=command",
        f"--agent-cmd={agent_cmd}",
        "--sandbox=docker",
        f"--docker-image={TEST_IMAGE}",
        f"--tasks={tasks}",
    ]


class PeakWatch:
    """The most trials engines.json ever showed held on each engine, read every few ms while
    a run goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.peak: dict[str, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.wait(0.005):
            try:
                state = json.loads(self.path.read_text())
            except (OSError, ValueError):
                continue
            for name in state.get("engines", {}):
                held = sum(h["engine"] == name for h in state.get("held", {}).values())
                self.peak[name] = max(self.peak.get(name, 0), held)

    def stop(self) -> dict[str, int]:
        self.done.set()
        self.thread.join(5)
        return self.peak


TRIALS = (10, 4)  # tasks, repeats: 40 trials


@dataclass(frozen=True)
class Member:
    """An engine of the pool under test: its --docker-host URL, its name in reports, slots."""

    url: str
    name: str
    slots: int


def _spread(pytester: pytest.Pytester, pool: list[Member], workers: int) -> None:
    """40 trials over the pool: every engine used, none past its slots, the results those of
    a run on the machine's engine alone; status and clean name every engine."""
    tasks = _tasks(pytester, TRIALS[0])
    common = [*_common(tasks), f"--repeats={TRIALS[1]}", "--agentbench-concurrency=4"]
    one = pytester.runpytest_subprocess(*common, "--agentbench-json=one.json", timeout=300)
    run_dir = pytester.path / "pool-run"
    watch = PeakWatch(run_dir / "engines.json")
    pool_run = pytester.runpytest_subprocess(
        *common,
        f"-n{workers}",
        *(f"--docker-host={m.url}#slots={m.slots}" for m in pool),
        f"--agentbench-dir={run_dir}",
        "--agentbench-json=pool.json",
        timeout=300,
    )
    peak = watch.stop()
    assert one.ret == pool_run.ret == pytest.ExitCode.TESTS_FAILED, pool_run.stdout.str()[-3000:]
    reference, pooled = load(pytester.path / "one.json"), load(pytester.path / "pool.json")
    assert len(pooled["observations"]) == TRIALS[0] * TRIALS[1]
    assert sum(o["final_exact"] for o in reference["observations"]) == 3 * TRIALS[1]
    engines = [o.pop("engine") for o in pooled["observations"]]
    for report in (reference, pooled):  # each attempt's time is measured
        for o in report["observations"]:
            o["attempt_log"] = [{**a, "wall_s": None} for a in o["attempt_log"]]
    assert comparable(reference) == comparable(pooled)  # the results of one engine
    assert set(engines) == {m.name for m in pool}, engines  # every engine used
    state = json.loads((run_dir / "engines.json").read_text())
    assert state["held"] == {}
    assert {n: e["trials"] for n, e in state["engines"].items()} == {
        m.name: engines.count(m.name) for m in pool
    }
    assert all(peak[m.name] <= m.slots for m in pool), peak
    assert max(peak.values()) >= 2, peak  # trials were in flight together
    pool_run.stdout.fnmatch_lines(
        ["agentbench: docker engines " + ", ".join(f"{m.name} ({m.slots} slots)" for m in pool)]
    )
    lines = pytester.run("agentbench", "status", str(run_dir)).stdout.lines
    for m in pool:
        assert any(line.strip().startswith(f"{m.name}: {m.slots} slots") for line in lines), lines
    cleaned = pytester.run(
        "agentbench", "clean", "--dry-run", *(f"--docker-host={m.url}" for m in pool)
    )
    cleaned.stdout.fnmatch_lines(
        [f"would remove 0 containers * that are gone on {m.name}" for m in pool],
        consecutive=False,
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_trials_spread_over_two_engines_within_their_slots(
    pytester: pytest.Pytester, engine: SecondEngine, workers: int
) -> None:
    _spread(pytester, [Member(MAIN, MAIN, 2), Member(engine.tcp_url, engine.tcp_name, 3)], workers)


@pytest.fixture
def over_ssh(engine: SecondEngine, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshEngine]:
    """A third engine, reached over ssh://localhost: another dockerd behind an sshd of the
    test's own; the runs' ssh client is given that sshd's key and host key."""
    why = why_no_sshd()
    if why:
        pytest.skip(why)
    try:
        with second_engine(TEST_IMAGE) as third, ssh_engine(third.unix_url) as ssh:
            monkeypatch.setenv("PATH", ssh.env()["PATH"])
            yield ssh
    except RuntimeError as error:
        pytest.skip(f"no third Docker engine over ssh: {error}")


def test_trials_spread_over_three_engines_one_reached_over_ssh(
    pytester: pytest.Pytester, engine: SecondEngine, over_ssh: SshEngine
) -> None:
    _spread(
        pytester,
        [
            Member(MAIN, MAIN, 2),
            Member(engine.tcp_url, engine.tcp_name, 2),
            Member(over_ssh.url, over_ssh.url, 2),
        ],
        2,
    )


def test_an_engine_that_dies_mid_run_has_its_trials_run_again_elsewhere(
    pytester: pytest.Pytester, engine: SecondEngine
) -> None:
    tasks = _tasks(pytester, 6)
    run_dir = pytester.path / "pool-run"
    args = [
        *_common(tasks, f"sleep 3; {HALF_SOLVES}"),
        "--agentbench-concurrency=6",
        f"--docker-host={MAIN}#slots=2",
        f"--docker-host={engine.tcp_url}#slots=4",
        f"--agentbench-dir={run_dir}",
        "--agentbench-json=pool.json",
    ]
    log = pytester.path / "run.log"
    with log.open("w") as output:
        process = pytester.popen(
            [sys.executable, "-m", "pytest", *args], stdout=output, stderr=subprocess.STDOUT
        )
    BACKGROUND_RUNS.append(process)
    placement = run_dir / "engines.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until trials run on the second engine
        try:
            held = json.loads(placement.read_text())["held"].values()
        except (OSError, ValueError, KeyError):
            held = []
        if sum(h["engine"] == engine.tcp_name for h in held) >= 2:
            break
        time.sleep(0.05)
    else:
        pytest.fail("no trial started on the second engine")
    time.sleep(1.0)  # its trials are in their rounds
    engine.kill()
    assert process.wait(240) == pytest.ExitCode.TESTS_FAILED, log.read_text()[-3000:]
    report = load(pytester.path / "pool.json")
    observations = report["observations"]
    assert len(observations) == 6
    # Nothing lost: every trial scored, those on the dead engine after a retry on the other.
    assert all(o["status"] == "scored" for o in observations), observations
    assert sum(o["final_exact"] for o in observations) == 3
    retried = [o for o in observations if o.get("infra_retries")]
    assert retried, "the trials in flight on the killed engine were run again"
    for o in retried:
        assert o["engine"] == MAIN
        assert [r["engine"] for r in o["infra_retries"]] == [engine.tcp_name]
        assert o["infra_retries"][0]["cause"] == "docker_engine"
    state = json.loads(placement.read_text())
    assert state["engines"][engine.tcp_name]["down"], state
    assert state["engines"][MAIN]["down"] is None
    status = pytester.run("agentbench", "status", str(run_dir)).stdout.str()
    assert f"{engine.tcp_name}: 4 slots" in status and "DOWN for the rest of the run" in status
    assert f"engine {engine.tcp_name} DOWN: no answer to a ping" in log.read_text()


@pytest.fixture
def agents_engine() -> Iterator[SecondEngine]:
    """A second engine holding the image with the agent CLIs (about a minute to load)."""
    skip_unless_sandbox("docker-image")
    try:
        with second_engine(AGENT_IMAGE) as started:
            yield started
    except RuntimeError as error:
        pytest.skip(f"no second Docker engine: {error}")


def test_a_codex_trial_on_the_tls_engine_is_metered_through_the_listening_address(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    agents_engine: SecondEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pool's only engine is the TLS one: the workspace is copied in and out, the CLI is
    the image's own, and the meter is reached at this machine's outward address, its tokens
    those the model server served."""
    from test_agents_real import EDIT, EXPECTED, INPUT, PROMPT, USAGE, served_totals
    from test_meter_listen import _outward_address

    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    monkeypatch.setenv("AGENTBENCH_TEST_KEY", f"sk-scripted-{uuid.uuid4().hex}")
    server = agentbench_model_server(
        {"usage": USAGE, "turns": [EDIT, {"message": "Changed hello to goodbye."}]}
    )
    task = pytester.path / "tasks" / f"edit-notes-{uuid.uuid4().hex[:8]}"
    (task / "workspace").mkdir(parents=True)
    (task / "expected").mkdir()
    (task / "task.toml").write_text(f'prompt = "{PROMPT}"\ntimeout = 60\n')
    (task / "workspace" / "notes.txt").write_text(INPUT)
    (task / "expected" / "notes.txt").write_text(EXPECTED)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent=codex",
        "--sandbox=docker",
        f"--docker-image={AGENT_IMAGE}",
        f"--docker-host={agents_engine.tcp_url}",
        f"--agentbench-meter-listen={address}",
        "--agentbench-meter-insecure",
        f"--tasks={task}",
        "--model=scripted-model",
        "--agent-opt=bin=codex",
        f"--agent-opt=base_url={server.openai_base_url}",
        "--agent-opt=api_key_env=AGENTBENCH_TEST_KEY",
        "--agent-opt=retries=0",
        "--agentbench-json=report.json",
        timeout=180,
    )
    result.assert_outcomes(passed=1)
    (obs,) = load(pytester.path / "report.json")["observations"]
    assert obs["engine"] == agents_engine.tcp_name
    assert obs["status"] == "scored" and obs["first_exact"] is True
    assert obs["metered"]["requests"] == len(server.requests) >= 2
    assert obs["tokens"] == served_totals(server, "codex")
