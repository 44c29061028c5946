"""The payloads of a set of sources by name, as JSON text, as the app asks for them: the one
store behind the server, the bundle and the inline page. A snapshot of the sources is taken
again when one of their files changed (a live run writing); trial and compare payloads are
built on first ask and a bounded number kept."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

from pytest_agentbench.view import trial_detail
from pytest_agentbench.view.loading import trial_folder, version
from pytest_agentbench.view.snapshot import Snapshot, comparison_text, encoded, take

RECHECK_S = 1.0  # how often a source's files are looked at again, at most
BUILT_KEPT = 256  # trial and compare payloads kept built (the pages a user steps through)


class NotFound(KeyError):
    """A payload name the sources have nothing for."""


class Viewer:
    """Payloads by name over SOURCES (run directories, JSON or merged reports). TAKE makes a
    snapshot: snapshot.take here, snapshot.take_apart in a child process (the server)."""

    def __init__(self, sources: list[Path], take: Callable[[list[Path]], Snapshot] = take) -> None:
        self.sources = sources
        self.take = take
        self.lock = threading.Lock()
        self.checked_at = 0.0
        self.snapshot: Snapshot | None = None
        self.built: OrderedDict[str, str] = OrderedDict()

    def current(self) -> Snapshot:
        """The sources as they are now (a new snapshot when a file of theirs changed)."""
        with self.lock:
            now = time.monotonic()
            if self.snapshot is None or now - self.checked_at >= RECHECK_S:
                self.checked_at = now
                if self.snapshot is None or version(self.sources) != self.snapshot.version:
                    self.snapshot = self.take(self.sources)
                    self.built.clear()
            return self.snapshot

    def text(self, name: str) -> str:
        """The payload NAME as JSON (version, index, trials/<C>, trial/<C>/<I>,
        compare/<A>/<B>); NotFound for a name the sources have nothing for."""
        snapshot = self.current()
        parts = name.split("/")
        if name == "version":
            return encoded({"version": snapshot.version})
        if name == "index":
            return snapshot.index
        if len(parts) == 2 and parts[0] == "trials" and parts[1] in snapshot.columns:
            return snapshot.columns[parts[1]]
        with self.lock:
            if name in self.built and self.snapshot is snapshot:
                self.built.move_to_end(name)
                return self.built[name]
        text = self._build(snapshot, parts)
        with self.lock:
            if self.snapshot is snapshot:
                self.built[name] = text
                while len(self.built) > BUILT_KEPT:
                    self.built.popitem(last=False)
        return text

    def _build(self, snapshot: Snapshot, parts: list[str]) -> str:
        if self._is_trial(snapshot, parts):
            key, index = parts[1], int(parts[2])
            observation = snapshot.observation(key, index)
            folder = trial_folder(snapshot.run_dirs, observation)
            reviews = snapshot.reviews.get(str(folder), []) if folder else []
            detail = trial_detail.trial(key, index, observation, folder, snapshot.runs[key])
            return encoded({**detail, "reviews": reviews})
        pair = (parts[1], parts[2]) if len(parts) == 3 and parts[0] == "compare" else None
        if pair in snapshot.pairs:
            return comparison_text(snapshot, self.sources, *pair)
        raise NotFound("/".join(parts))

    @staticmethod
    def _is_trial(snapshot: Snapshot, parts: list[str]) -> bool:
        """Whether PARTS name a trial the snapshot has: trial/<key>/<index>."""
        if len(parts) != 3 or parts[0] != "trial" or parts[1] not in snapshot.observations:
            return False
        return parts[2].isdigit() and int(parts[2]) < len(snapshot.observations[parts[1]])

    def every_name(self) -> Iterator[str]:
        """Every payload the sources have, index first: what a bundle or inline page holds."""
        snapshot = self.current()
        yield "index"
        for key in snapshot.keys:
            yield f"trials/{key}"
            for index in range(len(snapshot.observations[key])):
                yield f"trial/{key}/{index}"
        for base, candidate in snapshot.pairs:
            yield f"compare/{base}/{candidate}"
