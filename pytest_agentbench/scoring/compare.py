"""Paired comparison of two configurations over their common tasks, and gates on the result.

Per task: candidate - base pass rates and candidate / base mean usage, however many trials each
side has. Suite: the mean rate difference and the geometric-mean usage ratio, each with a 90%
bootstrap interval over tasks and an exact sign test; for the two outcomes, an exact McNemar test
on paired trials and the pessimistic pass counts of count gates; per code measure figure, the
mean per-task difference of the two sides' medians (scoring/measures.py). Gates (TOML) turn
the result into an exit code for CI. No-solution tasks are scored on integrity, never on
accuracy: they are left out of every pair and count. The paired tasks are also pooled per
task class.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from pytest_agentbench.fs.wording import plural, points, quoted
from pytest_agentbench.grading.measures import figure_names
from pytest_agentbench.run.store import configuration_identity, identity_differences
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.measures import paired_measures
from pytest_agentbench.scoring.stats import (
    COMPARE_SEED,
    MIN_PAIRS,
    geometric_mean,
    geometric_mean_interval,
    mcnemar_exact,
    mean_interval,
    sign_test,
)
from pytest_agentbench.scoring.trajectories import paired_differences
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.observation import Observation, Outcome, trial_tokens

RATE_METRICS = ("first_exact", "final_exact", "quality")
RATIO_METRICS = ("tokens", "cost_usd", "wall_s")
COUNT_METRIC = "passes"
OUTCOMES: tuple[Outcome, ...] = ("first_exact", "final_exact")  # per trial: McNemar, counts
PAIRING_FIELDS = ("oracle_recoveries", "retry_failures", "agent_timeout", "sandbox")
TASKS_FIELD = "tasks"  # the declared task set, beside the identity's fields
BOUNDS = ("lower", "upper", "point")
MEASURE_PREFIX = "measures."  # a gate's metric naming a code measure figure
MEASURE_LIMITS = ("max_increase", "min_increase")  # a measure gate's limit: <= or >=
GATE_KEYS = ("name", "metric", "bound", "margin", "factor", "outcome", *MEASURE_LIMITS)
PASS, FAIL, UNDETERMINED = "pass", "fail", "undetermined"
GATES_PASS, GATES_FAIL, GATES_UNDETERMINED = 0, 1, 3  # exit codes; 2 is bad input (cli.py)


def identity_fields() -> list[str]:
    """The fields --require-same accepts: a configuration identity's fields, and `tasks`."""
    return [*configuration_identity(Settings(agent="-"), {}, {}), TASKS_FIELD]


def _usage(observation: Observation, metric: str) -> float | None:
    if metric == "tokens":
        return trial_tokens(observation)
    value = observation["cost_usd"] if metric == "cost_usd" else observation["wall_s"]
    return None if value is None else float(value)


@dataclass
class TaskSide:
    """One configuration's trials of one task: the scored ones, and the slots (repeats) that
    were recorded without an outcome (provider stop, error, not started)."""

    trials: list[Observation] = field(default_factory=list)
    unknown: int = 0

    @property
    def n(self) -> int:
        return len(self.trials)

    def passes(self, outcome: Outcome) -> int:
        return sum(bool(o[outcome]) for o in self.trials)

    def ordered(self, outcome: Outcome) -> list[bool]:
        """The scored trials' outcomes in repeat order: the order trials are paired in."""
        trials = sorted(self.trials, key=lambda o: (o["repeat"], o.get("trial_id") or ""))
        return [bool(o[outcome]) for o in trials]

    def rate(self, metric: str) -> float:
        if metric == "quality":
            return 0.75 * self.rate("first_exact") + 0.25 * self.rate("final_exact")
        outcome: Outcome = "final_exact" if metric == "final_exact" else "first_exact"
        return self.passes(outcome) / self.n

    def mean_usage(self, metric: str) -> float | None:
        values = [_usage(o, metric) for o in self.trials]
        known = [v for v in values if v is not None]
        if not values or len(known) < len(values):
            return None
        return sum(known) / len(known)


