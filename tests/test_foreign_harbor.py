"""Harbor / Terminal-Bench 2 tasks run as they are: each in the image its Dockerfile builds,
graded by the reward its tests/test.sh writes inside a container.

tests/fixtures/harbor is a small suite in that format, built FROM the local test image (no
registry is reachable): fix-greeting writes reward.txt and its solve.sh checks that /tests is
absent while it works; count-lines writes reward.json and sets the [environment], [verifier]
and [solution] tables; sort-names's image runs as `nobody`, who works and runs its tests there;
add-command's image sets no USER, so its solve.sh works as root (it installs a command in
/usr/local/bin), as Harbor runs it.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from pytest_agentbench.grading.validate import validate
from pytest_agentbench.sandbox.docker import ArchiveTooLarge, _replace_from_tar
from pytest_agentbench.sandbox.task_image import BuiltImage, _keep_links, host_values, task_limits
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.tasks.formats import load_task_dir
from pytest_agentbench.tasks.model import TaskError
from pytest_agentbench.tasks.sources import bring_own_images
from pytest_agentbench.testing.clis import find_cli, missing_reason

from conftest import skip_unless_sandbox, write_tree

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]

SUITE = Path(__file__).parent / "fixtures" / "harbor"
DOCKER = ("-p", "no:cacheprovider", "--sandbox=docker")
DISTS = [pytest.param((), id="n0"), pytest.param(("-n", "2"), id="n2")]
TASKS = ("add-command", "count-lines", "fix-greeting", "sort-names")
GOOD_TASK = {
    "task.toml": 'version = "1.0"\n[metadata]\nanything = { goes = "here" }\n',
    "instruction.md": "Do it.\n",
    "environment/Dockerfile": "FROM agentbench-test:1\nWORKDIR /app\n",
    "tests/test.sh": "echo 0 > /logs/verifier/reward.txt\n",
}


def test_the_fields_map_onto_the_task() -> None:
    task = load_task_dir(SUITE / "count-lines")
    spec = task.container
    assert spec is not None
    assert task.prompt.startswith("Count the lines of /app/data/rows.txt")
    assert (task.timeout, task.verify_timeout, task.category) == (120.0, 60.0, "data")
    assert (spec.network, spec.memory_bytes, spec.cpus) == (False, 256 << 20, None)
    assert (dict(spec.verifier_env), dict(spec.solution_env)) == (
        {"EXPECTED_LINES": "3"},
        {"TARGET": "count.txt"},
    )
    assert (spec.test_script, spec.solve_script) == ("/tests/test.sh", "/solution/solve.sh")
    greeting = load_task_dir(SUITE / "fix-greeting")
    assert greeting.tags == ("python", "typo")
    assert greeting.container is not None and greeting.container.cpus == 1.0
    assert greeting.meta == {"format": "harbor"}
    # Harbor verifies a timed-out or failing agent's work: the reward alone decides.
    assert (greeting.round_exact(True, clean=False), greeting.round_exact(False, True)) == (
        True,
        False,
    )
    # The fixture hash covers the whole directory, without building the image.
    assert greeting.fixture_hash == load_task_dir(SUITE / "fix-greeting").fixture_hash
    assert greeting.fixture_hash != task.fixture_hash


@pytest.mark.parametrize(
    ("change", "culprit", "message"),
    [
        ({"tests/test.sh": None}, "tests/test.sh", "missing; a Harbor task needs it"),
        (
            {"task.toml": 'version = "1.0"\ntimeout = 3\n'},
            "task.toml:2",
            ": unknown key `timeout`; a Harbor task.toml holds",
        ),
        (
            {"task.toml": "[environment]\nallow_internet = true\ncpu = 2\n"},
            "task.toml:3",
            ": unknown key `cpu` in [environment] (did you mean `cpus`?); it reads",
        ),
        (
            {"task.toml": '[agent]\nuser = "a"\ntimeout = 5\n'},
            "task.toml:3",
            ": unknown key `timeout` in [agent] (did you mean `timeout_sec`?); it reads",
        ),
        (
            {"task.toml": 'version = "1.0"\n[envrionment]\ncpus = 2\n'},
            "task.toml:2",
            ": unknown table `envrionment` (did you mean `environment`?); a Harbor task.toml",
        ),
        ({"task.toml": "[environment]\ngpus = 1\n"}, "task.toml", "gpus is not supported"),
        (
            {"environment/Dockerfile": None, "environment/Dockerfile/x": "y"},
            "environment/Dockerfile",
            "cannot be read",
        ),
        ({"environment/Dockerfile": b"\xff\xfe"}, "environment/Dockerfile", "cannot be read"),
        ({"task.toml": "[agent]\ntimeout_sec = 0\n"}, "task.toml", "must be a positive number"),
        ({"task.toml": "[agent]\nuser = true\n"}, "task.toml", "[agent] user True: expected"),
        ({"task.toml": '[verifier]\nuser = "a b"\n'}, "task.toml", "[verifier] user 'a b'"),
        ({"task.toml": "[verifier]\nuser = -1\n"}, "task.toml", "[verifier] user -1"),
    ],
)
def test_malformed_tasks_name_the_file_and_fix(
    tmp_path: Path, change: dict[str, str | bytes | None], culprit: str, message: str
) -> None:
    task_dir = tmp_path / "t"
    files = {**GOOD_TASK, **change}
    write_tree(task_dir, {rel: data for rel, data in files.items() if data is not None})
    with pytest.raises(TaskError, match="^" + str(task_dir / culprit)) as raised:
        load_task_dir(task_dir)
    assert message in str(raised.value)


def test_agent_and_verifier_users_are_kept_as_docker_takes_them(tmp_path: Path) -> None:
    users = '[agent]\nuser = "builder:staff"\n[verifier]\nuser = 65534\n'
    write_tree(tmp_path / "t", {**GOOD_TASK, "task.toml": users})
    spec = load_task_dir(tmp_path / "t").container
    assert spec is not None and (spec.agent_user, spec.verifier_user) == ("builder:staff", "65534")
    default = load_task_dir(SUITE / "sort-names").container
    assert default is not None and (default.agent_user, default.verifier_user) == ("", "")


PASSWD = "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/:/usr/sbin/nologin\nbad\n"
GROUP = "root:x:0:\nstaff:x:50:\nnogroup:x:65534:\n"


@pytest.mark.parametrize(
    ("user", "image_user", "ids"),
    [
        ("", "", (0, 0)),
        ("", "nobody", (65534, 65534)),
        ("nobody", "", (65534, 65534)),
        ("nobody:staff", "", (65534, 50)),
        ("1000", "nobody", (1000, 0)),
        ("65534:7", "", (65534, 7)),
    ],
)
def test_a_user_resolves_to_ids_as_the_engine_does(
    user: str, image_user: str, ids: tuple[int, int]
) -> None:
    built = BuiltImage("t:1", "/app", image_user, Path("/nonexistent"), PASSWD, GROUP)
    assert built.ids(user, "task.toml: [agent] user") == ids


def test_an_unknown_user_or_group_names_where_it_was_set() -> None:
    built = BuiltImage("t:1", "/app", "", Path("/nonexistent"), PASSWD, GROUP)
    with pytest.raises(TaskError, match=r"^task.toml: \[agent\] user: user 'builder' is not in"):
        built.ids("builder", "task.toml: [agent] user")
    with pytest.raises(
        TaskError, match=r"^Dockerfile: USER: group 'wheel' is not in the image t:1"
    ):
        built.ids("nobody:wheel", "Dockerfile: USER")


def _archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def _entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


def test_a_workspace_copied_out_keeps_symlinks_and_never_writes_through_them(
    tmp_path: Path,
) -> None:
    """An agent's venv links python to /usr/bin; a FIFO it left is skipped; but no member may
    land outside the copy, through a link or otherwise."""
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "copy"
    good = _archive(
        (_entry("app", tarfile.DIRTYPE), b""),
        (_entry("app/python", tarfile.SYMTYPE, "/usr/bin/python3"), b""),
        (_entry("app/up", tarfile.SYMTYPE, "../../outside"), b""),
        (_entry("app/pipe", tarfile.FIFOTYPE), b""),
        (_entry("app/a.txt"), b"a"),
    )
    good.extractall(dest, filter=_keep_links)
    assert os.readlink(dest / "app" / "python") == "/usr/bin/python3"
    assert sorted(p.name for p in (dest / "app").iterdir()) == ["a.txt", "python", "up"]
    through = _archive((_entry("app/up/planted"), b"x"))
    with pytest.raises(tarfile.OutsideDestinationError):
        through.extractall(dest, filter=_keep_links)
    assert list(outside.iterdir()) == []


def test_a_copy_past_its_limit_is_read_through_but_not_kept(tmp_path: Path) -> None:
    """What the agent left past --sandbox-disk never lands on this machine's disk, and the
    engine's stream is read to its end (its connection then serves the next request)."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = _entry("app/big.bin")
        info.size = 4096
        tar.addfile(info, io.BytesIO(b"x" * 4096))
    chunks = [archive.getvalue()[i : i + 1024] for i in range(0, len(archive.getvalue()), 1024)]
    read = []
    host = tmp_path / "workspace"
    host.mkdir()
    (host / "before.txt").write_text("kept\n")
    with pytest.raises(ArchiveTooLarge) as raised:
        _replace_from_tar((read.append(c) or c for c in chunks), host, limit=2048)
    assert raised.value.size == len(archive.getvalue()) and len(read) == len(chunks)
    assert [p.name for p in tmp_path.rglob("*")] == ["workspace", "before.txt"]
    _replace_from_tar(iter(chunks), host, limit=len(archive.getvalue()))
    assert (host / "big.bin").stat().st_size == 4096


