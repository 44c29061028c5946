"""The viewer's data and server, without a browser: the payloads say what the run directory
holds, the server serves nothing else and only to its own address, a bundle's data files load
as scripts, and hostile text cannot leave its JSON string (test_view_browser.py drives the
page itself)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_judges import judge
from tiny_tasks import make_tasks

from pytest_agentbench.cli import main
from pytest_agentbench.judge.tally import judgements_block
from pytest_agentbench.testing.model_server import ScriptedModelServer
from pytest_agentbench.view.page import script_json
from pytest_agentbench.view.payloads import outcome_letter
from pytest_agentbench.view.server import ViewServer
from pytest_agentbench.view.snapshot import take_apart
from pytest_agentbench.view.viewer import NotFound, Viewer

MOCK = ["-p", "no:randomly", "-p", "no:cacheprovider", "--agent=mock", "--sandbox=tmp"]
SCRIPT = Path(sys.executable).parent / "agentbench"
EXAMPLE = Path(__file__).parent.parent / "docs" / "examples"


def payload(viewer: Viewer, name: str) -> Any:
    return json.loads(viewer.text(name))


def _observations(run: Path) -> list[dict[str, Any]]:
    lines = (run / "observations.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def run(pytester: pytest.Pytester) -> Path:
    make_tasks(pytester.path, 4)
    pytester.runpytest_subprocess(
        *MOCK,
        "--tasks=tiny-tasks",
        "--repeats=3",
        "--agent-opt=pass_prob=0.5",
        "--agentbench-dir=run",
    )
    return pytester.path / "run"


def test_the_payloads_say_what_the_run_directory_holds(run: Path) -> None:
    viewer = Viewer([run])
    index = payload(viewer, "index")
    (configuration,) = index["configurations"]
    recorded = _observations(run)
    assert configuration["trials"] == len(recorded) == 12
    assert configuration["summary"]["trials"] == 12 and index["live"] is False
    columns = payload(viewer, "trials/c0")
    assert len(columns["task"]) == 12 and len(columns["outcome"]) == 12
    by_slot = {(o["task"], o["repeat"]): outcome_letter(o) for o in recorded}
    for row in index["tasks"]:
        cell = row["cells"]["c0"]
        assert row["prompt"] and "notes.txt" in row["prompt"]
        shown = [(columns["task"][i], columns["repeat"][i]) for i in cell["trials"]]
        assert {task for task, _ in shown} == {row["id"]}
        assert cell["outcomes"] == "".join(by_slot[slot] for slot in shown)
    failed = columns["outcome"].index("F")
    trial = payload(viewer, f"trial/c0/{failed}")
    assert trial["task"] == columns["task"][failed] and trial["outcome"] == "F"
    assert trial["prompt"] and trial["steps"] and trial["steps"][0]["source"] == "user"
    assert "Not exact" in trial["failure"] or "differ" in trial["failure"], trial["failure"]
    folder = Path(trial["folder"])
    patch = folder / "diff.patch"
    assert trial["diff"] == (patch.read_text() if patch.exists() else None)
    assert trial["failure"] == (folder / "failure.txt").read_text()
    assert trial["nodeid"].endswith(f"::r{trial['repeat']}")
    assert trial["rerun"].startswith(f"pytest {trial['nodeid']} --agent=mock")
    assert {a["name"] for a in trial["artifacts"]} >= {"failure.txt", "trajectory.json"}
    with pytest.raises(NotFound):
        payload(viewer, "trial/c0/12")
    with pytest.raises(NotFound):
        payload(viewer, "compare/c0/c0")


def test_a_trials_node_id_from_the_viewer_reruns_that_trial(
    pytester: pytest.Pytester, run: Path
) -> None:
    trial = payload(Viewer([run]), "trial/c0/5")
    again = pytester.runpytest_subprocess(*MOCK, "--tasks=tiny-tasks", trial["nodeid"], "-v")
    again.stdout.fnmatch_lines([f"*{trial['nodeid']}*"])
    assert sum(again.parseoutcomes().get(k, 0) for k in ("passed", "failed")) == 1


def test_the_compare_payload_lists_the_trials_behind_each_mcnemar_cell(
    pytester: pytest.Pytester,
) -> None:
    make_tasks(pytester.path, 6)
    shutil.copytree(EXAMPLE, pytester.path / "examples")
    pytester.runpytest_subprocess(
        *MOCK,
        "--tasks=tiny-tasks",
        "--arms=examples/arms.toml",
        "--repeats=3",
        "--agent-opt=pass_prob=0.3",
        "--agent-opt=pass_prob.arm.core=0.9",
        "--agentbench-dir=run",
    )
    viewer = Viewer([pytester.path / "run"])
    index = payload(viewer, "index")
    keys = {c["name"]: c["key"] for c in index["configurations"]}
    vanilla, core = keys["vanilla"], keys["core"]
    assert [vanilla, core] in index["pairs"]
    compared = payload(viewer, f"compare/{vanilla}/{core}")
    assert compared["problems"] == [] and compared["comparison"]["suite"]["first_exact"]["pairs"]
    base, candidate = payload(viewer, f"trials/{vanilla}"), payload(viewer, f"trials/{core}")
    paired = next(p for p in index["arms"]["paired"] if p["arm"] == "core")
    for outcome in ("first_exact", "final_exact"):
        cells = compared["mcnemar"][outcome]["cells"]
        counted = paired[outcome]["trials"]
        assert len(cells["both"]) == counted["both"]
        assert len(cells["base_only"]) == counted["vanilla_only"]
        assert len(cells["candidate_only"]) == counted["treatment_only"]
        assert len(cells["neither"]) == counted["neither"]
        assert compared["mcnemar"][outcome]["p"] == counted["p"]
        for name, pairs in cells.items():
            for b, c in pairs:
                assert base["task"][b] == candidate["task"][c]
                exact = {"P": True, "R": outcome == "final_exact", "F": False}
                shown = (exact[base["outcome"][b]], exact[candidate["outcome"][c]])
                assert (
                    name
                    == {
                        (True, True): "both",
                        (True, False): "base_only",
                        (False, True): "candidate_only",
                        (False, False): "neither",
                    }[shown]
                )


@pytest.fixture
def served(run: Path) -> Iterator[ViewServer]:
    server = ViewServer(Viewer([run], take_apart))  # as the command serves: snapshots in a child
    server.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _get(
    server: ViewServer, path: str, host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    address, port = server.server_address[:2]
    connection = http.client.HTTPConnection(str(address), int(port), timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", f"127.0.0.1:{port}" if host is None else host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_the_server_serves_the_app_and_payloads_and_nothing_else(served: ViewServer) -> None:
    status, headers, body = _get(served, "/")
    assert status == 200 and b'window.AGENTBENCH_MODE="server"' in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert _get(served, "/assets/app.js")[0] == 200
    status, _, body = _get(served, "/api/index")
    assert status == 200 and json.loads(body)["configurations"][0]["trials"] == 12
    for path in (
        "/api/../run.json",
        "/assets/../page.py",
        "/assets/%2e%2e/page.py",
        "/run/observations.jsonl",
        "/api/trial/c0/../../etc",
        "/api/trial/c9/0",
        "/etc/passwd",
    ):
        assert _get(served, path)[0] == 404, path


@pytest.mark.parametrize("host", ["evil.example:80", "127.0.0.1:1", "localhost", ""])
def test_the_server_refuses_a_host_header_not_its_own(served: ViewServer, host: str) -> None:
    status, _, body = _get(served, "/api/index", host=host)
    assert status == 403 and b"configurations" not in body


def test_a_run_being_written_shows_in_the_next_payload(
    pytester: pytest.Pytester, run: Path
) -> None:
    """Trials appended to the run (another run's lines, as a session appends its own) are in
    the index once the version has changed."""
    pytester.runpytest_subprocess(
        *MOCK, "--tasks=tiny-tasks", "--repeats=5", "--agentbench-dir=more"
    )
    viewer = Viewer([run])
    before = payload(viewer, "version")["version"]
    assert payload(viewer, "index")["configurations"][0]["trials"] == 12
    lines = (pytester.path / "more" / "observations.jsonl").read_text().splitlines()
    more = [json.loads(line) for line in lines]
    with open(run / "observations.jsonl", "a") as handle:
        for observation in more:
            if observation["repeat"] >= 3:
                handle.write(json.dumps(observation) + "\n")
    time.sleep(1.1)  # the viewer looks at the files again at most once a second
    assert payload(viewer, "version")["version"] != before
    assert payload(viewer, "index")["configurations"][0]["trials"] == 20


HOSTILE = "<img src=x onerror=alert(1)></script><!--"


@given(st.text())
def test_script_json_never_lets_text_out_of_its_string(text: str) -> None:
    encoded = script_json({"name": text})
    assert "<" not in encoded and ">" not in encoded
    assert json.loads(encoded) == {"name": text}


def test_a_bundle_holds_every_payload_as_a_script_and_hostile_names_as_text(
    pytester: pytest.Pytester, run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bundle"
    done = subprocess.run(
        [str(SCRIPT), "view", str(run), "--bundle", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"open {(out / 'index.html').as_uri()}" in done.stdout
    assert b'window.AGENTBENCH_MODE="bundle"' in (out / "index.html").read_bytes()
    scripts = sorted(out.joinpath("data").rglob("*.js"))
    assert len(scripts) == 1 + 1 + 12  # index, the trial columns, every trial
    delivery = re.compile(r'agentbench\.deliver\(("[^"]*"),(.*)\);\n\Z', re.S)
    for script in scripts:
        found = delivery.match(script.read_text())
        assert found, script
        name = json.loads(found.group(1))
        assert script == out / "data" / f"{name}.js"
        json.loads(found.group(2))
    # A hostile task name stays inside its JSON string.
    index = out / "data" / "index.js"
    data = json.loads(delivery.match(index.read_text()).group(2))  # type: ignore[union-attr]
    data["tasks"][0]["id"] = HOSTILE
    assert "<" not in script_json(data)


def test_view_names_a_source_that_is_not_a_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "view", str(tmp_path / "nothing")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert f"{tmp_path / 'nothing'}: no such run directory or report" in done.stderr
    (tmp_path / "empty").mkdir()
    done = subprocess.run(
        [str(SCRIPT), "view", str(tmp_path / "empty")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "not a run directory (no run.json)" in done.stderr


# ---------------------------------------------------------------------------------------------
# The judges: the mock two-arm run of test_judges.py, judged and reviewed for real through the
# scripted model server


def test_the_index_carries_the_judges_tally_and_updates_as_the_run_is_judged(
    arm_run: Path,
) -> None:
    run_dir = arm_run
    viewer = Viewer([run_dir])
    before = payload(viewer, "version")["version"]
    assert payload(viewer, "index")["judgements"] == []
    with ScriptedModelServer({"judge": "shorter", "turns": []}) as server:
        assert judge(server, run_dir) == 0
    time.sleep(1.1)  # the viewer looks at the files again at most once a second
    assert payload(viewer, "version")["version"] != before
    index = payload(viewer, "index")
    (entry,) = index["judgements"]
    assert entry["problem"] is None and entry["run_dir"] == str(run_dir)
    assert entry["block"] == json.loads(json.dumps(judgements_block(run_dir)))
    names = {c["key"]: c["name"] for c in index["configurations"]}
    assert {side: names[key] for side, key in entry["sides"].items()} == {
        "vanilla": "vanilla",
        "core": "core",
    }
    (tally,) = entry["block"]["judges"]
    vanilla = tally["sides"]["vanilla"]
    assert (vanilla["wins"], vanilla["losses"], vanilla["ties"]) == (2, 0, 0)
    assert tally["findings"]["core"]["minor"] == 4 and tally["flags"] == []
    assert index["reviewed"] == []


def test_a_flagged_judge_and_a_broken_judgements_file_show_in_the_index(
    arm_run: Path,
) -> None:
    with ScriptedModelServer({"judge": "first", "turns": []}) as server:
        assert judge(server, arm_run, "--gold") == 0
    (entry,) = payload(Viewer([arm_run]), "index")["judgements"]
    flags = entry["block"]["judges"][0]["flags"]
    assert any("position consistency 0.00" in f for f in flags)
    assert any("gold accuracy 0.50 < 0.8" in f for f in flags)
    with (arm_run / "judgements.jsonl").open("a") as out:
        out.write("not json\n{}\n")  # a bad line that is not the last: an error naming it
    (entry,) = payload(Viewer([arm_run]), "index")["judgements"]
    assert entry["block"] is None and "judgements.jsonl:" in entry["problem"]


def test_a_reviewed_trial_carries_its_findings_on_its_page_and_in_the_index(
    arm_run: Path,
) -> None:
    trial = next(p.name for p in (arm_run / "trials").iterdir() if p.name.startswith("core"))
    with ScriptedModelServer({"judge": "shorter", "turns": []}) as server:
        asked = ["review", str(arm_run), trial, "--judge-model", "judge-1", "--judge-api"]
        assert main([*asked, "openai", "--judge-base-url", server.openai_base_url]) == 0
    viewer = Viewer([arm_run], take=take_apart)  # as the server takes it: in a child process
    (reviewed,) = payload(viewer, "index")["reviewed"]
    assert reviewed["trial"] == trial and reviewed["arm"] == "core"
    assert reviewed["findings"] == {"critical": 0, "major": 0, "minor": 1}
    page = payload(viewer, f"trial/{reviewed['key']}/{reviewed['index']}")
    assert page["folder"].endswith(trial)
    (review,) = page["reviews"]
    assert review["judge"] == "openai:judge-1" and review["error"] is None
    (finding,) = review["findings"]  # the stray file the core arm's mock agent leaves
    assert (finding["severity"], finding["file"], finding["line"]) == ("minor", "NOTES.agent.md", 1)
    others = payload(viewer, f"trial/{reviewed['key']}/{1 - reviewed['index']}")
    assert others["reviews"] == []
