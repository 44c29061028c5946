"""Grading large trees: 10,000 files / 100 MB against a floor that reads both trees once.

Two cases: identical trees, and the same with one byte changed at the end of the last file
(which also runs the EOF-normalized comparison of that file). Memory is measured with
tracemalloc on trees of few, large files: the peak must not grow with the file size.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

from benchmarks.core import Benchmark, Context, Target, check
from pytest_agentbench.grading.grade import compare_tree
from pytest_agentbench.tasks.model import DirTree


def write_tree(root: Path, files: int, size: int) -> list[Path]:
    """files files of size bytes in 100 subdirectories, deterministic content."""
    paths = []
    block = bytes(range(256)) * (size // 256 + 1)
    for index in range(files):
        path = root / f"d{index % 100:02d}" / f"f{index:05d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(block[index % 256 : index % 256 + size])
        paths.append(path)
    return paths


def read_both_once(left: Path, right: Path) -> None:
    """The floor: walk both trees and read every file once through a bare descriptor, at most
    1 MB at a time and never more than the size fstat gives is left (as little as any reader
    of the bytes can do: os.read allocates what it is asked for)."""
    for root in (left, right):
        for dirpath, _dirs, names in os.walk(root):
            for name in names:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
                try:
                    left_to_read = os.fstat(fd).st_size
                    while left_to_read > 0 and (block := os.read(fd, min(left_to_read, 1 << 20))):
                        left_to_read -= len(block)
                finally:
                    os.close(fd)


def timed(fn: object, *args: object) -> float:
    start = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start


def flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def peak_grading_bytes(root: Path, files: int, size: int) -> float:
    """tracemalloc peak (MB) of grading two trees whose files differ in their last byte."""
    expected, actual = root / "expected", root / "actual"
    write_tree(expected, files, size)
    flip_last_byte(write_tree(actual, files, size)[-1])
    tree = DirTree(expected)
    tree.paths()
    tracemalloc.start()
    grade = compare_tree(tree, actual)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert not grade.exact and len(grade.differing) == 1
    return peak / 2**20


def run(ctx: Context) -> list[dict]:
    files = 2_000 if ctx.quick else 10_000
    size = 10_000
    expected, actual = ctx.scratch / "expected", ctx.scratch / "actual"
    write_tree(expected, files, size)
    last = write_tree(actual, files, size)[-1]
    total_mb = 2 * files * size / 1e6
    checks = []
    for case in ("identical", "last byte changed"):
        if case == "last byte changed":
            flip_last_byte(last)
        read_both_once(expected, actual)  # warm the page cache for both sides alike
        subject, floor = [], []
        for _ in range(ctx.runs(5, 2)):
            subject.append(timed(lambda: compare_tree(DirTree(expected), actual)))
            floor.append(timed(read_both_once, expected, actual))
        grade = compare_tree(DirTree(expected), actual)
        assert grade.exact == (case == "identical"), grade
        checks.append(
            check(
                f"{case}: {files} files, {total_mb:.0f} MB read",
                unit="s",
                value=subject,
                floor=floor,
                paired=True,
                floor_is="walk both trees and read every file once (1 MB chunks)",
                target=Target("ratio", "<=", 1.3),
                note="warm page cache; compare_tree builds the expected listing each time",
            )
        )
    small = peak_grading_bytes(ctx.scratch / "small", 4, 1 << 20)
    large = peak_grading_bytes(ctx.scratch / "large", 4, (8 if ctx.quick else 32) << 20)
    checks.append(
        check(
            "peak memory, 4 files of 1 MB vs 4 files of "
            f"{8 if ctx.quick else 32} MB (last byte changed)",
            unit="MB",
            value=[large],
            floor=[small],
            floor_is="the same grading on 1 MB files",
            target=Target("ratio", "<=", 1.5),
            note="tracemalloc peak during compare_tree; flat means streamed, not slurped",
        )
    )
    return checks


BENCHMARK = Benchmark("grading_trees", "grading 10,000 files / 100 MB vs reading them", run)