@dataclass
class Comparison:
    base: str
    candidate: str
    seed: int = COMPARE_SEED
    differences: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, str]] = field(default_factory=list)
    suite: dict[str, dict[str, Any]] = field(default_factory=dict)
    passes: dict[str, dict[str, int]] = field(default_factory=dict)
    classes: list[dict[str, Any]] = field(default_factory=list)
    no_solution: list[str] = field(default_factory=list)
    # Paired per-task differences of requests, tool calls and rounds (scoring.trajectories).
    trajectories: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Paired per-task differences of the code measures (None: no trial was measured).
    measures: dict[str, Any] | None = None
    # The paired tasks' two sides (not in the JSON): what per-trial pairings are made of.
    pairs: list[tuple[TaskSide, TaskSide]] = field(default_factory=list, repr=False)

    def excluded_from(self, metric: str) -> list[str]:
        """Tasks left out of METRIC's pairs (all of a task's metrics, or this one)."""
        return [e["task"] for e in self.excluded if e["metrics"] in ("all", metric)]

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "candidate": self.candidate,
            "seed": self.seed,
            "differences": self.differences,
            "suite": self.suite,
            "passes": self.passes,
            "tasks": self.tasks,
            "classes": self.classes,
            "excluded": self.excluded,
            "no_solution": self.no_solution,
            "trajectories": self.trajectories,
            "measures": self.measures,
        }


def _shown(value: Any) -> Any:
    """A field's value for the header and JSON: a dict of options as sorted KEY=VALUE text."""
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in sorted(value.items())) or None
    return value


def differences(base: Configuration, candidate: Configuration) -> dict[str, dict[str, Any]]:
    """Every identity field whose value differs between the two sides, and the declared task
    sets when they differ (the tasks only one side declares)."""
    old, new = base.identity, candidate.identity
    found = {
        name: {"base": _shown(old.get(name)), "candidate": _shown(new.get(name))}
        for name in sorted(set(old) | set(new))
        if old.get(name) != new.get(name)
    }
    only_base = sorted(set(base.declared) - set(candidate.declared))
    only_candidate = sorted(set(candidate.declared) - set(base.declared))
    if only_base or only_candidate:
        found[TASKS_FIELD] = {"only_in_base": only_base, "only_in_candidate": only_candidate}
    return found


def difference_text(name: str, difference: dict[str, Any]) -> str:
    """One differing field as a phrase: 'model: base 'a', candidate 'b''."""
    if name == TASKS_FIELD:
        parts = [
            f"{len(ids)} only in {side} ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})"
            for side, ids in (
                ("base", difference["only_in_base"]),
                ("candidate", difference["only_in_candidate"]),
            )
            if ids
        ]
        return f"tasks: {'; '.join(parts)}"
    return f"{name}: base {quoted(difference['base'])}, candidate {quoted(difference['candidate'])}"


def parse_require_same(text: str) -> list[str]:
    """FIELD,... for --require-same; an unknown field is an error listing the known ones."""
    fields = [name.strip() for name in text.split(",") if name.strip()]
    known = identity_fields()
    unknown = [name for name in fields if name not in known]
    if unknown or not fields:
        raise ValueError(
            f"--require-same {text}: unknown field {', '.join(unknown) or '(none given)'}; "
            f"give a comma-separated list of {', '.join(known)}"
        )
    return fields


def pairing_problems(base: Configuration, candidate: Configuration) -> list[str]:
    """Differences that make the two runs measure different things, one line per field."""
    problems = [
        line
        for line in identity_differences(base.identity, candidate.identity)
        if line.split(":")[0].split(".")[0] in PAIRING_FIELDS
    ]
    base_hashes = {t: m.get("fixture_hash") for t, m in base.declared.items()}
    for task_id, meta in sorted(candidate.declared.items()):
        old, new = base_hashes.get(task_id), meta.get("fixture_hash")
        if old and new and old != new:
            problems.append(f"task {task_id} fixture_hash: base {old[:12]}, candidate {new[:12]}")
    return problems


def no_solution_tasks(config: Configuration) -> set[str]:
    """The tasks scored on integrity, never on accuracy: declared so, or a trial says so."""
    marked = {task_id for task_id, meta in config.declared.items() if meta.get("no_solution")}
    return marked | {o["task"] for o in config.observations if o.get("no_solution")}


def categories(*configs: Configuration) -> dict[str, str]:
    """Task id -> its class (category; "" when none), from the declared tasks or the trials."""
    found: dict[str, str] = {}
    for config in configs:
        for obs in config.observations:
            found.setdefault(obs["task"], obs.get("category") or "")
        for task_id, meta in config.declared.items():
            found[task_id] = meta.get("category") or found.get(task_id, "")
    return found


