"""The harness side of the meter: start the proxy process, open and read trials."""

from __future__ import annotations

import errno
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any


class MeterError(RuntimeError):
    """The metering proxy did not start or answer."""


# A machine short of memory, processes or file handles for a moment refuses the interpreter's
# exec; tries over about 8 s outlast such a moment. An interpreter that is not there (or not
# executable) fails at once: no pause brings it back.
SPAWN_PAUSES = (0.25, 0.5, 1.0, 2.0, 4.0)


def _spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    """The proxy process, tried again after a refusal to start it while its interpreter is
    there."""
    pauses = iter(SPAWN_PAUSES)
    tries = 0
    while True:
        tries += 1
        try:
            return subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as exc:
            pause = next(pauses, None)
            if pause is None or not os.access(argv[0], os.X_OK):
                name = errno.errorcode.get(exc.errno or 0, "no errno")
                # from None: the message, not subprocess's internals, heads the report
                raise MeterError(
                    f"the metering proxy could not be started ({tries} tries): {name}, "
                    f"{exc.strerror or exc} ({argv[0]})"
                ) from None
        time.sleep(pause)


class MeterProcess:
    """One proxy process per pytest process; it exits when this process lets go of its stdin
    (stop(), or this process dying) or after max_seconds."""

    def __init__(
        self,
        log: Path | None = None,
        max_seconds: float = 24 * 3600.0,
        listen: str | None = None,
        tls: str | None = None,
    ) -> None:
        argv = [sys.executable, "-m", "pytest_agentbench.meter", "--max-seconds", str(max_seconds)]
        if log is not None:
            argv += ["--log", str(log)]
        if listen is not None:
            argv += ["--listen", listen, *(["--tls", tls] if tls else [])]
        self._proc = _spawn(argv)
        assert self._proc.stdout is not None
        ports = self._proc.stdout.readline().split()
        if not ports or not all(port.isdigit() for port in ports):
            self._proc.kill()
            _out, err = self._proc.communicate(timeout=10)
            raise MeterError(f"the metering proxy did not start: {err.decode(errors='replace')}")
        self.port = int(ports[0])
        self.root = f"http://127.0.0.1:{self.port}"  # the harness's: trials open and close here
        # Where trials' routes are: loopback, or the listening address engines reach.
        self.routes = self.root
        if listen is not None:
            host = f"[{listen}]" if ":" in listen else listen
            self.routes = f"{'https' if tls else 'http'}://{host}:{int(ports[1])}"

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(self.root + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def open_trial(
        self, upstream: str, faults: str = "", bodies: Path | None = None, cap: int | None = None
    ) -> tuple[str, str]:
        """Open a trial forwarding to upstream; returns (token, the base URL to hand the CLI).
        With bodies (an absolute path the agent cannot see), the proxy appends one JSON line
        per finished request there: its record, request body and response (server.py); with
        cap, only the first cap model requests carrying tools go upstream."""
        token = secrets.token_urlsafe(12)
        spec: dict[str, Any] = {
            "upstream": upstream,
            "faults": faults,
            "bodies": str(bodies) if bodies else None,
            "cap": cap,
        }
        self._call("PUT", f"/_trial/{token}", spec)
        return token, f"{self.routes}/t/{token}"

    def counters(self, token: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/_trial/{token}")
        return result

    def close_trial(self, token: str) -> dict[str, Any]:
        """The trial's final counters; its prefix answers 404 from now on."""
        result: dict[str, Any] = self._call("DELETE", f"/_trial/{token}")
        return result

    def stop(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        if self._proc.poll() is None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()


_shared: MeterProcess | None = None
_shared_lock = threading.Lock()  # concurrent trials' first calls start one proxy, not several


def shared_meter(
    log: Path | None, listen: str | None = None, tls: str | None = None
) -> MeterProcess:
    """This pytest process's proxy, started on first use: one proxy serves all the process's
    trials, concurrent ones too, each through its own route token (xdist workers each start
    their own); listen, tls: --agentbench-meter-listen and --agentbench-meter-tls."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MeterProcess(log=log, listen=listen, tls=tls)
        return _shared


def stop_shared_meter() -> None:
    """Stop this process's proxy, if one was started (at pytest_unconfigure)."""
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None
