"""Family rollups against a brute-force recomputation on hand-made configurations."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.agents.claude import ClaudeAgent
from pytest_agentbench.agents.codex import CodexAgent
from pytest_agentbench.agents.opencode import OpencodeAgent
from pytest_agentbench.cli import main
from pytest_agentbench.report.terminal import SCREEN_LINES, render_rollups
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.merged import build_document
from pytest_agentbench.scoring.rollups import build_rollups, provider_of
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import Observation, error_observation

FAMILY_FIELDS = {
    "model": ("model",),
    "route": ("model", "provider"),
    "agent": ("agent",),
    "harness": ("agent", "cli_version"),
    "reasoning": ("reasoning",),
}
TASKS: list[dict[str, Any]] = [
    {"id": "a", "category": "edit", "tags": ["small"]},
    {"id": "b", "category": "edit", "tags": []},
    {"id": "c", "category": "create", "tags": ["small", "new"]},
]


def report(
    name: str,
    score: float | None,
    *,
    coverage: float | None = 1.0,
    quarantined: bool = False,
    model: str | None = "m1",
    provider: str | None = "api.example.com",
    agent: str = "codex",
    cli_version: str | None = "1.0",
    reasoning: str | None = None,
    rates: list[tuple[float | None, float | None]] | None = None,
) -> dict[str, Any]:
    """A configuration's report with only the fields rollups read."""
    rates = rates or [(0.5, 1.0)] * len(TASKS)
    return {
        "run": {
            "name": name,
            "agent": agent,
            "model": model,
            "reasoning": reasoning,
            "identity": {"cli_version": cli_version},
            "agent_info": {"provider": provider},
            "quarantined": quarantined,
            "quarantine": {
                "reason": "12 of 50 trials were provider stops" if quarantined else None
            },
        },
        "summary": {
            "score": score,
            "coverage": coverage,
            "tasks_observed": 3 if coverage == 1 else 1,
            "tasks_declared": 3,
        },
        "tasks": [
            {**task, "first_exact": first, "final_exact": final}
            for task, (first, final) in zip(TASKS, rates, strict=True)
        ],
    }


def brute_median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def brute_spread(values: list[float]) -> dict[str, Any]:
    """The figures by other means: the textbook median, numpy's linear quartiles."""
    if not values:
        return dict.fromkeys(("median", "mean", "q1", "q3", "min", "max"), None) | {"count": 0}
    q1, q3 = np.quantile(values, [0.25, 0.75], method="linear")
    return {
        "count": len(values),
        "median": brute_median(values),
        "mean": statistics.fmean(values),
        "q1": float(q1),
        "q3": float(q3),
        "min": min(values),
        "max": max(values),
    }


def assert_figures(row: dict[str, Any], expected: dict[str, Any]) -> None:
    for key, value in expected.items():
        assert row[key] == (value if value is None else pytest.approx(value)), key


def key_of(r: dict[str, Any], field: str) -> Any:
    run = r["run"]
    if field == "provider":
        return run["agent_info"]["provider"]
    if field == "cli_version":
        return run["identity"]["cli_version"]
    return run[field]


configurations: st.SearchStrategy[list[dict[str, Any]]] = st.lists(
    st.fixed_dictionaries(
        {
            "score": st.floats(0, 1),
            "coverage": st.sampled_from([1.0, 2 / 3]),
            "quarantined": st.booleans(),
            "model": st.sampled_from(["m1", "m2", None]),
            "provider": st.sampled_from(["api.openai.com", "gw.internal", None]),
            "agent": st.sampled_from(["codex", "claude"]),
            "cli_version": st.sampled_from(["1.0", "2.0"]),
            "reasoning": st.sampled_from([None, "high"]),
            "rates": st.lists(
                st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.0, 0.5, 1.0])),
                min_size=3,
                max_size=3,
            ),
        }
    ),
    max_size=9,
)