def class_rows(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The paired tasks' rows pooled per class: trials, the mean rate differences (tasks
    weighted equally) and the geometric mean of the known tokens ratios."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in tasks:
        groups.setdefault(row["category"], []).append(row)
    rows = []
    for category, members in sorted(groups.items()):
        ratios = [r["tokens_ratio"] for r in members if r["tokens_ratio"] is not None]
        rows.append(
            {
                "category": category,
                "tasks": len(members),
                "base_trials": sum(r["base_trials"] for r in members),
                "candidate_trials": sum(r["candidate_trials"] for r in members),
                **{m: _mean([r[m] for r in members]) for m in RATE_METRICS},
                "tokens_ratio": geometric_mean(ratios) if ratios else None,
                "tokens_ratio_tasks": len(ratios),
            }
        )
    return rows


def sides_of(config: Configuration, leave_out: set[str]) -> dict[str, TaskSide]:
    """Each task's scored trials and unknown repeats, but the tasks left out."""
    sides: dict[str, TaskSide] = {
        task_id: TaskSide() for task_id in config.declared if task_id not in leave_out
    }
    unscored: dict[str, set[int]] = {}
    for obs in config.observations:
        if obs["task"] in leave_out:
            continue
        side = sides.setdefault(obs["task"], TaskSide())
        if obs["status"] == "scored":
            side.trials.append(obs)
        else:
            unscored.setdefault(obs["task"], set()).add(obs["repeat"])
    for task_id, repeats in unscored.items():  # a stop that a later record scored is known
        sides[task_id].unknown = len(repeats - {o["repeat"] for o in sides[task_id].trials})
    return sides


def _exclusion(task_id: str, base: TaskSide | None, cand: TaskSide | None) -> str | None:
    if base is None or cand is None:
        return f"not declared in {'base' if base is None else 'candidate'}"
    if base.n == 0 or cand.n == 0:
        which = "base" if base.n == 0 else "candidate"
        return f"unknown correctness: no scored trials in {which}"
    return None


def pass_counts(
    base_sides: dict[str, TaskSide], cand_sides: dict[str, TaskSide], outcome: Outcome
) -> dict[str, int]:
    """Passing trials of each side for a count gate, unknown outcomes counted against the
    candidate: per task, both sides get as many trial slots as the side with more trials; a
    slot without a known outcome (unscored, or not run on that side, or the task not declared
    there) is a pass for the base and a failure for the candidate."""
    counts = {"slots": 0, "base": 0, "candidate": 0, "base_unknown": 0, "candidate_unknown": 0}
    for task_id in sorted(set(base_sides) | set(cand_sides)):
        b, c = base_sides.get(task_id, TaskSide()), cand_sides.get(task_id, TaskSide())
        slots = max(b.n + b.unknown, c.n + c.unknown)
        counts["slots"] += slots
        counts["base"] += b.passes(outcome) + (slots - b.n)
        counts["base_unknown"] += slots - b.n
        counts["candidate"] += c.passes(outcome)
        counts["candidate_unknown"] += slots - c.n
    return counts


def paired_trials(
    pairs: list[tuple[TaskSide, TaskSide]], outcome: Outcome
) -> Iterator[tuple[bool, bool]]:
    """(base, candidate) outcomes of trials paired within each task in repeat order (a side's
    extra trials stay unpaired)."""
    for b, c in pairs:
        yield from zip(b.ordered(outcome), c.ordered(outcome), strict=False)


def discordant_trials(pairs: list[tuple[TaskSide, TaskSide]], outcome: Outcome) -> dict[str, Any]:
    """The paired trials (paired_trials), the discordant pairs counted, and their exact
    McNemar p-value."""
    paired = base_only = candidate_only = 0
    for old, new in paired_trials(pairs, outcome):
        paired += 1
        base_only += old and not new
        candidate_only += new and not old
    return {
        "paired_trials": paired,
        "base_only": base_only,
        "candidate_only": candidate_only,
        "p": mcnemar_exact(base_only, candidate_only) if paired else None,
    }


