"""Paths in trajectories named by placeholder: whole paths only, longest prefix first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.trajectory.paths import PathNormaliser

NORMALISE = PathNormaliser(
    workspace=["/tmp/run/ws", "/private/tmp/run/ws/"], task=["/tasks/t1"], home=["/home/ann"]
)


def test_each_prefix_becomes_its_placeholder() -> None:
    assert NORMALISE.text("cat /tmp/run/ws/a.py /tasks/t1/expected/a.py") == (
        "cat <workspace>/a.py <task>/expected/a.py"
    )
    assert NORMALISE.text("cd /home/ann/.cache && ls /tmp/run/ws") == (
        "cd ~/.cache && ls <workspace>"
    )
    assert NORMALISE.text("/private/tmp/run/ws/x") == "<workspace>/x"  # the longer one wins
    assert NORMALISE.text('{"path": "/tmp/run/ws/b"}') == '{"path": "<workspace>/b"}'
    assert NORMALISE.text("PATH=/tmp/run/ws/bin:/home/ann/bin") == "PATH=<workspace>/bin:~/bin"


def test_a_workspace_inside_home_stays_the_workspace() -> None:
    normalise = PathNormaliser(workspace=["/home/ann/ws"], task=[], home=["/home/ann"])
    assert normalise.text("/home/ann/ws/a /home/ann/b") == "<workspace>/a ~/b"


def test_only_whole_paths_are_replaced() -> None:
    for text in ("/tmp/run/ws2/a", "/tmp/run/ws.bak", "/x/tmp/run/ws/a", "/tasks/t10"):
        assert NORMALISE.text(text) == text
    assert PathNormaliser(["/"], [""], []).text("/etc/passwd") == "/etc/passwd"


def test_values_are_normalised_inside_json() -> None:
    value = {"/tmp/run/ws": ["/tmp/run/ws/a", 3, None, {"k": "/tasks/t1"}], "n": 1.5}
    assert NORMALISE.value(value) == {
        "/tmp/run/ws": ["<workspace>/a", 3, None, {"k": "<task>"}],
        "n": 1.5,
    }


segment = st.text("abw2.-_", min_size=1, max_size=4)
paths = st.lists(segment, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))
pieces = st.one_of(paths, st.sampled_from([" ", "/", ":", "=", "'", "x"]))
texts = st.lists(pieces, max_size=8).map("".join)
prefixes = st.lists(paths, max_size=2)


@given(prefixes, prefixes, prefixes, texts)
def test_normalising_twice_changes_nothing(
    workspace: list[str], task: list[str], home: list[str], text: str
) -> None:
    normalise = PathNormaliser(workspace, task, home)
    once = normalise.text(text)
    assert normalise.text(once) == once


@given(paths, segment, st.sampled_from(["", "/", " ", "/x"]))
def test_a_prefix_of_a_longer_name_is_left_alone(prefix: str, tail: str, after: str) -> None:
    normalise = PathNormaliser([prefix], [], [])
    assert normalise.text(prefix + tail + after) == prefix + tail + after
    assert normalise.text(prefix + after) == "<workspace>" + after
