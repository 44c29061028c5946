"""agentbench compare on hand-made configurations: every suite figure against a brute-force
computation, the gates' verdicts and exit codes, and the identity header, in process and
through the console script."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_agentbench.run.store import configuration_identity
from pytest_agentbench.scoring.compare import (
    FAIL,
    PASS,
    UNDETERMINED,
    Gate,
    compare,
    evaluate_gate,
    parse_require_same,
)
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.gates import load_gates
from pytest_agentbench.scoring.stats import COMPARE_SEED, mean_interval, sign_test
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import Observation

SCRIPT = Path(sys.executable).parent / "agentbench"
LETTERS = {  # one trial: (status, first exact, final exact)
    "P": ("scored", True, True),
    "R": ("scored", False, True),  # recovered: failed first, exact at the end
    "F": ("scored", False, False),
    "S": ("provider_stop", False, False),
    "E": ("error", False, False),
}


def trial(task: str, repeat: int, letter: str, tokens: int | None) -> Observation:
    status, first, final = LETTERS[letter]
    scored = status == "scored"
    return {
        "task": task,
        "repeat": repeat,
        "status": status,
        "cause": None if scored else "429 rate limited",
        "attempts": 1,
        "first_exact": first,
        "final_exact": final,
        "eof_normalized": first,
        "rounds": [],
        "tokens": (
            {"input": tokens, "cached_input": 0, "output": 0, "reasoning": 0}
            if scored and tokens is not None
            else None
        ),
        "cost_usd": 0.01 if scored else None,
        "wall_s": 2.0 if scored else None,
        "trial_id": f"run/{task}/r{repeat}/a0",
    }


def configuration(
    outcomes: dict[str, str],
    tokens: dict[str, int | None] | None = None,
    cli_version: str = "1.0",
    **options: Any,
) -> Configuration:
    """A configuration whose task T ran the trials spelt by outcomes[T] (see LETTERS)."""
    settings = Settings(agent="mock", repeats=max(map(len, outcomes.values())), **options)
    agent_info = {"name": "mock", "cli_version": cli_version}
    sandbox = {"kind": "tmp", "image": None}
    return Configuration(
        identity=configuration_identity(settings, agent_info, sandbox),
        settings=settings,
        agent_info=agent_info,
        declared={t: {"category": "edit", "tags": [], "fixture_hash": f"h-{t}"} for t in outcomes},
        observations=[
            trial(task, repeat, letter, (tokens or {}).get(task, 100))
            for task, letters in outcomes.items()
            for repeat, letter in enumerate(letters)
        ],
    )


SIX = {f"t{i}": "PPPP" for i in range(6)}


# ---- rates, pairs and the bootstrap seed ---------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]),
        st.tuples(st.text("PRF", min_size=1, max_size=6), st.text("PRF", min_size=1, max_size=6)),
        min_size=1,
    )
)
def test_rates_pair_per_task_whatever_the_trial_counts(
    table: dict[str, tuple[str, str]],
) -> None:
    result = compare(
        configuration({t: b for t, (b, _) in table.items()}),
        configuration({t: c for t, (_, c) in table.items()}),
    )
    assert result.excluded == []  # unequal trial counts no longer exclude a task

    def rate(letters: str, passing: str) -> float:
        return sum(letter in passing for letter in letters) / len(letters)

    first = [rate(c, "P") - rate(b, "P") for b, c in table.values()]
    final = [rate(c, "PR") - rate(b, "PR") for b, c in table.values()]
    suite = result.suite
    assert suite["first_exact"]["point"] == pytest.approx(sum(first) / len(first))
    assert suite["final_exact"]["point"] == pytest.approx(sum(final) / len(final))
    assert suite["quality"]["point"] == pytest.approx(
        0.75 * sum(first) / len(first) + 0.25 * sum(final) / len(final)
    )
    assert suite["first_exact"]["sign_test_p"] == sign_test(first)
    assert [(r["base_trials"], r["candidate_trials"]) for r in result.tasks] == [
        (len(b), len(c)) for _, (b, c) in sorted(table.items())
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text("PRF", min_size=1, max_size=6), st.text("PRF", min_size=1, max_size=6)),
        min_size=1,
        max_size=6,
    )
)
def test_mcnemar_counts_discordant_trials_paired_in_repeat_order(
    pairs: list[tuple[str, str]],
) -> None:
    result = compare(
        configuration({f"t{i}": b for i, (b, _) in enumerate(pairs)}),
        configuration({f"t{i}": c for i, (_, c) in enumerate(pairs)}),
    )
    for outcome, passing in (("first_exact", "P"), ("final_exact", "PR")):
        # trial r of the base against trial r of the candidate; extra trials stay unpaired
        matched = [
            (x in passing, y in passing) for b, c in pairs for x, y in zip(b, c, strict=False)
        ]
        base_only = sum(x and not y for x, y in matched)
        candidate_only = sum(y and not x for x, y in matched)
        n = base_only + candidate_only
        extreme = min(base_only, candidate_only)
        brute = min(1.0, 2 * sum(math.comb(n, i) for i in range(extreme + 1)) / 2**n)
        assert result.suite[outcome]["mcnemar"] == {
            "paired_trials": len(matched),
            "base_only": base_only,
            "candidate_only": candidate_only,
            "p": pytest.approx(brute),
        }
    assert result.suite["quality"]["mcnemar"] is None


def test_mcnemar_p_value_of_a_small_suite() -> None:
    # 8 discordant trials, 1 against the candidate and 7 for it: 2 * (1 + 8) / 2**8
    base = configuration({"a": "PFFF", "b": "FFFF", "c": "PP"})
    cand = configuration({"a": "PPPP", "b": "PPPP", "c": "FP"})
    mcnemar = compare(base, cand).suite["first_exact"]["mcnemar"]
    assert (mcnemar["base_only"], mcnemar["candidate_only"]) == (1, 7)
    assert mcnemar["p"] == pytest.approx(18 / 256)


def test_the_bootstrap_is_seeded_with_0_unless_told() -> None:
    base = configuration({f"t{i}": "PPFF" for i in range(8)})
    cand = configuration({f"t{i}": "P" * i + "F" * (7 - i) for i in range(8)})
    differences = [r["first_exact"] for r in compare(base, cand).tasks]
    assert COMPARE_SEED == 0
    assert compare(base, cand).suite["first_exact"]["interval"] == mean_interval(differences, 0)
    seeded = compare(base, cand, seed=7)
    assert seeded.suite["first_exact"]["interval"] == mean_interval(differences, 7)
    assert seeded.suite["first_exact"]["interval"] != mean_interval(differences, 0)
    assert seeded.to_json()["seed"] == 7


def test_token_ratios_summarise_by_their_geometric_mean() -> None:
    ratios = {"t0": 2.0, "t1": 8.0, "t2": 0.5, "t3": 2.0, "t4": 1.0, "t5": 1.0}
    base = configuration(SIX, tokens=dict.fromkeys(SIX, 100))
    cand = configuration(SIX, tokens={t: int(100 * r) for t, r in ratios.items()})
    tokens = compare(base, cand).suite["tokens"]
    assert tokens["point"] == pytest.approx(16 ** (1 / 6))  # (2 * 8 * 0.5 * 2 * 1 * 1) ** (1/6)
    assert tokens["pairs"] == 6


# ---- count gates ---------------------------------------------------------------------------


def test_pass_counts_give_unknown_outcomes_to_the_base() -> None:
    base = configuration({"a": "PPFS", "b": "PP", "gone": "PF"})
    cand = configuration({"a": "PPPE", "b": "PPFF", "new": "PP"})
    counts = compare(base, cand).passes["first_exact"]
    # a: 4 slots; base 2 + 1 stop = 3, candidate 3 (its error a failure)
    # b: 4 slots; base 2 + 2 slots it did not run = 4, candidate 2
    # gone: 2 slots; base 1, candidate none = 0 (2 unknown)
    # new: 2 slots; base never ran it = 2, candidate 2
    assert counts == {
        "slots": 12,
        "base": 3 + 4 + 1 + 2,
        "candidate": 3 + 2 + 0 + 2,
        "base_unknown": 1 + 2 + 0 + 2,
        "candidate_unknown": 1 + 0 + 2 + 0,
    }


def test_a_stop_that_a_later_record_scored_is_no_longer_unknown() -> None:
    base = configuration({"a": "PP"})
    base.observations.append(trial("a", 1, "S", None))  # resume ran r1 again; the stop stays
    counts = compare(base, configuration({"a": "PP"})).passes["first_exact"]
    assert counts["slots"] == 2 and counts["base_unknown"] == 0


def test_count_gate_passes_at_its_margin_and_fails_below_it() -> None:
    result = compare(configuration({"a": "PPPS"}), configuration({"a": "PPFP"}))
    assert result.passes["first_exact"]["base"] == 4  # the stop counts as a base pass
    assert result.passes["first_exact"]["candidate"] == 3
    verdict, text = evaluate_gate(Gate("count", "passes", "point", -1), result)
    assert verdict == PASS and "passes 3 - 4 = -1 >= margin -1" in text
    assert evaluate_gate(Gate("count", "passes", "point", 0), result)[0] == FAIL
    final = Gate("count", "passes", "point", 0, outcome="final_exact")
    assert evaluate_gate(final, result)[0] == FAIL


# ---- gates with excluded tasks -------------------------------------------------------------


def test_a_gate_with_an_excluded_task_is_undetermined_even_when_it_would_pass() -> None:
    seven = {f"t{i}": "PPPP" for i in range(7)}
    tokens = dict.fromkeys(seven, 100)
    base = configuration({**seven, "extra": "PPPP"}, tokens=tokens)
    cand = configuration(seven, tokens={**tokens, "t6": None})  # t6's tokens unreported
    result = compare(base, cand)
    assert {e["task"]: e["metrics"] for e in result.excluded} == {"extra": "all", "t6": "tokens"}
    verdict, text = evaluate_gate(Gate("rate", "first_exact", "lower", -0.1), result)
    assert verdict == UNDETERMINED
    assert "1 task excluded from first_exact (extra); the 7 pairs give lower +0.00 pts >=" in text
    verdict, text = evaluate_gate(Gate("tok", "tokens", "upper", 1.5), result)
    assert verdict == UNDETERMINED
    assert "2 tasks excluded from tokens (extra, t6); the 6 pairs give upper 1.0000 <=" in text
    whole = compare(configuration(seven, tokens=tokens), configuration(seven, tokens=tokens))
    assert evaluate_gate(Gate("tok", "tokens", "upper", 1.5), whole)[0] == PASS
    assert evaluate_gate(Gate("rate", "first_exact", "lower", -0.1), whole)[0] == PASS


# ---- gates files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('metric = "passes"\nbound = "lower"\nmargin = 0', "a count gate (metric passes) has no"),
        ('metric = "passes"\nmargin = -0.5', "whole number of trials, got -0.5"),
        ('metric = "passes"\nfactor = 2', "metric passes takes 'margin', not 'factor'"),
        ('metric = "passes"\nmargin = 0\noutcome = "quality"', "'outcome' must be first_exact"),
        ('metric = "first_exact"\nmargin = 0\noutcome = "final_exact"', "count gates"),
    ],
)
def test_bad_count_gates_name_the_field(tmp_path: Path, body: str, words: str) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(f'[[gate]]\nname = "g"\n{body}\n')
    with pytest.raises(ValueError, match=r"gates.toml:\d: gate 1 \(g\): ") as error:
        load_gates(path)
    assert words in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[gate]]\nmetric = "passes"\nmargin = 0\noutcom = "final_exact"\n',
            ":4: unknown key `outcom` in gate 1 (unnamed) (did you mean `outcome`?); a gate takes "
            "name, metric, bound, margin, factor, outcome, max_increase, min_increase, "
            "correctness, direction, against, per_task, tolerance, metrics, statistic, "
            "reference_floor (docs/ci.md, Gates)",
        ),
        (
            '[[gate]]\nmetric = "passes"\nmargin = 0\n\n[[gate]]\nnmae = "x"\n'
            'metric = "passes"\nmargin = 0\n',
            ":6: unknown key `nmae` in gate 2 (unnamed) (did you mean `name`?); a gate takes",
        ),
        (
            '[[gate]]\nmetric = "passes"\nmargin = 0\n\n[[gates]]\nmetric = "passes"\n',
            ":5: unknown table `gates` (did you mean `gate`?); a gates file holds [[gate]] "
            "tables and [splits] only (docs/ci.md, Gates)",
        ),
        (
            'gate = [{metric = "passes", margin = 0, outcom = "final_exact"}]\n',
            ": unknown key `outcom` in gate 1 (unnamed) (did you mean `outcome`?)",
        ),
    ],
    ids=["key", "second-gate", "table", "inline-no-line"],
)
def test_a_misspelt_gate_key_or_table_is_named_with_its_line_and_fix(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        load_gates(path)
    assert str(error.value).startswith(f"{path}{message}")


def test_count_gate_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(
        '[[gate]]\nname = "no lost passes"\nmetric = "passes"\nmargin = 0\n'
        'outcome = "final_exact"\n'
    )
    assert load_gates(path) == [Gate("no lost passes", "passes", "point", 0.0, "final_exact")]


# ---- identity ------------------------------------------------------------------------------


def test_differences_name_every_differing_identity_field_and_the_task_sets() -> None:
    base = configuration({"a": "P", "b": "P"}, model="m1", reasoning="low")
    cand = configuration({"a": "P", "c": "P"}, model="m2", cli_version="2.0", agent_cmd="x")
    differences = compare(base, cand).differences
    assert differences == {
        "agent_cmd": {"base": None, "candidate": "x"},
        "cli_version": {"base": "1.0", "candidate": "2.0"},
        "model": {"base": "m1", "candidate": "m2"},
        "reasoning": {"base": "low", "candidate": None},
        "tasks": {"only_in_base": ["b"], "only_in_candidate": ["c"]},
    }
    assert compare(base, base).differences == {}
    with pytest.raises(ValueError, match="--require-same model,tasks: the runs differ: model:"):
        compare(base, cand, require_same=["model", "tasks"])
    compare(base, cand, require_same=["agent", "sandbox"])  # equal: no refusal


def test_require_same_knows_the_identity_fields() -> None:
    assert parse_require_same("model, cli_version") == ["model", "cli_version"]
    with pytest.raises(ValueError, match="unknown field modle; give a comma-separated list of"):
        parse_require_same("modle")


# ---- the console script --------------------------------------------------------------------


def agentbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "compare", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def write(path: Path, config: Configuration) -> str:
    path.write_text(json.dumps(config.report()))
    return str(path)


RATE_GATE = """
[[gate]]
name = "first exact"
metric = "first_exact"
bound = "lower"
margin = -0.2
"""
GATES = (
    RATE_GATE
    + """
