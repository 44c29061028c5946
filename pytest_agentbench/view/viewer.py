"""The payloads of a set of sources by name, as the app asks for them, built on first ask and
kept until a source changes (a live run writing): the one store behind the server, the bundle
and the inline page."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_agentbench.run.store import RUN_FILE, read_run_file
from pytest_agentbench.view import payloads, trial_detail
from pytest_agentbench.view.loading import Loaded, load, version

RECHECK_S = 1.0  # how often a source's files are looked at again, at most
TRIALS_KEPT = 256  # trial payloads kept built (the pages a user steps through)


class NotFound(KeyError):
    """A payload name the sources have nothing for."""


class Viewer:
    """Payloads by name over SOURCES (run directories, JSON or merged reports)."""

    def __init__(self, sources: list[Path]) -> None:
        self.sources = sources
        self.lock = threading.Lock()
        self.checked_at = 0.0
        self.version = ""
        self.loaded: Loaded | None = None
        self.built: dict[str, Any] = {}
        self.trials: OrderedDict[str, Any] = OrderedDict()

    def current(self) -> tuple[str, Loaded]:
        """The sources as they are now (read again when a file of theirs changed)."""
        with self.lock:
            now = time.monotonic()
            if self.loaded is None or now - self.checked_at >= RECHECK_S:
                self.checked_at = now
                stamp = version(self.sources)
                if stamp != self.version or self.loaded is None:
                    self.loaded = load(self.sources)
                    self.version = stamp
                    self.built.clear()
                    self.trials.clear()
            return self.version, self.loaded

    def live(self) -> bool:
        """Whether a run directory among the sources is still being written."""
        for path in self.sources:
            if (path / RUN_FILE).is_file() and not read_run_file(path).get("finished_at"):
                return True
        return False

    def payload(self, name: str) -> Any:
        """The payload NAME (index, trials/<C>, trial/<C>/<I>, compare/<A>/<B>); NotFound
        for a name the sources have nothing for."""
        stamp, loaded = self.current()
        if name == "version":
            return {"version": stamp}
        parts = name.split("/")
        if parts[0] == "trial":
            return self._trial(loaded, parts)
        with self.lock:
            if stamp == self.version and name in self.built:
                return self.built[name]
        data = self._build(loaded, parts)
        with self.lock:
            if stamp == self.version:
                self.built[name] = data
        return data

    def _build(self, loaded: Loaded, parts: list[str]) -> Any:
        if parts == ["index"]:
            return payloads.index(loaded, self.live(), [str(p) for p in self.sources])
        if len(parts) == 2 and parts[0] == "trials" and parts[1] in loaded.keys:
            return payloads.trial_columns(loaded, parts[1])
        pair = tuple(parts[1:]) if len(parts) == 3 and parts[0] == "compare" else ()
        if pair in loaded.pairs():
            return payloads.comparison(loaded, *pair)
        raise NotFound("/".join(parts))

    def _trial(self, loaded: Loaded, parts: list[str]) -> Any:
        name = "/".join(parts)
        if len(parts) != 3 or parts[1] not in loaded.keys or not parts[2].isdigit():
            raise NotFound(name)
        with self.lock:
            if name in self.trials:
                self.trials.move_to_end(name)
                return self.trials[name]
        try:
            data = trial_detail.trial(loaded, parts[1], int(parts[2]))
        except IndexError:
            raise NotFound(name) from None
        with self.lock:
            self.trials[name] = data
            while len(self.trials) > TRIALS_KEPT:
                self.trials.popitem(last=False)
        return data

    def every_name(self) -> Iterator[str]:
        """Every payload the sources have, index first: what a bundle or inline page holds."""
        _, loaded = self.current()
        yield "index"
        for key, report in zip(loaded.keys, loaded.reports, strict=True):
            yield f"trials/{key}"
            for index in range(len(report["observations"])):
                yield f"trial/{key}/{index}"
        for base, candidate in loaded.pairs():
            yield f"compare/{base}/{candidate}"
