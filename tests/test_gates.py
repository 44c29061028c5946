"""Gates files with splits, count gates and metric gates on small hand-made trial sets: each
verdict against a hand count, the undetermined cases, the missing values and their reasons,
every misspelt key or value named with its line, and the exit codes through the console
script and after a pytest run with arms over -n 0 and -n 2."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compare import SIX, agentbench, configuration, write

from pytest_agentbench.scoring.compare import FAIL, PASS, UNDETERMINED, Gate, compare
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.gates import (
    ALL,
    CountGate,
    Counts,
    GatesFile,
    MetricGate,
    count_decision,
    evaluate_count_gate,
    evaluate_metric_gate,
    judge,
    load_gates_file,
)

PASSES = CountGate("passes", "passes", "higher")


def counted(gate: CountGate, comparator: str | dict[str, str], candidate: dict[str, str]) -> Any:
    comp = configuration(comparator if isinstance(comparator, dict) else {"a": comparator})
    cand = configuration(candidate)
    return evaluate_count_gate(gate, comp, cand, set(comp.declared) | set(cand.declared))


# ---- count gates ---------------------------------------------------------------------------


def test_a_pass_count_gate_counts_passes_within_its_tolerance() -> None:
    comp = {"a": "PPFF", "b": "PPPF"}  # 5 passes
    assert counted(PASSES, comp, {"a": "PPPF", "b": "PPFF"}).verdict == PASS  # 5 >= 5
    lost = counted(PASSES, comp, {"a": "PFFF", "b": "PPFF"})  # 1 + 2 = 3 < 5
    assert lost.verdict == FAIL
    assert lost.detail.startswith("first_exact passes over 2 tasks: candidate 3, comparator 5")
    # "R" passes at the end only: 4 final passes against the comparator's 5
    final = CountGate("final", "passes", "higher", outcome="final_exact")
    assert counted(final, comp, {"a": "RRFF", "b": "RRFF"}).verdict == FAIL
    three = {"a": "PPFF", "b": "PFFF"}
    assert counted(CountGate("t", "passes", "higher", 2), comp, three).verdict == PASS  # 3 >= 3
    assert counted(CountGate("t", "passes", "higher", 1), comp, three).verdict == FAIL  # 3 < 4


def test_per_task_checks_each_task_on_its_own() -> None:
    comp, cand = {"a": "PPFF", "b": "PFFF"}, {"a": "PPPP", "b": "FFFF"}  # 3 vs 4 in all
    assert counted(PASSES, comp, cand).verdict == PASS
    per_task = CountGate("each", "passes", "higher", per_task=True)
    assert counted(per_task, comp, cand).verdict == FAIL  # b: 0 < 1
    tolerant = CountGate("each", "passes", "higher", 1, per_task=True)
    assert counted(tolerant, comp, cand).verdict == PASS  # b: 0 >= 1 - 1


def test_unknown_outcomes_are_read_both_ways_and_undetermined_when_the_readings_differ() -> None:
    # candidate 2 passes + 1 unknown against 3: 3 >= 3 read as a pass, 2 < 3 as a fail
    split = counted(PASSES, "PPPF", {"a": "PPSF"})
    assert split.verdict == UNDETERMINED
    assert "unknown outcomes: candidate 1, comparator 0" in split.detail
    assert "pass/pass pass, pass/fail pass, fail/pass FAIL, fail/fail FAIL" in split.detail
    assert split.missing == [
        {"task": "a", "side": "candidate", "reason": "1 of 4 attempts not scored (unknown outcome)"}
    ]
    assert counted(PASSES, "PPFF", {"a": "PPPS"}).verdict == PASS  # 3 >= 2 either way
    assert counted(PASSES, "PPPP", {"a": "PPFE"}).verdict == FAIL  # 2 or 3 < 4 either way
    assert counted(PASSES, "PPSF", {"a": "PPPF"}).verdict == PASS  # 3 >= 2 or 3
    assert counted(PASSES, "PSSF", {"a": "PPFF"}).verdict == UNDETERMINED  # 2 against 1..3


def test_differing_or_missing_attempts_make_a_count_gate_undetermined() -> None:
    uneven = counted(PASSES, "PPFF", {"a": "PPPPP"})  # 5 passes of 5 against 2 of 4
    assert uneven.verdict == UNDETERMINED and "a (5 vs 4 attempts)" in uneven.detail
    missing = counted(PASSES, {"a": "PP"}, {"a": "PP", "b": "PP"})
    assert missing.verdict == UNDETERMINED
    assert "b (no attempts in the comparator)" in missing.detail
    assert {"task": "b", "side": "comparator", "reason": "no attempts"} in missing.missing


def test_an_unknown_count_gate_counts_unscored_trials() -> None:
    gate = CountGate("stops", "unknown", "lower")
    result = counted(gate, "PPSP", {"a": "PSEF"})  # 2 unknowns against 1
    assert result.verdict == FAIL
    assert result.detail.startswith("unknown outcomes over 1 task: candidate 2, comparator 1")
    assert counted(CountGate("stops", "unknown", "lower", 1), "PPSP", {"a": "PSEF"}).verdict == PASS


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 4), st.integers(0, 3)),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from(["passes", "unknown"]),
    st.sampled_from(["higher", "lower"]),
    st.integers(0, 2),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_reading_unknowns_as_passes_never_decides_worse_than_as_fails(
    rows: list[tuple[int, int, int, int]],
    correctness: str,
    direction: str,
    tolerance: int,
    per_task: bool,
    rnd: Any,
) -> None:
    """For the candidate under `higher`, all-pass >= all-fail (and the reverse for the
    comparator); a decided gate agrees with every trial-by-trial reading of the unknowns."""
    gate = CountGate("g", correctness, direction, tolerance, per_task)
    tasks = {f"t{i}": (Counts(c, cu), Counts(a, au)) for i, (c, cu, a, au) in enumerate(rows)}
    found = count_decision(gate, tasks)
    better, worse = (True, False) if direction == "higher" else (False, True)
    if correctness == "passes":
        for comp in (True, False):
            assert found[(better, comp)] >= found[(worse, comp)]
        for cand in (True, False):
            assert found[(cand, worse)] >= found[(cand, better)]
    if len(set(found.values())) == 1:  # decided: any reading of each unknown agrees
        read = {
            task: (Counts(c.passes + rnd.randint(0, c.unknown), 0), a)
            if correctness == "passes"
            else (c, a)
            for task, (c, a) in tasks.items()
        }
        read = {
            task: (c, Counts(a.passes + rnd.randint(0, a.unknown), 0))
            if correctness == "passes"
            else (c, a)
            for task, (c, a) in read.items()
        }
        assert set(count_decision(gate, read).values()) == set(found.values())


# ---- metric gates --------------------------------------------------------------------------


def with_values(config: Configuration, values: dict[str, list[float | None]]) -> Configuration:
    """Each task's trials given these token counts in repeat order (None: not reported)."""
    for obs in config.observations:
        value = values[obs["task"]][obs["repeat"]]
        if obs["status"] == "scored":
            obs["tokens"] = (
                None
                if value is None
                else {"input": value, "cached_input": 0, "output": 0, "reasoning": 0}
            )
    return config


