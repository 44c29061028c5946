"""Command-line and ini options, declared once; `settings_from_config` validates them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.fs.sizes import format_size
from pytest_agentbench.settings import (
    DEFAULT_CPUS,
    DEFAULT_DISK,
    DEFAULT_MEMORY,
    DEFAULT_PIDS,
    MEASURE_TOOLS,
    NETWORK_CHOICES,
    SandboxLimits,
    Settings,
    parse_agent_opts,
    parse_cpus,
    parse_disk,
    parse_int,
    parse_memory,
    parse_positive_float,
)
from pytest_agentbench.tasks.segments import SEGMENTS_OPTION, STEER_OPTION, parse_steer
from pytest_agentbench.tasks.sources import BUILTIN_PREFIX, builtin_source

GROUP = "agentbench"
INI_PREFIX = "agentbench_"
SANDBOX_CHOICES = ("auto", "tmp", "bwrap", "docker")
AGENT_HOME_CHOICES = ("auto", "disk")
KEEP_CHOICES = ("none", "failed", "all")
METER_CHOICES = ("off", "on", "auto")
RECORDED_KEY = pytest.StashKey[dict[str, Any]]()  # a resumed run's settings, by option


def _add(
    parser: pytest.Parser,
    group: Any,
    flag: str,
    dest: str,
    help: str,
    *,
    ini: bool = True,
    ini_type: str | None = None,
    **kwargs: Any,
) -> None:
    group.addoption(flag, dest=dest, default=None, help=help, **kwargs)
    if ini:
        parser.addini(f"{INI_PREFIX}{dest}", help=f"default for {flag}", type=ini_type)  # type: ignore[arg-type]


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "agent benchmarks (pytest-agentbench)")
    _add(
        parser,
        group,
        "--agent",
        "agent",
        "run the benchmark tasks with this agent "
        "(oracle, nop, mock, command, ...); without it only ordinary tests run",
        ini=False,
    )
    _add(parser, group, "--repeats", "repeats", "trials per task (default 1)")
    group.addoption(
        "--tasks",
        dest="tasks",
        action="append",
        default=None,
        help="task source: a directory of task directories, or builtin:NAME "
        "(repeatable; default: ini agentbench_tasks, else the bundled suite)",
    )
    parser.addini(
        "agentbench_tasks",
        type="args",
        help="default task sources for --tasks: directories (relative to the ini file) or "
        "builtin:NAME",
    )
    _add(parser, group, "--model", "model", "model name passed to the agent")
    _add(parser, group, "--reasoning", "reasoning", "reasoning effort passed to the agent")
    _add(parser, group, "--agent-cmd", "agent_cmd", "shell command run by the command agent")
    group.addoption(
        "--agent-opt",
        dest="agent_opt",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="adapter option (repeatable): seed, pass_prob, bin, base_url, ...",
    )
    parser.addini("agentbench_agent_opt", type="linelist", help="default --agent-opt pairs")
    _add(
        parser,
        group,
        "--agent-timeout",
        "agent_timeout",
        "seconds per agent round, overriding every task's timeout",
    )
    _add(
        parser,
        group,
        "--oracle-recoveries",
        "oracle_recoveries",
        "after a failed check, up to N more rounds in the same session with verifier feedback",
    )
    _add(
        parser,
        group,
        "--retry-failures",
        "retry_failures",
        "after a failed trial, up to N fresh attempts (not combinable with recoveries)",
    )
    _add(
        parser,
        group,
        SEGMENTS_OPTION,
        "segments",
        "run each trial as N legs of one agent session in the same workspace: leg 1 gets the "
        "task, later legs a bare continuation; the step budget is divided (default 1)",
    )
    group.addoption(
        STEER_OPTION,
        dest="steer",
        action="append",
        default=None,
        metavar="TEXT@LEG",
        help="give leg LEG (2..N of --agentbench-segments) this user turn instead of the "
        "continuation (repeatable)",
    )
    parser.addini("agentbench_steer", type="linelist", help=f"default {STEER_OPTION} entries")
    _add(parser, group, "--agentbench-json", "json_path", "write the JSON report to this path")
    _add(parser, group, "--agentbench-seed", "seed", "run seed for seeded agents and bootstrap")
    _add(
        parser,
        group,
        "--agentbench-label",
        "label",
        "the run's name in every report, merge, compare and status (default: the agent, its "
        "model and reasoning, and the adapter options)",
    )
    _add(
        parser,
        group,
        "--agentbench-raw-limit",
        "raw_limit",
        "compressed raw evidence kept per trial in raw.jsonl.gz (the agent's events, the wire "
        "the meter saw, stdout), e.g. 16M (the default) or 0 to keep none; the trajectory is "
        "built either way",
    )
    _add(
        parser,
        group,
        "--agentbench-trajectories",
        "trajectories",
        "on (the default): keep each trial's trajectory, its figures and checks and its raw "
        "evidence; off: none of them",
    )
    _add(
        parser,
        group,
        "--agentbench-measure",
        "measure",
        f"code measures of each trial's change, comma-separated: {','.join(MEASURE_TOOLS)} "
        "(default lines; complexity and dead_code need pip install 'pytest-agentbench[measure]')",
    )
    _add(
        parser,
        group,
        "--agentbench-change-limit",
        "change_limit",
        "bytes of each trial's whole change kept as change.patch, from which measures are "
        "taken (default 1M); a longer change is cut and measures nothing",
    )
    _add_sandbox_options(parser, group)
    _add_run_options(parser, group)
    _add_prices_options(parser, group)
    _add_meter_options(parser, group)


def _add_meter_options(parser: pytest.Parser, group: Any) -> None:
    _add(
        parser,
        group,
        "--agentbench-meter",
        "meter",
        "count model requests on the wire through a loopback proxy: auto (default: codex, "
        "claude and opencode when they authenticate with an API key), on (every trial, or a "
        "usage error) or off",
    )
    _add(
        parser,
        group,
        "--agentbench-faults",
        "faults",
        "inject provider faults through the meter: N:STATUS, every:K:STATUS (STATUS an HTTP "
        "code, drop or hang), comma-separated",
    )
    _add(
        parser,
        group,
        "--agentbench-meter-log",
        "meter_log",
        "append every metered request body (JSON lines, no headers) to this file",
    )
    _add(
        parser,
        group,
        "--agentbench-meter-listen",
        "meter_listen",
        "the address each process's meter takes trials' model requests on, for engines of "
        "another machine to reach (default 127.0.0.1; another needs --agentbench-meter-tls or "
        "--agentbench-meter-insecure)",
    )
    _add(
        parser,
        group,
        "--agentbench-meter-tls",
        "meter_tls",
        "CERT,KEY: the meter's listening address serves HTTPS with this certificate and key",
    )
    group.addoption(
        "--agentbench-meter-insecure",
        dest="meter_insecure",
        action="store_true",
        default=None,
        help="let the meter listen on a non-loopback address over plain HTTP (the agent's API "
        "key crosses the network in the clear)",
    )
    parser.addini("agentbench_meter_insecure", type="bool", help="default for the flag")


def _add_sandbox_options(parser: pytest.Parser, group: Any) -> None:
    _add(
        parser,
        group,
        "--sandbox",
        "sandbox",
        f"where agents run: {'|'.join(SANDBOX_CHOICES)} "
        "(default auto: bwrap where it works, else tmp with a warning)",
    )
    _add(
        parser,
        group,
        "--agentbench-network",
        "network",
        f"{'|'.join(NETWORK_CHOICES)}: keep the network for inference (default host) or cut it "
        "(bwrap, docker)",
    )
    _add(
        parser,
        group,
        "--docker-image",
        "docker_image",
        "image for --sandbox=docker (a task's own image field wins)",
    )
    group.addoption(
        "--docker-host",
        dest="docker_hosts",
        action="append",
        default=None,
        metavar="URL",
        help="a Docker engine of the pool trials are placed on, repeatable: unix:///PATH, "
        "tcp://HOST:PORT?tls=DIR, ssh://USER@HOST or a context's name, each optionally "
        "#slots=N (default: the one engine DOCKER_HOST names)",
    )
    parser.addini("agentbench_docker_host", type="linelist", help="default --docker-host URLs")
    _add(
        parser,
        group,
        "--swebench-images",
        "swebench_images",
        "name of each SWE-bench instance's image, {id} and {hub_id} filled in (default "
        "sweb.eval.x86_64.{hub_id}:latest; an instance's image field wins)",
    )
    _add(
        parser,
        group,
        "--docker-cpus",
        "docker_cpus",
        f"CPUs per docker trial (default {DEFAULT_CPUS})",
    )
    _add(
        parser,
        group,
        "--docker-memory",
        "docker_memory",
        f"memory per trial, docker and bwrap (default {DEFAULT_MEMORY}; bwrap needs a cgroup)",
    )
    _add(
        parser,
        group,
        "--sandbox-pids",
        "sandbox_pids",
        f"process limit per trial, docker and bwrap (default {DEFAULT_PIDS})",
    )
    _add(
        parser,
        group,
        "--sandbox-disk",
        "sandbox_disk",
        f"disk a trial's workspace and private home may take together, every sandbox; a trial "
        f"past it fails (default {format_size(DEFAULT_DISK)}; sizes such as 512M, 1G, 2GiB)",
    )
    group.addoption(
        "--agent-expose",
        dest="agent_expose",
        action="append",
        default=None,
        metavar="PATH",
        help="a host path agents see read-only, at the same path, under bwrap and docker "
        "(repeatable; the command's interpreter and scripts are shown without it)",
    )
    parser.addini("agentbench_agent_expose", type="linelist", help="default --agent-expose paths")
    _add(
        parser,
        group,
        "--agent-home",
        "agent_home",
        f"{'|'.join(AGENT_HOME_CHOICES)}: where the agent's private HOME (its config, the "
        "prompt, TMPDIR) lives, tmp and bwrap (default auto: in memory, /dev/shm, when it has "
        "2 GiB free and allows exec; else beside the workspace, as disk always does)",
    )


def _add_run_options(parser: pytest.Parser, group: Any) -> None:
    _add(
        parser,
        group,
        "--agentbench-dir",
        "run_dir",
        "run directory: observations.jsonl, run.json, trials/ (default .agentbench/runs/<run-id>)",
    )
    _add(
        parser,
        group,
        "--agentbench-resume",
        "resume_dir",
        "resume this run directory: scored trials with the same identity are not run again",
        ini=False,
    )
    group.addoption(
        "--agentbench-baseline",
        dest="baseline",
        action="append",
        default=None,
        metavar="RUN_DIR",
        help="reuse the scored trials of a finished run whose configuration (or arm) and task "
        "are the same, instead of running them again (repeatable; ini agentbench_baseline)",
    )
    parser.addini(
        "agentbench_baseline",
        type="paths",
        help="default --agentbench-baseline run directories (relative to the ini file)",
    )
    group.addoption(
        "--agentbench-cache",
        dest="cache_dir",
        default=None,
        metavar="DIR",
        help="publish this run's scored vanilla trials in DIR, and reuse those of the same "
        "configuration and task that DIR holds instead of running them (ini agentbench_cache)",
    )
    parser.addini(
        "agentbench_cache",
        type="paths",
        help="default --agentbench-cache directory (relative to the ini file)",
    )
    group.addoption(
        "--agentbench-check",
        dest="check",
        action="store_true",
        default=None,
        help="check the study (options, agent CLI and credentials, sandbox, arms, tasks) "
        "with no model call, one line per problem, and run nothing (agentbench check)",
    )
    group.addoption(
        "--agentbench-detach",
        dest="detach",
        action="store_true",
        default=None,
        help="run in the background, output in <run dir>/run.log; prints how to watch "
        "(agentbench status --watch) and stop (agentbench stop) it",
    )
    _add(
        parser,
        group,
        "--agentbench-plan",
        "plan",
        "json: print the plan (trials, sessions, arms, sandbox, agent and its CLI version, "
        "metering, budget) as JSON on stdout and run nothing, as --collect-only",
        ini=False,
    )
    _add(
        parser,
        group,
        "--agentbench-shard",
        "shard",
        "run only shard I of N (whole tasks, balanced by task count), e.g. 2/3",
        ini=False,
    )
    _add(
        parser,
        group,
        "--agentbench-keep",
        "keep",
        f"{'|'.join(KEEP_CHOICES)}: keep trial workspaces in the run directory for inspection "
        "(failed: trials not exact at the final round; default none)",
    )
    _add(
        parser,
        group,
        "--agentbench-budget-usd",
        "budget_usd",
        "start no new trial once this run's known cost (self-reported) reaches X USD",
        ini=False,
    )
    _add(
        parser,
        group,
        "--agentbench-budget-tokens",
        "budget_tokens",
        "start no new trial once this run's known tokens (self-reported) reach N",
        ini=False,
    )
    _add(
        parser,
        group,
        "--agentbench-retry-infra",
        "retry_infra",
        "run a trial that ended in an infrastructure failure (upstream unreachable, sandbox "
        "or docker engine failure) again as a fresh trial, up to N times (default 2)",
    )
    _add(
        parser,
        group,
        "--agentbench-max-consecutive-failures",
        "max_consecutive_failures",
        "start no new trial after K trials in a row ended in an infrastructure failure or a "
        "failed model call that changed nothing (default 3)",
    )
    _add(
        parser,
        group,
        "--agentbench-concurrency",
        "concurrency",
        "up to N trials in flight at once in each pytest process, on threads (default 1: one "
        "at a time); with -n, in each worker (docs/scaling.md)",
    )
    _add(
        parser,
        group,
        "--arms",
        "arms",
        "arms file (TOML): run every task under vanilla and each named treatment, paired "
        "(docs/arms.md)",
    )


def _add_prices_options(parser: pytest.Parser, group: Any) -> None:
    _add(
        parser,
        group,
        "--agentbench-prices",
        "prices",
        "TOML price table (per model: as_of, input, cached_input, output, optional "
        "cache_write, in USD per million tokens) for agents that report tokens but no cost",
    )


def sandbox_limits_from_config(config: pytest.Config, sandbox: str) -> SandboxLimits:
    network = str(_value(config, "network", "host"))
    if network not in NETWORK_CHOICES:
        raise pytest.UsageError(
            f"--agentbench-network {network!r}: choose one of {', '.join(NETWORK_CHOICES)}"
        )
    if network == "none" and sandbox == "tmp":
        raise pytest.UsageError(
            "--agentbench-network=none needs an isolating sandbox: --sandbox=bwrap or docker"
        )
    memory = str(_value(config, "docker_memory", DEFAULT_MEMORY))
    parse_memory("--docker-memory", memory)
    disk = _value(config, "sandbox_disk", None)
    return SandboxLimits(
        network=network,
        cpus=parse_cpus("--docker-cpus", _value(config, "docker_cpus", DEFAULT_CPUS)),
        memory=memory,
        pids=parse_int("--sandbox-pids", _value(config, "sandbox_pids", DEFAULT_PIDS), 8),
        disk=parse_disk("--sandbox-disk", str(disk)) if disk is not None else DEFAULT_DISK,
    )


def _given(config: pytest.Config, dest: str) -> Any:
    """The command line's value of an option, else the resumed run's (None: neither)."""
    cli = config.getoption(dest)
    return cli if cli is not None else config.stash.get(RECORDED_KEY, {}).get(dest)


def _value(config: pytest.Config, dest: str, default: Any) -> Any:
    given = _given(config, dest)
    if given is not None:
        return given
    ini = config.getini(f"{INI_PREFIX}{dest}")
    return ini if ini not in (None, "", []) else default


SAVED_AS_IS = frozenset(
    {
        *("agent", "repeats", "tasks", "model", "reasoning", "agent_cmd", "agent_timeout"),
        *("oracle_recoveries", "retry_failures", "json_path", "seed", "sandbox", "docker_image"),
        "swebench_images",
        *("agent_home", "agent_expose", "keep", "budget_usd", "budget_tokens", "retry_infra"),
        *("max_consecutive_failures", "meter", "faults", "meter_log", "label", "raw_limit"),
        *("trajectories", "concurrency", "measure", "change_limit", "segments"),
    }
)
"""Options whose values run.json's settings keep under the option's own name."""
LIMIT_OPTIONS = {
    "network": "network",
    "docker_cpus": "cpus",
    "docker_memory": "memory",
    "sandbox_pids": "pids",
    "sandbox_disk": "disk",
}
"""Options whose values run.json keeps in its settings' sandbox_limits."""
RECORDED = SAVED_AS_IS | LIMIT_OPTIONS.keys() | {"agent_opt", "arms", "steer"}