def compare(
    base: Configuration,
    candidate: Configuration,
    *,
    seed: int = COMPARE_SEED,
    require_same: list[str] | tuple[str, ...] = (),
) -> Comparison:
    """The paired comparison; a ValueError when the runs cannot be paired or differ in a
    field of `require_same`."""
    problems = pairing_problems(base, candidate)
    if problems:
        raise ValueError("the runs cannot be paired; differing fields:\n  " + "\n  ".join(problems))
    result = Comparison(base.name or base.label(), candidate.name or candidate.label(), seed)
    result.differences = differences(base, candidate)
    required = [name for name in require_same if name in result.differences]
    if required:
        shown = "; ".join(difference_text(name, result.differences[name]) for name in required)
        raise ValueError(f"--require-same {','.join(require_same)}: the runs differ: {shown}")
    unsolvable = no_solution_tasks(base) | no_solution_tasks(candidate)
    result.no_solution = sorted(unsolvable)
    classes = categories(base, candidate)
    base_sides, cand_sides = sides_of(base, unsolvable), sides_of(candidate, unsolvable)
    rate_differences: dict[str, list[float]] = {m: [] for m in RATE_METRICS}
    ratios: dict[str, list[float]] = {m: [] for m in RATIO_METRICS}
    pairs: list[tuple[TaskSide, TaskSide]] = []
    for task_id in sorted(set(base_sides) | set(cand_sides)):
        b, c = base_sides.get(task_id), cand_sides.get(task_id)
        reason = _exclusion(task_id, b, c)
        if reason is not None or b is None or c is None:
            result.excluded.append({"task": task_id, "metrics": "all", "reason": str(reason)})
            continue
        pairs.append((b, c))
        row: dict[str, Any] = {
            "id": task_id,
            "category": classes.get(task_id, ""),
            "base_trials": b.n,
            "candidate_trials": c.n,
        }
        for metric in RATE_METRICS:
            row[metric] = c.rate(metric) - b.rate(metric)
            rate_differences[metric].append(row[metric])
        for metric in RATIO_METRICS:
            old, new = b.mean_usage(metric), c.mean_usage(metric)
            if old is None or new is None or old <= 0 or new <= 0:
                why = "missing" if old is None or new is None else "zero"
                result.excluded.append(
                    {"task": task_id, "metrics": metric, "reason": f"{why} {metric}"}
                )
                row[f"{metric}_ratio"] = None
            else:
                row[f"{metric}_ratio"] = new / old
                ratios[metric].append(new / old)
        result.tasks.append(row)
    for metric, values in rate_differences.items():
        result.suite[metric] = _summary(values, mean_interval, _mean, seed, values)
        result.suite[metric]["mcnemar"] = None
    result.pairs = pairs
    for outcome in OUTCOMES:
        result.suite[outcome]["mcnemar"] = discordant_trials(pairs, outcome)
    for metric, values in ratios.items():
        logs = [math.log(v) for v in values]
        result.suite[metric] = _summary(values, geometric_mean_interval, geometric_mean, seed, logs)
        result.suite[metric]["mcnemar"] = None
    result.passes = {o: pass_counts(base_sides, cand_sides, o) for o in OUTCOMES}
    result.classes = class_rows(result.tasks)
    result.measures = paired_measures(
        [(row["id"], b.trials, c.trials) for row, (b, c) in zip(result.tasks, pairs, strict=True)],
        seed,
    )
    paired = {row["id"] for row in result.tasks}
    result.trajectories = paired_differences(
        [o for o in base.observations if o["task"] in paired],
        [o for o in candidate.observations if o["task"] in paired],
    )
    return result


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _summary(
    values: list[float], interval: Any, point: Any, seed: int, signed: list[float]
) -> dict[str, Any]:
    enough = len(values) >= MIN_PAIRS
    return {
        "pairs": len(values),
        "point": point(values),
        "interval": interval(values, seed) if enough else None,
        "note": None if enough else f"too few tasks ({len(values)} < {MIN_PAIRS} pairs)",
        "sign_test_p": sign_test(signed) if values else None,
    }


@dataclass
class Gate:
    name: str
    metric: str
    bound: str
    limit: float  # margin for rates and pass counts, factor for ratios, a measure's increase
    outcome: Outcome = "first_exact"  # what a count gate counts
    key: str = "margin"  # the field the limit came from (margin | factor | MEASURE_LIMITS)
    against: str | None = None  # the comparator: an arm or a run (None: the compared base)


