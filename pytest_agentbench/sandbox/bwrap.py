"""The bwrap sandbox: the agent sees its workspace, a private home and /tmp, and read-only runtime.

Everything else of the machine (the task directory with its expected tree and verifier, the run
directory, the project checkout, the operator's home, other processes) is simply not mounted.
Descendants live in the sandbox's pid namespace and die with it.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentbench.sandbox.base import (
    ProcessResult,
    Sandbox,
    SandboxProvider,
    make_trial_root,
    memory_dir,
    run_process_group,
    within,
)
from pytest_agentbench.sandbox.cgroup import TrialCgroup, create_trial_cgroup
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.settings import SandboxLimits
from pytest_agentbench.tasks.model import Task, materialize

INNER_WORKSPACE = "/workspace"
INNER_HOME = "/home/agent"
# Top-level runtime dirs; on merged-/usr systems most are symlinks into /usr and stay symlinks.
RUNTIME_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what programs need from /etc: name resolution, users, TLS roots, the dynamic loader.
# Not /etc as a whole: as root, /etc/shadow and friends would be readable through the bind.
ETC_ENTRIES = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "pki",
    "protocols",
    "resolv.conf",
    "services",
    "ssl",
    "timezone",
)
NAMESPACE_FLAGS = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--hostname",
    "agentbench",
)


def _runtime_binds() -> list[str]:
    binds: list[str] = []
    for path in RUNTIME_DIRS:
        if os.path.islink(path):
            binds += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            binds += ["--ro-bind", path, path]
    return binds


def stage_etc(target: Path) -> None:
    """Copy the /etc entries programs need into target, once per provider.

    One read-only bind of the copy costs bwrap one mount where binding each entry cost two
    dozen (about 4 ms per trial here). The copy holds what the binds showed: an entry that is
    a symlink is copied as what it points to (a bind mount follows it too), symlinks inside
    copied directories stay symlinks. What is not readable here was not readable through the
    binds either, so it is left out. The sandbox sees /etc as of the run's start.
    """
    names = (*ETC_ENTRIES, *sorted(os.path.basename(p) for p in glob.glob("/etc/python3*")))
    for name in names:
        source, copy = Path("/etc", name), target / name
        try:
            if source.is_dir():
                shutil.copytree(source, copy, symlinks=True)
            elif source.is_file():
                shutil.copy2(source, copy)
        except (OSError, shutil.Error):
            continue  # unreadable parts stay out, as they were unreadable through a bind
    target.chmod(0o755)


def covered(path: Path) -> bool:
    """Whether path is already visible through the runtime binds."""
    return any(path == Path(d) or Path(d) in path.parents for d in RUNTIME_DIRS)


def install_root(executable: Path, hidden: Sequence[Path]) -> Path:
    """The path to expose read-only so that an agent CLI found at `executable` runs.

    An npm-installed CLI needs its whole package tree (the prefix holding node_modules), a
    binary in some bin/ its prefix. A root that is or holds a hidden path (the operator's home,
    the project, the invocation directory, a task source, where runs go) is narrowed to the
    executable's own directory, and to the executable alone when that directory is or holds
    one too (a script at the top of the project).
    """
    real = executable.resolve()
    parts = real.parts
    if "node_modules" in parts:
        root = Path(*parts[: parts.index("node_modules")])
    elif real.parent.name == "bin":
        root = real.parent.parent
    else:
        root = real.parent
    for candidate in (root, real.parent):
        revealing = any(within(secret, candidate) for secret in hidden)
        if not revealing and candidate != Path(candidate.anchor):
            return candidate
    return real


def agent_exposures(
    argv: Sequence[str], env: Mapping[str, str], hidden: Sequence[Path]
) -> list[Path]:
    """Read-only paths the command needs beyond the runtime: its program and interpreter."""
    found = shutil.which(argv[0], path=env.get("PATH")) if argv else None
    if found is None:
        return []
    paths: list[Path] = []
    program = Path(found)
    if not covered(program.resolve()):
        paths.append(install_root(program, hidden))
    interpreter = shebang_interpreter(program)
    if interpreter:
        paths.extend(agent_exposures([interpreter], env, hidden))
    return paths


def shebang_interpreter(program: Path) -> str | None:
    """The interpreter a script's #! line names (the program after /usr/bin/env), if any."""
    try:
        with program.resolve().open("rb") as handle:
            first = handle.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    interpreter = words[1] if words and words[0].endswith("/env") and len(words) > 1 else None
    return interpreter or (words[0] if words else None)


def launched_programs(argv: Sequence[str]) -> list[str]:
    """argv[0], and the programs a wrapper in front of it starts (`sh -c 'exec "$@"' ... CLI`):
    arguments that are absolute paths of executable files. A shell's command string is not
    one: the command agent's command line (`./agent.sh` made absolute) has its words resolved
    and shown by command_line.py, the file alone, never its directory."""
    after = 3 if len(argv) > 2 and argv[1] == "-c" else 1
    wrapped = [
        a for a in argv[after:] if a.startswith("/") and os.path.isfile(a) and os.access(a, os.X_OK)
    ]
    return [argv[0], *wrapped] if argv else []


