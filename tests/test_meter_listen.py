"""The meter on an address engines of other machines reach (--agentbench-meter-listen): trials'
routes served there, over TLS when asked, while opening and reading trials stays on loopback;
and the options that would put the agent's API key on the network in the clear refused."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_meter_proxy import Recorded, make_certificate

from pytest_agentbench.meter.client import MeterProcess

from conftest import one_error_line

PLAIN = json.dumps({"usage": {"input_tokens": 3, "output_tokens": 2}}).encode()


def _outward_address() -> str | None:
    """This machine's address toward its default route (no packet is sent), if not loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


def _post(url: str, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=b"{}", method="POST", headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_trials_routes_on_another_address_and_control_on_loopback_only() -> None:
    address = _outward_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    upstream = Recorded(PLAIN, "application/json")
    meter = MeterProcess(max_seconds=60, listen=address)
    try:
        token, base = meter.open_trial(upstream.url)
        assert base.startswith(f"http://{address}:") and base.endswith(f"/t/{token}")
        assert _post(f"{base}/v1/messages") == (200, PLAIN)
        public = base.removesuffix(f"/t/{token}")
        # Nobody on the network opens or reads a trial: those routes are not served there.
        assert _post(f"{public}/_trial/{token}")[0] == 404
        assert meter.close_trial(token)["tokens"]["input"] == 3
        assert _post(f"{base}/v1/messages")[0] == 404  # a closed trial's route is gone
    finally:
        meter.stop()
        upstream.close()


def test_trials_routes_over_tls(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path)
    upstream = Recorded(PLAIN, "application/json")
    meter = MeterProcess(max_seconds=60, listen="127.0.0.1", tls=f"{cert},{key}")
    try:
        token, base = meter.open_trial(upstream.url)
        assert base.startswith("https://127.0.0.1:")
        trusting = ssl.create_default_context(cafile=str(cert))
        assert _post(f"{base}/v1/messages", trusting) == (200, PLAIN)
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _post(f"{base}/v1/messages", ssl.create_default_context(cafile=None, capath=None))
        assert meter.close_trial(token)["requests"] == 1
    finally:
        meter.stop()
        upstream.close()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--agentbench-meter-listen=10.1.2.3"],
            "*--agentbench-meter-listen 10.1.2.3: trials' model requests, the agent's API key "
            "among their headers, would cross the network in plain HTTP; give "
            "--agentbench-meter-tls CERT,KEY, or --agentbench-meter-insecure*",
        ),
        (
            ["--agentbench-meter-listen=0.0.0.0", "--agentbench-meter-insecure"],
            "*--agentbench-meter-listen 0.0.0.0: name the one address the engines reach*",
        ),
        (
            ["--agentbench-meter-tls=c.pem,k.pem"],
            "*--agentbench-meter-tls is for --agentbench-meter-listen HOST*",
        ),
        (
            ["--agentbench-meter-listen=10.1.2.3", "--agentbench-meter-tls=nope.pem"],
            "*--agentbench-meter-tls 'nope.pem': give CERT,KEY*",
        ),
        (
            ["--agentbench-meter-listen=10.1.2.3", "--agentbench-meter-tls=c.pem,k.pem"],
            "*--agentbench-meter-tls: no such file */c.pem",
        ),
    ],
)
def test_meter_listen_options_refused_with_the_fix(
    pytester: pytest.Pytester, args: list[str], says: str
) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent=oracle", "--tasks=builtin:smoke", *args
    )
    one_error_line(result, f"ERROR: {says}")
