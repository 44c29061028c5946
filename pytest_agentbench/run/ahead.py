"""--agentbench-concurrency N: up to N trials of one pytest process in flight at once.

A trial mostly waits: on its agent's process, on a model far away, on its verifier. So each
trial runs on a thread of its own (sandbox set-up, the agent's rounds, grading, tear-down:
trial/perform.py), started ahead of pytest's own turn for its item, while pytest goes
through the items one by one as always: when an item's turn comes, its call waits for its
trial and tells pytest what it did (fixtures.run_trial). Reports, Observations, artifacts
and node ids are those of a serial run, in the same order.

Everything here except the trials themselves runs on pytest's thread: deciding what starts
(in the items' order, never past the run's stop), counting what finished, and the calls a
trial makes that are not safe on another thread (a conftest's grader). A trial thread asks
for those through the Inbox, which pytest's thread serves while it waits for a trial.

Bounds: at most N trials run at once, and at most N more that have finished wait for their
turn (what they hold: their Observation and artifacts, bounded by the raw-evidence and tail
limits); under xdist each worker is sent enough items to keep N running (schedule.py).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from functools import partial
from typing import Any

import pytest

from pytest_agentbench.plan.collect import TaskItem
from pytest_agentbench.sandbox.base import LIVE_ROUNDS
from pytest_agentbench.tasks.model import Task
from pytest_agentbench.trial.fixtures import AHEAD_KEY
from pytest_agentbench.trial.perform import GRADE_KEY, TrialDone, perform_alone

# (trials in flight at once, what bounds them below --agentbench-concurrency or None)
CAPACITY_KEY = pytest.StashKey[tuple[int, str | None]]()
ABORT_WAIT_S = 60.0  # how long stopping at once waits for the trials' sandboxes to go
SKIP_MARKS = ("skip", "skipif", "xfail")  # decided at the item's setup: it runs in its turn


class Inbox:
    """What trial threads ask of pytest's thread: calls to make there, and wake-ups (a trial
    finished). Served only while pytest's thread waits for a trial, which is whenever a
    trial thread can be waiting for it."""

    def __init__(self) -> None:
        self.thread = threading.current_thread()
        self.messages: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.SimpleQueue()
        )

    def call(self, fn: Callable[[], Any]) -> Any:
        """fn() on pytest's thread: directly there, else by asking it and waiting."""
        if threading.current_thread() is self.thread:
            return fn()
        answer: Future[Any] = Future()
        self.messages.put((fn, answer))
        return answer.result()

    def wake(self) -> None:
        self.messages.put(None)

    def serve(self, done: Callable[[], bool], on_wake: Callable[[], None]) -> None:
        """Answer calls and wake-ups until done() (checked after each message)."""
        while not done():
            message = self.messages.get()
            if message is None:
                on_wake()
                continue
            fn, answer = message
            try:
                answer.set_result(fn())
            except BaseException as error:  # the caller's to raise, on its thread
                answer.set_exception(error)


def runs_ahead(item: pytest.Item) -> bool:
    """Whether the item's trial may start before its turn: a trial item to run (not reused),
    whose task loaded and whose setup decides nothing (no skip or xfail mark)."""
    if not isinstance(item, TaskItem) or item.reused is not None or item.task is None:
        return False
    return all(item.get_closest_marker(name) is None for name in SKIP_MARKS)


class SessionOrder:
    """The items this process runs, in order, without xdist: the session's list."""

    def __init__(self, session: pytest.Session) -> None:
        self.items = session.items
        self.position = {item: index for index, item in enumerate(self.items)}
        self.cursor = 0  # items before it have all been looked at

    def upcoming(self, current: pytest.Item) -> Iterator[pytest.Item]:
        """The current item and those after it not yet looked at."""
        start = max(self.cursor, self.position.get(current, len(self.items)))
        for index in range(start, len(self.items)):
            self.cursor = index
            yield self.items[index]
        self.cursor = len(self.items)

    def take_turn(self, item: pytest.Item) -> None:
        """Before an item's protocol runs outside pytest's loop: nothing to say."""


class WorkerOrder:
    """The items an xdist worker has been sent and not yet begun, in its order (the worker's
    queue, read under its lock)."""

    def __init__(self, interactor: Any) -> None:
        self.interactor = interactor

    def upcoming(self, current: pytest.Item) -> Iterator[pytest.Item]:
        interactor = self.interactor
        items = interactor.session.items
        with interactor.torun.lock() as queued:
            indices = [interactor.nextitem_index, *queued]
        yield current
        for index in indices:
            if not isinstance(index, int):  # the end of the worker's work
                return
            yield items[index]

    def take_turn(self, item: pytest.Item) -> None:
        """Before an item's protocol runs outside xdist's loop: the worker sends each report
        under the index of the item it runs."""
        self.interactor.item_index = self.interactor.session.items.index(item)


def worker_interactor(config: pytest.Config) -> Any:
    """xdist's plugin that runs this worker's loop (it registers itself without a name)."""
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "torun") and hasattr(plugin, "nextitem_index"):
            return plugin
    return None


