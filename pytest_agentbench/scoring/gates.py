"""The gates file (TOML): named splits, and the three gate forms it holds, checked key by key.

Forms: the interval and point gates on the paired comparison (scoring/compare.py, `metric`);
count gates (`correctness = "passes" | "unknown"`), which count trials and decide a trial of
unknown outcome both ways, undetermined when the two ways disagree; and metric gates
(`metrics` with a `statistic`), which take each task's median first and never read a missing
value as 0. Every gate is judged on every split and on all tasks; the verdicts and the values
each one read (with the reasons for those it could not) go to the terminal, Markdown and JSON.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.grading.measures import figure_names
from pytest_agentbench.scoring.compare import (
    FAIL,
    GATE_KEYS,
    GATES_FAIL,
    GATES_PASS,
    GATES_UNDETERMINED,
    MEASURE_PREFIX,
    OUTCOMES,
    PASS,
    UNDETERMINED,
    Comparison,
    Gate,
    TaskSide,
    compare,
    evaluate_gate,
    gates_exit_code,
    no_solution_tasks,
    parse_gate,
    sides_of,
)
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.tasks.keys import did_you_mean, key_line, unknown_keys
from pytest_agentbench.tasks.observation import Observation, Outcome

ALL = "all"  # the section of every task, beside the named splits
FILE_KEYS = ("gate", "splits")
CORRECTNESS = ("passes", "unknown")
DIRECTIONS = ("higher", "lower")
STATISTICS = ("mean_of_task_medians", "total", "mean_of_task_median_ratios")
RATIO_STATISTIC = "mean_of_task_median_ratios"
TOKEN_METRICS = ("input_tokens", "output_tokens")
USAGE_METRICS = ("tokens", *TOKEN_METRICS, "cost_usd", "wall_s")
COUNT_KEYS = ("name", "correctness", "direction", "against", "per_task", "tolerance", "outcome")
METRIC_KEYS = ("name", "metrics", "statistic", "direction", "against", "factor")
BOUND_KEYS = ("bound", "margin")
ALL_KEYS = tuple(
    dict.fromkeys((*GATE_KEYS, *COUNT_KEYS, *METRIC_KEYS, "reference_floor", "against"))
)


@dataclass(frozen=True)
class CountGate:
    """Candidate passes (or unknowns) against the comparator's, within `tolerance` trials."""

    name: str
    correctness: str
    direction: str
    tolerance: int = 0
    per_task: bool = False
    outcome: Outcome = "first_exact"
    against: str | None = None


@dataclass(frozen=True)
class MetricGate:
    """A statistic of per-attempt values, candidate against comparator times `factor`."""

    name: str
    metrics: tuple[str, ...]
    statistic: str
    direction: str
    factor: float
    reference_floor: float | None = None
    against: str | None = None


AnyGate = Gate | CountGate | MetricGate


@dataclass
class GatesFile:
    path: Path
    gates: list[AnyGate]
    splits: dict[str, list[str]] = field(default_factory=dict)
    split_lines: dict[str, int | None] = field(default_factory=dict)

    def against(self) -> list[str | None]:
        """Every comparator the gates name (None: the compared base), each once."""
        return list(dict.fromkeys(gate.against for gate in self.gates))

    def check_splits(self, known: set[str]) -> None:
        """A split naming a task neither side has is an error: it would gate nothing."""
        for name, tasks in self.splits.items():
            missing = [task for task in tasks if task not in known]
            if missing:
                near = get_close_matches(missing[0], sorted(known), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ValueError(
                    f"{_at(self.path, self.split_lines.get(name))} split {name!r}: no task "
                    f"{', '.join(map(repr, missing))} on either side{hint}; list task ids the "
                    "compared runs have"
                )


@dataclass
class GateResult:
    gate: str
    section: str
    verdict: str  # pass | fail | undetermined
    detail: str
    against: str
    missing: list[dict[str, str]] = field(default_factory=list)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> shown values

    def line(self) -> str:
        shown = "FAIL" if self.verdict == FAIL else self.verdict
        where = "" if self.section == ALL else f" [{self.section}]"
        return f"{self.gate}{where}: {shown}: {self.detail}"

    def to_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "split": self.section,
            "against": self.against,
            "verdict": self.verdict,
            "detail": self.detail,
            "values": self.values,
            "missing": self.missing,
        }


