"""A SWE-bench instance's grade, as the official harness gives it: the agent's change is the diff
against base_commit, taken on a snapshot of its finished container; a fresh container of the
instance's image gets that diff applied the harness's way (git apply, then --reject, then
patch --fuzz=5) and runs the eval script swebench writes for the instance (test_patch applied,
its test command run between markers); swebench's own log parser and report decide.

The swebench package is imported here only, when a trial is graded: it pulls heavy modules.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_agentbench.fs.filework import remove_later
from pytest_agentbench.grading.grade import VERIFIER_OUTPUT_LIMIT, Grade
from pytest_agentbench.grading.reward import snapshot_of
from pytest_agentbench.sandbox.docker import DockerSandbox, engine_errors
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.sandbox.task_image import run_as_verifier, task_limits
from pytest_agentbench.tasks.model import Task, TaskError
from pytest_agentbench.tasks.swebench import WORKDIR, instance_fields

INSTALL = "pip install 'pytest-agentbench[swebench]'"
DIFF_DIR = "/tmp/agentbench-diff"
EVAL_DIR = "/tmp/agentbench-eval"
DIFF_TIMEOUT = 300.0
LOG_MARKER = "--- test_output.txt ---"  # the verifier output's log follows this line
# The official harness's order of tries (swebench.harness.run_evaluation.GIT_APPLY_CMDS).
APPLY = """cd {workdir}
[ -s {patch} ] || {{ echo '>>>>> Empty patch: nothing to apply'; exec bash {eval} >{log} 2>&1; }}
for cmd in 'git apply --verbose' 'git apply --verbose --reject' 'patch --batch --fuzz=5 -p1 -i'; do
  if $cmd {patch}; then echo ">>>>> Applied Patch ($cmd)"; exec bash {eval} >{log} 2>&1; fi
done
echo '>>>>> Patch Apply Failed'
exit 97
"""
# Untracked files count as the agent's too: everything is staged, then diffed against the base.
DIFF = """cd {workdir}
git() {{ command git -c core.fileMode=false -c safe.directory='*' "$@"; }}
git add -A && git diff --cached --binary --no-ext-diff --no-textconv {base} > {out}
"""


def swebench_modules() -> tuple[Any, Any]:
    """(swebench.harness.grading, make_test_spec), imported now; a TaskError naming the pip
    command when the package is not installed."""
    try:
        from swebench.harness import grading
        from swebench.harness.test_spec.test_spec import make_test_spec
    except ImportError as exc:
        raise TaskError(
            f"SWE-bench instances are graded by the swebench package, which is not importable "
            f"here ({exc}); install it: {INSTALL}"
        ) from None
    return grading, make_test_spec


def grade_instance(sandbox: DockerSandbox, task: Task) -> Grade:
    """The official verdict on the trial's change: exact when swebench says RESOLVED_FULL."""
    spec = task.container
    assert spec is not None and spec.image is not None
    instance = dict(instance_fields(spec))
    grading, make_test_spec = swebench_modules()
    try:
        test_spec = make_test_spec(instance)
    except KeyError:
        raise TaskError(
            f"{spec.origin}: swebench knows no test command for repo {instance['repo']!r} "
            f"version {instance['version']!r} (its MAP_REPO_VERSION_TO_SPECS); fix repo or "
            "version"
        ) from None
    scratch = Path(tempfile.mkdtemp(prefix="agentbench-swebench-", dir=owned_dir()))
    try:
        with engine_errors("the instance's evaluation", sandbox.provider.lost(sandbox.engine_of)):
            return _evaluate(sandbox, task, instance, (grading, test_spec), scratch)
    finally:
        remove_later(scratch)


