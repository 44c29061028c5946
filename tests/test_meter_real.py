"""The real codex, Claude Code and opencode through the metering proxy, the scripted model
server upstream: metered tokens equal what the server served, faults are retried, and a
provider refusal on the wire (never an injected one) stops the run as http_<status>."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
from test_agents_real import (  # the same CLIs, task and key as the adapters' real tests
    EDIT,
    USAGE,
    api_key,
    cli,
    run_agent,
    task_dir,
)
from test_meter_proxy import closed_port, make_certificate

from pytest_agentbench.testing.clis import find_cli, missing_reason
from pytest_agentbench.testing.model_server import ScriptedModelServer, workdir_of

if TYPE_CHECKING:
    from pytest_agentbench.testing.pytest_plugin import ServerFactory

pytestmark = pytest.mark.real
pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]
__all__ = ["api_key", "cli", "task_dir"]  # fixtures, re-used

DONE = {"message": "Changed hello to goodbye."}
SCRIPT = {"usage": USAGE, "turns": [EDIT, DONE]}


@pytest.fixture(params=["http", "https"])
def upstream(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ScriptedModelServer]:
    """The scripted server, plain or behind TLS with a certificate the meter is told to trust
    through SSL_CERT_FILE, as a real provider speaks HTTPS."""
    tls = None
    if request.param == "https":
        cert_file, key_file = make_certificate(tmp_path)
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert_file, key_file)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    with ScriptedModelServer(SCRIPT, tls=tls) as server:
        yield server


def test_metered_tokens_equal_what_the_server_served(
    pytester: pytest.Pytester,
    upstream: ScriptedModelServer,
    cli: str,
    task_dir: Path,
    api_key: str,
) -> None:
    server = upstream
    result, report = run_agent(
        pytester, cli, server, task_dir, "--agentbench-meter=on", sandbox="tmp"
    )
    result.assert_outcomes(passed=1)
    (obs,) = report["observations"]
    served = server.served_usage(include_side=True)
    metered = obs["metered"]
    assert metered["requests"] == len(server.requests)
    assert metered["statuses"] == {"200": len(server.requests)}
    tokens = metered["tokens"]
    assert {k: tokens[k] for k in ("input", "cached_input", "output")} == {
        k: served[k] for k in ("input", "cached_input", "output")
    }
    # Messages reports cache writes but no reasoning; Responses and Chat the other way round.
    assert tokens["reasoning"] == (None if cli == "claude" else served["reasoning"])
    assert tokens["cache_write"] == (served["cache_write"] if cli == "claude" else None)
    assert {k: obs["tokens"][k] for k in ("input", "cached_input", "output")} == {
        k: tokens[k] for k in ("input", "cached_input", "output")
    }  # no divergence: each CLI's self-report matches the wire here
    assert api_key not in (pytester.path / "report.json").read_text()
    entry = report["metering"][cli]
    assert entry["divergence"]["input"] == {"value": 0.0, "trials": 1, "flagged": False}
    result.stdout.fnmatch_lines(
        [
            f"metered {cli}: 1/1 trial, {len(server.requests)} requests; input {served['input']}*",
            "*self-report divergence input: +0.00% over 1 trial",
        ]
    )


# opencode as it runs without the adapter's fixed --title: it then asks the model for a title,
# in a request that carries no tools.
TITLED_OPENCODE = """#!/bin/sh
for arg do
  shift
  if [ -n "$skip" ]; then skip=; continue; fi
  if [ "$arg" = --title ]; then skip=1; continue; fi
  set -- "$@" "$arg"
