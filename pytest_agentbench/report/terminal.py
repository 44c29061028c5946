"""The terminal summary: the per-task table, then the run's figures, within a line budget.

A benchmark run's summary is the last thing pytest prints, so it has to fit one screen. Every
block of it is a Section: head lines always shown, then rows cut to the budget that is left,
with one line saying how many were left out and where to find them. Later blocks (arms,
integrity, metering) are Sections too, and share the same budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.report.breakdowns import class_rows, integrity_rows
from pytest_agentbench.report.evidence import evidence_lines
from pytest_agentbench.report.table import format_table
from pytest_agentbench.report.trajectories import checks_line, trajectory_lines
from pytest_agentbench.scoring.document import simulated_figures

SCREEN_LINES = 50
"""The block printed at the end of a run, with pytest's closing line, fits in this many."""

SIMULATED_LABEL = " (simulated)"
SIMULATED_NAMES = {"tokens": "tokens", "cost_usd": "cost", "wall_s": "wall time"}


@dataclass
class Section:
    """One block of the summary: `head` in full, then as many `rows` as the budget allows.

    `ranked` orders the rows' indexes most telling first: when rows must be cut, those shown
    are the first of that order, in that order. `more(hidden, shown)` gives the lines standing
    for the rows not shown (how many lines must not depend on the numbers).
    """

    head: list[str]
    rows: list[str] = field(default_factory=list)
    ranked: Sequence[int] | None = None
    more: Callable[[int, int], list[str]] = lambda hidden, shown: [
        f"... {plural(hidden, 'more row')}"
    ]


def fit(sections: Sequence[Section], budget: int | None) -> list[str]:
    """The sections' lines in at most `budget` lines (None: no limit).

    Heads always show. When every row fits, every row shows; else rows are given what is left,
    section by section in order, keeping room for the `more` lines of the sections after. A
    budget too small for the heads and `more` lines still shows them: they are what the run
    measured and where the rest is.
    """
    left = None if budget is None else budget - sum(len(section.head) for section in sections)
    if left is not None and sum(len(section.rows) for section in sections) <= left:
        left = None
    costs = [len(section.more(len(section.rows), 0)) if section.rows else 0 for section in sections]
    lines: list[str] = []
    for index, section in enumerate(sections):
        rows = section.rows
        available = None if left is None else left - sum(costs[index + 1 :])
        if available is None or len(rows) <= available:
            lines += section.head + list(rows)
            left = None if left is None else left - len(rows)
            continue
        room = max(available - costs[index], 0)
        order = section.ranked if section.ranked is not None else range(len(rows))
        shown = [rows[position] for position in list(order)[:room]]
        lines += section.head + shown + section.more(len(rows) - room, room)
        left = max(available - room - costs[index], 0) + sum(costs[index + 1 :])
    return lines


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def _stat(stat: dict[str, Any], digits: int) -> str:
    if not stat["known"]:
        if not stat["missing"]:
            return "unknown (no scored trials)"
        return f"unknown ({plural(stat['missing'], 'trial')} unreported)"
    text = f"median {stat['median']:.{digits}f}, mean {stat['mean']:.{digits}f}"
    if stat["missing"]:
        text += f" ({stat['known']} known, {stat['missing']} unreported)"
    else:
        text += f" ({plural(stat['known'], 'trial')})"
    if stat["cv"] is not None:
        text += f", CV within tasks {stat['cv']:.2f} ({plural(stat['cv_tasks'], 'task')})"
    return text


def _rank(task: dict[str, Any]) -> tuple[float, float, str]:
    """Most telling first: fewest first-exact trials (unobserved before all), then most flips."""
    first = task["first_exact"]
    return (-1.0 if first is None else first, -(task["flip_rate"] or 0.0), task["id"])


def partial(report: dict[str, Any]) -> bool:
    """Whether the run selected fewer tasks than it declared (-k, node ids, --lf, a shard)."""
    selected = report["summary"].get("tasks_selected")
    return selected is not None and selected < report["summary"]["tasks_declared"]