# ---- loading -------------------------------------------------------------------------------


def _at(path: Path, line: int | None) -> str:
    return f"{path}:{line}:" if line is not None else f"{path}:"


class _Entry:
    """One [[gate]] table with what its error messages need: file, line, gate."""

    def __init__(self, path: Path, text: str, index: int, entry: dict[str, Any]) -> None:
        self.path, self.text, self.index, self.entry = path, text, index, entry
        self.label = f"gate {index} ({entry.get('name', 'unnamed')})"

    def line(self, key: str) -> int | None:
        """The line of the key, or else of the gate's [[gate]] header."""
        line = key_line(self.text, ("gate",), key, self.index - 1) if key in self.entry else None
        return key_line(self.text, (), "gate", self.index - 1) if line is None else line

    def error(self, key: str, problem: str) -> ValueError:
        return ValueError(
            f"{_at(self.path, self.line(key))} {self.label}: field '{key}': {problem}"
        )

    def choice(self, key: str, choices: Sequence[str], default: str | None = None) -> str:
        value = self.entry.get(key, default)
        if value is None:
            raise self.error(key, f'missing; add {key} = "{" | ".join(choices)}"')
        if value not in choices:
            near = did_you_mean(str(value), choices) if isinstance(value, str) else ""
            raise self.error(key, f"{value!r} is not one of {' | '.join(choices)}{near}")
        return str(value)

    def number(self, key: str, check: Callable[[float], bool], rule: str) -> float:
        value = self.entry.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not check(value):
            given = "missing" if key not in self.entry else f"got {value!r}"
            raise self.error(key, f"{given}; give {rule} (for example {key} = ...)")
        return float(value)

    def only(self, keys: Sequence[str], form: str) -> None:
        wrong = [key for key in self.entry if key not in keys]
        if wrong:
            raise self.error(wrong[0], f"does not belong to {form}; it takes {', '.join(keys)}")

    def against(self) -> str | None:
        value = self.entry.get("against")
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise self.error("against", "give an arm's name or a run directory or report path")
        return value


def _count_gate(e: _Entry) -> AnyGate:
    if "bound" in e.entry:
        return _bound_gate(e, "correctness")
    e.only(COUNT_KEYS, "count gates (correctness = ...)")
    correctness = e.choice("correctness", CORRECTNESS)
    tolerance = 0
    if "tolerance" in e.entry:
        whole = e.number("tolerance", lambda v: v >= 0 and v == int(v), "a whole number >= 0")
        tolerance = int(whole)
    per_task = e.entry.get("per_task", False)
    if not isinstance(per_task, bool):
        raise e.error("per_task", f"got {per_task!r}; give true or false")
    outcome = e.choice("outcome", OUTCOMES, "first_exact")
    if "outcome" in e.entry and correctness != "passes":
        raise e.error("outcome", 'belongs to correctness = "passes" only; remove it')
    return CountGate(
        name=str(e.entry.get("name", f"{correctness} count")),
        correctness=correctness,
        direction=e.choice("direction", DIRECTIONS),
        tolerance=tolerance,
        per_task=per_task,
        outcome=outcome,  # type: ignore[arg-type]
        against=e.against(),
    )


def _metrics(e: _Entry) -> tuple[str, ...]:
    value = e.entry.get("metrics")
    known = [*USAGE_METRICS, *(MEASURE_PREFIX + name for name in figure_names())]
    if not isinstance(value, list) or not value or not all(isinstance(m, str) for m in value):
        raise e.error("metrics", 'give a list of metric names, e.g. ["input_tokens", ...]')
    for metric in value:
        if metric not in known:
            near = did_you_mean(metric, known)
            raise e.error(
                "metrics",
                f"no metric {metric!r}{near}; one of {', '.join(USAGE_METRICS)} or "
                "measures.NAME (docs/measures.md)",
            )
    if len(set(value)) < len(value):
        raise e.error("metrics", "a metric is listed twice; list each once")
    return tuple(value)