def tokens_gate(statistic: str, factor: float, direction: str = "lower") -> MetricGate:
    return MetricGate("tok", ("input_tokens", "output_tokens"), statistic, direction, factor)


COMP = {"a": [100, 200, 300], "b": [50, 50, 80]}  # medians 200, 50: mean 125; total 780
CAND = {"a": [150, 150, 400], "b": [100, 20, 90]}  # medians 150, 90: mean 120; total 910


def metric(gate: MetricGate, comp: Configuration, cand: Configuration) -> Any:
    return evaluate_metric_gate(gate, comp, cand, set(comp.declared) | set(cand.declared))


def sides(cand_letters: str = "PPP") -> tuple[Configuration, Configuration]:
    comp = with_values(configuration({"a": "PPP", "b": "PPP"}), COMP)
    return comp, with_values(configuration({"a": "PPP", "b": cand_letters}), CAND)


def test_mean_of_task_medians_and_total_by_hand() -> None:
    comp, cand = sides()
    result = metric(tokens_gate("mean_of_task_medians", 1.0), comp, cand)
    assert result.verdict == PASS
    assert result.detail == (
        "mean_of_task_medians of input_tokens + output_tokens: candidate 120 <= 1 x comparator "
        "125 = 125 over 2 tasks"
    )
    assert result.values["a"] == {"candidate": 150, "comparator": 200, "attempts": [3, 3]}
    assert metric(tokens_gate("mean_of_task_medians", 0.9), comp, cand).verdict == FAIL
    assert metric(tokens_gate("total", 1.2), comp, cand).verdict == PASS  # 910 <= 936
    total = metric(tokens_gate("total", 1.1), comp, cand)  # 910 > 858
    assert total.verdict == FAIL and "candidate 910 > 1.1 x comparator 780 = 858" in total.detail
    higher = metric(tokens_gate("total", 1.1, "higher"), comp, cand)
    assert higher.verdict == PASS  # 910 >= 858