def bwrap_works() -> str | None:
    """None when bwrap can build a sandbox here, else why not (for the auto choice and errors)."""
    binary = shutil.which("bwrap")
    if binary is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    probe = [binary, *NAMESPACE_FLAGS, *_runtime_binds(), "--proc", "/proc", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip()
        return f"bwrap cannot create namespaces here ({reason}); unprivileged user namespaces off?"
    return None


class BwrapSandbox(Sandbox):
    """One trial: workspace/ and home/ on the host, mounted at /workspace and /home/agent."""

    kind = "bwrap"

    def __init__(self, provider: BwrapProvider, root: Path, trial_name: str) -> None:
        self.provider = provider
        self._lay_out(root, INNER_WORKSPACE, INNER_HOME, provider.home_parent)
        limits = provider.limits
        self.cgroup: TrialCgroup | None = None
        if provider.use_cgroups:
            self.cgroup = create_trial_cgroup(trial_name, limits.pids, limits.memory_bytes)

    def command(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> list[str]:
        """The host command line: enter the trial cgroup, then bwrap, then argv."""
        provider = self.provider
        uid = os.getuid() or 1000  # never root inside: host root would keep its file access
        gid = os.getgid() or 1000
        bwrap = [
            provider.binary,
            *NAMESPACE_FLAGS,
            "--uid",
            str(uid),
            "--gid",
            str(gid),
            *(("--unshare-net",) if provider.limits.network == "none" else ()),
            *provider.runtime_binds,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--bind",
            str(self.workspace),
            INNER_WORKSPACE,
            "--bind",
            str(self.home),
            INNER_HOME,
        ]
        exposed = [*provider.exposed, *provider.exposures(argv, env)]
        for path in dict.fromkeys(exposed):
            bwrap += ["--ro-bind", str(path), str(path)]
        for path in provider.masked:  # task data an exposure or the runtime would show
            if any(within(path, root) for root in (*exposed, *map(Path, RUNTIME_DIRS))):
                bwrap += ["--tmpfs", str(path)]
        bwrap += ["--chdir", cwd, "--", *argv]
        if self.cgroup is None:
            return bwrap
        enter = " && ".join(f"echo $$ > {shlex.quote(str(f))}" for f in self.cgroup.procs_files)
        return ["/bin/sh", "-c", f'{enter} || exit 125; exec "$@"', "agentbench-enter", *bwrap]

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout: float,
        cwd: str | None = None,
    ) -> ProcessResult:
        command = self.command(argv, env, cwd or INNER_WORKSPACE)
        return run_process_group(command, env=env, cwd=str(self.workspace), timeout=timeout)

    def close(self) -> None:
        if self.cgroup is not None:
            self.cgroup.remove()
        self._remove_files_later()


class BwrapProvider(SandboxProvider):
    kind = "bwrap"

    def __init__(self, limits: SandboxLimits, home_parent: str | None) -> None:
        self.limits = limits
        self.home_parent = home_parent  # a memory-backed directory for the agents' homes
        self.binary = shutil.which("bwrap") or "bwrap"
        self._exposed: dict[tuple[tuple[str, ...], str | None], list[Path]] = {}
        self._runtime_binds: list[str] | None = None
        self._staging = threading.Lock()  # concurrent first trials stage one /etc, not several
        probe = create_trial_cgroup(f"agentbench-probe-{os.getpid()}", limits.pids, 1 << 30)
        self.use_cgroups = probe is not None
        if probe is not None:
            probe.remove()

    @property
    def runtime_binds(self) -> list[str]:
        """The runtime and the staged /etc, staged when the first agent process starts: runs
        that start none (--collect-only, the mock and oracle agents) never pay for it."""
        with self._staging:
            if self._runtime_binds is None:
                etc = Path(tempfile.mkdtemp(prefix="agentbench-etc-", dir=owned_dir(memory_dir())))
                stage_etc(etc)
                self._runtime_binds = [*_runtime_binds(), "--ro-bind", str(etc), "/etc"]
            return self._runtime_binds

    def exposures(self, argv: Sequence[str], env: Mapping[str, str]) -> list[Path]:
        """The read-only paths argv's programs need, looked up once per program and PATH."""
        programs = tuple(launched_programs(argv))
        key = (programs, env.get("PATH"))
        if key not in self._exposed:  # trials racing here find the same paths: no lock needed
            exposed: list[Path] = []
            for program in programs:
                found = agent_exposures([program], env, self.program_hidden())
                exposed += [p for p in found if p not in exposed]
            self._exposed[key] = exposed
        return self._exposed[key]

    def create(self, task: Task, trial_id: str) -> Sandbox:
        root = make_trial_root(trial_id, self.root_parent)
        sandbox = BwrapSandbox(self, root, f"agentbench-{root.name}")
        materialize(task.input_tree, sandbox.workspace)
        return sandbox

    def describe(self) -> dict[str, Any]:
        enforced = self.use_cgroups
        return {
            "kind": self.kind,
            "network": self.limits.network,
            "pids_limit": self.limits.pids if enforced else None,
            "memory_limit": self.limits.memory if enforced else None,
            "limits_note": self.process_limits_off(),
            **self.placement(),
        }

    def process_limits_off(self) -> str | None:
        if self.use_cgroups:
            return None
        if os.getuid():
            return (
                "bwrap found no writable cgroup: an ordinary user needs a delegated cgroup v2 "
                "subtree, e.g. `systemd-run --user --scope -p Delegate=yes pytest ...`"
            )
        return "bwrap found no writable cgroup"