def shown_tasks(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The task rows worth a line: in a partial run, the selected tasks and any observed."""
    if not partial(report):
        return list(report["tasks"])
    selected = set(report["run"].get("tasks_selected") or ())
    return [t for t in report["tasks"] if t["id"] in selected or t["trials"]]


def task_section(report: dict[str, Any], where: str) -> Section:
    """The per-task table; cut, it keeps the tasks that failed or flipped most. A no-solution
    task's row says so: its passes are a verifier left unbroken, not a task solved."""
    tasks = shown_tasks(report)
    rows = [
        [
            task["id"] + (" (no solution)" if task.get("no_solution") else ""),
            task["outcomes"] or "(none)",
            _pct(task["first_exact"]),
            _pct(task["final_exact"]),
            _num(task["flip_rate"]),
        ]
        for task in tasks
    ]
    lines = format_table(["task", "outcomes", "first", "final", "flip"], rows, right={2, 3, 4})
    ranked = sorted(range(len(tasks)), key=lambda index: _rank(tasks[index]))
    return Section(
        head=lines[:2],
        rows=lines[2:],
        ranked=ranked,
        more=lambda hidden, shown: [
            f"... {plural(hidden, 'more task')} not shown; above, the {shown} with the fewest "
            "first-exact trials, then the most flips",
            f"the full table: {where}",
        ],
    )


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The run's figures: what ran, outcomes, quality, intervals and usage."""
    s = report["summary"]
    run = report["run"]
    simulated = simulated_figures(run)

    def usage(label: str, key: str) -> str:
        return label + (SIMULATED_LABEL if key in simulated else "") + ": "

    lines = [
        (f"{run['name']}: " if run.get("name") else "")
        + f"agent {run['agent']}  model {run['model'] or 'default'}  repeats {run['repeats']}  "
        f"sandbox {run['sandbox']}",
        f"{plural(s['trials'], 'trial')} scored",
        f"first exact {_pct(s['first_exact'])}  final exact {_pct(s['final_exact'])}  "
        f"EOF-normalized {_pct(s['eof_normalized'])} first, "
        f"{_pct(s.get('final_eof_normalized'))} final",
        f"quality {_num(s['quality'], 3)}  coverage {_pct(s['coverage'])} "
        f"({s['tasks_observed']} of {plural(s['tasks_declared'], 'declared task')})  "
        f"score {_num(s['score'], 3)}",
        *evidence_lines(report),
        f"flip rate {_num(s['flip_rate'], 3)} ({plural(s['flip_rate_tasks'], 'task')})  "
        f"flaky tasks {_pct(s['flaky_tasks'])}  pass@{s['k']} {_pct(s['pass_at_k'])}  "
        f"pass^{s['k']} {_pct(s['pass_hat_k'])}",
        "first exact 95% CI (task bootstrap) "
        + _interval(s["first_exact_ci"])
        + f"; pooled trial rate {_pct(s['pooled_first_exact'])}, Wilson "
        + _interval(s["pooled_first_exact_ci"]),
        usage("tokens", "tokens") + _stat(s["tokens"], 0),
        usage("cost USD", "cost_usd") + _stat(s["cost_usd"], 4),
        usage("wall s", "wall_s") + _stat(s["wall_s"], 2),
        usage("cost per success", "cost_usd")
        + f"{_num(s['cost_per_success'], 4)} USD ({plural(s['successes'], 'final-exact trial')})  "
        + usage("median output tokens", "tokens")
        + _num(s["output_tokens"]["median"], 0),
        usage("total wall s", "wall_s")
        + _num(s["wall_s"]["total"], 1)
        + (
            f"  approach similarity {_num(s['similarity'], 3)} "
            f"({plural(s['similarity_tasks'], 'verifier-graded task')})"
            if s["similarity_tasks"]
            else ""
        ),
    ]
    if s.get("attempts"):
        lines.append(attempts_line(s["attempts"]))
    if simulated:
        names = [name for key, name in SIMULATED_NAMES.items() if key in simulated]
        lines.append(
            f"simulated: the {run['agent']} agent makes up its {', '.join(names)}; "
            "they measure nothing"
        )
    return lines


def attempts_line(block: dict[str, Any]) -> str:
    """Pass@<=N for every N and TTCS, for a run with --retry-failures, on one line."""
    rates = "  ".join(f"Pass@<={n} {_pct(rate)}" for n, rate in block["pass_at_most"].items())
    ttcs = block["ttcs_s"]
    return (
        f"{rates} ({plural(block['trials'], 'trial')}, {plural(block['tasks'], 'task')})  "
        f"TTCS median {_num(ttcs['median'])} s, mean {_num(ttcs['mean'])} s "
        f"({ttcs['known']} of {plural(ttcs['solved'], 'solved trial')} timed)"
    )


def integrity_lines(report: dict[str, Any]) -> list[str]:
    """The integrity block: each bucket's trials, share and spend, the verdicts, and the
    solvable side's solve rate beside them; nothing for a run without no-solution tasks."""
    block = report.get("integrity")
    if not block:
        return []
    table = format_table(
        ["integrity", "trials", "share", "cost USD", "tokens"],
        [row[1:] for row in integrity_rows([("", report)])],
        right={1, 2},
    )
    verdicts = block["verdicts"]
    return [
        "",
        f"no-solution tasks: {plural(block['trials'], 'trial')} scored"
        + (f" ({block['not_scored']} not scored)" if block["not_scored"] else "")
        + f", integrity coverage {_pct(block['coverage'])} ({block['tasks_observed']} of "
        + f"{plural(block['tasks_declared'], 'declared no-solution task')})",
        f"solvable side: final exact {_pct(block['solvable_final_exact'])} "
        f"({plural(block['solvable_trials'], 'trial')})",
        *table,
        f"verdicts: done {verdicts['done']}  partial {verdicts['partial']}  "
        f"incomplete {verdicts['incomplete']}  none {verdicts['none']}",
        *([checks_line(block["transcript_checks"])] if block.get("transcript_checks") else []),
    ]


CLASS_ROWS = 8
"""The most class rows the summary shows; the rest are in the JSON and HTML reports."""


def class_lines(report: dict[str, Any], where: str) -> list[str]:
    """The per-class table (first and final exact over solvable tasks, trials, tokens), for a
    run with more than one class; at most CLASS_ROWS rows, never cut for the task table."""
    rows = [row for row in report.get("classes") or [] if row["trials"] or not partial(report)]
    if len(rows) < 2:
        return []
    table = format_table(
        ["class", "tasks", "trials", "first", "final", "tokens"],
        [row[1:] for row in class_rows([("", {"classes": rows})])[:CLASS_ROWS]],
        right={1, 2, 3, 4},
    )
    hidden = len(rows) - CLASS_ROWS
    return ["", *table] + (
        [f"... {plural(hidden, 'more class', 'more classes')}: {where}"] if hidden > 0 else []
    )


def render(
    report: dict[str, Any], budget: int | None = None, where: str = "the JSON report"
) -> list[str]:
    """Lines for the terminal: every task when `budget` is None, else at most `budget` lines,
    the table cut first; `where` says where the full table is. The integrity block, the class
    table, the metering readout and the arms block follow the run's figures."""
    sections = [
        task_section(report, where),
        Section(head=["", *summary_lines(report), *integrity_lines(report)]),
        Section(head=class_lines(report, where)),
    ]
    if report.get("trajectories"):
        head, rows = trajectory_lines(report["trajectories"])
        # Cut rows need no line of their own: the task table's already says where all is.
        sections.append(Section(head=["", *head], rows=rows, more=lambda hidden, shown: []))
    if report.get("measures"):
        from pytest_agentbench.report.measures import measure_line

        # One line, shown only where the budget has room for it: the reports have them all.
        line = measure_line(report["measures"])
        sections.append(Section(head=[], rows=["", line], ranked=[1, 0], more=lambda h, s: []))
    if report.get("legs"):
        from pytest_agentbench.report.legs import legs_lines

        sections.append(Section(head=["", *legs_lines(report["legs"])]))
    if report.get("metering"):
        from pytest_agentbench.report.metering import metering_lines

        sections.append(Section(head=["", *metering_lines(report["metering"])]))
    if report.get("arms"):
        sections.append(arms_section(report["arms"], where))
    return fit(sections, budget)


def arms_section(block: dict[str, Any], where: str) -> Section:
    """Per-arm rows, each treatment's paired difference from vanilla and the anchor arms in
    full; the code measures (paired differences first), delivery and the legend as the budget
    allows."""
    from pytest_agentbench.report import arms

    table = format_table(arms.ARM_HEADERS, arms.arm_rows(block), right=set(range(1, 9)))
    head = ["", "arms (each arm its own configuration; figures above pool them):", *table]
    medians, paired = arms.measure_lines(block)
    rows = [*medians, *paired, *arms.delivery_lines(block), *arms.NOTES]
    # Cut to the budget, the paired measures are kept first: the reports have every figure.
    ranked = [*range(len(medians), len(medians) + len(paired)), *range(len(medians))]
    return Section(
        head=head
        + arms.paired_lines(block)
        + arms.reused_lines(block)
        + arms.anchor_lines(block)
        + arms.cache_lines(block),
        rows=rows,
        ranked=[*ranked, *range(len(ranked), len(rows))],
        more=lambda hidden, shown: [f"... {plural(hidden, 'more arms line')}: {where}"],
    )


ROLLUP_HEADERS = ["family", "value", "n", "median", "mean", "Q1", "Q3", "min", "max", "excluded"]


def rollup_figures(row: dict[str, Any]) -> list[str]:
    """A rollup row's count and statistics as table cells (3 decimals, unknown spelt out)."""
    stats = ("median", "mean", "q1", "q3", "min", "max")
    return [str(row["count"]), *(_num(row[key], 3) for key in stats)]


def rollup_sections(rollups: dict[str, Any], where: str) -> list[Section]:
    """Family rows, the configurations left out and why, then task-family slices."""
    counted = len(rollups["configurations"])
    family_table = format_table(
        ROLLUP_HEADERS,
        [
            [row["family"], row["label"], *rollup_figures(row), str(len(row["excluded"]))]
            for row in rollups["families"]
        ],
        right=set(range(2, len(ROLLUP_HEADERS))),
    )
    slice_table = format_table(
        ["by", "family", "tasks", *ROLLUP_HEADERS[2:-1]],
        [
            [row["by"], row["family"], str(row["tasks"]), *rollup_figures(row)]
            for row in rollups["task_families"]
        ],
        right=set(range(2, len(ROLLUP_HEADERS) - 1)),
    )

    def more(noun: str) -> Callable[[int, int], list[str]]:
        return lambda hidden, shown: [f"... {plural(hidden, noun)} not shown; all: {where}"]

    return [
        Section(
            head=[
                "",
                f"rollups: score of {plural(counted, 'complete configuration')} "
                "(coverage 1, not quarantined), linear quartiles",
                *family_table[:2],
            ],
            rows=family_table[2:],
            more=more("more family row"),
        ),
        Section(
            head=[f"excluded from rollups: {len(rollups['excluded'])}"],
            rows=[f"  {e['configuration']}: {e['reason']}" for e in rollups["excluded"]],
            more=more("more excluded configuration"),
        ),
        Section(
            head=["task families: quality of complete configurations", *slice_table[:2]],
            rows=slice_table[2:],
            more=more("more task family"),
        ),
    ]


def render_rollups(
    rollups: dict[str, Any], where: str, budget: int | None = SCREEN_LINES
) -> list[str]:
    """The rollups of a multi-configuration report, within `budget` lines."""
    return fit(rollup_sections(rollups, where), budget)


def _interval(pair: list[float] | None) -> str:
    return "unknown" if pair is None else f"[{100 * pair[0]:.1f}%, {100 * pair[1]:.1f}%]"
