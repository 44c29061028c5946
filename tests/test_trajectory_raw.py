"""The raw evidence archive: what goes in comes out, within the limit, and a cut says so."""

from __future__ import annotations

import gzip
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.trajectory.raw import (
    CHUNK,
    RawArchive,
    RoundEvidence,
    read_archive,
)

texts = st.text(max_size=300)
rounds = st.lists(
    st.builds(
        RoundEvidence,
        attempt=st.integers(0, 3),
        round=st.integers(0, 3),
        prompt=texts,
        streams=st.dictionaries(st.sampled_from(["events", "wire", "stdout"]), texts, max_size=3),
    ),
    max_size=5,
)


@given(rounds, st.dictionaries(st.sampled_from(["agent", "test_command"]), texts))
def test_what_is_kept_reads_back_as_it_was(evidence: list[RoundEvidence], trial: dict) -> None:
    archive = RawArchive()
    for kept in evidence:
        archive.add(kept)
    read = read_archive(archive.close(trial))
    assert read.rounds == evidence
    assert read.trial == trial
    assert read.cut is None


@settings(max_examples=30)
@given(st.integers(8192, 200_000), st.lists(st.integers(1, 120_000), min_size=1, max_size=6))
def test_the_archive_never_passes_its_limit_and_says_where_it_was_cut(
    limit: int, sizes: list[int]
) -> None:
    archive = RawArchive(limit)
    evidence = [
        RoundEvidence(0, n, "p", {"events": os.urandom(s).hex()}) for n, s in enumerate(sizes)
    ]
    for kept in evidence:
        archive.add(kept)
    data = archive.close({"agent": "codex"})
    assert len(data) <= limit
    read = read_archive(data)
    assert read.rounds == evidence[: len(read.rounds)]  # whole rounds, in order
    if len(read.rounds) < len(evidence):
        assert read.cut is not None and f"round {len(read.rounds)} and everything" in read.cut
    assert read.trial == {"agent": "codex"}


def test_a_stream_longer_than_a_chunk_is_split_into_lines_and_joined_back() -> None:
    text = "e" * (2 * CHUNK + 5)
    archive = RawArchive()
    archive.add(RoundEvidence(0, 0, "go", {"events": text}))
    data = archive.close({})
    lines = gzip.decompress(data).splitlines()
    assert max(len(line) for line in lines) < CHUNK + 200
    assert read_archive(data).rounds[0].streams["events"] == text


def test_a_torn_archive_gives_its_whole_members() -> None:
    archive = RawArchive()
    archive.add(RoundEvidence(0, 0, "first", {"stdout": "one"}))
    archive.add(RoundEvidence(0, 1, "second", {"stdout": "two"}))
    data = archive.close({"agent": "mock"})
    read = read_archive(data[:-7])  # the trial line's member torn
    assert [r.prompt for r in read.rounds] == ["first", "second"]
    assert read.trial == {}
