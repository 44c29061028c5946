"""Hostile command agents: small shell scripts that leave behind what an agent can leave.

Each case is one task whose input tree holds its script (``agent.sh``) and whose expected tree
is that script and ``answer.txt`` holding 42. The command agent runs ``/bin/sh ./agent.sh`` in
the workspace (``AGENT_CMD``); the script writes the answer, then does its hostile thing. So a
case that leaves nothing in the workspace passes, and every other one fails on exactly what it
left. The harness must end each case as a graded trial, go on with the run, and remove every
directory afterwards. The scripts need a POSIX shell, coreutils and python3 (the test image
agentbench-test:1 has them). The project's tests and benchmarks/hostile_rss.py run the corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

AGENT_CMD = "/bin/sh ./agent.sh"
ANSWER = "echo 42 > answer.txt\n"
PIDS_LIMIT = 64  # --sandbox-pids for the fork loop: far below what it tries


@dataclass(frozen=True)
class Case:
    """One hostile agent and what its trial must end as.

    outcome: "exact" (graded, passed), "failed" (graded, not exact), "over_disk" (graded as a
    failure without reading the workspace: past --sandbox-disk) or "timed_out" (killed at the
    deadline, graded). left: entries (as recorded, names encoded) the grade must name among
    its unexpected, missing or invalid paths, by prefix.
    """

    name: str
    script: str
    outcome: str
    timeout: int = 120
    left: tuple[str, ...] = ()
    needs_process_limits: bool = False  # only where pids limits hold


CASES = (
    Case("big-file", ANSWER + "head -c 1536M /dev/zero > big.bin\n", "over_disk"),
    Case("sparse-file", ANSWER + "truncate -s 20G sparse.bin\n", "over_disk"),
    Case(
        "non-utf8-name",
        ANSWER + "printf x > \"$(printf 'bad\\377')\"\n",
        "failed",
        left=("bad\\xff",),
    ),
    Case(
        "deeper-than-path-max",
        # 4,500 levels of d/: a path of 9,000 bytes, twice PATH_MAX, made 1,500 at a time.
        ANSWER + "level=$(printf 'd/%.0s' $(seq 1500))\n"
        'for _ in 1 2 3; do mkdir -p "$level" && cd -P "$level" || exit 1; done\n'
        "echo bottom > bottom.txt\n",
        "failed",
        left=("d/d/d/",),
    ),
    Case(
        "unreadable-directory",
        ANSWER + "mkdir locked && echo x > locked/f && chmod 000 locked\n"
        "echo y > unreadable.txt && chmod 000 unreadable.txt\n",
        "failed",
        left=("locked", "unreadable.txt"),
    ),
    Case(
        "fifo-and-socket",
        ANSWER + "mkfifo pipe\n"
        "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\"\n",
        "failed",
        left=("pipe", "sock"),
    ),
    Case("stdout-flood", ANSWER + "head -c 512M /dev/zero | tr '\\0' x\n", "exact"),
    Case(
        "many-small-files",
        ANSWER + "mkdir many && cd many && seq 100000 | xargs touch\n",
        "failed",
        left=("many/",),
    ),
    Case(
        "ignores-sigterm",
        ANSWER + "trap '' TERM\n(trap '' TERM; exec sleep 1000) &\nsleep 1000\n",
        "timed_out",
        timeout=3,
    ),
    Case(
        "deletes-own-workspace",
        'cd / && rm -rf "$AGENTBENCH_WORKSPACE"\n',
        "failed",
        left=("agent.sh",),
    ),
    Case(
        "fork-loop",
        # The bomb is lit in a subshell, the agent's one fork; then it spins (a `sleep` may
        # not get a process) until the deadline. Lit by the agent's own shell, a second fork
        # of it could meet the pids limit first and end the agent early ("Cannot fork").
        ANSWER + "bomb() { bomb | bomb & }\n(bomb)\nwhile :; do :; done\n",
        "timed_out",
        timeout=5,
        needs_process_limits=True,
    ),
)


def cases(process_limits: bool) -> list[Case]:
    """The corpus for a sandbox: the fork loop only where process limits hold."""
    return [case for case in CASES if process_limits or not case.needs_process_limits]


def write_suite(root: Path, chosen: Iterable[Case]) -> Path:
    """One task directory per case under root; returns root."""
    for case in chosen:
        task = root / case.name
        (task / "workspace").mkdir(parents=True)
        (task / "expected").mkdir()
        script = "#!/bin/sh\n" + case.script
        (task / "workspace" / "agent.sh").write_text(script)
        (task / "expected" / "agent.sh").write_text(script)
        (task / "expected" / "answer.txt").write_text("42\n")
        prompt = json.dumps(f"hostile agent: {case.name}")
        (task / "task.toml").write_text(f"prompt = {prompt}\ntimeout = {case.timeout}\n")
    return root
