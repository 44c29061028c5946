"""An engine reached over ssh:// for the pool's tests: an sshd of the test's own on 127.0.0.1
(its own config, host key and authorized client key, all made here; a bounded lifetime),
whose sessions for this user have DOCKER_HOST naming another engine's socket, so that
`docker system dial-stdio`, which docker-py's ssh transport runs on the far side, reaches that
engine.

The ssh client reads the config of the user's home in the password database, never $HOME:
rather than writing into this machine's ~/.ssh, the runs get an `ssh` first on their PATH that
is the real client given this config (-F), as ~/.ssh/config would give it. Its shared
connection ends with the sshd's processes, ended by pid when the block ends."""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
PRIVSEP = Path("/run/sshd")  # compiled into sshd: it refuses to start without it
LIFETIME_S = 900  # an sshd left by a test killed outright ends by itself
START_S = 10.0


@dataclass(frozen=True)
class SshEngine:
    user: str
    port: int
    bin_dir: Path  # put first on PATH: its `ssh` is the client with this server's config
    config: Path  # the client's config

    @property
    def url(self) -> str:
        return f"ssh://{self.user}@localhost:{self.port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}"}


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "agentbench-test", "-f", str(path)],
        check=True,
    )
    return path.with_suffix(".pub").read_text().strip()


def _descendants(pid: int) -> list[int]:
    """Every process below pid (sshd's connection and session processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                parent = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def why_no_sshd() -> str | None:
    """Why no ssh engine can be started here, or None."""
    if not SSHD.is_file():
        return f"no OpenSSH server ({SSHD}; .ci/install-ssh-engine.sh installs openssh-server)"
    if os.getuid() != 0:
        return "an sshd of the test's own needs root"
    return None


@contextlib.contextmanager
def ssh_engine(docker_host: str) -> Iterator[SshEngine]:
    """An sshd on 127.0.0.1 whose sessions reach the engine at docker_host (a unix:// URL),
    for as long as the block runs."""
    why = why_no_sshd()
    if why:
        raise RuntimeError(why)
    user = getpass.getuser()
    with tempfile.TemporaryDirectory(prefix="ab-ssh-") as temp:
        root = Path(temp)
        host_key = _keygen(root / "host_key")
        (root / "authorized_keys").write_text(_keygen(root / "client_key") + "\n")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        (root / "sshd_config").write_text(
            f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {root / 'host_key'}\n"
            f"PidFile {root / 'sshd.pid'}\nAuthorizedKeysFile {root / 'authorized_keys'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            f"StrictModes no\nPermitRootLogin prohibit-password\nAllowUsers {user}\n"
            f"SetEnv DOCKER_HOST={docker_host}\n"
        )
        (root / "known_hosts").write_text(f"[localhost]:{port},[127.0.0.1]:{port} {host_key}\n")
        config = root / "ssh_config"
        config.write_text(
            f"Host *\n  IdentityFile {root / 'client_key'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {root / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n  BatchMode yes\n  AddressFamily inet\n"
            # As docs/scaling.md advises: each request is an ssh of its own, 0.3 s apart.
            f"  ControlMaster auto\n  ControlPath {root}/cm-%C\n  ControlPersist 30\n"
        )
        bin_dir = root / "bin"
        bin_dir.mkdir()
        (bin_dir / "ssh").write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F "{config}" "$@"\n')
        (bin_dir / "ssh").chmod(0o755)
        PRIVSEP.mkdir(mode=0o755, exist_ok=True)
        log = open(root / "sshd.log", "wb")  # noqa: SIM115
        process = subprocess.Popen(
            ["timeout", str(LIFETIME_S), str(SSHD), "-D", "-e", "-f", str(root / "sshd_config")],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + START_S
            while b"Server listening" not in (root / "sshd.log").read_bytes():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(root / 'sshd.log').read_text()}")
                time.sleep(0.05)
            yield SshEngine(user, port, bin_dir, config)
        finally:
            below = _descendants(process.pid)
            process.send_signal(signal.SIGTERM)
            process.wait(10)
            for pid in below:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            log.close()
