"""What the real agent CLI adapters (codex, claude, opencode) share.

Each adapter says how to build its command line, which variables and config files isolate
it, and how to read its event stream. This module does the rest the same way for all of
them: find the binary, run it in the trial's sandbox with a private home and a scrubbed
environment, keep its events in a file (a long session overflows any pipe tail), resume the
session in recovery rounds, classify provider-side stops, and price tokens when asked to.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_agentbench.agents.base import (
    Agent,
    AgentSession,
    RoundResult,
    TokenUsage,
    TrialContext,
    meter_asked,
)
from pytest_agentbench.agents.prices import Price
from pytest_agentbench.agents.receipts import (
    DISCOVERY_CAUSE,
    MISMATCH,
    MISMATCH_CAUSE,
    UNVERIFIED,
    Discovery,
    build,
    check_after,
    check_wire,
    delivered_hashes,
    expected,
)
from pytest_agentbench.meter.client import MeterProcess, shared_meter
from pytest_agentbench.meter.records import failed_call, wire_failure, wire_stop
from pytest_agentbench.sandbox.base import InfrastructureError, SandboxProvider
from pytest_agentbench.sandbox.ownership import owned_dir
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import CAPABILITY_KEYS, DEFAULT_CAPABILITIES, Capabilities
from pytest_agentbench.tasks.plugins import Plugin
from pytest_agentbench.tasks.verdict import bounded
from pytest_agentbench.testing.clis import PINS, find_cli, missing_reason

TAIL_CHARS = 4000
VERSION_TIMEOUT = 30.0
DISCOVERY_TIMEOUT = 60.0
DISCOVERY_END = "agentbench-discovery-end"  # the id of a discovery run's last request
REDACTED = "[redacted]"

# Variables a CLI may need from the operator's environment. Everything else -- notably the
# variables of an agent session the benchmark itself may run inside (CLAUDECODE, CODEX_*,
# OPENCODE_*, ...) -- never reaches the child.
BASE_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
)
COMMON_OPTIONS = ("bin", "base_url", "api_key_env", "env", "version")
VERSION_NUMBER = re.compile(r"\d+(?:\.\d+)+[\w.+-]*")


def version_matches(reported: str, wanted: str) -> bool:
    """Whether a CLI's `--version` line names version WANTED: the whole line, or one of its
    version numbers (`codex-cli 0.171.0`, `2.1.332 (Claude Code)`)."""
    return reported.strip() == wanted or wanted in VERSION_NUMBER.findall(reported)


@dataclass
class StreamFacts:
    """What one round's event stream says. None means the CLI did not say."""

    session_id: str | None = None
    model_reported: str | None = None
    tokens: TokenUsage | None = None
    cost_usd: float | None = None
    turns: int | None = None
    tool_calls: int | None = None
    # `http_<status>` (meter.records.stop_cause) when a documented status field of the CLI's
    # error event says the provider refused the request that ended the round.
    provider_error: str | None = None
    final_message: str | None = None  # the agent's last message to the user


EVENT_LINE_LIMIT = 16 << 20  # a longer line is no event of any CLI: skipped, never held whole


def _bounded_lines(path: Path) -> Iterator[bytes]:
    """The file's lines, streamed; a line longer than EVENT_LINE_LIMIT is read past, not kept."""
    with open(path, "rb") as handle:
        while line := handle.readline(EVENT_LINE_LIMIT):
            if len(line) == EVENT_LINE_LIMIT and not line.endswith(b"\n"):
                while (rest := handle.readline(EVENT_LINE_LIMIT)) and not rest.endswith(b"\n"):
                    pass
                continue
            yield line


RAW_EVENTS_LIMIT = 64 << 20  # bytes of a round's events held for its trajectory