def _metric_gate(e: _Entry) -> AnyGate:
    if "bound" in e.entry:
        return _bound_gate(e, "metrics")
    statistic = e.choice("statistic", STATISTICS)
    keys = (*METRIC_KEYS, "reference_floor") if statistic == RATIO_STATISTIC else METRIC_KEYS
    if "reference_floor" in e.entry and statistic != RATIO_STATISTIC:
        raise e.error("reference_floor", f"belongs to statistic = {RATIO_STATISTIC!r} only")
    e.only(keys, f"metric gates with statistic = {statistic!r}")
    metrics = _metrics(e)
    if statistic == RATIO_STATISTIC and not all(m.startswith(MEASURE_PREFIX) for m in metrics):
        raise e.error(
            "metrics", "a ratio to the task's reference needs code measures (measures.NAME)"
        )
    floor = None
    if "reference_floor" in e.entry:
        floor = e.number("reference_floor", lambda v: v > 0, "a number > 0")
    return MetricGate(
        name=str(e.entry.get("name", "+".join(metrics))),
        metrics=metrics,
        statistic=statistic,
        direction=e.choice("direction", DIRECTIONS),
        factor=e.number("factor", lambda v: v > 0, "a number > 0"),
        reference_floor=floor,
        against=e.against(),
    )


def _bound_gate(e: _Entry, form: str) -> Gate:
    """The reference's spelling of an interval gate, read as the existing interval gate:
    the pass-rate difference's lower bound, or the token ratio's upper bound."""
    if form == "correctness":
        e.only(("name", "correctness", "direction", "against", "bound", "margin"), "bound gates")
        e.choice("correctness", ("passes",))
        e.choice("bound", ("lower",))
        e.choice("direction", ("higher",))
        metric, key, limit = "first_exact", "margin", e.number("margin", math.isfinite, "a rate")
    else:
        e.only(("name", "metrics", "direction", "against", "bound", "factor"), "bound gates")
        if sorted(e.entry.get("metrics") or []) not in (sorted(TOKEN_METRICS), ["tokens"]):
            raise e.error("metrics", 'a token bound gate takes ["input_tokens", "output_tokens"]')
        e.choice("bound", ("upper",))
        e.choice("direction", ("lower",))
        metric, key = "tokens", "factor"
        limit = e.number("factor", lambda v: v > 0, "a number > 0")
    name = str(e.entry.get("name", metric))
    return Gate(name, metric, str(e.entry["bound"]), limit, key=key, against=e.against())


def _one_gate(path: Path, text: str, index: int, entry: dict[str, Any]) -> AnyGate:
    e = _Entry(path, text, index, entry)
    unknown = unknown_keys(entry, ALL_KEYS, path, within=("gate",), index=index - 1, label=e.label)
    if unknown:  # a misspelt key would load with its default and let the gate pass
        raise ValueError(f"{unknown}; a gate takes {', '.join(ALL_KEYS)} (docs/ci.md, Gates)")
    forms = [key for key in ("metric", "correctness", "metrics") if key in entry]
    if len(forms) > 1:
        raise e.error(forms[1], f"a gate has one of metric, correctness, metrics; not {forms[0]}")
    if forms == ["correctness"]:
        return _count_gate(e)
    if forms == ["metrics"]:
        return _metric_gate(e)
    for key in ("direction", "per_task", "tolerance", "statistic", "reference_floor"):
        if key in entry:
            raise e.error(key, "belongs to count and metric gates (correctness or metrics)")
    try:
        return parse_gate(path, index, entry, against=e.against())
    except ValueError as exc:  # named with the line of its field, or of its [[gate]]
        text = str(exc)
        field = next((k for k in entry if f"'{k}'" in text or f"{k} =" in text), "metric")
        raise ValueError(_at(path, e.line(field)) + text.removeprefix(f"{path}:")) from None


def _splits(path: Path, text: str, value: Any) -> tuple[dict[str, list[str]], dict[str, Any]]:
    if not isinstance(value, dict):
        raise ValueError(f'{path}: splits: give a table, [splits] with NAME = ["task", ...]')
    found, lines = {}, {}
    for name, tasks in value.items():
        line = key_line(text, ("splits",), name)
        if name == ALL:
            raise ValueError(f"{_at(path, line)} split 'all' is every task already; rename it")
        if not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) for t in tasks):
            raise ValueError(
                f"{_at(path, line)} split {name!r}: give a non-empty list of task ids, "
                f'{name} = ["task-a", "task-b"]'
            )
        found[name], lines[name] = list(dict.fromkeys(tasks)), line
    return found, lines