[[gate]]
name = "no lost passes"
metric = "passes"
margin = 0
"""
)


def test_console_script_exit_codes_header_and_require_same(tmp_path: Path) -> None:
    weak = write(tmp_path / "weak.json", configuration(dict.fromkeys(SIX, "PPFF"), model="m1"))
    strong = write(tmp_path / "strong.json", configuration(SIX, model="m2"))
    stopped = configuration(SIX, model="m2")
    stopped.observations[0] = trial("t0", 0, "S", None)
    stopped_path = write(tmp_path / "stopped.json", stopped)
    partial = write(tmp_path / "partial.json", configuration({**SIX, "t6": "PPPP"}, model="m1"))
    (tmp_path / "gates.toml").write_text(GATES)
    (tmp_path / "rate.toml").write_text(RATE_GATE)

    done = agentbench(tmp_path, weak, strong, "--gates", "gates.toml", "--json", "out.json")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "base      mock model=m1",
        "candidate mock model=m2",
        "differs   model: base 'm1', candidate 'm2'",
    ]
    assert "  McNemar exact p=0.0005: 0 base-only and 12 candidate-only passes of 24 paired" in (
        done.stdout
    )
    assert "bootstrap seed 0" in lines and "gates: all pass (exit 0)" in lines
    assert json.loads((tmp_path / "out.json").read_text())["passes"]["first_exact"] == {
        "slots": 24,
        "base": 12,
        "candidate": 24,
        "base_unknown": 0,
        "candidate_unknown": 0,
    }

    done = agentbench(tmp_path, strong, weak, "--gates", "gates.toml")
    assert done.returncode == 1 and "gates: a gate failed (exit 1)" in done.stdout

    done = agentbench(tmp_path, strong, stopped_path, "--gates", "gates.toml")
    assert done.returncode == 1  # the candidate's stop is a lost pass
    assert "no lost passes: FAIL: first_exact passes 23 - 24 = -1 < margin +0" in done.stdout

    done = agentbench(tmp_path, partial, strong, "--gates", "rate.toml")
    assert done.returncode == 3, done.stdout
    assert "gate first exact: undetermined: 1 task excluded from first_exact (t6)" in done.stdout
    assert "differs   tasks: 1 only in base (t6)" in done.stdout
    assert "gates: undetermined (exit 3)" in done.stdout

    done = agentbench(tmp_path, weak, strong, "--require-same", "model")
    assert done.returncode == 2 and done.stdout == ""
    assert "--require-same model: the runs differ: model: base 'm1', candidate 'm2'" in done.stderr
    done = agentbench(tmp_path, weak, strong, "--require-same", "agent,cli_version")
    assert done.returncode == 0

    done = agentbench(tmp_path, weak, strong, "--require-same", "modle")
    assert done.returncode == 2
    assert done.stderr.startswith("agentbench compare: --require-same modle: unknown field modle")


def test_console_script_refuses_a_misspelt_table_beside_a_valid_gate(tmp_path: Path) -> None:
    """The misspelt table holds the gate that fails: loaded, it would end the run with 1."""
    weak = write(tmp_path / "weak.json", configuration(dict.fromkeys(SIX, "PPFF"), model="m1"))
    strong = write(tmp_path / "strong.json", configuration(SIX, model="m2"))
    failing = '[[gte]]\nname = "no gain"\nmetric = "first_exact"\nmargin = 0.9\n'
    (tmp_path / "gates.toml").write_text(RATE_GATE + failing)
    (tmp_path / "loaded.toml").write_text(RATE_GATE + failing.replace("gte", "gate"))
    assert agentbench(tmp_path, weak, strong, "--gates", "loaded.toml").returncode == 1
    done = agentbench(tmp_path, weak, strong, "--gates", "gates.toml")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "agentbench compare: gates.toml:7: unknown table `gte` (did you mean `gate`?); a gates "
        "file holds [[gate]] tables and [splits] only (docs/ci.md, Gates)\n"
    )


def test_console_script_seed_moves_the_interval(tmp_path: Path) -> None:
    base = write(tmp_path / "b.json", configuration({f"t{i}": "PPFF" for i in range(8)}))
    cand = configuration({f"t{i}": "P" * i + "F" * (7 - i) for i in range(8)})
    cand_path = write(tmp_path / "c.json", cand)
    default = agentbench(tmp_path, base, cand_path, "--json", "0.json")
    seeded = agentbench(tmp_path, base, cand_path, "--seed", "7", "--json", "7.json")
    assert default.returncode == seeded.returncode == 0
    zero, seven = (json.loads((tmp_path / f"{n}.json").read_text()) for n in (0, 7))
    assert (zero["seed"], seven["seed"]) == (0, 7)
    assert zero["suite"]["first_exact"]["interval"] != seven["suite"]["first_exact"]["interval"]