def _evaluate(
    sandbox: DockerSandbox,
    task: Task,
    instance: dict[str, Any],
    swebench: tuple[Any, Any],
    scratch: Path,
) -> Grade:
    """The agent's diff taken and evaluated on the engine the trial ran on, in scratch;
    swebench: its grading module and the instance's test spec."""
    spec = task.container
    assert spec is not None and spec.image is not None
    grading, test_spec = swebench
    provider, engine = sandbox.provider, sandbox.engine_of
    timeout = task.verify_timeout or task.timeout
    limits = replace(task_limits(provider, spec), network="none")
    patch = _agent_diff(sandbox, spec, instance["base_commit"], scratch)
    if patch is None:
        return _not_graded("the agent's change could not be taken: git diff failed in /testbed")
    eval_dir = scratch / "eval"
    (eval_dir / "out").mkdir(parents=True)
    (eval_dir / "patch.diff").write_bytes(patch)
    (eval_dir / "eval.sh").write_text(test_spec.eval_script, encoding="utf-8")
    (eval_dir / "run.sh").write_text(
        APPLY.format(
            workdir=WORKDIR,
            patch=f"{EVAL_DIR}/patch.diff",
            eval=f"{EVAL_DIR}/eval.sh",
            log=f"{EVAL_DIR}/out/test_output.txt",
        ),
        encoding="utf-8",
    )
    (eval_dir / "out").chmod(0o777)
    out = scratch / "out"
    exit_code, output = run_as_verifier(
        provider,
        engine,
        spec.image,
        spec,
        ["bash", f"{EVAL_DIR}/run.sh"],
        env={},
        limits=limits,
        timeout=timeout,
        put={EVAL_DIR: eval_dir},
        take={f"{EVAL_DIR}/out": out},
    )
    log = out / "test_output.txt"
    apply_text = output.decode("utf-8", "replace")
    if exit_code is None:
        return _not_graded(f"the tests did not end within {timeout:g} s\n{apply_text}")
    if not log.is_file():
        return _not_graded(f"the agent's diff does not apply:\n{apply_text}")
    prediction = {
        "instance_id": instance["instance_id"],
        "model_name_or_path": "agentbench",
        "model_patch": patch.decode("utf-8", "replace"),
    }
    report = grading.get_eval_report(test_spec, prediction, str(log), True)
    verdict = report[instance["instance_id"]]
    text = log.read_text(encoding="utf-8", errors="replace")
    resolved = bool(verdict.get("resolved"))
    shown = f"{_summary(verdict)}\n{apply_text}{LOG_MARKER}\n"
    return Grade(
        exact=resolved,
        eof_normalized=resolved,
        verifier_exit_code=0 if resolved else 1,
        verifier_output=shown + text[-(VERIFIER_OUTPUT_LIMIT - len(shown)) :],
    )


def _agent_diff(sandbox: DockerSandbox, spec: Any, base: str, scratch: Path) -> bytes | None:
    """The trial's change as a binary git diff against base, taken in a container of a
    snapshot of its finished container (never by git on this machine, in a tree the agent
    controlled); None when git failed there."""
    provider = sandbox.provider
    empty = scratch / "diff-in"
    empty.mkdir(mode=0o777)
    empty.chmod(0o777)
    taken = scratch / "diff"
    with snapshot_of(sandbox) as snapshot:
        exit_code, _ = run_as_verifier(
            provider,
            sandbox.engine_of,
            snapshot,
            spec,
            ["bash", "-c", DIFF.format(workdir=WORKDIR, base=base, out=f"{DIFF_DIR}/model.patch")],
            env={},
            limits=replace(task_limits(provider, spec), network="none"),
            timeout=DIFF_TIMEOUT,
            put={DIFF_DIR: empty},
            take={DIFF_DIR: taken},
        )
    patch = taken / "model.patch"
    return patch.read_bytes() if exit_code == 0 and patch.is_file() else None


def _not_graded(why: str) -> Grade:
    """Not resolved, as the official harness leaves an instance it could not evaluate."""
    return Grade(
        exact=False,
        eof_normalized=False,
        verifier_exit_code=1,
        verifier_output=f"RESOLVED_NO: {why}"[-VERIFIER_OUTPUT_LIMIT:],
    )


def _summary(verdict: dict[str, Any]) -> str:
    """One line per list: resolved or not, and how many FAIL_TO_PASS / PASS_TO_PASS passed,
    with the failures named."""
    status = verdict.get("tests_status")
    head = "RESOLVED_FULL" if verdict.get("resolved") else "RESOLVED_NO"
    if not verdict.get("patch_successfully_applied") or status is None:
        return f"{head}: the test log holds no test results swebench could parse"
    lines = [head]
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        passed, failed = status[key]["success"], status[key]["failure"]
        lines.append(f"{key}: {len(passed)}/{len(passed) + len(failed)} pass")
        lines += [f"  failed: {name}" for name in failed[:20]]
    return "\n".join(lines)
