"""One look at the sources, kept small: the payloads every page needs, already encoded, and
each trial's Observation compressed, so that a server over a run of 100,000 trials holds tens
of megabytes, not the gigabyte its scored document takes. A server takes its snapshots in a
child process (`take_apart`), which gives that memory back when it exits; a bundle or a report
written once takes it here (`take`) and keeps the document for the comparisons."""

from __future__ import annotations

import json
import multiprocessing
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.run.store import RUN_FILE, read_run_file
from pytest_agentbench.tasks.observation import Observation
from pytest_agentbench.view import judged, payloads
from pytest_agentbench.view.loading import Loaded, load, version


def encoded(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclass
class Snapshot:
    """The sources at VERSION: index and trial columns as JSON text, each configuration's
    Observations (compressed JSON, in trial order) and run block, the run directories, the
    pairs that can be compared and the trials' reviews by folder. `loaded` is the whole
    document, kept only in the process that read it (never sent from a child)."""

    version: str
    keys: list[str]
    index: str
    columns: dict[str, str]
    observations: dict[str, list[bytes]]
    runs: dict[str, dict[str, Any]]
    run_dirs: dict[str, Path]
    pairs: list[tuple[str, str]]
    reviews: judged.Reviews = field(default_factory=dict)
    loaded: Loaded | None = field(default=None, repr=False)

    def observation(self, key: str, index: int) -> Observation:
        """Trial INDEX of configuration KEY; IndexError past its trials."""
        record: Observation = json.loads(zlib.decompress(self.observations[key][index]))
        return record


def live(paths: list[Path]) -> bool:
    """Whether a run directory among the sources is still being written."""
    return any(
        (path / RUN_FILE).is_file() and not read_run_file(path).get("finished_at") for path in paths
    )


def take(paths: list[Path], keep_document: bool = True) -> Snapshot:
    """The snapshot of PATHS, in this process. The version is read first: a change made while
    reading shows as a newer version at the next look."""
    stamp = version(paths)
    loaded = load(paths)
    reviews = judged.reviews(loaded.run_dirs)
    index = payloads.index(loaded, live(paths), [str(p) for p in paths], reviews)
    return Snapshot(
        version=stamp,
        keys=list(loaded.keys),
        index=encoded(index),
        columns={key: encoded(payloads.trial_columns(loaded, key)) for key in loaded.keys},
        observations={
            key: [zlib.compress(encoded(o).encode(), 1) for o in report["observations"]]
            for key, report in zip(loaded.keys, loaded.reports, strict=True)
        },
        runs={
            key: {k: report["run"].get(k) for k in ("agent", "model", "name")}
            for key, report in zip(loaded.keys, loaded.reports, strict=True)
        },
        run_dirs=dict(loaded.run_dirs),
        pairs=loaded.pairs(),
        reviews=reviews,
        loaded=loaded if keep_document else None,
    )


def _take_without_document(paths: list[Path]) -> Snapshot:
    return take(paths, keep_document=False)


def _comparison_text(paths: list[Path], base: str, candidate: str) -> str:
    return encoded(payloads.comparison(load(paths), base, candidate))


def _in_child(function: Any, *args: Any) -> Any:
    """FUNCTION(*ARGS) in a fresh interpreter that exits afterwards (spawned: the server has
    threads, which a fork would copy mid-lock)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


def take_apart(paths: list[Path]) -> Snapshot:
    """The snapshot of PATHS, read and scored in a child process."""
    snapshot: Snapshot = _in_child(_take_without_document, paths)
    return snapshot


def comparison_text(snapshot: Snapshot, paths: list[Path], base: str, candidate: str) -> str:
    """The compare payload of two configurations, from the kept document or a child's look."""
    if snapshot.loaded is not None:
        return encoded(payloads.comparison(snapshot.loaded, base, candidate))
    text: str = _in_child(_comparison_text, paths, base, candidate)
    return text