def _recorded_options(run: dict[str, Any]) -> dict[str, Any]:
    """A run record's settings as the options that gave them: what a resumed run continues
    with where the command line says nothing (values the run left unset are left out)."""
    saved = run.get("settings") or {}
    limits = saved.get("sandbox_limits") or {}
    options = {
        **{dest: saved.get(dest) for dest in SAVED_AS_IS},
        **{dest: limits.get(key) for dest, key in LIMIT_OPTIONS.items()},
        "agent_opt": [f"{key}={value}" for key, value in (saved.get("agent_opts") or {}).items()],
        "arms": run.get("arms_file"),
        "steer": [f"{text}@{leg}" for leg, text in saved.get("steers") or []],
    }
    return {dest: value for dest, value in options.items() if value not in (None, "", [])}


def _own_options(config: pytest.Config) -> list[Any]:
    """The agentbench group's command-line options (pytest keeps no public list of them)."""
    options: list[Any] = config._parser.getgroup(GROUP).options
    return options


def resume_args(config: pytest.Config) -> list[str]:
    """pytest's arguments as given, less the agentbench options a run directory records and
    the run directory itself: what the printed resume command repeats (-n, -k, node ids...)."""
    dropped = RECORDED | {"run_dir", "resume_dir"}
    flags = {name: option.dest for option in _own_options(config) for name in option.names()}
    kept: list[str] = []
    args = iter(config.invocation_params.args)
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flags.get(flag) not in dropped:
            kept.append(arg)
        elif "=" not in arg:
            next(args, None)  # the option's value
    return kept