class TrialsAhead:
    """Starts trials ahead of their turn on threads of their own, up to the limit."""

    def __init__(
        self,
        config: pytest.Config,
        limit: int,
        stopped: Callable[[], str | None],
        began: Callable[[TaskItem], None],
        finished: Callable[[TaskItem, TrialDone], None],
    ) -> None:
        self.config = config
        self.limit = limit
        self.stopped = stopped  # why no trial starts now (the run's stop gate), else None
        self.began = began  # told of each trial started, on pytest's thread
        self.finished = finished  # told of each finished trial on pytest's thread, at once
        self.inbox = Inbox()
        self.executor = ThreadPoolExecutor(limit, thread_name_prefix="agentbench-trial")
        self.started: dict[TaskItem, Future[TrialDone]] = {}  # in start order, until reported
        self.counted: set[TaskItem] = set()  # finished, and told
        self.halted: str | None = None  # a finished trial stopped the session (-x, provider)
        self.failures = 0
        self.order: SessionOrder | WorkerOrder | None = None
        self.maxfail = int(config.getoption("maxfail", 0) or 0)

    # pytest's side -------------------------------------------------------------------------

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if conftest_graders(self.config):
            default = self.config.hook.pytest_agentbench_grade

            def on_pytest_thread(task: Task, workspace: Any) -> Any:
                return self.inbox.call(partial(default, task=task, workspace=workspace))

            self.config.stash[GRADE_KEY] = on_pytest_thread

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        interactor = worker_interactor(self.config)
        self.order = WorkerOrder(interactor) if interactor is not None else SessionOrder(session)
        try:
            result = yield
        except (pytest.Session.Interrupted, pytest.Session.Failed):  # -x, a stop: in order
            self.finish_started(session)
            raise
        except KeyboardInterrupt:  # (Interrupted is one too) stopping at once
            self.abort()
            raise
        except BaseException:
            self.finish_started(session)
            raise
        self.finish_started(session)
        return result

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        self.fill(item)
        try:
            return (yield)
        finally:
            self.started.pop(item, None)  # type: ignore[call-overload]
            self.counted.discard(item)

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.executor.shutdown(wait=True)

    def finish_started(self, session: pytest.Session) -> None:
        """The loop ended early (-x, --maxfail, a stop): the trials already started finish
        and are reported, in order, as their turn would have come."""
        left = list(self.started)
        assert self.order is not None
        try:
            for index, item in enumerate(left):
                nextitem = left[index + 1] if index + 1 < len(left) else None
                self.order.take_turn(item)
                item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        except KeyboardInterrupt:  # a second signal while they finish: at once, as ever
            self.abort()
            raise

    def abort(self) -> None:
        """Stopping at once: every round running now is killed, nothing new starts, and the
        trials' sandboxes are removed before pytest goes on stopping."""
        LIVE_ROUNDS.abort()
        self.executor.shutdown(wait=False, cancel_futures=True)
        wait_futures(list(self.started.values()), timeout=ABORT_WAIT_S)

    # Starting ------------------------------------------------------------------------------

    def running(self) -> int:
        return sum(1 for future in self.started.values() if not future.done())

    def fill(self, current: pytest.Item) -> None:
        """Start the trials due: from the current item on, in order, while fewer than the
        limit run, fewer than the limit wait for their turn, and nothing stops the run."""
        self.count_finished()
        assert self.order is not None
        running = self.running()
        for item in self.order.upcoming(current):
            if running >= self.limit or len(self.started) - running >= self.limit:
                return
            if item in self.started or not runs_ahead(item) or AHEAD_KEY in item.stash:
                continue
            if self.halted or self.stopped() or self._session_stops(item):
                return
            self.start(item)  # type: ignore[arg-type]
            running += 1

    def _session_stops(self, item: pytest.Item) -> bool:
        session = item.session
        return bool(session.shouldstop or session.shouldfail)

    def start(self, item: TaskItem) -> None:
        future = self.executor.submit(perform_alone, item)
        future.add_done_callback(lambda _future: self.inbox.wake())
        self.started[item] = future
        wait: Callable[[], TrialDone] = partial(self.wait, item)
        item.stash[AHEAD_KEY] = wait
        self.began(item)

    def count_finished(self) -> None:
        """Tell of each trial that finished since the last look, in the order they started:
        a failure counts toward --maxfail now, not in its turn, so none starts past it."""
        for item, future in list(self.started.items()):
            if item in self.counted or not future.done() or future.exception() is not None:
                continue
            self.counted.add(item)
            done = future.result()
            if done.failure is not None:
                self.failures += 1
            if done.provider_stop:
                self.halted = done.provider_stop
            elif self.maxfail and self.failures >= self.maxfail:
                self.halted = f"stopping after {self.failures} failures"
            self.finished(item, done)

    def wait(self, item: TaskItem) -> TrialDone:
        """In the item's turn: its trial's result, starting others as trials finish."""
        future = self.started[item]
        self.inbox.serve(future.done, partial(self.fill, item))
        self.count_finished()
        return future.result()


def conftest_graders(config: pytest.Config) -> bool:
    """Whether a pytest_agentbench_grade other than this package's own is registered: it may
    not be safe on a trial's thread, so it is called on pytest's."""
    impls = config.hook.pytest_agentbench_grade.get_hookimpls()
    return any(not impl.plugin_name.startswith("agentbench-") for impl in impls)