def _limit_key(where: str, metric: str, entry: dict[str, Any]) -> str:
    """The one field that holds the gate's limit: `factor` for a ratio, `max_increase` or
    `min_increase` for a measure, `margin` for the others; the others' fields are errors."""
    if metric.startswith(MEASURE_PREFIX):
        given = [key for key in MEASURE_LIMITS if key in entry]
        wrong = [key for key in ("margin", "factor") if key in entry]
        if wrong or len(given) != 1:
            raise ValueError(
                f"{where}: metric {metric} takes one of 'max_increase' (the candidate's mean "
                f"increase must be <= it) or 'min_increase' (>= it)"
                + (f", not '{wrong[0]}'" if wrong else "")
            )
        return given[0]
    measure_key = next((key for key in MEASURE_LIMITS if key in entry), None)
    if measure_key is not None:
        raise ValueError(f"{where}: field '{measure_key}' belongs to measure gates (measures.NAME)")
    key, other = ("factor", "margin") if metric in RATIO_METRICS else ("margin", "factor")
    if other in entry:
        raise ValueError(f"{where}: metric {metric} takes '{key}', not '{other}'")
    return key


def _metric(where: str, metric: Any) -> str:
    """The gate's metric, checked: a known metric, or measures.NAME of a known figure."""
    metrics = (*RATE_METRICS, *RATIO_METRICS, COUNT_METRIC)
    if isinstance(metric, str) and metric.startswith(MEASURE_PREFIX):
        known = figure_names()
        name = metric.removeprefix(MEASURE_PREFIX)
        if name not in known:
            near = get_close_matches(name, known, n=1)
            hint = f" (did you mean {MEASURE_PREFIX}{near[0]}?)" if near else ""
            raise ValueError(
                f"{where}: field 'metric': no code measure figure {name!r}{hint}; "
                f"measures.NAME takes one of {', '.join(known)} (docs/measures.md)"
            )
        return metric
    if metric not in metrics:
        raise ValueError(
            f"{where}: field 'metric' must be one of {' | '.join(metrics)} or measures.NAME "
            f"(a code measure figure), got {metric!r}"
        )
    return str(metric)


def parse_gate(
    path: Path, index: int, entry: dict[str, Any], *, against: str | None = None
) -> Gate:
    """A `metric = ...` gate of a gates file (scoring/gates.py checked its keys)."""
    where = f"{path}: gate {index} ({entry.get('name', 'unnamed')})"
    metric = _metric(where, entry.get("metric"))
    bound = entry.get("bound", "point")
    if bound not in BOUNDS:
        raise ValueError(f"{where}: field 'bound' must be lower | upper | point, got {bound!r}")
    if metric == COUNT_METRIC and bound != "point":
        raise ValueError(
            f'{where}: a count gate (metric passes) has no interval; use bound = "point"'
        )
    outcome = entry.get("outcome", "first_exact")
    if "outcome" in entry and metric != COUNT_METRIC:
        raise ValueError(f"{where}: field 'outcome' belongs to count gates (metric passes) only")
    if outcome not in OUTCOMES:
        raise ValueError(
            f"{where}: field 'outcome' must be first_exact | final_exact, got {outcome!r}"
        )
    key = _limit_key(where, metric, entry)
    limit = entry.get(key)
    if isinstance(limit, bool) or not isinstance(limit, int | float):
        raise ValueError(f"{where}: field '{key}' must be a number (for example {key} = ...)")
    if metric == COUNT_METRIC and not isinstance(limit, int):
        raise ValueError(
            f"{where}: a count gate's 'margin' is a whole number of trials, got {limit}"
        )
    if key == "factor" and limit <= 0:
        raise ValueError(f"{where}: field 'factor' must be > 0, got {limit}")
    name = str(entry.get("name", metric))
    return Gate(name, metric, bound, float(limit), outcome, key, against)


def _count_gate(gate: Gate, comparison: Comparison) -> tuple[str, str]:
    counts = comparison.passes[gate.outcome]
    value = counts["candidate"] - counts["base"]
    ok = value >= gate.limit
    text = (
        f"{gate.outcome} passes {counts['candidate']} - {counts['base']} = {value:+d} "
        f"{'>=' if ok else '<'} margin {gate.limit:+.0f} ({counts['slots']} trial slots; "
        f"unknown outcomes: {counts['base_unknown']} counted as base passes, "
        f"{counts['candidate_unknown']} as candidate failures)"
    )
    return (PASS if ok else FAIL), f"{gate.name}: {'pass' if ok else 'FAIL'}: {text}"