def arms_path(config: pytest.Config) -> Path | None:
    """The --arms file (else the ini's, relative to the ini file), or None: no arms."""
    cli = _given(config, "arms")
    if cli:
        return Path(config.invocation_params.dir) / cli
    ini = config.getini("agentbench_arms")
    if not ini:
        return None
    base = config.inipath.parent if config.inipath else config.invocation_params.dir
    return Path(base) / str(ini)


def _exposed_paths(config: pytest.Config) -> tuple[str, ...]:
    """--agent-expose paths (else the ini's), absolute from where pytest was started."""
    raw = _given(config, "agent_expose") or config.getini("agentbench_agent_expose") or []
    base = Path(config.invocation_params.dir)
    return tuple(str(base / Path(path).expanduser()) for path in raw)


def _docker_hosts(config: pytest.Config, sandbox: str) -> tuple[str, ...]:
    """--docker-host values, else the ini's; only --sandbox=docker places trials on engines."""
    given = _given(config, "docker_hosts") or config.getini("agentbench_docker_host") or []
    hosts = tuple(str(host) for host in given)
    if hosts and sandbox != "docker":
        raise pytest.UsageError(
            f"--docker-host is a pool of Docker engines for --sandbox=docker (this run's sandbox "
            f"is {sandbox}); add --sandbox=docker or leave --docker-host out"
        )
    return hosts


