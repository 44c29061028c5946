"""A pool of Docker engines without engines: --docker-host values parsed (and refused with
the fix), the default slots, and the placement shared through engines.json -- the least
loaded engine first, never more trials than its slots, across threads and processes."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.sandbox.base import InfrastructureError
from pytest_agentbench.sandbox.engines import default_slots, parse_engine
from pytest_agentbench.sandbox.placement import PLACEMENT_FILE, Placement, choose, pool_engines
from pytest_agentbench.settings import SandboxLimits

from conftest import one_error_line


def test_urls_of_each_transport(tmp_path: Path) -> None:
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    unix = parse_engine("unix:///run/other.sock#slots=3")
    assert (unix.name, unix.base_url, unix.slots, unix.local) == (
        "unix:///run/other.sock",
        "unix:///run/other.sock",
        3,
        True,
    )
    tls = parse_engine(f"tcp://10.0.0.5:2376?tls={tmp_path}")
    assert (tls.name, tls.tls, tls.slots, tls.local) == (
        "tcp://10.0.0.5:2376",
        tmp_path,
        None,
        False,
    )
    relative = parse_engine(f"tcp://h:2376?tls={tmp_path.name}", base=tmp_path.parent)
    assert relative.tls == tmp_path
    ssh = parse_engine("ssh://runner@build-7#slots=12")
    assert (ssh.name, ssh.slots, ssh.local) == ("ssh://runner@build-7", 12, False)
    context = parse_engine("gpu-box")
    assert (context.context, context.name) == ("gpu-box", "context gpu-box")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("http://h:2375", "unknown transport http://"),
        ("tcp://h", "no port"),
        ("tcp://:2376", "no host"),
        ("unix://run/docker.sock", "three slashes"),
        ("tcp://h:2376#slots=0", "#slots=0 is not a whole number"),
        ("tcp://h:2376#slot=2", "unknown #slot"),
        ("tcp://h:2376?tlsverify=1", "unknown ?tlsverify"),
        ("ssh://h?tls=/x", "?tls= is for tcp://"),
        ("tcp://h:2376?tls=/nonexistent", "/nonexistent lacks ca.pem, cert.pem, key.pem"),
        ("a:b", "not a URL nor a Docker context"),
    ],
)
def test_bad_urls_are_usage_errors_naming_the_value_and_the_fix(given: str, says: str) -> None:
    with pytest.raises(pytest.UsageError) as caught:
        parse_engine(given)
    message = str(caught.value)
    assert repr(given) in message and says in message
    assert "tcp://HOST:PORT?tls=DIR" in message  # the forms that work


def test_default_slots_from_memory_and_cpus() -> None:
    limits = SandboxLimits(cpus=1.0, memory="2g")
    assert default_slots({"MemTotal": 16 << 30, "NCPU": 8}, limits) == 8  # memory bounds
    assert default_slots({"MemTotal": 64 << 30, "NCPU": 2}, limits) == 8  # 4 per CPU
    assert default_slots({"MemTotal": 64 << 30, "NCPU": 2}, SandboxLimits(cpus=2.0)) == 4
    assert default_slots({"MemTotal": 1 << 30, "NCPU": 1}, limits) == 1  # at least one
    assert default_slots({}, limits) == 1


engines_strategy = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.fixed_dictionaries({"slots": st.integers(1, 5), "down": st.sampled_from([None, "gone"])}),
    min_size=1,
)


@settings(max_examples=300, deadline=None)
@given(engines=engines_strategy, steps=st.lists(st.booleans(), max_size=40))
def test_placement_never_passes_slots_and_takes_the_least_loaded(
    engines: dict[str, dict[str, object]], steps: list[bool]
) -> None:
    """Any sequence of placements (True) and releases (False): each placement goes to an up
    engine with the smallest share of its slots in use, and none is refused while one is free."""
    held: dict[str, dict[str, str]] = {}
    count = 0
    for place in steps:
        if not place:
            if held:
                held.pop(next(iter(held)))
            continue
        load = {name: sum(h["engine"] == name for h in held.values()) for name in engines}
        free = [n for n, e in engines.items() if not e["down"] and load[n] < e["slots"]]  # type: ignore[operator]
        chosen = choose(engines, held)
        if not free:
            assert chosen is None
            continue
        assert chosen in free
        share = {n: load[n] / engines[n]["slots"] for n in free}  # type: ignore[operator]
        assert share[chosen] == min(share.values())
        count += 1
        held[f"t{count}"] = {"engine": chosen}
        assert all(
            sum(h["engine"] == n for h in held.values()) <= e["slots"]  # type: ignore[operator]
            for n, e in engines.items()
        )


def test_the_placement_file_is_shared_and_counts(tmp_path: Path) -> None:
    one = Placement("run-1", {"a": 1, "b": 2})
    other = Placement("run-1", {"a": 1, "b": 2})
    one.share_in(tmp_path)
    other.share_in(tmp_path)
    assert [one.try_acquire(f"t{i}") for i in range(3)] == ["a", "b", "b"]
    assert other.try_acquire("t4") is None  # the other process sees them held
    one.release("t0")
    assert other.try_acquire("t4") == "a"
    other.failed("b", "no answer to a ping")
    one.release("t1")
    assert one.try_acquire("t5") is None  # b is down for the rest of the run
    one.failed("a", None)  # an engine that answered with an error stays up
    state = json.loads((tmp_path / PLACEMENT_FILE).read_text())
    assert state["engines"]["a"] == {"slots": 1, "down": None, "trials": 2, "failures": 1}
    assert state["engines"]["b"]["down"] == "no answer to a ping"
    engines = pool_engines(state)
    assert engines is not None
    assert [(e["name"], e["running"]) for e in engines] == [("a", 1), ("b", 1)]
    one.release("t4")
    one.failed("a", "no answer")
    with pytest.raises(InfrastructureError, match="every engine of the pool is down"):
        one.try_acquire("t6")
    fresh = Placement("run-2", {"a": 1})
    fresh.share_in(tmp_path)  # another run's file (a resumed directory) starts afresh
    assert fresh.try_acquire("t1") == "a"


def test_threads_never_hold_more_than_the_slots(tmp_path: Path) -> None:
    placement = Placement("run", {"a": 2, "b": 3})
    placement.share_in(tmp_path)
    lock = threading.Lock()
    now = {"a": 0, "b": 0}
    peak = {"a": 0, "b": 0}

    def trial(index: int) -> None:
        name = placement.acquire(f"t{index}")
        with lock:
            now[name] += 1
            peak[name] = max(peak[name], now[name])
        threading.Event().wait(0.01)
        with lock:
            now[name] -= 1
        placement.release(f"t{index}")

    threads = [threading.Thread(target=trial, args=(i,)) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert peak == {"a": 2, "b": 3}
    assert json.loads((tmp_path / PLACEMENT_FILE).read_text())["held"] == {}


def _hold(directory: str, trial: str, held: object, release: object) -> None:
    placement = Placement("run", {"a": 1})
    placement.share_in(Path(directory))
    held.put(placement.try_acquire(trial))  # type: ignore[attr-defined]
    release.wait(30)  # type: ignore[attr-defined]


def test_a_dead_processes_slots_are_freed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    held, release = context.Queue(), context.Event()
    process = context.Process(target=_hold, args=(str(tmp_path), "t1", held, release))
    process.start()
    assert held.get(timeout=30) == "a"
    placement = Placement("run", {"a": 1})
    placement.share_in(tmp_path)
    assert placement.try_acquire("t2") is None  # held by a live process
    process.kill()
    process.join(30)
    assert placement.try_acquire("t2") == "a"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--sandbox=docker", "--docker-image=any:1", "--docker-host=tcp://127.0.0.1:1"],
            "ERROR: --docker-host 'tcp://127.0.0.1:1': no Docker engine answers (*); check "
            "that dockerd listens there *, or leave this engine out of the pool",
        ),
        (
            ["--sandbox=docker", "--docker-image=any:1", "--docker-host=http://h:2375"],
            "ERROR: --docker-host 'http://h:2375': unknown transport http://; give unix:///PATH*",
        ),
        (
            ["--sandbox=bwrap", "--docker-host=unix:///var/run/docker.sock"],
            "ERROR: --docker-host is a pool of Docker engines for --sandbox=docker (this run's "
            "sandbox is bwrap); add --sandbox=docker or leave --docker-host out",
        ),
    ],
)
def test_a_pool_that_cannot_be_used_stops_the_run_before_any_trial(
    pytester: pytest.Pytester, args: list[str], says: str
) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent=oracle", "--tasks=builtin:smoke", *args
    )
    one_error_line(result, says)