@given(configurations)
def test_every_family_row_matches_a_brute_force_recount(specs: list[dict[str, Any]]) -> None:
    reports = [report(f"c{i}", **spec) for i, spec in enumerate(specs)]
    rollups = build_rollups(reports)
    counted = [r for r in reports if r["summary"]["coverage"] == 1 and not r["run"]["quarantined"]]
    assert rollups["configurations"] == [r["run"]["name"] for r in counted]
    for family, fields in FAMILY_FIELDS.items():
        rows = [row for row in rollups["families"] if row["family"] == family]
        keys = {tuple(key_of(r, f) for f in fields) for r in reports}
        assert len(rows) == len(keys)
        assert {tuple(row["key"][f] for f in fields) for row in rows} == keys
        for row in rows:
            value = tuple(row["key"][f] for f in fields)
            members = [r for r in reports if tuple(key_of(r, f) for f in fields) == value]
            included = [r for r in members if r in counted]
            assert row["configurations"] == [r["run"]["name"] for r in included]
            assert [e["configuration"] for e in row["excluded"]] == [
                r["run"]["name"] for r in members if r not in counted
            ]
            assert_figures(row, brute_spread([r["summary"]["score"] for r in included]))


@given(configurations)
def test_task_family_slices_use_complete_configurations_only(specs: list[dict]) -> None:
    reports = [report(f"c{i}", **spec) for i, spec in enumerate(specs)]
    counted = [r for r in reports if r["summary"]["coverage"] == 1 and not r["run"]["quarantined"]]
    rows = {(row["by"], row["family"]): row for row in build_rollups(reports)["task_families"]}
    slices = {("category", "edit"): {"a", "b"}, ("category", "create"): {"c"}}
    slices |= {("tag", "small"): {"a", "c"}, ("tag", "new"): {"c"}}
    assert set(rows) == (set(slices) if counted else set())
    for where, ids in slices.items():
        if not counted:
            continue
        qualities = {}
        for r in counted:
            tasks = [t for t in r["tasks"] if t["id"] in ids]
            first = sum(t["first_exact"] for t in tasks) / len(tasks)
            final = sum(t["final_exact"] for t in tasks) / len(tasks)
            qualities[r["run"]["name"]] = 0.75 * first + 0.25 * final
        assert rows[where]["tasks"] == len(ids)
        assert rows[where]["quality"] == pytest.approx(qualities)
        assert_figures(rows[where], brute_spread(list(qualities.values())))


def family(rollups: dict[str, Any], name: str, label: str) -> dict[str, Any]:
    (row,) = [r for r in rollups["families"] if r["family"] == name and r["label"] == label]
    return row


@pytest.mark.parametrize(
    ("scores", "median", "q1", "q3"),
    [
        ([0.4], 0.4, 0.4, 0.4),  # one configuration
        ([0.1, 0.2, 0.9], 0.2, 0.15, 0.55),  # odd count: the middle one
        ([0.1, 0.2, 0.3, 0.9], 0.25, 0.175, 0.45),  # even count: between the middle two
        ([0.5, 0.5, 0.5, 0.8], 0.5, 0.5, 0.575),  # ties
    ],
    ids=["one", "odd", "even", "ties"],
)
def test_known_medians_and_quartiles(scores, median, q1, q3) -> None:
    rollups = build_rollups([report(f"c{i}", s) for i, s in enumerate(scores)])
    row = family(rollups, "agent", "codex")
    assert (row["count"], row["min"], row["max"]) == (len(scores), min(scores), max(scores))
    assert row["median"] == pytest.approx(median)
    assert row["q1"] == pytest.approx(q1) and row["q3"] == pytest.approx(q3)
    assert row["mean"] == pytest.approx(sum(scores) / len(scores))