@pytest.mark.parametrize("statistic", ["mean_of_task_medians", "total"])
def test_a_missing_value_is_never_zero_it_makes_the_gate_undetermined(statistic: str) -> None:
    comp, cand = sides("PSP")  # b's second repeat stopped: no value
    cand.observations[0]["tokens"] = None  # a's first repeat did not report its tokens
    result = metric(tokens_gate(statistic, 10.0), comp, cand)
    assert result.verdict == UNDETERMINED
    assert "a (2 of 3 candidate and 3 of 3 comparator attempts measured)" in result.detail
    assert result.missing == [
        {
            "task": "a",
            "side": "candidate",
            "reason": "repeat 0 has no input_tokens + output_tokens",
        },
        {"task": "b", "side": "candidate", "reason": "1 repeat not scored, no value"},
    ]
    one_side = metric(tokens_gate(statistic, 10.0), *sides()[:1], configuration({"c": "P"}))
    assert one_side.verdict == UNDETERMINED and "(no attempts in the" in one_side.detail


def measured(letters: dict[str, str], values: dict[str, list[float]], refs: dict[str, Any]) -> Any:
    config = configuration(letters)
    for obs in config.observations:
        obs["measures"] = {"complexity_added": values[obs["task"]][obs["repeat"]]}
        ref = refs.get(obs["task"])
        obs["measure_reference"] = None if ref is None else {"complexity_added": ref}
    return config


def test_a_ratio_gate_leaves_out_tasks_without_a_usable_reference() -> None:
    refs = {"a": 20, "e": 10, "b": 5, "c": 0, "n": -4}  # d: no reference recorded
    tasks = {t: "PPP" for t in ("a", "b", "c", "d", "e", "n")}
    comp_values = {t: [10, 20, 30] for t in tasks}
    comp_values["e"] = [10, 10, 10]
    cand_values = {t: [22, 24, 26] for t in tasks}
    cand_values["e"] = [5, 5, 5]
    comp, cand = measured(tasks, comp_values, refs), measured(tasks, cand_values, refs)
    cand.observations[3]["measures"] = {"complexity_added": None}  # b: left out all the same
    gate = MetricGate(
        "ratio", ("measures.complexity_added",), "mean_of_task_median_ratios", "lower", 1.1, 10
    )
    result = metric(gate, comp, cand)
    # a: 24/20 = 1.2 and 20/20 = 1; e: 5/10 = 0.5 and 10/10 = 1: means 0.85 and 1.0
    assert result.verdict == PASS
    assert result.detail == (
        "mean_of_task_median_ratios of measures.complexity_added: candidate 0.85 <= 1.1 x "
        "comparator 1 = 1.1 over 2 tasks (4 left out without a usable reference)"
    )
    reasons = {m["task"]: m["reason"] for m in result.missing}
    assert reasons == {
        "b": "reference 5 is below reference_floor 10",
        "c": "reference 0 is not > 0: a ratio to it says nothing",
        "d": "no reference value recorded for the task (no reference change measured)",
        "n": "reference -4 is not > 0: a ratio to it says nothing",
    }
    assert result.values["a"]["reference"] == 20 and result.values["a"]["ratios"] == [1.2, 1.0]
    strict = MetricGate("r", gate.metrics, gate.statistic, "lower", 0.8, 10)
    assert metric(strict, comp, cand).verdict == FAIL  # 0.85 > 0.8
    nothing = metric(MetricGate("r", gate.metrics, gate.statistic, "lower", 1, 100), comp, cand)
    assert nothing.verdict == UNDETERMINED and "no task to compare with a usable" in nothing.detail