def run_places(config: pytest.Config) -> tuple[str, ...]:
    """The project (the directory of its ini file) and where runs are written: the default
    root, --agentbench-run-dir and --agentbench-resume; agents see none of them."""
    from pytest_agentbench.run.plugins import run_roots

    project = [str(config.rootpath)] if config.inipath is not None else []
    return (*project, *(str(root) for root in run_roots(config)))


def _bring_own_images(config: pytest.Config) -> bool:
    """Whether every task runs in an image of its own (Harbor tasks build theirs)."""
    from pytest_agentbench.tasks.sources import bring_own_images

    return bring_own_images(task_sources(config), config.invocation_params.dir)


def task_sources(config: pytest.Config) -> tuple[str, ...]:
    cli = _given(config, "tasks")
    if cli:
        return tuple(cli)
    return tuple(_ini_source(config, spec) for spec in config.getini("agentbench_tasks"))


def _ini_source(config: pytest.Config, spec: str) -> str:
    """An ini task source: builtin:NAME as it is (checked here, naming the ini file), or a
    path made absolute from the ini file's directory, as pytest does for its path values
    (after a FORMAT: prefix, which stays)."""
    if spec.startswith(BUILTIN_PREFIX):
        builtin_source(spec, f"{config.inipath or '-o'}: agentbench_tasks =")
        return spec
    from pytest_agentbench.tasks.formats import split_format

    forced, rest = split_format(spec)
    base = config.inipath.parent if config.inipath else config.invocation_params.dir
    path = str(Path(base) / rest)
    return f"{forced}:{path}" if forced else path