done
exec {binary} "$@"
"""


def test_opencode_title_request_is_counted_apart_and_its_divergence_accounted_for(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    task_dir: Path,
    api_key: str,
) -> None:
    """opencode leaves its title request out of its own report: the meter counts the request
    apart, and compared with the requests that carried tools the self-report does not
    diverge, to the token."""
    binary = find_cli("opencode")
    if binary is None:
        pytest.skip(missing_reason("opencode"))
    wrapper = pytester.path / "opencode-titled"
    wrapper.write_text(TITLED_OPENCODE.format(binary=binary))
    wrapper.chmod(0o755)
    server = agentbench_model_server(SCRIPT)
    result, report = run_agent(
        pytester, "opencode", server, task_dir, f"--agent-opt=bin={wrapper}", sandbox="tmp"
    )
    result.assert_outcomes(passed=1)
    (obs,) = report["observations"]
    titles = [r for r in server.requests if r.served == "side"]
    assert len(titles) == 1
    side, with_side = titles[0].usage or {}, server.served_usage(include_side=True)
    metered = obs["metered"]
    assert metered["side_requests"] == 1
    assert metered["side_tokens"]["input"] == side["input"]
    assert metered["tokens"]["input"] == with_side["input"]
    assert obs["tokens"]["input"] == with_side["input"] - side["input"]  # its own report
    entry = report["metering"]["opencode"]
    for field in ("input", "cached_input", "output"):
        assert entry["divergence"][field] == {"value": 0.0, "trials": 1, "flagged": False}
    result.stdout.fnmatch_lines(
        [f"*side requests (no tools, not in the divergence) 1: input {side['input']}*"]
    )


def test_injected_500s_are_retried_and_the_task_still_solved(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    cli: str,
    task_dir: Path,
    api_key: str,
) -> None:
    server = agentbench_model_server(SCRIPT)
    result, report = run_agent(
        pytester,
        cli,
        server,
        task_dir,
        "--agentbench-meter=on",
        "--agentbench-faults=every:2:500",
        *(["--agent-opt=retries=4"] if cli != "opencode" else []),  # opencode retries anyway
        sandbox="tmp",
    )
    result.assert_outcomes(passed=1)
    (obs,) = report["observations"]
    assert obs["status"] == "scored" and obs["first_exact"] is True
    assert obs["metered"]["faults"] >= 1 and obs["metered"]["retried_after_fault"] is True
    assert obs["metered"]["statuses"]["500"] == obs["metered"]["faults"]
    result.stdout.fnmatch_lines(["*faults: 1 trial met one; retried 1, still solved 1;*"])


@pytest.mark.parametrize("injected", [False, True])
def test_a_401_on_the_wire_stops_the_run_an_injected_one_does_not(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    cli: str,
    task_dir: Path,
    api_key: str,
    injected: bool,
) -> None:
    script = SCRIPT if injected else {"turns": [{"fault": 401}]}
    faults = ["--agentbench-faults=every:1:401"] if injected else []
    server = agentbench_model_server(script)
    _, report = run_agent(
        pytester, cli, server, task_dir, "--agentbench-meter=on", *faults, sandbox="tmp"
    )
    (obs,) = report["observations"]
    if injected:
        assert server.requests == []  # the meter answered every request itself
        assert obs["status"] == "scored" and obs["first_exact"] is False
    else:
        assert (obs["status"], obs["cause"]) == ("provider_stop", "http_401")


def test_two_xdist_workers_attribute_every_request_to_its_trial(
    pytester: pytest.Pytester,
    agentbench_model_server: ServerFactory,
    task_dir: Path,
    api_key: str,
) -> None:
    """Four trials on two workers share one server whose tool turns go to whichever trial asks
    first, so trials make different numbers of requests; each trial's metered count must be
    the requests the server saw from that trial's workspace."""
    if find_cli("claude") is None:
        pytest.skip(missing_reason("claude"))
    script = {"usage": USAGE, "turns": [{"calls": [{"shell": "true"}]}] * 6}
    server = agentbench_model_server(script)
    _, report = run_agent(
        pytester,
        "claude",
        server,
        task_dir,
        "--agentbench-meter=on",
        "--repeats=4",
        "-n",
        "2",
        sandbox="tmp",
    )
    observations = report["observations"]
    assert len(observations) == 4
    served = [workdir_of(r.body) or "" for r in server.requests]
    for obs in observations:
        mine = [w for w in served if f"-r{obs['repeat']}-" in w]
        assert obs["metered"]["requests"] == len(mine) > 0
        assert obs["metered"]["tokens"]["input"] == len(mine) * USAGE["input"]
    assert sum(o["metered"]["requests"] for o in observations) == len(server.requests)


def test_an_unreachable_upstream_ends_in_infrastructure_failures_and_a_stopped_run(
    pytester: pytest.Pytester, task_dir: Path, api_key: str
) -> None:
    """The network down, as a user meets it: codex through the meter to a closed port. The
    trials are infrastructure failures (the meter's own 502 says so on the wire), never the
    agent's, and the breaker stops the run instead of trying every trial."""
    if find_cli("codex") is None:
        pytest.skip(missing_reason("codex"))
    port = closed_port()
    nowhere: Any = SimpleNamespace(openai_base_url=f"http://127.0.0.1:{port}/v1")
    started = time.monotonic()
    result, report = run_agent(
        pytester,
        "codex",
        nowhere,
        task_dir,
        "--repeats=4",
        "--agentbench-meter=on",
        "--agentbench-retry-infra=1",
        "--agentbench-max-consecutive-failures=2",
        "--agentbench-dir=run",
        sandbox="tmp",
    )
    assert time.monotonic() - started < 40
    assert result.ret == pytest.ExitCode.INTERRUPTED
    observations = report["observations"]
    assert [(o["status"], o["cause"]) for o in observations] == [
        ("infrastructure", "upstream_unreachable")
    ] * 2
    assert all(
        r["cause"] == "upstream_unreachable" for o in observations for r in o["infra_retries"]
    )
    summary = report["summary"]
    assert (summary["trials"], summary["first_exact"]) == (0, None)
    assert summary["infrastructure_causes"] == {"upstream_unreachable": 2}
    assert report["run"]["breaker"]["open"]
    result.stdout.fnmatch_lines(
        [
            "agentbench breaker: 2 trials in a row ended in an infrastructure failure *",
            "FAILED (infrastructure) *::r0 - infrastructure*",
            "not scored: infrastructure failures 2 (upstream_unreachable 2)",
        ]
    )