def load_gates_file(path: Path) -> GatesFile:
    """The gates file; any unknown table, key or value is a ValueError naming the file, its
    line where the text gives it, the gate, the field and the fix."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise ValueError(
            f"--gates {path}: cannot read it ({exc.strerror}); give a TOML file of [[gate]] "
            "tables (docs/ci.md, Gates)"
        ) from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; gates are a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from None
    unknown = unknown_keys(data, FILE_KEYS, path)
    if unknown:  # a misspelt table beside a valid [[gate]] would be left out unseen
        raise ValueError(
            f"{unknown}; a gates file holds [[gate]] tables and [splits] only (docs/ci.md, Gates)"
        )
    entries = data.get("gate")
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise ValueError(f"{path}: no [[gate]] tables; add at least one gate")
    splits, lines = _splits(path, text, data["splits"]) if "splits" in data else ({}, {})
    gates = [_one_gate(path, text, index, entry) for index, entry in enumerate(entries, 1)]
    return GatesFile(path, gates, splits, lines)


def load_gates(path: Path) -> list[AnyGate]:
    """The gates of a gates file (load_gates_file)."""
    return load_gates_file(path).gates


# ---- splits ----------------------------------------------------------------------------------


def restricted(config: Configuration, tasks: set[str]) -> Configuration:
    """The configuration with only these tasks' declarations and trials."""
    return replace(
        config,
        declared={t: m for t, m in config.declared.items() if t in tasks},
        observations=[o for o in config.observations if o["task"] in tasks],
    )


def task_ids(*configs: Configuration) -> set[str]:
    return {t for c in configs for t in c.declared} | {
        o["task"] for c in configs for o in c.observations
    }


# ---- count gates ------------------------------------------------------------------------------


def _meets(direction: str, candidate: int, comparator: int, tolerance: int) -> bool:
    if direction == "higher":
        return candidate >= comparator - tolerance
    return candidate <= comparator + tolerance


@dataclass(frozen=True)
class Counts:
    """One side of one task for a count gate: known passes, unknown outcomes, attempts."""

    passes: int
    unknown: int

    def value(self, correctness: str, unknown_pass: bool) -> int:
        if correctness == "unknown":
            return self.unknown
        return self.passes + (self.unknown if unknown_pass else 0)


def count_decision(
    gate: CountGate, tasks: dict[str, tuple[Counts, Counts]]
) -> dict[tuple[bool, bool], bool]:
    """The gate's outcome for every reading of the unknown outcomes: key (candidate's unknowns
    are passes, comparator's unknowns are passes)."""
    found = {}
    for cand_pass in (True, False):
        for comp_pass in (True, False):
            rows = [
                (c.value(gate.correctness, cand_pass), a.value(gate.correctness, comp_pass))
                for c, a in tasks.values()
            ]
            if gate.per_task:
                ok = all(_meets(gate.direction, c, a, gate.tolerance) for c, a in rows)
            else:
                total_c, total_a = sum(r[0] for r in rows), sum(r[1] for r in rows)
                ok = _meets(gate.direction, total_c, total_a, gate.tolerance)
            found[(cand_pass, comp_pass)] = ok
    return found


def _counts(side: TaskSide, outcome: Outcome) -> Counts:
    return Counts(side.passes(outcome), side.unknown)


def _task_sides(
    comparator: Configuration, candidate: Configuration
) -> tuple[set[str], dict[str, TaskSide], dict[str, TaskSide]]:
    """The tasks either side has no solution for (left out, as everywhere in compare) and each
    side's per-task figures over the rest."""
    left_out = no_solution_tasks(comparator) | no_solution_tasks(candidate)
    return left_out, sides_of(comparator, left_out), sides_of(candidate, left_out)