def settings_from_config(config: pytest.Config) -> Settings | None:
    """The run's Settings, or None when --agent is not given (plain test run); agentbench
    options without --agent, and unknown agentbench ini keys with it, are usage errors.
    With --agentbench-resume, what the command line leaves out comes from the resumed run."""
    config.stash[RECORDED_KEY] = _resumed_options(config)
    agent = _given(config, "agent")
    if not agent:
        _refuse_options_without_agent(config)
        return None
    _refuse_unknown_ini_keys(config)
    repeats = parse_int("--repeats", _value(config, "repeats", 1), 1)
    recoveries = parse_int("--oracle-recoveries", _value(config, "oracle_recoveries", 0), 0)
    retries = parse_int("--retry-failures", _value(config, "retry_failures", 0), 0)
    if recoveries and retries:
        raise pytest.UsageError(
            "--oracle-recoveries and --retry-failures cannot be combined: recoveries continue "
            "the same session, retries start fresh trials; choose one"
        )
    segments = parse_int(SEGMENTS_OPTION, _value(config, "segments", 1), 1)
    timeout_raw = _value(config, "agent_timeout", None)
    sandbox = str(_value(config, "sandbox", "auto"))
    if sandbox not in SANDBOX_CHOICES:
        raise pytest.UsageError(
            f"--sandbox {sandbox!r}: unknown sandbox; choose one of {', '.join(SANDBOX_CHOICES)}"
        )
    docker_image = _value(config, "docker_image", None)
    if sandbox == "docker" and not docker_image and not _bring_own_images(config):
        raise pytest.UsageError(
            "--sandbox=docker needs an image: pass --docker-image IMAGE (ini "
            "agentbench_docker_image); a task's own `image` field still wins for that task"
        )
    agent_home = str(_value(config, "agent_home", "auto"))
    if agent_home not in AGENT_HOME_CHOICES:
        raise pytest.UsageError(
            f"--agent-home {agent_home!r}: choose one of {', '.join(AGENT_HOME_CHOICES)}"
        )
    keep = str(_value(config, "keep", "none"))
    if keep not in KEEP_CHOICES:
        raise pytest.UsageError(
            f"--agentbench-keep {keep!r}: choose one of {', '.join(KEEP_CHOICES)}"
        )
    budget_usd = _given(config, "budget_usd")
    budget_tokens = _given(config, "budget_tokens")
    json_raw = _value(config, "json_path", None)
    meter, faults, meter_log = _meter_settings(config)
    recorded_opts = config.stash[RECORDED_KEY].get("agent_opt")
    opts = parse_agent_opts(recorded_opts or list(config.getini("agentbench_agent_opt") or []))
    opts.update(parse_agent_opts(config.getoption("agent_opt") or []))
    return Settings(
        agent=str(agent),
        repeats=repeats,
        tasks=task_sources(config),
        model=_value(config, "model", None),
        reasoning=_value(config, "reasoning", None),
        agent_cmd=_value(config, "agent_cmd", None),
        agent_opts=opts,
        agent_timeout=parse_positive_float("--agent-timeout", timeout_raw) if timeout_raw else None,
        oracle_recoveries=recoveries,
        retry_failures=retries,
        segments=segments,
        steers=parse_steers(_value(config, "steer", None) or [], segments),
        json_path=Path(json_raw) if json_raw else None,
        seed=parse_int("--agentbench-seed", _value(config, "seed", 0), 0),
        sandbox=sandbox,
        docker_image=docker_image,
        docker_hosts=_docker_hosts(config, sandbox),
        swebench_images=_swebench_images(config),
        agent_home=agent_home,
        agent_expose=_exposed_paths(config),
        protected=run_places(config),
        sandbox_limits=sandbox_limits_from_config(config, sandbox),
        keep=keep,
        budget_usd=(
            None
            if budget_usd is None
            else parse_positive_float("--agentbench-budget-usd", budget_usd, "USD")
        ),
        budget_tokens=(
            None
            if budget_tokens is None
            else parse_int("--agentbench-budget-tokens", budget_tokens, 1)
        ),
        meter=meter,
        faults=faults,
        meter_log=meter_log,
        **_meter_listen(config),
        label=_value(config, "label", None) or None,
        raw_limit=parse_raw_limit(_value(config, "raw_limit", None)),
        trajectories=parse_switch(
            "--agentbench-trajectories", _value(config, "trajectories", "on")
        ),
        retry_infra=parse_int("--agentbench-retry-infra", _value(config, "retry_infra", 2), 0),
        max_consecutive_failures=parse_int(
            "--agentbench-max-consecutive-failures",
            _value(config, "max_consecutive_failures", 3),
            1,
        ),
        concurrency=parse_concurrency(config),
        measure=parse_measures(_value(config, "measure", None)),
        change_limit=parse_disk(
            "--agentbench-change-limit", str(_value(config, "change_limit", "1M"))
        ),
    )


