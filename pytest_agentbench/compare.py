"""Paired comparison of two configurations over their common tasks, and gates on the result.

Per task: candidate - base pass rates and candidate / base mean usage. Suite: the mean rate
difference and the geometric-mean usage ratio, each with a 90% bootstrap interval over tasks
and an exact sign test. Gates (TOML) turn the result into an exit code for CI.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.configurations import Configuration
from pytest_agentbench.metrics import trial_tokens
from pytest_agentbench.observation import Observation, Outcome
from pytest_agentbench.stats import (
    MIN_PAIRS,
    geometric_mean,
    geometric_mean_interval,
    mean_interval,
    sign_test,
)
from pytest_agentbench.store import identity_differences

RATE_METRICS = ("first_exact", "final_exact", "quality")
RATIO_METRICS = ("tokens", "cost_usd", "wall_s")
PAIRING_FIELDS = ("oracle_recoveries", "retry_failures", "agent_timeout", "sandbox")
BOUNDS = ("lower", "upper", "point")
PASS, FAIL, UNDETERMINED = "pass", "fail", "undetermined"


def _usage(observation: Observation, metric: str) -> float | None:
    if metric == "tokens":
        return trial_tokens(observation)
    value = observation["cost_usd"] if metric == "cost_usd" else observation["wall_s"]
    return None if value is None else float(value)


@dataclass
class TaskSide:
    """One configuration's scored trials of one task."""

    trials: list[Observation]

    @property
    def n(self) -> int:
        return len(self.trials)

    def rate(self, metric: str) -> float:
        if metric == "quality":
            return 0.75 * self.rate("first_exact") + 0.25 * self.rate("final_exact")
        outcome: Outcome = "final_exact" if metric == "final_exact" else "first_exact"
        return sum(bool(o[outcome]) for o in self.trials) / self.n

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
    tasks: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, str]] = field(default_factory=list)
    suite: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "candidate": self.candidate,
            "suite": self.suite,
            "tasks": self.tasks,
            "excluded": self.excluded,
        }


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


def _sides(config: Configuration) -> dict[str, TaskSide]:
    sides: dict[str, TaskSide] = {task_id: TaskSide([]) for task_id in config.declared}
    for obs in config.observations:
        side = sides.setdefault(obs["task"], TaskSide([]))
        if obs["status"] == "scored":
            side.trials.append(obs)
    return sides


def _exclusion(task_id: str, base: TaskSide | None, cand: TaskSide | None) -> str | None:
    if base is None or cand is None:
        return f"not declared in {'base' if base is None else 'candidate'}"
    if base.n == 0 or cand.n == 0:
        which = "base" if base.n == 0 else "candidate"
        return f"unknown correctness: no scored trials in {which}"
    if base.n != cand.n:
        return f"unequal repeat counts: base {base.n}, candidate {cand.n}"
    return None


def compare(
    base: Configuration, candidate: Configuration, *, seed: int | None = None
) -> Comparison:
    problems = pairing_problems(base, candidate)
    if problems:
        raise ValueError("the runs cannot be paired; differing fields:\n  " + "\n  ".join(problems))
    result = Comparison(base.name or base.label(), candidate.name or candidate.label())
    base_sides, cand_sides = _sides(base), _sides(candidate)
    differences: dict[str, list[float]] = {m: [] for m in RATE_METRICS}
    ratios: dict[str, list[float]] = {m: [] for m in RATIO_METRICS}
    for task_id in sorted(set(base_sides) | set(cand_sides)):
        b, c = base_sides.get(task_id), cand_sides.get(task_id)
        reason = _exclusion(task_id, b, c)
        if reason is not None or b is None or c is None:
            result.excluded.append({"task": task_id, "metrics": "all", "reason": str(reason)})
            continue
        row: dict[str, Any] = {"id": task_id, "repeats": b.n}
        for metric in RATE_METRICS:
            row[metric] = c.rate(metric) - b.rate(metric)
            differences[metric].append(row[metric])
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
    for metric, values in differences.items():
        result.suite[metric] = _summary(values, mean_interval, _mean, seed, values)
    for metric, values in ratios.items():
        logs = [math.log(v) for v in values]
        result.suite[metric] = _summary(values, geometric_mean_interval, geometric_mean, seed, logs)
    return result


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _summary(
    values: list[float], interval: Any, point: Any, seed: int | None, signed: list[float]
) -> dict[str, Any]:
    enough = len(values) >= MIN_PAIRS
    kwargs = {} if seed is None else {"seed": seed}
    return {
        "pairs": len(values),
        "point": point(values),
        "interval": interval(values, **kwargs) if enough else None,
        "note": None if enough else f"too few tasks ({len(values)} < {MIN_PAIRS} pairs)",
        "sign_test_p": sign_test(signed) if values else None,
    }