def test_partial_and_quarantined_configurations_are_listed_not_counted() -> None:
    reports = [
        report("full", 0.6),
        report("half", 0.2, coverage=1 / 3),
        report("stopped", 0.9, quarantined=True),
        report("unscored", None),
    ]
    rollups = build_rollups(reports)
    row = family(rollups, "model", "m1")
    assert row["configurations"] == ["full"] and row["count"] == 1 and row["median"] == 0.6
    reasons = {e["configuration"]: e["reason"] for e in row["excluded"]}
    assert reasons == {
        "half": "partial: coverage 33.3% (1 of 3 tasks)",
        "stopped": "quarantined: 12 of 50 trials were provider stops",
        "unscored": "score unknown",
    }
    assert rollups["excluded"] == row["excluded"]
    assert [r["family"] for r in rollups["task_families"]] == ["create", "edit", "new", "small"]
    assert all(list(r["quality"]) == ["full"] for r in rollups["task_families"])


def test_a_family_with_every_configuration_excluded_has_null_figures_and_count_zero() -> None:
    rollups = build_rollups([report("a", 0.5, coverage=0.5), report("b", 0.7, quarantined=True)])
    row = family(rollups, "route", "m1 @ api.example.com")
    assert row["count"] == 0 and row["configurations"] == []
    assert all(row[k] is None for k in ("median", "mean", "q1", "q3", "min", "max"))
    assert rollups["task_families"] == []


def test_route_labels_and_unknowns() -> None:
    rollups = build_rollups(
        [
            report("x", 0.5, model=None, provider=None, cli_version=None, reasoning="high"),
            report("y", 0.7, model="gpt", provider="api.openai.com", reasoning="high"),
        ]
    )
    labels = {(r["family"], r["label"]) for r in rollups["families"]}
    assert {("route", "default @ unknown"), ("route", "gpt @ api.openai.com")} <= labels
    assert {("harness", "codex unknown"), ("harness", "codex 1.0")} <= labels
    assert {("model", "default"), ("reasoning", "high")} <= labels
    assert family(rollups, "reasoning", "high")["count"] == 2


@pytest.mark.parametrize(
    ("info", "provider"),
    [
        ({"provider": "api.anthropic.com", "base_url": None}, "api.anthropic.com"),
        ({"base_url": "http://127.0.0.1:8080/v1"}, "127.0.0.1"),
        ({"base_url": None}, None),
        ({}, None),
    ],
)
def test_provider_is_recorded_or_read_from_the_base_url(info, provider) -> None:
    assert provider_of({"agent_info": info}) == provider


@pytest.mark.parametrize(
    ("cls", "model", "opts", "provider"),
    [
        (CodexAgent, "gpt-5", {}, "api.openai.com"),
        (ClaudeAgent, None, {}, "api.anthropic.com"),
        (ClaudeAgent, "m", {"base_url": "http://gw.internal:8080"}, "gw.internal"),
        (OpencodeAgent, "anthropic/claude-sonnet-4", {}, "anthropic"),
        (OpencodeAgent, None, {}, None),
        (OpencodeAgent, "m", {"base_url": "http://127.0.0.1:9/v1"}, "127.0.0.1"),
    ],
)
def test_adapters_record_the_provider_of_their_route(cls, model, opts, provider) -> None:
    agent = cls(Settings(agent=cls.name, model=model, agent_opts={"bin": "/bin/true", **opts}))
    assert agent.provider() == provider


def trials(task: str, passes: list[bool]) -> list[Observation]:
    records = []
    for repeat, passed in enumerate(passes):
        obs = error_observation(task, repeat, "", status="scored")
        obs["cause"], obs["first_exact"], obs["final_exact"] = None, passed, passed
        records.append(obs)
    return records


def configuration(model: str, observations: list[Observation]) -> Configuration:
    settings = Settings(agent="mock", model=model, repeats=2)
    return Configuration(
        identity={"agent": "mock", "model": model, "cli_version": "builtin"},
        settings=settings,
        agent_info={"name": "mock", "cli_version": "builtin"},
        declared={t["id"]: {"category": t["category"], "tags": t["tags"]} for t in TASKS},
        observations=observations,
        name=model,
    )


