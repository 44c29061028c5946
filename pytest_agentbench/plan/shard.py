"""--agentbench-shard I/N: whole tasks (all their repeats) to shard I of N.

Tasks are sorted by id and dealt round-robin, so shard sizes differ by at most one task and
every machine of a CI matrix computes the same split from the same selection.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pytest_agentbench.plan.collect import TaskItem

USAGE = "expected I/N with 1 <= I <= N, for example --agentbench-shard 2/3"


def parse_shard(raw: str) -> tuple[int, int]:
    index_text, sep, total_text = raw.partition("/")
    try:
        index, total = int(index_text), int(total_text)
    except ValueError:
        raise pytest.UsageError(f"--agentbench-shard {raw!r}: {USAGE}") from None
    if not sep or total < 1 or not 1 <= index <= total:
        raise pytest.UsageError(f"--agentbench-shard {raw!r}: {USAGE}")
    return index, total


def shard_tasks(task_ids: Iterable[str], index: int, total: int) -> set[str]:
    """The task ids of shard index (1-based) of total."""
    ordered = sorted(set(task_ids))
    return {task_id for position, task_id in enumerate(ordered) if position % total == index - 1}


class ShardSelection:
    """Deselects the items of tasks that belong to other shards."""

    def __init__(self, index: int, total: int) -> None:
        self.index = index
        self.total = total

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        ids = [item.task_id for item in items if isinstance(item, TaskItem)]
        mine = shard_tasks(ids, self.index, self.total)
        kept = [i for i in items if not isinstance(i, TaskItem) or i.task_id in mine]
        dropped = [i for i in items if isinstance(i, TaskItem) and i.task_id not in mine]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