def read_events_text(path: Path) -> str:
    """A round's whole event stream for its raw evidence, up to RAW_EVENTS_LIMIT bytes (the
    cut said in a last line of its own); empty when the CLI wrote none."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(RAW_EVENTS_LIMIT + 1)
    except OSError:
        return ""
    text = data[:RAW_EVENTS_LIMIT].decode("utf-8", "replace")
    if len(data) > RAW_EVENTS_LIMIT:
        cut = json.dumps({"agentbench_cut": f"events past {RAW_EVENTS_LIMIT >> 20} MiB not kept"})
        text = text[: text.rfind("\n") + 1] + cut + "\n"
    return text


def read_tail(path: Path, limit: int) -> bytes:
    """The last limit bytes of a file (empty when there is none), never reading the rest."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - limit))
            return handle.read(limit)
    except OSError:
        return b""


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of an event file, one a line; other lines (banners, junk) are skipped."""
    try:
        lines = list(_bounded_lines(path))
    except OSError:
        return []
    events = []
    for raw in lines:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def read_new_lines(path: Path, offset: int) -> tuple[bytes, int]:
    """The whole lines a file gained since offset, and the offset after them (a line still
    being written waits for the next read)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return b"", offset
    end = data.rfind(b"\n") + 1
    return data[:end], offset + end


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def toml_value(value: str) -> str:
    """A TOML string literal (for codex `-c key=value`)."""
    return json.dumps(value)


@dataclass(frozen=True)
class CliTrial:
    """What an adapter is told of one trial: its private home, as the host and as the agent
    process see it, the base URL to hand the CLI and the task's step cap. Per trial, never on
    the agent, which the trials of one process share and may run at once."""

    host_home: Path
    inner_home: str
    wire_url: str | None = None  # base_url, or the metered trial's own route through the meter
    step_limit: int | None = None  # the round's step cap (max_steps, a leg's share of it)
    plugins: tuple[Plugin, ...] = ()  # the arm's plugins, delivered into the home
    capabilities: Capabilities = DEFAULT_CAPABILITIES  # the arms file's, the command's

    def host(self, rel: str) -> Path:
        return self.host_home / rel

    def inner(self, rel: str) -> str:
        return f"{self.inner_home.rstrip('/')}/{rel}"