# ---- splits and sections -------------------------------------------------------------------


def test_a_split_without_the_unmeasured_task_decides_what_all_tasks_cannot(
    tmp_path: Path,
) -> None:
    comp, cand = sides("PSP")
    gates = GatesFile(tmp_path / "g.toml", [tokens_gate("total", 2.0)], {"climb": ["a"]})
    block = judge(gates, cand, {None: comp}, compare(comp, cand))
    verdicts = {s["split"]: s["results"][0]["verdict"] for s in block["sections"]}
    assert verdicts == {ALL: UNDETERMINED, "climb": PASS}  # a: 700 <= 2 x 600
    assert (block["exit"], block["verdict"]) == (3, "undetermined")
    assert [s["tasks"] for s in block["sections"]] == [["a", "b"], ["a"]]


def test_interval_gates_are_judged_on_each_split_s_own_pairs(tmp_path: Path) -> None:
    base = configuration({**SIX, "w": "FFFF"})
    cand = configuration({**{t: "PPFF" for t in SIX}, "w": "PPPP"})
    gate = Gate("rate", "first_exact", "point", 0.0)
    gates = GatesFile(tmp_path / "g.toml", [gate], {"weak": ["w"]})
    block = judge(gates, cand, {None: base}, compare(base, cand))
    assert [s["results"][0]["verdict"] for s in block["sections"]] == [FAIL, PASS]
    assert block["exit"] == 1


def test_on_all_tasks_a_gate_reads_the_tasks_of_its_own_comparator(tmp_path: Path) -> None:
    base = configuration({"a": "PP", "x": "PP"})  # x: the base's only, not the comparator's
    other, cand = configuration({"a": "PF"}), configuration({"a": "PP"})
    gate = CountGate("vs o", "passes", "higher", against="o")
    block = judge(
        GatesFile(tmp_path / "g.toml", [gate]), cand, {None: base, "o": other}, compare(base, cand)
    )
    result = block["sections"][0]["results"][0]
    assert (result["verdict"], list(result["values"]), result["against"]) == (PASS, ["a"], "o")


# ---- the gates file ------------------------------------------------------------------------


GOOD = """
[splits]
climb = ["t0", "t1"]

[[gate]]
name = "passes"
correctness = "passes"
direction = "higher"
tolerance = 1
per_task = true

[[gate]]
name = "tokens"
metrics = ["input_tokens", "output_tokens"]
statistic = "mean_of_task_medians"
direction = "lower"
factor = 1.3
against = "other"

[[gate]]
name = "cognitive"
metrics = ["measures.complexity_added"]
statistic = "mean_of_task_median_ratios"
reference_floor = 10
direction = "lower"
factor = 1.1

[[gate]]
name = "bound"
correctness = "passes"
direction = "higher"
bound = "lower"
margin = -0.05
"""