def evaluate_gate(gate: Gate, comparison: Comparison) -> tuple[str, str]:
    """(pass | fail | undetermined, the sentence that says why).

    A rate or ratio gate is undetermined when its figure is unknown, and when any task was
    excluded from its metric's pairs: a figure over part of the suite does not speak for the
    suite. The sentence then also says what the pairs that remain give.
    """
    if gate.metric == COUNT_METRIC:
        return _count_gate(gate, comparison)
    if gate.metric.startswith(MEASURE_PREFIX):
        return _measure_gate(gate, comparison)
    summary = comparison.suite[gate.metric]
    value = _bound_value(gate, summary)
    if gate.bound == "point":
        missing = f"no usable task pairs for {gate.metric}"
    else:
        missing = summary["note"] or f"no interval for {gate.metric}"
    if value is None:
        return UNDETERMINED, f"{gate.name}: undetermined: {missing}"
    if gate.metric in RATE_METRICS:
        ok = value >= gate.limit
        text = (
            f"{gate.bound} {points(value, 2)} {'>=' if ok else '<'} margin {points(gate.limit, 2)}"
        )
    else:
        ok = value <= gate.limit
        text = f"{gate.bound} {value:.4f} {'<=' if ok else '>'} factor {gate.limit:.4f}"
    excluded = comparison.excluded_from(gate.metric)
    if excluded:
        shown = ", ".join(excluded[:5]) + (", ..." if len(excluded) > 5 else "")
        return UNDETERMINED, (
            f"{gate.name}: undetermined: {plural(len(excluded), 'task')} excluded from "
            f"{gate.metric} ({shown}); the {summary['pairs']} pairs give {text}"
        )
    return (PASS if ok else FAIL), f"{gate.name}: {'pass' if ok else 'FAIL'}: {text}"


def _bound_value(gate: Gate, summary: dict[str, Any]) -> float | None:
    """The figure a gate judges: the point, or the interval end its bound names."""
    if gate.bound == "point":
        return summary["point"]
    interval = summary["interval"]
    return None if interval is None else interval[0 if gate.bound == "lower" else 1]


def _measure_gate(gate: Gate, comparison: Comparison) -> tuple[str, str]:
    """A gate on a measure's mean per-task increase, candidate - base. Undetermined when no
    trial has the figure, the figure is unknown, or a paired task is left out of it (one side
    does not know it) or out of the comparison: a figure over part of the suite does not
    speak for the suite, and a change too big to measure must not slip past a size gate."""
    name = gate.metric.removeprefix(MEASURE_PREFIX)
    figure = (comparison.measures or {}).get("figures", {}).get(name)
    if figure is None:
        return UNDETERMINED, f"{gate.name}: undetermined: no trial on either side has {name}"
    value = _bound_value(gate, figure)
    if value is None:
        missing = "no task pairs" if not figure["tasks"] else figure["note"]
        return UNDETERMINED, f"{gate.name}: undetermined: {name}: {missing}"
    ok = value <= gate.limit if gate.key == "max_increase" else value >= gate.limit
    sign = ("<=" if ok else ">") if gate.key == "max_increase" else (">=" if ok else "<")
    text = f"{name} {gate.bound} {value:+.4g} {sign} {gate.key} {gate.limit:+g}"
    left_out = comparison.excluded_from(gate.metric) + figure["left_out"]
    if left_out:
        shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        return UNDETERMINED, (
            f"{gate.name}: undetermined: {plural(len(left_out), 'task')} without {name} on a "
            f"side or excluded ({shown}); the {figure['tasks']} pairs give {text}"
        )
    return (
        PASS if ok else FAIL
    ), f"{gate.name}: {'pass' if ok else 'FAIL'}: {text} over {plural(figure['tasks'], 'task')}"


def gates_exit_code(verdicts: list[str]) -> int:
    """0 every gate passes, 1 a gate fails, 3 no gate fails but one is undetermined."""
    if FAIL in verdicts:
        return GATES_FAIL
    return GATES_UNDETERMINED if UNDETERMINED in verdicts else GATES_PASS