def test_a_task_without_its_instruction_is_named_by_its_keys(tmp_path: Path) -> None:
    write_tree(tmp_path / "t", {"task.toml": "[verifier]\ntimeout_sec = 5.0\n"})
    with pytest.raises(TaskError, match=r"instruction\.md: missing; .* look like a harbor task"):
        load_task_dir(tmp_path / "t")


def test_the_tasks_limits_replace_the_runs() -> None:
    run = SimpleNamespace(limits=SandboxLimits(network="host", cpus=2.0, memory="4g"))
    offline = task_limits(run, load_task_dir(SUITE / "count-lines").container)  # type: ignore[arg-type]
    assert (offline.network, offline.cpus, offline.memory_bytes) == ("none", 2.0, 256 << 20)
    greeting = task_limits(run, load_task_dir(SUITE / "fix-greeting").container)  # type: ignore[arg-type]
    assert (greeting.network, greeting.cpus, greeting.memory_bytes) == ("host", 1.0, 512 << 20)
    assert task_limits(run, load_task_dir(SUITE / "sort-names").container).network == "none"  # type: ignore[arg-type]


def test_env_templates_take_this_machines_values(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_task_dir(SUITE / "count-lines").container
    assert spec is not None
    monkeypatch.setenv("JUDGE_KEY", "k-1")
    monkeypatch.delenv("NOT_SET_HERE", raising=False)
    env = {"KEY": "${JUDGE_KEY}", "MODE": "${NOT_SET_HERE:-strict}", "PLAIN": "$x"}
    assert host_values(spec, env, "verifier") == {"KEY": "k-1", "MODE": "strict", "PLAIN": "$x"}
    with pytest.raises(TaskError, match=r"count-lines/task\.toml: \[verifier\] env needs"):
        host_values(spec, {"KEY": "${NOT_SET_HERE}"}, "verifier")


def test_only_harbor_sources_spare_the_docker_image(tmp_path: Path) -> None:
    write_tree(tmp_path / "native", {"t/task.toml": 'prompt = "p"\n', "t/expected/a": "a"})
    assert bring_own_images((str(SUITE),), tmp_path)
    assert bring_own_images((f"harbor:{SUITE}",), tmp_path)
    assert not bring_own_images((str(SUITE), str(tmp_path / "native")), tmp_path)
    assert not bring_own_images((), tmp_path)


def test_other_sandboxes_refuse_each_harbor_task(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--agent=oracle", "--sandbox=tmp", f"--tasks={SUITE}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(
        ["*fix-greeting: a Harbor task runs in the image * run it with --sandbox=docker*"]
    )


def test_list_names_the_tasks() -> None:
    argv = ["agentbench", "list", f"--tasks={SUITE}"]
    listed = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t")[:2] for line in listed.splitlines() if not line.startswith("#")]
    assert rows == [
        ["add-command", "system"],
        ["count-lines", "data"],
        ["fix-greeting", "debugging"],
        ["sort-names", "text"],
    ]


def _rewards(run_root: Path) -> dict[str, float | None]:
    (run,) = (run_root / ".agentbench" / "runs").iterdir()
    lines = (run / "observations.jsonl").read_text().splitlines()
    return {o["task"]: o["rounds"][0]["reward"] for o in map(json.loads, lines)}


@pytest.mark.real
@pytest.mark.parametrize("dist", DISTS)
def test_the_oracle_passes_every_task(pytester: pytest.Pytester, dist: tuple[str, ...]) -> None:
    skip_unless_sandbox("docker")
    result = pytester.runpytest_subprocess("--agent=oracle", *DOCKER, f"--tasks={SUITE}", *dist)
    result.assert_outcomes(passed=4)
    assert _rewards(pytester.path) == dict.fromkeys(TASKS, 1.0)


@pytest.mark.real
def test_the_mock_reaches_the_reference_as_the_oracle_does(pytester: pytest.Pytester) -> None:
    skip_unless_sandbox("docker")
    mock = ("--agent=mock", "--agent-opt=pass_prob=1")
    result = pytester.runpytest_subprocess(*mock, *DOCKER, f"--tasks={SUITE}")
    result.assert_outcomes(passed=4)


@pytest.mark.real
def test_nop_fails_every_task_on_its_reward(pytester: pytest.Pytester) -> None:
    skip_unless_sandbox("docker")
    result = pytester.runpytest_subprocess("--agent=nop", *DOCKER, f"--tasks={SUITE}", "-rA")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED add-command::r0 - reward 0 (/logs/verifier/reward.txt)",
            "FAILED count-lines::r0 - reward 0 (/logs/verifier/reward.json)",
            "FAILED fix-greeting::r0 - reward 0 (/logs/verifier/reward.txt)",
            "FAILED sort-names::r0 - reward 0 (/logs/verifier/reward.txt)",
        ]
    )
    assert _rewards(pytester.path) == dict.fromkeys(TASKS, 0.0)
    (run,) = (pytester.path / ".agentbench" / "runs").iterdir()
    trials = run / "trials"
    verifier = (trials / "count-lines-r0" / "verifier.txt").read_text()
    assert verifier == "reward 0 (/logs/verifier/reward.json)\ncount.txt holds: missing\n"
    assert "verifier user: nobody\n" in (trials / "sort-names-r0" / "verifier.txt").read_text()