def parse_steers(raw: list[str], segments: int) -> tuple[tuple[int, str], ...]:
    """--agentbench-steer entries as (leg, text), sorted by leg; one steer a leg."""
    steers: dict[int, str] = {}
    for entry in raw:
        try:
            leg, text = parse_steer(str(entry), segments)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        if leg in steers:
            raise pytest.UsageError(
                f"{STEER_OPTION} {entry!r}: leg {leg} is steered twice; give each leg one "
                "user turn (join the texts)"
            )
        steers[leg] = text
    return tuple(sorted(steers.items()))


def parse_measures(raw: Any) -> tuple[str, ...]:
    """--agentbench-measure: known names, comma-separated (a list as run.json keeps it); a
    measure whose tool is missing is refused here, before any trial runs."""
    if raw is None:
        return Settings.measure
    given = raw.split(",") if isinstance(raw, str) else [str(name) for name in raw]
    names = tuple(dict.fromkeys(name.strip() for name in given if name.strip()))
    unknown = [name for name in names if name not in MEASURE_TOOLS]
    if unknown or not names:
        raise pytest.UsageError(
            f"--agentbench-measure {raw!r}: unknown measure {', '.join(unknown) or '(none)'}; "
            f"choose from {', '.join(MEASURE_TOOLS)}"
        )
    from importlib.util import find_spec

    missing = [name for name in names if (tool := MEASURE_TOOLS[name]) and not find_spec(tool)]
    if missing:
        raise pytest.UsageError(
            f"--agentbench-measure {','.join(missing)} needs "
            f"{', '.join(str(MEASURE_TOOLS[name]) for name in missing)}: "
            "pip install 'pytest-agentbench[measure]'"
        )
    return names


