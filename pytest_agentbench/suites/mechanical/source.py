"""The suite as Tasks for `--tasks=builtin:mechanical` and the default selection.

Collection builds nothing: the prompt and the trees of a task are built when a trial
asks for them (fixture hashes come from golden.tsv), and only the last few builds are
kept, so a session never holds the whole suite's files in memory.
"""

from __future__ import annotations

from functools import cache, lru_cache

from pytest_agentbench.suites.mechanical import golden
from pytest_agentbench.suites.mechanical.registry import FAMILIES, specs
from pytest_agentbench.suites.mechanical.spec import (
    SUITE_NAME,
    SUITE_VERSION,
    Built,
    Spec,
    scale_size,
)
from pytest_agentbench.tasks.model import MemoryTree, Task, Tree

SOURCE = f"builtin:{SUITE_NAME}"
_SUMMARIES = {family.name: family.summary for family in FAMILIES}


@lru_cache(maxsize=4)
def _built(spec: Spec) -> Built:
    """A trial reads the input and then the expected tree: build once for both."""
    return spec.build()


@cache
def _golden_hashes() -> dict[str, str]:
    """Committed fixture hashes (a test keeps them equal to the generated ones), so a
    run header can name every task's hash without building every task."""
    return golden.read().hashes if golden.GOLDEN_PATH.is_file() else {}


def _timeout(spec: Spec) -> float:
    large = scale_size(spec.scale) >= (10000 if spec.scale.startswith("s") else 100)
    return 600.0 if large else 300.0


def to_task(spec: Spec) -> Task:
    def make_input() -> Tree:
        return MemoryTree(_built(spec).input_files)

    def make_expected() -> Tree:
        return MemoryTree(_built(spec).expected_files)

    return Task(
        id=spec.id,
        prompt=lambda: _built(spec).prompt,
        source=SOURCE,
        make_input=make_input,
        make_expected=make_expected,
        timeout=_timeout(spec),
        category=spec.category,
        tags=spec.tags,
        description=_SUMMARIES[spec.family],
        meta={
            "suite": SUITE_NAME,
            "suite_version": SUITE_VERSION,
            "family": spec.family,
            "scale": spec.scale,
            "variant": spec.variant,
            "language": spec.language,
            "case": spec.case or "",
        },
        known_fixture_hash=_golden_hashes().get(spec.id),
    )


def tasks() -> list[Task]:
    """Every task of the suite, sorted by id."""
    return [to_task(spec) for spec in specs()]