def merged_sources(tmp_path: Path) -> list[Path]:
    """Three configurations written as JSON reports: two complete, one that ran one task."""
    runs = {
        "m1": trials("a", [True, True]) + trials("b", [True, False]) + trials("c", [False] * 2),
        "m2": trials("a", [True, False]) + trials("b", [False] * 2) + trials("c", [False] * 2),
        "m3": trials("a", [True, True]),
    }
    paths = []
    for model, observations in runs.items():
        path = tmp_path / f"{model}.json"
        path.write_text(json.dumps(configuration(model, observations).report()))
        paths.append(path)
    return paths


def test_merge_writes_rollups_of_the_scores_it_reports(tmp_path: Path) -> None:
    out = tmp_path / "merged.json"
    assert main(["merge", *map(str, merged_sources(tmp_path)), "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    scores = {r["run"]["name"]: r["summary"]["score"] for r in document["configurations"]}
    row = family(document["rollups"], "agent", "mock")
    assert row["configurations"] == ["m1", "m2"]
    assert row["excluded"] == [
        {"configuration": "m3", "reason": "partial: coverage 33.3% (1 of 3 tasks)"}
    ]
    assert_figures(row, brute_spread([scores["m1"], scores["m2"]]))
    assert (scores["m1"], scores["m2"]) == pytest.approx((0.5, 1 / 6))


def test_a_merged_document_leaves_a_quarantined_configuration_out() -> None:
    complete = trials("a", [True] * 20) + trials("b", [False] * 20) + trials("c", [True] * 20)
    for record in complete[:15]:  # 15 of 60 trials (>= 20%) were provider stops
        record["status"], record["cause"] = "provider_stop", "HTTP 429"
    document = build_document(
        [
            configuration("m1", complete),
            configuration("m2", trials("a", [True]) + trials("b", [True]) + trials("c", [False])),
        ]
    )
    stopped, kept = document["configurations"]
    assert stopped["run"]["quarantined"] and stopped["summary"]["coverage"] == 1
    row = family(document["rollups"], "agent", "mock")
    assert row["configurations"] == ["m2"] and row["median"] == kept["summary"]["score"]
    (excluded,) = row["excluded"]
    assert excluded["configuration"] == "m1"
    assert excluded["reason"].startswith("quarantined: ") and "15" in excluded["reason"]


def test_a_quarantine_recorded_as_its_reason_still_counts() -> None:
    """Merged reports written before `quarantined` became a flag held the reason in it."""
    old = report("old", 0.5)
    old["run"].update(quarantined="11 of 52 trials were provider stops", quarantine=None)
    (excluded,) = build_rollups([old])["excluded"]
    assert excluded["reason"] == "quarantined: 11 of 52 trials were provider stops"


def test_the_terminal_rollups_fit_one_screen_and_say_where_the_rest_is() -> None:
    many = [report(f"c{i}", i / 60, model=f"m{i}", coverage=1 if i % 3 else 0.5) for i in range(60)]
    lines = render_rollups(build_rollups(many), "agentbench report merged.json --format md")
    assert len(lines) <= SCREEN_LINES
    more = [line for line in lines if line.startswith("... ")]
    assert more and all(line.endswith("agentbench report merged.json --format md") for line in more)
    few = render_rollups(build_rollups([report("a", 0.5), report("b", 0.7)]), "elsewhere")
    assert not any(line.startswith("... ") for line in few)
    assert sum(line.startswith(("model ", "route ", "agent ", "harness ")) for line in few) == 4


@pytest.mark.parametrize("form", ["text", "md", "html"])
def test_reports_show_rollups_and_exclusions(
    tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "merged.json"
    assert main(["merge", *map(str, merged_sources(tmp_path)), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--format", form]) == 0
    text = capsys.readouterr().out
    assert "m1 @ unknown" in text
    assert "m3" in text and "partial: coverage 33.3% (1 of 3 tasks)" in text
    assert "0.333" in text  # the agent row: the median of m1's 0.5 and m2's 1/6
