"""The terminal table: one row per task, then the totals."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.report.table import format_table

MAX_ROWS = 400


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def _stat(stat: dict[str, Any], digits: int) -> str:
    if not stat["known"]:
        return f"unknown ({stat['missing']} trials unreported)"
    text = f"median {stat['median']:.{digits}f}, mean {stat['mean']:.{digits}f}"
    if stat["missing"]:
        text += f" ({stat['known']} known, {stat['missing']} unreported)"
    else:
        text += f" ({stat['known']} trials)"
    return text


def render(report: dict[str, Any]) -> list[str]:
    """Lines for pytest's terminal summary."""
    rows = []
    for task in report["tasks"][:MAX_ROWS]:
        rows.append(
            [
                task["id"],
                task["outcomes"] or "(none)",
                _pct(task["first_exact"]),
                _pct(task["final_exact"]),
                _num(task["flip_rate"]),
            ]
        )
    lines = format_table(["task", "outcomes", "first", "final", "flip"], rows, right={2, 3, 4})
    hidden = len(report["tasks"]) - MAX_ROWS
    if hidden > 0:
        lines.append(f"... {hidden} more tasks (see --agentbench-json)")
    s = report["summary"]
    run = report["run"]
    lines += [
        "",
        f"agent {run['agent']}  model {run['model'] or 'default'}  repeats {run['repeats']}  "
        f"sandbox {run['sandbox']}",
        f"tasks {s['tasks_observed']}/{s['tasks_declared']} observed  trials {s['trials']} scored"
        + (f"  provider stops {s['provider_stops']}" if s["provider_stops"] else "")
        + (f"  errors {s['errors']}" if s["errors"] else ""),
        f"first exact {_pct(s['first_exact'])}  final exact {_pct(s['final_exact'])}  "
        f"EOF-normalized {_pct(s['eof_normalized'])}",
        f"quality {_num(s['quality'], 3)}  coverage {_pct(s['coverage'])}  "
        f"score {_num(s['score'], 3)}",
        f"flip rate {_num(s['flip_rate'], 3)} ({s['flip_rate_tasks']} tasks)  "
        f"flaky tasks {_pct(s['flaky_tasks'])}  pass@{s['k']} {_pct(s['pass_at_k'])}  "
        f"pass^{s['k']} {_pct(s['pass_hat_k'])}",
        "first exact 95% CI: Wilson "
        + _interval(s["first_exact_ci"])
        + ", task bootstrap "
        + _interval(s["task_bootstrap_ci"]),
        f"tokens: {_stat(s['tokens'], 0)}",
        f"cost USD: {_stat(s['cost_usd'], 4)}",
        f"wall s: {_stat(s['wall_s'], 2)}",
    ]
    return lines


def _interval(pair: list[float] | None) -> str:
    return "unknown" if pair is None else f"[{100 * pair[0]:.1f}%, {100 * pair[1]:.1f}%]"
