"""Under xdist with --agentbench-concurrency: keep each worker sent enough trials.

xdist's load scheduling keeps about two items queued on a worker whose items take long, which
is right for tests run one at a time; a worker that runs N trials at once (run/ahead.py) can
only start what it has been sent, so here each worker is kept sent twice its concurrency
(N running, N finished and waiting for their turn), and the rest goes to whichever worker
asks first, as xdist does. Only `--dist load` (what -n means) is replaced; other modes
keep their own scheduler, with the look-ahead their queues allow.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScheduling


class AheadScheduling(LoadScheduling):
    """LoadScheduling that fills each worker up to per_node queued items."""

    def __init__(self, config: pytest.Config, log: Any, per_node: int) -> None:
        super().__init__(config, log)
        self.per_node = per_node

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if not self.pending:
            node.shutdown()
            return
        wanted = self.per_node - len(self.node2pending[node])
        if wanted > 0:
            self._send_tests(node, wanted)

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # type: ignore[has-type]  # a node joined later: fill it like the others
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        collection = next(iter(self.node2collection.values()))
        self.collection = collection
        self.pending[:] = range(len(collection))
        # An even share first, so that a short run keeps every worker busy.
        share = -(-len(self.pending) // max(len(self.nodes), 1))
        for node in self.nodes:
            self._send_tests(node, min(self.per_node, share))
        if not self.pending:
            for node in self.nodes:
                node.shutdown()


class AheadScheduler:
    """The plugin that offers AheadScheduling to xdist's controller."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "load":
            return None
        return AheadScheduling(config, log, 2 * self.concurrency)