def evaluate_count_gate(
    gate: CountGate, comparator: Configuration, candidate: Configuration, tasks: set[str]
) -> GateResult:
    """A count gate over TASKS (no-solution tasks left out, as everywhere in compare)."""
    left_out, comp_sides, cand_sides = _task_sides(comparator, candidate)
    result = GateResult(gate.name, "", PASS, "", comparator.name or comparator.label())
    rows: dict[str, tuple[Counts, Counts]] = {}
    problems = []
    for task in sorted(tasks - left_out):
        c, a = cand_sides.get(task, TaskSide()), comp_sides.get(task, TaskSide())
        n_c, n_a = c.n + c.unknown, a.n + a.unknown
        result.values[task] = {
            "attempts": [n_c, n_a],
            "passes": [c.passes(gate.outcome), a.passes(gate.outcome)],
            "unknown": [c.unknown, a.unknown],
        }
        if n_c == 0 or n_a == 0:
            side = "candidate" if n_c == 0 else "comparator"
            problems.append(f"{task} (no attempts in the {side})")
            result.missing.append({"task": task, "side": side, "reason": "no attempts"})
        elif n_c != n_a:
            problems.append(f"{task} ({n_c} vs {n_a} attempts)")
        else:
            rows[task] = (_counts(c, gate.outcome), _counts(a, gate.outcome))
        for side, s in (("candidate", c), ("comparator", a)):
            if s.unknown:
                reason = f"{s.unknown} of {s.n + s.unknown} attempts not scored (unknown outcome)"
                result.missing.append({"task": task, "side": side, "reason": reason})
    what = f"{gate.outcome} passes" if gate.correctness == "passes" else "unknown outcomes"
    scope = "per task" if gate.per_task else f"over {plural(len(rows), 'task')}"
    rule = ">= comparator -" if gate.direction == "higher" else "<= comparator +"
    if problems:
        result.verdict = UNDETERMINED
        result.detail = (
            f"{what}: attempts differ or are missing on {', '.join(problems)}; give both sides "
            "the same repeats, or a split without those tasks"
        )
        return result
    if not rows:
        result.verdict, result.detail = UNDETERMINED, "no task to count"
        return result
    decisions = count_decision(gate, rows)
    cand_c = sum(c.value(gate.correctness, False) for c, _ in rows.values())
    comp_c = sum(a.value(gate.correctness, False) for _, a in rows.values())
    unknown_c = sum(c.unknown for c, _ in rows.values())
    unknown_a = sum(a.unknown for _, a in rows.values())
    text = (
        f"{what} {scope}: candidate {cand_c}, comparator {comp_c}; rule candidate {rule} "
        f"tolerance {gate.tolerance}"
    )
    if gate.correctness == "passes" and (unknown_c or unknown_a):
        readings = ", ".join(
            f"{'pass' if c else 'fail'}/{'pass' if a else 'fail'} {'pass' if ok else 'FAIL'}"
            for (c, a), ok in decisions.items()
        )
        text += (
            f"; unknown outcomes: candidate {unknown_c}, comparator {unknown_a}, read as "
            f"candidate/comparator {readings}"
        )
    if len(set(decisions.values())) > 1:
        result.verdict, result.detail = UNDETERMINED, text
    else:
        result.verdict = PASS if decisions[(True, True)] else FAIL
        result.detail = text
    return result


# ---- metric gates ----------------------------------------------------------------------------


def metric_value(observation: Observation, metric: str) -> float | None:
    """One attempt's value of one metric; None when it was not measured."""
    value: Any
    if metric.startswith(MEASURE_PREFIX):
        value = (observation.get("measures") or {}).get(metric.removeprefix(MEASURE_PREFIX))
    elif metric in ("tokens", *TOKEN_METRICS):
        tokens: dict[str, Any] = dict(observation.get("tokens") or {})
        given, produced = tokens.get("input"), tokens.get("output")
        if metric == "tokens":
            value = None if given is None or produced is None else given + produced
        else:
            value = given if metric == "input_tokens" else produced
    else:
        value = observation["cost_usd"] if metric == "cost_usd" else observation["wall_s"]
    return None if value is None or not math.isfinite(value) else float(value)


def _attempt_value(observation: Observation, metrics: tuple[str, ...]) -> float | None:
    values = [metric_value(observation, m) for m in metrics]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def reference_value(observations: list[Observation], metrics: tuple[str, ...]) -> float | None:
    """The task's reference change's value of the metrics (the sum), as its trials recorded
    it; None when no trial recorded one."""
    for observation in observations:
        recorded = observation.get("measure_reference") or {}
        values = [recorded.get(m.removeprefix(MEASURE_PREFIX)) for m in metrics]
        if values and all(isinstance(v, int | float) for v in values):
            return float(sum(v for v in values if v is not None))
    return None