class CliAgent(Agent):
    """An agent CLI run headless in the workspace, one process per round."""

    default_key_env: str  # the variable the CLI reads its API key from
    default_provider: str | None = None  # the host the CLI reaches without a base_url
    default_upstream: str | None = None  # the base URL metered in place of a missing base_url
    cumulative_usage = False  # a resumed session reports totals since the session began
    credential_env: tuple[str, ...] = ()  # further credential variables passed through
    key_variables: tuple[str, ...] = ()  # any one of them lets the CLI reach its own provider
    login_hint: str = ""  # the CLI's own login, which a private home never holds
    meterable = True
    own_options: tuple[str, ...] = ()  # --agent-opt keys this adapter adds
    skills_by_dir = False  # the CLI names a skill by its directory, not its front matter

    @classmethod
    def allowed_options(cls) -> tuple[str, ...]:
        return (*COMMON_OPTIONS, *cls.own_options)

    def __init__(self, settings: Settings, prices: Mapping[str, Price] | None = None) -> None:
        super().__init__(settings)
        self.prices = dict(prices or {})
        self.binary = self._find_binary()
        self.run_binary = self.binary  # the same program as the sandbox's processes see it
        self.base_url = self.option("base_url")
        self.key_env = self.option("api_key_env") or self.default_key_env
        self.extra_env = [n for n in (self.option("env") or "").split(",") if n]
        self._version_lock = threading.Lock()
        self._version_asked = False
        self._version: str | None = None

    def _find_binary(self) -> str:
        explicit = self.option("bin")
        if explicit and "/" in explicit and not os.access(explicit, os.X_OK):
            # A bare name is looked up where the agent runs (PATH, or the Docker image).
            raise pytest.UsageError(
                f"--agent-opt bin={explicit}: no executable file there; point bin at the "
                f"{self.name} binary, or drop the option to use the pinned install"
            )
        if explicit:
            return explicit
        found = find_cli(self.name)
        if found is None:
            raise pytest.UsageError(
                f"--agent={self.name}: {missing_reason(self.name)}; or pass --agent-opt bin=PATH"
            )
        return str(found)

    def reads_key_env(self) -> bool:
        """Whether the CLI reads the api_key_env variable: a base_url provider names it."""
        return bool(self.base_url)

    def credential_names(self) -> tuple[str, ...]:
        """The variables of which one must be set: a base_url provider's, else the CLI's own."""
        return (self.key_env,) if self.base_url else self.key_variables

    def preflight(self) -> None:
        """No trial starts without a credential: the provider would refuse each one after
        its retries. Logins are never used, since every trial's home is private."""
        self.check_pin()
        self.meter_upstream()  # --agentbench-meter=on that cannot meter: a usage error now
        names = tuple(dict.fromkeys(self.credential_names()))
        if any(os.environ.get(name) for name in names):
            return
        other = (
            ", or name another with --agent-opt api_key_env=NAME" if self.reads_key_env() else ""
        )
        raise pytest.UsageError(
            f"--agent={self.name}: no credentials: set {' or '.join(names)} "
            f"({self.login_hint}){other}"
        )

    def check_pin(self) -> None:
        """--agent-opt version=X: no trial starts unless the CLI reports version X."""
        wanted = self.option("version")
        if wanted is None:
            return
        reported = self.cli_version()
        if reported is None:
            where = (
                "only the image has it"
                if self.settings.sandbox == "docker" and "/" not in self.binary
                else f"`{self.binary} --version` failed"
            )
            raise pytest.UsageError(
                f"--agent-opt version={wanted}: the {self.name} CLI's version is unknown "
                f"({where}); point --agent-opt bin at the CLI, or drop the pin"
            )
        if not version_matches(reported, wanted):
            raise pytest.UsageError(
                f"--agent-opt version={wanted}: {self.binary} reports {reported!r}; install "
                f"{self.name} {wanted} (npm install {PINS[self.name].package}@{wanted}) and "
                "point --agent-opt bin at it, or pin the version installed"
            )

    def meter_route(self) -> tuple[str | None, str | None]:
        """(upstream, None) when trials go through the meter (--agentbench-meter, on unless
        off); (None, why not) when they run unmetered. Only an API key can be metered."""
        if self.settings.meter == "off":
            return None, "--agentbench-meter=off"
        upstream = self.base_url or self.default_upstream
        if not upstream:
            return None, (
                f"{self.name}'s own providers cannot be pointed at the meter; "
                "pass --agent-opt base_url=URL"
            )
        if not os.environ.get(self.key_env):
            held = [n for n in self.credential_names() if n != self.key_env and os.environ.get(n)]
            if not held:
                return None, f"no API key in {self.key_env}"
            return None, (
                f"it authenticates with {' or '.join(held)}, not an API key in {self.key_env} "
                "(an account login is not metered)"
            )
        return upstream, None

    def meter_upstream(self) -> str | None:
        """Where a metered trial's requests go on to; None: unmetered. An option that needs
        the meter (=on, faults, the request log) for a trial that cannot have it is a usage
        error."""
        upstream, why_not = self.meter_route()
        asked = meter_asked(self.settings)
        if upstream is None and asked:
            raise pytest.UsageError(
                f"{asked}: --agent={self.name} cannot be metered here: {why_not}; "
                "or drop the option to run it unmetered"
            )
        return upstream

    def use_sandbox(self, provider: SandboxProvider) -> None:
        self.run_binary = provider.program_path(self.binary)
        # A CLI's home fills with caches (opencode installs packages there) and its own
        # sandbox may mount a fresh /dev (codex's does), hiding /dev/shm; its trials take
        # seconds, so the disk's milliseconds do not matter.
        provider.keep_homes_on_disk()

    # What each adapter says -------------------------------------------------------------

    @abstractmethod
    def command(self, prompt: str, session_id: str | None, trial: CliTrial) -> list[str]:
        """argv after the binary; session_id set means: continue that session."""

    @abstractmethod
    def adapter_env(self, trial: CliTrial) -> dict[str, str]:
        """Variables that point the CLI at its private config and at the provider."""

    @abstractmethod
    def parse(self, events: Sequence[Mapping[str, Any]]) -> StreamFacts:
        """Read one round's events."""

    def prepare(self, trial: CliTrial) -> None:
        """Write private config files before the first round."""

    def discovery_requests(self, trial: CliTrial, workspace: str) -> tuple[list[str], str] | None:
        """argv after the binary of a run that answers requests on stdin without a model call,
        and the request lines (the last one's id DISCOVERY_END); None: the CLI offers no such
        listing, and every kind of the receipt is unverified."""
        return None

    def read_discovery(self, answers: Sequence[Mapping[str, Any]], trial: CliTrial) -> Discovery:
        """What a discovery run's answers say the CLI loaded."""
        return Discovery("none: this CLI offers no listing")

    def reported_treatment(self, events: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
        """What the CLI reported of itself while coding (version, skills, plugins, hooks that
        ran); None when its events say nothing of it."""
        return None

    def reported_cost_is_known(self) -> bool:
        """Whether the CLI's own cost figure means dollars (not a guess or a 0 placeholder)."""
        return True

    # Shared behaviour ------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return {
            **super().info(),
            "cli_version": self.cli_version(),
            "pinned_version": PINS[self.name].version,
            "binary": self.binary,
            "base_url": self.base_url,
            "provider": self.provider(),
            "meter": self.meter_note(),
        }

    def meter_note(self) -> str:
        """For the report: `metered`, or `unmetered: why` (the CLI's tokens are its own)."""
        upstream, why_not = self.meter_route()
        return "metered" if upstream else f"unmetered: {why_not}"

    def provider(self) -> str | None:
        """Where the model is served (a report's model route): the base_url's host, else the
        CLI's default provider; None when the adapter cannot tell."""
        if self.base_url:
            return urlsplit(self.base_url).hostname
        return self.default_provider

    def cli_version(self) -> str | None:
        """`BIN --version`, asked once (concurrent trials wait for the one answer, unknown
        included) with a throwaway home: even --version writes there.

        Unknown for a CLI named for the docker image's PATH: only the image has it.
        """
        if self.settings.sandbox == "docker" and "/" not in self.binary:
            return None
        with self._version_lock:
            if not self._version_asked:
                self._version = self._ask_version()
                self._version_asked = True
        return self._version

    def _ask_version(self) -> str | None:
        with tempfile.TemporaryDirectory(prefix="agentbench-version-") as home:
            trial = CliTrial(Path(home), home, self.base_url)
            self.prepare(trial)
            try:
                done = subprocess.run(
                    [self.binary, "--version"],
                    env=self.child_env(trial),
                    cwd=home,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=VERSION_TIMEOUT,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                return None
        lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
        return lines[0].strip() if done.returncode == 0 and lines else None

    def passthrough_names(self) -> list[str]:
        return [*self.credential_env, self.key_env, *self.extra_env]

    def child_env(self, trial: CliTrial) -> dict[str, str]:
        """A small environment: base variables, credentials, and private config locations."""
        env = {name: os.environ[name] for name in BASE_ENV if name in os.environ}
        env.update({n: os.environ[n] for n in self.passthrough_names() if n in os.environ})
        env.update(
            HOME=trial.inner_home,
            TMPDIR=trial.inner("tmp"),
            XDG_CONFIG_HOME=trial.inner(".config"),
            XDG_DATA_HOME=trial.inner(".local/share"),
            XDG_CACHE_HOME=trial.inner(".cache"),
            XDG_STATE_HOME=trial.inner(".local/state"),
        )
        for rel in ("tmp", ".config", ".local/share", ".cache", ".local/state"):
            trial.host(rel).mkdir(parents=True, exist_ok=True)
        env.update(self.adapter_env(trial))
        return env

    def secrets(self) -> list[str]:
        """Credential values that must never appear in anything saved."""
        values = {os.environ.get(n, "") for n in self.passthrough_names()}
        return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets():
            text = text.replace(secret, REDACTED)
        return text

    def price(self, facts: StreamFacts, tokens: TokenUsage | None) -> float | None:
        """The round's dollars: the CLI's own figure when it is real, else the price table."""
        if facts.cost_usd is not None and self.reported_cost_is_known():
            return facts.cost_usd
        for model in (facts.model_reported, self.settings.model):
            if model and model in self.prices:
                return self.prices[model].cost(tokens)
        return None

    def start(self, ctx: TrialContext) -> AgentSession:
        return CliSession(self, ctx)


_EVENTS_WRAPPER = 'out="$1"; shift; exec "$@" >"$out"'
# Requests on stdin, held open until every one of them is answered (or 30 s): a server
# reading requests until EOF (codex app-server) would otherwise stop before it answers, and
# it answers in its own order, not the requests'. $3 holds the request ids; an answer names
# its request `..id": "ID"` (codex's id, Claude Code's request_id).
_DISCOVERY_WRAPPER = (
    'in="$1"; out="$2"; ids="$3"; shift 3; { cat "$in"; i=0; while [ $i -lt 300 ]; do '
    'left=0; for id in $ids; do grep -q "id\\": *\\"$id\\"" "$out" 2>/dev/null || left=1; done; '
    '[ $left = 0 ] && break; sleep 0.1; i=$((i+1)); done; } | "$@" >"$out"'
)


def request_ids(requests: str) -> list[str]:
    """The ids of a discovery run's JSON requests, one a line (`id` or `request_id`); a
    notification has none and gets no answer, so nothing waits for it."""
    ids = []
    for line in requests.splitlines():
        request = json.loads(line)
        found = request.get("id", request.get("request_id"))
        if found is not None:
            ids.append(str(found))
    return ids


_ASKED_WRAPPER = 'in="$1"; out="$2"; shift 2; exec "$@" <"$in" >"$out"'


def events_argv(
    name: str, program: str, args: Sequence[str], events: str, stdin: str | None = None
) -> list[str]:
    """argv that runs program with args, its stdout (the CLI's events) into the file events,
    since a long session overflows any pipe tail; its stdin from the file stdin when given (a
    prompt may exceed what one argument can hold)."""
    if stdin is None:
        return ["/bin/sh", "-c", _EVENTS_WRAPPER, f"agentbench-{name}", events, program, *args]
    return ["/bin/sh", "-c", _ASKED_WRAPPER, f"agentbench-{name}", stdin, events, program, *args]


class CliSession(AgentSession):
    """One trial's conversation: turn 0 starts it, later legs and recovery rounds resume it."""

    def __init__(self, agent: CliAgent, ctx: TrialContext) -> None:
        self.agent = agent
        self.ctx = ctx
        self.session_id: str | None = None
        self.reported: TokenUsage | None = TokenUsage(0, 0, 0, 0)  # None: base unknown
        self.meter: MeterProcess | None = None
        self.meter_token = ""
        self.meter_seen = 0  # requests of the trial's log already given to earlier rounds
        # The wire's bodies (meter/server.py), outside the sandbox: the agent never sees them.
        self.wire_dir: Path | None = None
        self.wire_read = 0  # bytes of the bodies file already given to earlier rounds
        upstream = agent.meter_upstream()
        wire_url = agent.base_url
        if upstream is not None:
            settings = agent.settings
            self.meter = shared_meter(settings.meter_log, settings.meter_listen, settings.meter_tls)
            self.wire_dir = Path(tempfile.mkdtemp(prefix="agentbench-wire-", dir=owned_dir()))
            # A priming run meets no fault, and the meter lets one step of it through.
            self.meter_token, wire_url = self.meter.open_trial(
                upstream,
                "" if ctx.priming else agent.settings.faults,
                bodies=self.wire_dir / "wire.jsonl",
                cap=1 if ctx.priming else None,
            )
        steps = 1 if ctx.priming else ctx.step_limit(0)
        plugins = ctx.arm.plugins if ctx.arm is not None else ()
        caps = ctx.arm.capabilities if ctx.arm is not None else Capabilities()
        self.trial = CliTrial(
            ctx.sandbox.home,
            ctx.sandbox.inner_home,
            wire_url,
            steps,
            plugins=plugins,
            capabilities=caps,
        )
        agent.prepare(self.trial)
        self.delivered: dict[str, str | None] = {}  # delivered files' hashes, before coding
        self.reported_facts: dict[str, Any] | None = None  # what the CLI said while coding
        if ctx.arm is not None:
            agent.deliver(ctx.arm, self.trial.host_home)
            if agent.delivery is not None:
                self.delivered = delivered_hashes(ctx.arm, self.trial.host_home, agent.delivery)

    def discover(self) -> None:
        """The receipt (receipts.py) of what the CLI loaded, before its first model call; a
        mismatch or a failed discovery stops the trial as the machine's failure."""
        agent, arm = self.agent, self.ctx.arm
        if arm is None or agent.delivery is None:
            return
        asked = agent.discovery_requests(self.trial, self.ctx.sandbox.inner_workspace)
        found = Discovery("none: this CLI offers no listing")
        if asked is not None:
            args, requests = asked
            self.trial.host("discovery-in.jsonl").write_text(requests)
            wrapped = [
                "/bin/sh",
                "-c",
                _DISCOVERY_WRAPPER,
                f"agentbench-{agent.name}-discovery",
                self.trial.inner("discovery-in.jsonl"),
                self.trial.inner("discovery.jsonl"),
                " ".join(request_ids(requests)),
                agent.run_binary,
                *args,
            ]
            env = agent.child_env(self.trial)
            done = self.ctx.sandbox.run(wrapped, env=env, timeout=DISCOVERY_TIMEOUT)
            answers = read_events(self.trial.host("discovery.jsonl"))
            found = agent.read_discovery(answers, self.trial)
            if found.error is None and (done.timed_out or not answers):
                found.error = f"no answer (exit {done.exit_code}): " + agent.scrub(
                    done.stderr.decode("utf-8", "replace")[-TAIL_CHARS:]
                )
            for name in ("discovery-in.jsonl", "discovery.jsonl"):
                self.trial.host(name).unlink(missing_ok=True)
        want = expected(arm, agent.delivery, agent.skills_by_dir)
        self.receipt = build(agent.name, arm, want, found)
        self.receipt["delivered"] = self.delivered
        caps = arm.capabilities
        self.receipt["capabilities"] = {
            key: {
                "value": getattr(caps, key),
                "enforced_by": agent.capability_switches[key]
                if key in caps.set_keys()
                else "the CLI's default",
            }
            for key in CAPABILITY_KEYS
        }
        if self.meter is not None:  # the wire proves no model call, whatever the CLI says
            spent = len(self.meter.counters(self.meter_token)["log"]) - self.meter_seen
            self.receipt["discovery"]["wire_requests"] = spent
            if spent:
                self.receipt["problems"].append(f"discovery sent {spent} request(s) on the wire")
                self.receipt["status"] = MISMATCH
        version = agent.cli_version()
        if found.cli_version and version and not version_matches(version, found.cli_version):
            self.receipt["problems"].append(
                f"discovery reports CLI {found.cli_version}, --version said {version!r}"
            )
            self.receipt["status"] = MISMATCH
        if found.error:
            raise InfrastructureError(DISCOVERY_CAUSE, f"discovery of {arm.name}: {found.error}")
        if self.receipt["status"] == MISMATCH:
            problems = "; ".join(self.receipt["problems"])
            raise InfrastructureError(
                MISMATCH_CAUSE,
                f"the {agent.name} CLI does not see what arm {arm.name} declares: {problems}",
            )

    def round_tokens(self, reported: TokenUsage | None) -> TokenUsage | None:
        """This round's tokens; for session-cumulative CLIs, the growth since the last round."""
        if not self.agent.cumulative_usage:
            return reported
        base, self.reported = self.reported, reported
        if reported is None or base is None:
            return None
        return TokenUsage(
            **{
                key: None
                if value is None or getattr(base, key) is None
                else value - getattr(base, key)
                for key, value in reported.to_dict().items()
            }
        )

    def run_round(self, prompt: str, round_index: int, timeout: float) -> RoundResult:
        agent = self.agent
        # A leg's share of the task's step budget; one step for a priming run.
        limit = 1 if self.ctx.priming else self.ctx.step_limit(round_index)
        if limit != self.trial.step_limit:
            self.trial = replace(self.trial, step_limit=limit)
            agent.prepare(self.trial)  # a step cap in a config file (opencode) is rewritten
        if round_index == 0 and not self.ctx.priming:
            self.discover()
        events_name = f"events-{round_index}.jsonl"
        resume = self.session_id if round_index > 0 else None
        argv = events_argv(
            agent.name,
            agent.run_binary,
            agent.command(prompt, resume, self.trial),
            self.trial.inner(events_name),
        )
        result = self.ctx.sandbox.run(argv, env=agent.child_env(self.trial), timeout=timeout)
        events_file = self.trial.host(events_name)
        events = read_events(events_file)
        facts = agent.parse(events)
        tokens = self.round_tokens(facts.tokens)
        self.session_id = facts.session_id or self.session_id
        stdout = read_tail(events_file, TAIL_CHARS)
        stop = facts.provider_error  # without the meter, the CLI's documented status field
        meter_log = None
        failure = failed = None
        raw: dict[str, str] = {}
        if agent.settings.trajectories:
            raw["events"] = agent.scrub(read_events_text(events_file))
        if self.meter is not None and self.wire_dir is not None:
            log = self.meter.counters(self.meter_token)["log"]
            meter_log, self.meter_seen = log[self.meter_seen :], len(log)
            stop = wire_stop(log)  # with the meter, only the wire's status stops a trial
            failure, failed = wire_failure(log), failed_call(meter_log)
            # A request still open (a hang) has no line yet: it joins a later round's.
            wire, self.wire_read = read_new_lines(self.wire_dir / "wire.jsonl", self.wire_read)
            raw["wire"] = agent.scrub(wire.decode("utf-8", "replace"))
            receipt, arm = self.receipt, self.ctx.arm
            if round_index == 0 and receipt and receipt["status"] == UNVERIFIED and arm:
                check_wire(receipt, arm, wire.decode("utf-8", "replace"))
                if receipt["status"] == MISMATCH and failure is None:
                    failure = MISMATCH_CAUSE  # the round ran, but not in the declared arm
        if round_index == 0 and self.receipt is not None:
            self.receipt.setdefault("wire", "no request recorded (unmetered)")
            self.reported_facts = agent.reported_treatment(events)
        return RoundResult(
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            wall_s=result.wall_s,
            tokens=tokens,
            cost_usd=agent.price(facts, tokens),
            turns=facts.turns,
            tool_calls=facts.tool_calls,
            session_id=facts.session_id or self.session_id,
            model_reported=facts.model_reported,
            stdout_tail=agent.scrub(stdout.decode("utf-8", "replace")),
            stderr_tail=agent.scrub(result.stderr.decode("utf-8", "replace")[-TAIL_CHARS:]),
            provider_stop=_scrubbed(agent, stop),
            final_message=_scrubbed(agent, bounded(facts.final_message)),
            meter_log=meter_log,
            infra_failure=failure,
            failed_call=failed,
            raw=raw,
        )

    def close(self) -> None:
        if self.receipt is not None and self.ctx.arm is not None and self.agent.delivery:
            after = delivered_hashes(self.ctx.arm, self.trial.host_home, self.agent.delivery)
            check_after(self.receipt, self.delivered, after, self.reported_facts)
        if self.meter is not None:
            self.meter.close_trial(self.meter_token)
            self.meter = None
        if self.wire_dir is not None:
            shutil.rmtree(self.wire_dir, ignore_errors=True)
            self.wire_dir = None


def _scrubbed(agent: CliAgent, text: str | None) -> str | None:
    return agent.scrub(text) if text is not None else None