def test_a_gates_file_of_every_form_loads(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(GOOD)
    gates = load_gates_file(path)
    assert gates.splits == {"climb": ["t0", "t1"]} and gates.split_lines == {"climb": 3}
    assert gates.gates == [
        CountGate("passes", "passes", "higher", 1, True),
        MetricGate(
            "tokens", ("input_tokens", "output_tokens"), "mean_of_task_medians", "lower", 1.3,
            against="other",
        ),
        MetricGate(
            "cognitive", ("measures.complexity_added",), "mean_of_task_median_ratios", "lower",
            1.1, 10.0,
        ),
        Gate("bound", "first_exact", "lower", -0.05),
    ]  # fmt: skip
    assert gates.against() == [None, "other"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'correctness = "passes"\ndirection',
            'correctness = "pass"\ndirection',
            ":7: gate 1 (passes): field 'correctness': 'pass' is not one of passes | unknown "
            "(did you mean `passes`?)",
        ),
        (
            "tolerance = 1",
            "tolerence = 1",
            ":9: unknown key `tolerence` in gate 1 (passes) (did you mean `tolerance`?)",
        ),
        ("tolerance = 1", "tolerance = 0.5", ":9: gate 1 (passes): field 'tolerance': got 0.5"),
        ("per_task = true", 'per_task = "yes"', ":10: gate 1 (passes): field 'per_task'"),
        (
            'statistic = "mean_of_task_medians"',
            'statistic = "median"',
            ":15: gate 2 (tokens): field 'statistic': 'median' is not one of",
        ),
        (
            '"input_tokens", "output_tokens"]',
            '"input_token", "output_tokens"]',
            ":14: gate 2 (tokens): field 'metrics': no metric 'input_token' (did you mean "
            "`input_tokens`?)",
        ),
        (
            'direction = "lower"\nfactor = 1.3',
            'direction = "down"\nfactor = 1.3',
            ":16: gate 2 (tokens): field 'direction': 'down' is not one of higher | lower",
        ),
        (
            'direction = "lower"\nfactor = 1.3',
            "factor = 1.3",
            ":12: gate 2 (tokens): field 'direction': missing; add direction = ",
        ),
        (
            "factor = 1.3",
            "factor = 1.3\nreference_floor = 3",
            ":18: gate 2 (tokens): field 'reference_floor': belongs to statistic = ",
        ),
        (
            "per_task = true",
            "per_task = true\nfactor = 2",
            ":11: gate 1 (passes): field 'factor': does not belong to count gates",
        ),
        ("climb = [", "climb = 3 #", ":3: split 'climb': give a non-empty list of task ids"),
        ("[splits]", "[split]", ":2: unknown table `split` (did you mean `splits`?)"),
        (
            "margin = -0.05",
            "margin = -0.05\ntolerance = 1",
            ":34: gate 4 (bound): field 'tolerance': does not belong to bound gates",
        ),
    ],
)
def test_every_misspelt_key_or_value_is_named_with_file_line_gate_field_and_fix(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = tmp_path / "gates.toml"
    assert old in GOOD
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ValueError) as error:
        load_gates_file(path)
    assert str(error.value).startswith(f"{path}{message}"), str(error.value)


@pytest.mark.parametrize("doc", ["ci.md", "arms.md"])
def test_the_gates_files_the_docs_show_load(tmp_path: Path, doc: str) -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / doc).read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "[[gate]]" in b]
    assert blocks
    for index, block in enumerate(blocks):
        path = tmp_path / f"{index}.toml"
        path.write_text(block)
        assert load_gates_file(path).gates


# ---- the console script --------------------------------------------------------------------