@dataclass
class Gate:
    name: str
    metric: str
    bound: str
    limit: float  # margin for rates, factor for ratios


def load_gates(path: Path) -> list[Gate]:
    """Gates from TOML; a bad gate is an error naming the file, the gate and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(
            f"--gates {path}: cannot read it ({exc.strerror}); give a TOML file of [[gate]] "
            "tables (docs/ci.md, Gates)"
        ) from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; gates are a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML: {exc}") from None
    entries = data.get("gate")
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) for e in entries)
    ):
        raise ValueError(f"{path}: no [[gate]] tables; add at least one gate")
    gates = []
    for index, entry in enumerate(entries, start=1):
        where = f"{path}: gate {index} ({entry.get('name', 'unnamed')})"
        metric = entry.get("metric")
        if metric not in RATE_METRICS + RATIO_METRICS:
            choices = " | ".join(RATE_METRICS + RATIO_METRICS)
            raise ValueError(f"{where}: field 'metric' must be one of {choices}, got {metric!r}")
        bound = entry.get("bound", "point")
        if bound not in BOUNDS:
            raise ValueError(f"{where}: field 'bound' must be lower | upper | point, got {bound!r}")
        key, other = ("margin", "factor") if metric in RATE_METRICS else ("factor", "margin")
        if other in entry:
            raise ValueError(f"{where}: metric {metric} takes '{key}', not '{other}'")
        limit = entry.get(key)
        if isinstance(limit, bool) or not isinstance(limit, int | float):
            raise ValueError(f"{where}: field '{key}' must be a number (for example {key} = ...)")
        if key == "factor" and limit <= 0:
            raise ValueError(f"{where}: field 'factor' must be > 0, got {limit}")
        gates.append(Gate(str(entry.get("name", metric)), metric, bound, float(limit)))
    return gates


def evaluate_gate(gate: Gate, comparison: Comparison) -> tuple[str, str]:
    """(pass | fail | undetermined, the sentence that says why)."""
    summary = comparison.suite[gate.metric]
    if gate.bound == "point":
        value = summary["point"]
        missing = f"no usable task pairs for {gate.metric}"
    else:
        interval = summary["interval"]
        value = None if interval is None else interval[0 if gate.bound == "lower" else 1]
        missing = summary["note"] or f"no interval for {gate.metric}"
    if value is None:
        return UNDETERMINED, f"{gate.name}: undetermined: {missing}"
    if gate.metric in RATE_METRICS:
        ok = value >= gate.limit
        text = f"{gate.bound} {value:+.4f} {'>=' if ok else '<'} margin {gate.limit:+.4f}"
    else:
        ok = value <= gate.limit
        text = f"{gate.bound} {value:.4f} {'<=' if ok else '>'} factor {gate.limit:.4f}"
    return (PASS if ok else FAIL), f"{gate.name}: {'pass' if ok else 'FAIL'}: {text}"


def gates_exit_code(verdicts: list[str]) -> int:
    """0 all pass, 1 any failure, 2 otherwise undetermined."""
    if FAIL in verdicts:
        return 1
    return 2 if UNDETERMINED in verdicts else 0
