"""A cheat agent, named in every way a command can name it, sees only itself, for real.

The cheat lives in the project beside its tasks, an earlier run directory and a secret; the
operator's home holds another. Run under bwrap and docker, it tries to read all of them and
walks the project and the home; the task's verifier (run on the host) hands over what it found.
Each form must see its own files and nothing else, and a form that names its script in a way
the sandbox does not show (a bare name or an absolute path under docker, which are the image's)
must not run at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import TEST_IMAGE, skip_unless_sandbox, write_task

pytestmark = pytest.mark.real

CHECKOUT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 180
PARALLEL_RUNS = 3  # pytest processes at a time: each mostly waits for its one trial

PROBE = r"""
import json, os
secrets = json.loads(SECRETS)
saw = {}
for label, path in secrets["paths"].items():
    try:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            if names:
                saw[label] = names
        else:
            with open(path, "rb") as handle:
                saw[label] = handle.read(200).decode(errors="replace")
    except OSError:
        pass
visible = []
for top in secrets["walk"]:
    for root, _dirs, files in os.walk(top):
        visible += [os.path.join(root, name) for name in files]
with open("saw.json", "w") as handle:
    json.dump({"tag": os.environ.get("CHEAT_TAG"), "saw": saw, "visible": visible}, handle)
"""

VERIFY = '#!/bin/sh\ncp saw.json "{results}/saw-$$.json"\n'

# form -> (--agent-cmd, extra options, the cheat's own files it may see, relative to the project)
FORMS: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
    "dot-slash": ("./cheat.sh", [], ("cheat.sh",)),
    "on-path": ("cheat.sh", [], ("cheat.sh",)),
    "sh-script": ("sh cheat.sh", [], ("cheat.sh",)),
    "python-script": ("python3 cheat.py", [], ("cheat.py",)),
    "python-module": ("python3 -m cheatpkg", [], ("cheatpkg/__init__.py", "cheatpkg/__main__.py")),
    "absolute": ("{project}/cheat.sh", [], ("cheat.sh",)),
    "subfolder": ("agents/cheat.sh", [], ("agents/cheat.sh",)),
    "bash-c": ("bash -c './cheat.sh --probe'", [], ("cheat.sh",)),
    "expose": ("sh tools/cheat.sh", ["--agent-expose=tools"], ("tools/cheat.sh",)),
}
# Forms whose script the sandbox does not show, so the cheat never starts.
NOT_RUN: dict[str, set[str]] = {"bwrap": set(), "docker": {"on-path", "absolute"}}


def _cheat_sh(probe: str) -> str:
    return f"#!/bin/sh\nexec python3 - <<'CHEAT_EOF'\n{probe}\nCHEAT_EOF\n"


def _layout(root: Path) -> tuple[Path, Path, Path]:
    """The project (cheats, tasks, an earlier run, a secret), a home with a secret, and a
    results directory for what the cheat found."""
    project, home, results = root / "project", root / "home", root / "results"
    for directory in (project, home, results):
        directory.mkdir()
    (project / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    (project / "secret-project.txt").write_text("project secret\n")
    (project / "agents").mkdir()
    (project / "agents" / "secret-agents.txt").write_text("agents secret\n")
    (home / "secret-home.txt").write_text("home secret\n")
    old_trial = project / ".agentbench" / "runs" / "old-run" / "trials" / "probe-r0"
    old_trial.mkdir(parents=True)
    (old_trial / "diff.patch").write_text("+a passing trial's edit\n")
    tasks = project / "tasks"
    write_task(tasks, "probe", {"README": "probe\n"}, verify=VERIFY.format(results=results))
    write_task(tasks, "other", {"a.txt": "a\n"}, {"a.txt": "expected secret\n"})
    secrets = {
        "paths": {
            "project secret": str(project / "secret-project.txt"),
            "agents secret": str(project / "agents" / "secret-agents.txt"),
            "run directories": str(project / ".agentbench" / "runs"),
            "earlier run": str(old_trial / "diff.patch"),
            "verifier": str(tasks / "probe" / "verify"),
            "expected tree": str(tasks / "other" / "expected" / "a.txt"),
            "home": str(home),
            "home secret": str(home / "secret-home.txt"),
        },
        "walk": [str(project), str(home)],
    }
    probe = PROBE.replace("SECRETS", repr(json.dumps(secrets)))
    for script in ("cheat.sh", "agents/cheat.sh", "tools/cheat.sh"):
        (project / script).parent.mkdir(exist_ok=True)
        (project / script).write_text(_cheat_sh(probe))
        (project / script).chmod(0o755)
    (project / "cheat.py").write_text(probe)
    (project / "cheatpkg").mkdir()
    (project / "cheatpkg" / "__init__.py").write_text("")
    (project / "cheatpkg" / "__main__.py").write_text(probe)
    return project, home, results


def _run(project: Path, home: Path, kind: str, form: str) -> subprocess.CompletedProcess[str]:
    """One pytest run of the cheat in one form, from the top of the project."""
    command, extra, _ = FORMS[form]
    python_path = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{project}{os.pathsep}{os.environ['PATH']}",  # for the on-path form
        "PYTHONPATH": python_path,
        "CHEAT_TAG": f"{kind}/{form}",
    }
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "--agent=command",
        f"--agent-cmd={command.format(project=project)}",
        "--agent-opt=env=CHEAT_TAG",
        "--tasks=tasks",
        "-k",
        "probe",
        f"--sandbox={kind}",
        f"--docker-image={TEST_IMAGE}",
        *extra,
    ]
    return subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_cheat_agent_sees_only_itself_in_every_form(tmp_path: Path, kind: str) -> None:
    skip_unless_sandbox(kind)
    project, home, results = _layout(tmp_path)
    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        outcomes = pool.map(lambda form: _run(project, home, kind, form), FORMS)
        runs = dict(zip(FORMS, outcomes, strict=True))
    found = {}
    for path in results.glob("saw-*.json"):
        record = json.loads(path.read_text())
        found[record["tag"].split("/", 1)[1]] = record
    for form, done in runs.items():
        output = f"{form}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        if form in NOT_RUN[kind]:  # its trial fails: the cheat did not start
            assert done.returncode == 1 and form not in found, output
            continue
        assert done.returncode == 0, output  # the verifier took what the cheat found
        assert form in found, output
        own = {str(project / rel) for rel in FORMS[form][2]}
        assert found[form]["saw"] == {}, (form, found[form]["saw"])
        assert set(found[form]["visible"]) == own, form