def parse_concurrency(config: pytest.Config) -> int:
    """--agentbench-concurrency: a whole number from 1; xdist's work stealing would take a
    trial already started off the worker that started it, so it is refused."""
    concurrency = parse_int("--agentbench-concurrency", _value(config, "concurrency", 1), 1)
    if concurrency > 1 and config.getoption("dist", None) == "worksteal":
        raise pytest.UsageError(
            "--agentbench-concurrency with --dist worksteal: a worker's queued trials may "
            "already be running there; use --dist load (what -n means)"
        )
    return concurrency


def parse_switch(flag: str, raw: object) -> bool:
    """on or off (True or False, as run.json keeps it); anything else is a usage error."""
    if isinstance(raw, bool):
        return raw
    value = str(raw).strip().lower()
    if value not in ("on", "off"):
        raise pytest.UsageError(f"{flag} {raw!r}: choose on or off")
    return value == "on"


def parse_raw_limit(raw: object) -> int:
    """--agentbench-raw-limit: 0 keeps no raw evidence; else a size as --sandbox-disk takes."""
    if raw is None:
        return Settings.raw_limit
    if str(raw).strip() == "0":
        return 0
    return parse_disk("--agentbench-raw-limit", str(raw))


def plan_asked(config: pytest.Config) -> bool:
    """Whether --agentbench-plan asks for the plan instead of a run; json is its one format."""
    plan = config.getoption("plan")
    if plan not in (None, "json"):
        raise pytest.UsageError(f"--agentbench-plan {plan!r}: the one format is json")
    return plan is not None


def _resumed_options(config: pytest.Config) -> dict[str, Any]:
    """The settings of the run --agentbench-resume names, by option ({} without it)."""
    raw = config.getoption("resume_dir")
    if raw is None:
        return {}
    from pytest_agentbench.run.store import read_run_file

    try:
        run = read_run_file(Path(config.invocation_params.dir) / raw)
    except ValueError as exc:
        raise pytest.UsageError(f"--agentbench-resume {raw}: {exc}") from None
    return _recorded_options(run)


def _refuse_options_without_agent(config: pytest.Config) -> None:
    """Without --agent the plugin is off and its options would go unread, the run saying only
    "no tests ran": name them. A resumed run brings its own agent."""
    if config.getoption("resume_dir") is not None or config.option.help:
        return
    given = [
        option.names()[0]
        for option in _own_options(config)
        if option.dest != "agent" and config.getoption(option.dest) is not None
    ]
    if given:
        them = "it" if len(given) == 1 else "them"
        raise pytest.UsageError(
            f"{', '.join(given)} need{'s' if len(given) == 1 else ''} --agent: name the agent "
            f"to benchmark (for example --agent=mock), or drop {them}; without --agent only "
            "ordinary tests run"
        )


def _refuse_unknown_ini_keys(config: pytest.Config) -> None:
    """A misspelt agentbench ini key would leave its setting at the default (pytest only
    warns): name the ini file and line (or -o), the key and the nearest known key."""
    from pytest_agentbench.tasks.keys import did_you_mean

    known = [name for name in config._parser._inidict if name.startswith(INI_PREFIX)]
    overrides = [item.partition("=")[0].strip() for item in config.option.override_ini or []]
    inipath = config.inipath
    problems = [
        f"{_ini_place(inipath, key) if inipath and key not in overrides else '-o'}: unknown "
        f"ini key `{key}`{did_you_mean(key, known)}"
        # config.inicfg is deprecated from pytest 9.2; the unknown keys are what pytest warns of
        for key in dict.fromkeys([*sorted(config._get_unknown_ini_keys()), *overrides])
        if key.startswith(INI_PREFIX) and key not in known
    ]
    if problems:
        raise pytest.UsageError(
            "; ".join(problems) + f"; pytest --help lists the {INI_PREFIX}* ini keys"
        )