def test_compare_prints_each_section_with_its_measure_table_and_missing_values(
    tmp_path: Path,
) -> None:
    base = configuration({"a": "PPF", "b": "PPP"})
    base = with_values(base, {"a": [10, 20, 30], "b": [5, 5, 5]})
    other = with_values(configuration({"a": "PPP", "b": "PPP"}), {"a": [1, 1, 1], "b": [1] * 3})
    cand = with_values(configuration({"a": "PPP", "b": "PSP"}), {"a": [10, 20, 30], "b": [5] * 3})
    paths = [write(tmp_path / f"{n}.json", c) for n, c in (("b", base), ("o", other), ("c", cand))]
    (tmp_path / "gates.toml").write_text(
        '[splits]\nclimb = ["a"]\n\n[[gate]]\nname = "passes"\ncorrectness = "passes"\n'
        'direction = "higher"\n\n[[gate]]\nname = "tokens"\nmetrics = ["tokens"]\n'
        'statistic = "total"\ndirection = "lower"\nfactor = 1\n\n[[gate]]\nname = "vs other"\n'
        'metrics = ["tokens"]\nstatistic = "total"\ndirection = "lower"\nfactor = 1\n'
        'against = "o.json"\n'
    )
    done = agentbench(
        tmp_path, paths[0], paths[2], "--gates", "gates.toml", "--json", "o.json.out",
        "--markdown", "gates.md",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout.split("gates on all tasks")[1]
    assert "gate passes: pass: first_exact passes over 2 tasks: candidate 5, comparator 5" in text
    assert "gate tokens: undetermined: tokens: a counted task lacks values (b (2 of 3" in text
    assert (
        "gate vs other [climb]: FAIL: total of tokens: candidate 60 > 1 x comparator 3 = 3 "
        "over 1 task" in text
    )
    assert "gate passes [climb]: pass: first_exact passes over 1 task: candidate 3, " in text
    assert "  b (passes, candidate): 1 of 3 attempts not scored (unknown outcome)" in text
    assert "  b (tokens, candidate): 1 repeat not scored, no value" in text
    assert "a       3/2 of 3/3" in text  # the measure table: passes candidate/comparator
    assert done.stdout.rstrip().endswith("gates: a gate failed (exit 1)")
    block = json.loads((tmp_path / "o.json.out").read_text())["gates"]
    assert block["exit"] == 1 and [s["split"] for s in block["sections"]] == [ALL, "climb"]
    assert block["sections"][1]["results"][2]["against"] == "o.json"
    markdown = (tmp_path / "gates.md").read_text()
    assert markdown.startswith("## Gates: a gate failed (exit 1)\n")
    assert re.search(r"\| tokens +\| undetermined +\| mock +\| tokens: a counted", markdown)
    assert "#### Missing values" in markdown

    (tmp_path / "gates.toml").write_text(
        '[splits]\nclimb = ["a", "z"]\n\n[[gate]]\ncorrectness = "passes"\ndirection = "higher"\n'
    )
    bad = agentbench(tmp_path, paths[0], paths[2], "--gates", "gates.toml")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "gates.toml:2: split 'climb': no task 'z' on either side" in bad.stderr
    (tmp_path / "gates.toml").write_text(
        '[[gate]]\ncorrectness = "passes"\ndirection = "higher"\nagainst = "nope"\n'
    )
    bad = agentbench(tmp_path, paths[0], paths[2], "--gates", "gates.toml")
    assert bad.returncode == 2 and "gates.toml: against 'nope': no arm of that name" in bad.stderr
    write(tmp_path / "m9.json", configuration({"a": "PPP", "b": "PPP"}, model="m9"))
    (tmp_path / "gates.toml").write_text(
        '[[gate]]\ncorrectness = "passes"\ndirection = "higher"\nagainst = "m9.json"\n'
    )
    assert agentbench(tmp_path, paths[0], paths[2], "--gates", "gates.toml").returncode == 3
    bad = agentbench(
        tmp_path, paths[0], paths[2], "--gates", "gates.toml", "--require-same", "model"
    )
    assert bad.returncode == 2
    assert "gates.toml: against 'm9.json': --require-same: model: base " in bad.stderr
    assert "candidate 'm9'" not in bad.stderr and "'m9'" in bad.stderr  # the comparator's


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_gates_against_arms_of_a_run_decide_its_exit_status(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    from test_arms_run import MOCK, suite
    from test_arms_run import agentbench as cli

    opts = ["--agent-opt", "pass_prob=0.2", "--agent-opt", "pass_prob.arm.core=1"]
    ran = pytester.runpytest_subprocess(
        *MOCK, *suite(pytester), *opts, *dist, "--repeats=2", "--agentbench-dir=run"
    )
    assert ran.ret == 1  # some vanilla trials failed: the run's own outcome, not the gates'
    gates = pytester.path / "gates.toml"
    body = '[[gate]]\nname = "n"\ncorrectness = "passes"\ndirection = "higher"\n'
    gates.write_text(body + 'against = "vanilla"\n')
    done = cli(
        pytester.path, "compare", "run", "--arms", "seed-wrong,core", "--gates", "gates.toml"
    )
    assert done.returncode == 0, done.stdout + done.stderr  # core passes all 8: >= vanilla's
    assert "gate n: pass: first_exact passes over 4 tasks: candidate 8, comparator" in done.stdout
    gates.write_text('[splits]\nseeded = ["t00", "t01"]\n\n' + body)
    done = cli(
        pytester.path, "compare", "run", "--arms", "seed-wrong,core", "--gates", "gates.toml"
    )
    assert done.returncode == 3, done.stdout + done.stderr  # the anchor arm skipped t02, t03
    assert "gate n: undetermined: first_exact passes: attempts differ or are missing on t02 " in (
        done.stdout
    )
    assert "gate n [seeded]: pass: first_exact passes over 2 tasks: candidate 4," in done.stdout
    gates.write_text(body.replace("higher", "lower") + 'against = "vanilla"\n')
    done = cli(
        pytester.path, "compare", "run", "--arms", "seed-wrong,core", "--gates", "gates.toml"
    )
    assert done.returncode == 1, done.stdout + done.stderr