@dataclass
class _Side:
    values: list[float]
    missing: list[str]  # why each attempt without a value has none
    attempts: int


def _side(side: TaskSide, metrics: tuple[str, ...]) -> _Side:
    values = []
    missing = [f"{plural(side.unknown, 'repeat')} not scored, no value"] if side.unknown else []
    for trial in side.trials:
        value = _attempt_value(trial, metrics)
        if value is None:
            missing.append(f"repeat {trial['repeat']} has no {' + '.join(metrics)}")
        else:
            values.append(value)
    return _Side(values, missing, side.n + side.unknown)


def evaluate_metric_gate(
    gate: MetricGate, comparator: Configuration, candidate: Configuration, tasks: set[str]
) -> GateResult:
    """A metric gate over TASKS: each side's statistic, candidate against comparator x factor."""
    left_out, comp_sides, cand_sides = _task_sides(comparator, candidate)
    result = GateResult(gate.name, "", PASS, "", comparator.name or comparator.label())
    ratio = gate.statistic == RATIO_STATISTIC
    blocking, uneven, counted = [], [], []
    per_side: dict[str, list[float]] = {"candidate": [], "comparator": []}
    for task in sorted(tasks - left_out):
        c = _side(cand_sides.get(task, TaskSide()), gate.metrics)
        a = _side(comp_sides.get(task, TaskSide()), gate.metrics)
        row: dict[str, Any] = {
            "candidate": statistics.median(c.values) if c.values else None,
            "comparator": statistics.median(a.values) if a.values else None,
            "attempts": [c.attempts, a.attempts],
        }
        result.values[task] = row
        if ratio:
            trials = [*cand_sides.get(task, TaskSide()).trials]
            trials += comp_sides.get(task, TaskSide()).trials
            reference = reference_value(trials, gate.metrics)
            row["reference"] = reference
            why = _unusable_reference(reference, gate.reference_floor)
            if why is not None:
                result.missing.append({"task": task, "side": "reference", "reason": why})
                continue
        for name, s in (("candidate", c), ("comparator", a)):
            for reason in s.missing or (["no attempts"] if not s.attempts else []):
                result.missing.append({"task": task, "side": name, "reason": reason})
        if not c.attempts or not a.attempts:
            side = "candidate" if not c.attempts else "comparator"
            blocking.append(f"{task} (no attempts in the {side})")
            continue
        if c.missing or a.missing:
            blocking.append(
                f"{task} ({len(c.values)} of {c.attempts} candidate and {len(a.values)} of "
                f"{a.attempts} comparator attempts measured)"
            )
            continue
        if c.attempts != a.attempts:
            uneven.append(task)
        counted.append(task)
        if gate.statistic == "total":
            per_side["candidate"] += c.values
            per_side["comparator"] += a.values
        else:
            scale = row["reference"] if ratio else 1.0
            per_side["candidate"].append(row["candidate"] / scale)
            per_side["comparator"].append(row["comparator"] / scale)
            if ratio:
                row["ratios"] = [row["candidate"] / scale, row["comparator"] / scale]
    return _metric_verdict(gate, result, blocking, uneven, counted, per_side)


def _unusable_reference(reference: float | None, floor: float | None) -> str | None:
    if reference is None:
        return "no reference value recorded for the task (no reference change measured)"
    if reference <= 0:
        return f"reference {reference:g} is not > 0: a ratio to it says nothing"
    if floor is not None and reference < floor:
        return f"reference {reference:g} is below reference_floor {floor:g}"
    return None