@pytest.mark.real
def test_what_the_agent_writes_as_root_comes_back_as_the_runners(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """solve.sh, as root, leaves a file only root may read in the workspace: the kept copy is
    this user's and readable, and nothing of the trial is left in the temp dir that this user
    could not remove (CI runs this as an ordinary user too)."""
    skip_unless_sandbox("docker")
    scratch = pytester.path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    result = pytester.runpytest_subprocess(
        "--agent=oracle", *DOCKER, f"--tasks={SUITE}", "-k", "add-command", "--agentbench-keep=all"
    )
    result.assert_outcomes(passed=1)
    (run,) = (pytester.path / ".agentbench" / "runs").iterdir()
    kept = run / "trials" / "add-command-r0" / "workspace" / "installed-by.txt"
    assert kept.read_text() == "root\n"
    assert kept.stat().st_uid == os.getuid()
    assert [p for p in scratch.rglob("*") if p.lstat().st_uid != os.getuid()] == []


@pytest.mark.real
def test_agent_and_verifier_users_run_each_phase(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """[agent] user runs solve.sh and [verifier] user (a uid) runs the tests, instead of the
    image's root; a user the image does not know errors its trial, naming the key."""
    skip_unless_sandbox("docker")
    users = '[agent]\nuser = "nobody"\n[verifier]\nuser = 65534\n'
    dockerfile = "FROM agentbench-test:1\nWORKDIR /app\nRUN chown nobody /app\n"
    check = '[ "$(cat who.txt)" = nobody ] && [ "$(id -un)" = nobody ] && r=1 || r=0\n'
    write_tree(
        tmp_path / "users",
        {
            **GOOD_TASK,
            "task.toml": users,
            "environment/Dockerfile": dockerfile,
            "solution/solve.sh": "id -un > who.txt\n",
            "tests/test.sh": check + "echo $r > /logs/verifier/reward.txt\n",
        },
    )
    stranger = {**GOOD_TASK, "task.toml": '[agent]\nuser = "builder"\n'}
    write_tree(tmp_path / "stranger", {**stranger, "solution/solve.sh": "true\n"})
    result = pytester.runpytest_subprocess("--agent=oracle", *DOCKER, f"--tasks={tmp_path}", "-rA")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [f"*{tmp_path}/stranger/task.toml: [[]agent[]] user: user 'builder' is not in the image*"]
    )


@pytest.mark.real
def test_a_reward_the_agent_plants_never_reaches_the_verifier(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """As root the agent may write /logs/verifier/reward.txt; the verifier's own reward.json
    (read only when no reward.txt is there) still decides."""
    skip_unless_sandbox("docker")
    write_tree(
        tmp_path / "planted",
        {
            **GOOD_TASK,
            "solution/solve.sh": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n",
            "tests/test.sh": "echo '{\"reward\": 0}' > /logs/verifier/reward.json\n",
        },
    )
    result = pytester.runpytest_subprocess("--agent=oracle", *DOCKER, f"--tasks={tmp_path}", "-rA")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED planted::r0 - reward 0 (/logs/verifier/reward.json)"])


@pytest.mark.real
def test_an_agent_that_swaps_its_workspace_for_a_symlink_fails_as_a_graded_trial(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """As root the agent may replace /app with a link to /etc: the trial is graded (reward 0),
    and the host's copy of the workspace is an empty directory, not a link to follow."""
    skip_unless_sandbox("docker")
    write_tree(tmp_path / "swap", GOOD_TASK)
    swap = "--agent-cmd=cd / && rm -rf /app && ln -s /etc /app"
    result = pytester.runpytest_subprocess(
        "--agent=command", swap, *DOCKER, f"--tasks={tmp_path}", "--agentbench-keep=all", "-rA"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["FAILED swap::r0 - reward 0 (/logs/verifier/reward.txt)"])
    (run,) = (pytester.path / ".agentbench" / "runs").iterdir()
    kept = run / "trials" / "swap-r0" / "workspace"
    assert not kept.is_symlink() and list(kept.iterdir()) == []


@pytest.mark.real
def test_a_workspace_past_the_disk_limit_is_not_graded(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """The agent fills its working directory in the container: the round is over
    --sandbox-disk and not graded."""
    skip_unless_sandbox("docker")
    write_tree(tmp_path / "fill", GOOD_TASK)
    fill = "--agent-cmd=head -c 3000000 /dev/zero > big.bin"
    result = pytester.runpytest_subprocess(
        "--agent=command", fill, *DOCKER, f"--tasks={tmp_path}", "--sandbox-disk=1m"
    )
    result.assert_outcomes(failed=1)
    (run,) = (pytester.path / ".agentbench" / "runs").iterdir()
    (observation,) = map(json.loads, (run / "observations.jsonl").read_text().splitlines())
    (record,) = observation["rounds"]
    assert record["over_disk"].startswith("workspace grew past --sandbox-disk 1 MiB: 2.9")
    assert "reward" not in record


@pytest.mark.real
def test_a_verifier_without_a_reward_fails_with_a_null_reward(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """No reward file, or a verifier killed at its timeout_sec: not exact, reward unknown."""
    skip_unless_sandbox("docker")
    slow = "[verifier]\ntimeout_sec = 1.0\n"
    write_tree(tmp_path / "silent", {**GOOD_TASK, "tests/test.sh": "echo checked\n"})
    write_tree(
        tmp_path / "slow",
        {
            **GOOD_TASK,
            "task.toml": slow,
            "tests/test.sh": "sleep 30; echo 1 > /logs/verifier/reward.txt\n",
        },
    )
    result = pytester.runpytest_subprocess("--agent=nop", *DOCKER, f"--tasks={tmp_path}", "-rA")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random(
        ["FAILED silent::r0 - no reward: the verifier wrote neither*"]
    )
    assert _rewards(pytester.path) == {"silent": None, "slow": None}
    (run,) = (pytester.path / ".agentbench" / "runs").iterdir()
    verifier = (run / "trials" / "slow-r0" / "verifier.txt").read_text()
    assert verifier.endswith("verifier timed out after 1 s (timeout_sec in [verifier])")


@pytest.mark.real
def test_a_broken_task_errors_alone_and_counts_as_declared(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    skip_unless_sandbox("docker")
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    write_tree(
        suite / "no-build",
        {**GOOD_TASK, "environment/Dockerfile": "FROM agentbench-test:1\nRUN exit 3\n"},
    )
    write_tree(suite / "no-tests", {k: v for k, v in GOOD_TASK.items() if k != "tests/test.sh"})
    write_tree(suite / "odd-key", {**GOOD_TASK, "task.toml": "[agent]\ntimeout = 5\n"})
    unreadable = {k: v for k, v in GOOD_TASK.items() if k != "environment/Dockerfile"}
    write_tree(suite / "no-dockerfile", {**unreadable, "environment/Dockerfile/x": "a dir"})
    prebuilt = '[environment]\ndocker_image = "agentbench-test:1"\n'  # its WORKDIR is /
    write_tree(suite / "no-workdir", {**unreadable, "task.toml": prebuilt})
    result = pytester.runpytest_subprocess("--agent=oracle", *DOCKER, f"--tasks={suite}", "-rA")
    result.assert_outcomes(passed=4, errors=5)
    result.stdout.fnmatch_lines_random(
        [
            f"*{suite}/no-build/environment/Dockerfile: the image does not build*",
            f"*{suite}/no-tests/tests/test.sh: missing; a Harbor task needs it*",
            f"*{suite}/odd-key/task.toml:2: unknown key `timeout` in [[]agent[]]*",
            f"*{suite}/no-dockerfile/environment/Dockerfile: cannot be read*",
            f"*{suite}/no-workdir/task.toml: the image agentbench-test:1 has no working dir*",
            "*coverage 44.4% (4 of 9 declared tasks)*",
        ]
    )


@pytest.mark.real
def test_validate_fails_the_pristine_tree_and_passes_the_solution(tmp_path: Path) -> None:
    skip_unless_sandbox("docker")
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    (suite / "count-lines" / "solution" / "solve.sh").write_text("true\n")
    (suite / "fix-greeting" / "tests" / "test.sh").write_text(
        "echo 1 > /logs/verifier/reward.txt\n"
    )
    problems = {v.task_id: v.problems for v in validate((str(suite),), tmp_path)}
    assert problems == {
        "add-command": [],
        "count-lines": ["the reference result fails: reward 0 (/logs/verifier/reward.json)"],
        "fix-greeting": ["the pristine workspace passes: the task tests nothing"],
        "sort-names": [],
    }
    fine = validate((str(SUITE),), SUITE)
    assert {v.task_id: v.problems for v in fine} == {task: [] for task in TASKS}


@pytest.mark.real
@pytest.mark.parametrize("cli", ["codex", "claude", "opencode"])
def test_a_real_cli_works_in_the_image_and_never_sees_the_tests(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    monkeypatch: pytest.MonkeyPatch,
    cli: str,
) -> None:
    """The CLI (host-installed, mounted into the task's container) edits the image's working
    directory; /tests and /solution are not there while it works."""
    skip_unless_sandbox("docker")
    if find_cli(cli) is None:
        pytest.skip(missing_reason(cli))
    look = {"calls": [{"shell": "pwd; ls -d /tests /solution 2>&1"}]}
    line = 'print("Hello, {}")'  # codex's patch replaces whole lines
    edit = {
        "calls": [{"edit": "greet.py", "old": line.format("wrold"), "new": line.format("world")}]
    }
    server = agentbench_model_server({"turns": [look, edit, {"message": "Fixed."}]})
    base_url = server.base_url if cli == "claude" else server.openai_base_url
    monkeypatch.setenv("AGENTBENCH_TEST_KEY", "sk-scripted-harbor")
    result = pytester.runpytest_subprocess(
        f"--agent={cli}",
        *DOCKER,
        f"--tasks={SUITE}",
        "-k",
        "fix-greeting",
        "--model=scripted-model",
        f"--agent-opt=bin={find_cli(cli)}",
        f"--agent-opt=base_url={base_url}",
        "--agent-opt=api_key_env=AGENTBENCH_TEST_KEY",
        *(() if cli == "opencode" else ("--agent-opt=retries=0",)),  # opencode has none
        timeout=120,
    )
    result.assert_outcomes(passed=1)
    seen = json.dumps([request.body for request in server.tool_requests()])
    assert "/app" in seen
    assert "access '/tests': No such file or directory" in seen
    assert "access '/solution': No such file or directory" in seen