def _ini_place(inipath: Path, key: str) -> str:
    """FILE:LINE where the ini file gives key, or FILE alone when no line does."""
    from pytest_agentbench.tasks.keys import key_line

    try:
        text = inipath.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return str(inipath)
    if inipath.suffix == ".toml":
        line = key_line(text, ("tool", "pytest", "ini_options"), key) or key_line(
            text, ("tool", "pytest"), key
        )
    else:
        pattern = re.compile(rf"\s*{re.escape(key)}\s*[=:]")
        rows = enumerate(text.splitlines(), start=1)
        line = next((number for number, row in rows if pattern.match(row)), None)
    return f"{inipath}:{line}" if line else str(inipath)


def _meter_settings(config: pytest.Config) -> tuple[str, str, Path | None]:
    """--agentbench-meter, --agentbench-faults and --agentbench-meter-log, checked together:
    faults and the log need the meter."""
    from pytest_agentbench.meter.faults import FaultSpecError, parse_faults

    meter = str(_value(config, "meter", "auto"))
    if meter not in METER_CHOICES:
        raise pytest.UsageError(
            f"--agentbench-meter {meter!r}: choose one of {', '.join(METER_CHOICES)}"
        )
    faults = str(_value(config, "faults", "") or "")
    try:
        parse_faults(faults)
    except FaultSpecError as error:
        raise pytest.UsageError(str(error)) from None
    log_raw = _value(config, "meter_log", None)
    if (faults or log_raw) and meter == "off":
        raise pytest.UsageError(
            "--agentbench-faults and --agentbench-meter-log act through the meter: drop "
            "--agentbench-meter=off"
        )
    return meter, faults, Path(log_raw) if log_raw else None


def _meter_listen(config: pytest.Config) -> dict[str, str | None]:
    """--agentbench-meter-listen and --agentbench-meter-tls, checked: an address other than
    loopback carries the agent's API key, so it takes TLS or an explicit
    --agentbench-meter-insecure; an unspecified address (0.0.0.0) names no address a trial
    could be given."""
    import ipaddress

    listen = _value(config, "meter_listen", None)
    tls = _value(config, "meter_tls", None)
    insecure = bool(_value(config, "meter_insecure", False))
    if listen is None and tls:
        raise pytest.UsageError(
            "--agentbench-meter-tls is for --agentbench-meter-listen HOST: give the address "
            "the engines reach the meter at"
        )
    if tls:
        cert, comma, key = str(tls).partition(",")
        if not comma or not cert or not key:
            raise pytest.UsageError(
                f"--agentbench-meter-tls {tls!r}: give CERT,KEY (two PEM files, comma-separated)"
            )
        base = Path(config.invocation_params.dir)
        paths = [base / Path(part).expanduser() for part in (cert, key)]
        missing = [str(path) for path in paths if not path.is_file()]
        if missing:
            raise pytest.UsageError(f"--agentbench-meter-tls: no such file {missing[0]}")
        tls = ",".join(str(path) for path in paths)
    if listen is None:
        return {}
    host = str(listen).strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None  # a host name: this machine's name as the engines resolve it
    if address is not None and address.is_unspecified:
        raise pytest.UsageError(
            f"--agentbench-meter-listen {listen}: name the one address the engines reach this "
            "machine at (each trial is handed a URL with it), not every address"
        )
    loopback = host == "localhost" or (address is not None and address.is_loopback)
    if not loopback and not tls and not insecure:
        raise pytest.UsageError(
            f"--agentbench-meter-listen {listen}: trials' model requests, the agent's API key "
            "among their headers, would cross the network in plain HTTP; give "
            "--agentbench-meter-tls CERT,KEY, or --agentbench-meter-insecure on a network you "
            "trust"
        )
    return {"meter_listen": host, "meter_tls": str(tls) if tls else None}


def _swebench_images(config: pytest.Config) -> str:
    """--swebench-images, checked: a template whose only fields are {id} and {hub_id}."""
    from pytest_agentbench.tasks.swebench import DEFAULT_IMAGES, image_name

    template = str(_value(config, "swebench_images", DEFAULT_IMAGES))
    try:
        image_name("owner__repo-1", template)
    except (KeyError, IndexError, ValueError) as exc:
        raise pytest.UsageError(
            f"--swebench-images {template!r}: {exc!r} is not a field; write {{id}} (the "
            "instance id in lower case) or {hub_id} (with __ written _1776_), e.g. "
            "registry.local/sweb.eval.x86_64.{hub_id}:latest"
        ) from None
    return template