def _metric_verdict(
    gate: MetricGate,
    result: GateResult,
    blocking: list[str],
    uneven: list[str],
    counted: list[str],
    per_side: dict[str, list[float]],
) -> GateResult:
    metrics = " + ".join(gate.metrics)
    if blocking:
        result.verdict = UNDETERMINED
        result.detail = (
            f"{metrics}: a counted task lacks values ({', '.join(blocking)}); see Missing "
            "values, or define a split without those tasks"
        )
        return result
    if not counted:
        result.verdict = UNDETERMINED
        result.detail = f"{metrics}: no task to compare" + (
            " with a usable reference" if gate.statistic == RATIO_STATISTIC else ""
        )
        return result
    combine = sum if gate.statistic == "total" else statistics.fmean
    cand, comp = combine(per_side["candidate"]), combine(per_side["comparator"])
    limit = gate.factor * comp
    ok = cand <= limit if gate.direction == "lower" else cand >= limit
    sign = ("<=" if ok else ">") if gate.direction == "lower" else (">=" if ok else "<")
    result.verdict = PASS if ok else FAIL
    result.detail = (
        f"{gate.statistic} of {metrics}: candidate {cand:.4g} {sign} {gate.factor:g} x "
        f"comparator {comp:.4g} = {limit:.4g} over {plural(len(counted), 'task')}"
    )
    left = sum(1 for m in result.missing if m["side"] == "reference")
    if left:
        result.detail += f" ({left} left out without a usable reference)"
    if uneven:
        result.detail += f"; measured repeat counts differ on {', '.join(uneven)}"
    return result


# ---- all gates -------------------------------------------------------------------------------


def evaluate(
    gate: AnyGate,
    section: str,
    comparator: Configuration,
    candidate: Configuration,
    tasks: set[str],
    comparison: Callable[[], Comparison],
) -> GateResult:
    """One gate on one section (a split, or all tasks); comparison gives the paired
    comparison of the section's tasks, which the interval and point gates judge."""
    if isinstance(gate, CountGate):
        result = evaluate_count_gate(gate, comparator, candidate, tasks)
    elif isinstance(gate, MetricGate):
        result = evaluate_metric_gate(gate, comparator, candidate, tasks)
    else:
        verdict, text = evaluate_gate(gate, comparison())
        detail = text.removeprefix(f"{gate.name}: ").split(": ", 1)[-1]
        shown = comparator.name or comparator.label()
        result = GateResult(gate.name, "", verdict, detail, shown)
    result.section = section
    result.against = gate.against or result.against
    return result


GATES_EXIT_TEXT = {
    GATES_PASS: "all pass",
    GATES_FAIL: "a gate failed",
    GATES_UNDETERMINED: "undetermined",
}


def judge(
    gates: GatesFile,
    candidate: Configuration,
    comparators: dict[str | None, Configuration],
    comparison: Comparison,
) -> dict[str, Any]:
    """Every gate on all tasks and on each split: the gates block of compare's JSON, with its
    exit code. comparators maps each gate's `against` to its configuration; comparison is the
    base's paired comparison of all tasks, which the base's interval gates judge as before."""
    used = {gate.against for gate in gates.gates}
    known = task_ids(candidate, *(c for name, c in comparators.items() if name in used))
    gates.check_splits(known)
    sections = [(ALL, known), *((name, set(tasks)) for name, tasks in gates.splits.items())]

    def scope(section: str, tasks: set[str], against: str | None) -> set[str]:
        """A split's tasks; on all tasks, those the candidate or this comparator has."""
        return task_ids(candidate, comparators[against]) if section == ALL else tasks

    cached: dict[tuple[str, str | None], Comparison] = {(ALL, None): comparison}

    def paired(section: str, against: str | None, tasks: set[str]) -> Callable[[], Comparison]:
        def make() -> Comparison:
            key = (section, against)
            if key not in cached:
                comparator = comparators[against]
                cached[key] = compare(
                    restricted(comparator, tasks),
                    restricted(candidate, tasks),
                    seed=comparison.seed,
                )
            return cached[key]

        return make

    block: dict[str, Any] = {"sections": []}
    verdicts = []
    for section, tasks in sections:
        results = [
            evaluate(
                gate,
                section,
                comparators[gate.against],
                candidate,
                scope(section, tasks, gate.against),
                paired(section, gate.against, scope(section, tasks, gate.against)),
            )
            for gate in gates.gates
        ]
        verdicts += [r.verdict for r in results]
        block["sections"].append(
            {"split": section, "tasks": sorted(tasks), "results": [r.to_json() for r in results]}
        )
    code = gates_exit_code(verdicts)
    return {"exit": code, "verdict": GATES_EXIT_TEXT[code], **block}
