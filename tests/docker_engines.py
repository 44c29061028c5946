"""A second, real Docker engine for the pool's tests: its own dockerd with its own data root,
exec root, pid file, daemon.json and managed containerd, on a unix socket and on TLS TCP at
127.0.0.1 with certificates made here (or given: the TLS walk-through's), a bridge of its own
and no iptables rules (the machine's engine is untouched: `--bridge=none` would make the
second daemon delete docker0, the first one's bridge), the test image loaded into it from the
machine's engine. Started twice, it is the pool's third engine too.

Everything it started is ended by pid when the test ends, also after the test killed the
daemon itself (its containerd and shims, found by the exec root they name)."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Imported with the test module, before pytester's in-process runs snapshot sys.modules: a
# second import of cryptography after such a run drops it fails its own isinstance checks.
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

START_S = 60.0  # a dockerd that does not answer in this long is not coming
STOP_S = 20.0


def _certificates(directory: Path) -> tuple[Path, Path]:
    """A CA, the daemon's certificate for 127.0.0.1 and a client's; returns (server dir,
    client dir): the client one holds ca.pem, cert.pem and key.pem, as --docker-host ?tls=
    takes it."""
    now = datetime.datetime.now(datetime.UTC)

    def name(text: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    def write(where: Path, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> None:
        where.mkdir(parents=True, exist_ok=True)
        (where / "key.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        (where / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (where / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    def signed(
        subject: str, key: ec.EllipticCurvePrivateKey, usage: x509.ObjectIdentifier
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(subject))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if usage == ExtendedKeyUsageOID.SERVER_AUTH:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return builder.sign(ca_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(name("agentbench test CA"))
        .issuer_name(name("agentbench test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key, client_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    write(
        directory / "server",
        server_key,
        signed("127.0.0.1", server_key, ExtendedKeyUsageOID.SERVER_AUTH),
    )
    write(
        directory / "client",
        client_key,
        signed("agentbench client", client_key, ExtendedKeyUsageOID.CLIENT_AUTH),
    )
    return directory / "server", directory / "client"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class SecondEngine:
    root: Path
    process: subprocess.Popen[bytes]
    socket_path: Path
    port: int
    tls: Path  # the client's ca.pem, cert.pem, key.pem

    @property
    def unix_url(self) -> str:
        return f"unix://{self.socket_path}"

    @property
    def tcp_url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}?tls={self.tls}"

    @property
    def tcp_name(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """The daemon gone at once, as a machine that dies: no answer from now on."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(STOP_S)

    def leftovers(self) -> list[int]:
        """Processes the daemon started that still run (its containerd, shims, containers'
        inits), by the exec root their command lines name."""
        marker = str(self.root / "exec").encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
        return found


def _wait_until(check: object, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} within {seconds:.0f} s")


@contextlib.contextmanager
def _bridge(name: str, address: str) -> Iterator[None]:
    """A bridge of the second engine's own, removed afterwards."""
    subprocess.run(["ip", "link", "add", name, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", address, "dev", name], check=True)
        yield
    finally:
        subprocess.run(["ip", "link", "del", name], check=False, capture_output=True)


def _free_subnet() -> str:
    """A 10.213.X.1/24 no interface of this machine holds yet (two engines' bridges never
    share one)."""
    shown = subprocess.run(
        ["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=True
    ).stdout
    for third in range(1, 255):
        if f" 10.213.{third}." not in shown:
            return f"10.213.{third}.1/24"
    raise RuntimeError("no free 10.213.X.0/24 for a second engine's bridge")


@dataclass(frozen=True)
class DaemonTls:
    """How the daemon's TCP socket is secured: daemon.json's TLS keys (tlsverify, tlscacert,
    tlscert, tlskey) and the client's directory of ca.pem, cert.pem, key.pem."""

    options: dict[str, object]
    client: Path


def _own_tls(directory: Path) -> DaemonTls:
    server, client = _certificates(directory)
    return DaemonTls(
        {
            "tlsverify": True,
            "tlscacert": str(server / "ca.pem"),
            "tlscert": str(server / "cert.pem"),
            "tlskey": str(server / "key.pem"),
        },
        client,
    )


@contextlib.contextmanager
def second_engine(*images: str, tls: DaemonTls | None = None) -> Iterator[SecondEngine]:
    """A second dockerd holding the images, for as long as the block runs; its TCP socket
    secured by tls (default: certificates made here for 127.0.0.1)."""
    dockerd = shutil.which("dockerd")
    if dockerd is None or os.getuid() != 0:
        raise RuntimeError("a second Docker engine needs dockerd and root")
    root = Path(tempfile.mkdtemp(prefix="ab-e2-", dir="/tmp"))  # short: socket paths are bounded
    try:
        port = _free_port()
        bridge = f"abe2{root.name[-8:]}".replace("_", "")[:15]  # interface names: 15 bytes
        with (
            _bridge(bridge, _free_subnet()),
            _daemon(dockerd, root, port, bridge, tls or _own_tls(root / "certs"), images) as engine,
        ):
            yield engine
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _daemon(
    dockerd: str, root: Path, port: int, bridge: str, tls: DaemonTls, images: tuple[str, ...]
) -> Iterator[SecondEngine]:
    import docker

    sock = root / "docker.sock"
    # A daemon.json of its own: the machine's /etc/docker/daemon.json is not this engine's.
    config = root / "daemon.json"
    config.write_text(
        json.dumps({"hosts": [f"unix://{sock}", f"tcp://127.0.0.1:{port}"], **tls.options})
    )
    log = open(root / "dockerd.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            dockerd,
            f"--config-file={config}",
            f"--data-root={root / 'data'}",
            f"--exec-root={root / 'exec'}",
            f"--pidfile={root / 'docker.pid'}",
            f"--bridge={bridge}",
            "--iptables=false",
            "--ip-masq=false",
            "--containerd-namespace=agentbench-e2",
            "--containerd-plugins-namespace=agentbench-e2-plugins",
            "--storage-driver=overlay2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    engine = SecondEngine(root, process, sock, port, tls.client)
    try:

        def answers() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"dockerd exited: {(root / 'dockerd.log').read_text()[-2000:]}")
            if not sock.exists():
                return False
            # A fixed API version: the client asks nothing before the ping, so one that fails
            # is closed with its connection.
            with contextlib.closing(
                docker.DockerClient(base_url=engine.unix_url, version="1.24")
            ) as c:
                try:
                    return bool(c.ping())
                except Exception:
                    return False

        _wait_until(answers, "the second dockerd answers", START_S)
        with subprocess.Popen(["docker", "save", *images], stdout=subprocess.PIPE) as saved:
            subprocess.run(
                ["docker", "-H", engine.unix_url, "load", "-q"],
                stdin=saved.stdout,
                check=True,
                capture_output=True,
                timeout=300,
            )
        assert saved.returncode == 0
        yield engine
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_S)
        for pid in engine.leftovers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        log.close()
        with contextlib.suppress(OSError):
            for mount in reversed(Path("/proc/self/mounts").read_text().splitlines()):
                point = mount.split()[1]
                if point.startswith(str(root)):
                    subprocess.run(["umount", "-l", point], check=False, capture_output=True)
