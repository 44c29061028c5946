"""The Markdown report: leaderboard, families and per-task outcomes, for PR comments and wikis."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.fs.wording import plural
from pytest_agentbench.report import arms, judgements
from pytest_agentbench.report.breakdowns import (
    CLASS_HEADERS,
    INTEGRITY_HEADERS,
    class_rows,
    integrity_notes,
    integrity_rows,
)
from pytest_agentbench.report.evidence import evidence_lines
from pytest_agentbench.report.measures import (
    MEASURE_HEADERS,
    PAIRED_MEASURE_HEADERS,
    measure_rows,
    paired_measure_rows,
)
from pytest_agentbench.report.terminal import ROLLUP_HEADERS, rollup_figures
from pytest_agentbench.report.trajectories import TRAJECTORY_HEADERS, trajectory_rows
from pytest_agentbench.scoring.configurations import configurations_of

UNKNOWN = "unknown"


def _pct(value: float | None) -> str:
    return UNKNOWN if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return UNKNOWN if value is None else f"{value:.{digits}f}"


def interval_text(pair: list[float] | None) -> str:
    """A rate interval in percent, or unknown."""
    return UNKNOWN if pair is None else f"[{100 * pair[0]:.1f}%, {100 * pair[1]:.1f}%]"


def family_rates(report: dict[str, Any]) -> dict[str, float | None]:
    """First-exact rate per family (task category) over its solvable tasks, tasks weighted
    equally."""
    groups: dict[str, list[float]] = {}
    for task in report["tasks"]:
        if task.get("no_solution"):
            continue
        family = task.get("category") or "(none)"
        bucket = groups.setdefault(family, [])
        if task["first_exact"] is not None:
            bucket.append(task["first_exact"])
    return {f: (sum(v) / len(v) if v else None) for f, v in sorted(groups.items())}


def _median(stat: dict[str, Any]) -> float | None:
    return stat["median"] if stat.get("known") else None


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub Markdown table drawn by tabulate; a | inside a cell is escaped."""
    from tabulate import tabulate

    escaped = [[cell.replace("|", "\\|") for cell in row] for row in rows]
    text = tabulate(escaped, headers=headers, tablefmt="github", disable_numparse=True)
    return text.splitlines()


def _rollups(rollups: dict[str, Any]) -> list[str]:
    """Family rows, the configurations left out with the reason, and task-family slices."""
    counted = plural(len(rollups["configurations"]), "complete configuration")
    lines = ["", "## Rollups", ""]
    lines += [
        f"Score over {counted} (coverage 1, not quarantined): median, mean, quartiles "
        "(linear interpolation), range and count.",
        "",
    ]
    lines += markdown_table(
        ["family", "value", *ROLLUP_HEADERS[2:-1], "excluded"],
        [
            [
                row["family"],
                row["label"],
                *rollup_figures(row),
                ", ".join(e["configuration"] for e in row["excluded"]),
            ]
            for row in rollups["families"]
        ],
    )
    lines += ["", "### Excluded from rollups", ""]
    lines += [f"- {e['configuration']}: {e['reason']}" for e in rollups["excluded"]] or ["none"]
    lines += ["", "### Task families (quality, complete configurations)", ""]
    lines += markdown_table(
        ["by", "family", "tasks", *ROLLUP_HEADERS[2:-1]],
        [
            [row["by"], row["family"], str(row["tasks"]), *rollup_figures(row)]
            for row in rollups["task_families"]
        ],
    )
    return lines


def _arms(block: dict[str, Any], medians: bool) -> list[str]:
    """Each treatment paired with vanilla, its usage ratios and code measures, and the anchor
    arms; with `medians`, each arm's measures' medians (a document of one configuration, whose
    arms have no report of their own)."""
    lines = ["", "## Arms: each treatment paired with vanilla", ""]
    lines += [" ".join(arms.NOTES), ""]
    if reused := arms.reused_lines(block):
        lines += [*reused, ""]
    lines += markdown_table(arms.PAIRED_HEADERS, arms.paired_rows(block))
    lines += ["", *markdown_table(arms.RATIO_HEADERS, arms.ratio_rows(block))]
    measured = [(f"{p['arm']} - vanilla", p.get("measures")) for p in block["paired"]]
    if any(m for _, m in measured):
        lines += ["", "Code measures: mean per-task difference of the medians (docs/measures.md)"]
        lines += ["", *markdown_table(PAIRED_MEASURE_HEADERS, paired_measure_rows(measured))]
    if medians and any(row.get("measures") for row in block["arms"]):
        named = [(row["arm"], row) for row in block["arms"]]
        lines += ["", *markdown_table(["arm", *MEASURE_HEADERS[1:]], measure_rows(named))]
    if block["anchors"]:
        lines += ["", *markdown_table(arms.ANCHOR_HEADERS, arms.anchor_rows(block))]
    return lines + [f"- {line}" for line in (*arms.cache_lines(block), *arms.delivery_lines(block))]


RANKING_RULE = (
    "Ranked by score (quality x coverage), highest first; quarantined configurations and those "
    "without a score are not ranked and come last."
)


def rank_of(report: dict[str, Any]) -> int | None:
    """The configuration's place on the leaderboard (a lone report is first when it has a
    score); None when it is not ranked."""
    run = report["run"]
    if run.get("quarantined") or report["summary"]["score"] is None:
        return None
    rank: int | None = run.get("rank", 1)
    return rank


def ranked(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reports best first; those not ranked last, in their given order."""
    order = {id(r): i for i, r in enumerate(reports)}
    return sorted(reports, key=lambda r: (rank_of(r) is None, rank_of(r) or 0, order[id(r)]))


def _pct0(value: float | None) -> str:
    return UNKNOWN if value is None else f"{100 * value:.0f}%"


def consistency_cell(task: dict[str, Any]) -> str:
    """rerun-bench's per-task cell: first exact per repeat in repeat order (P, F, - not
    scored), the first-exact share, the flip rate and the cost CV within the task, left out
    when the cost is not known well enough to have one."""
    outcomes = task["outcomes"] or "-"
    if not task["trials"]:
        return f"`{outcomes}` not scored"
    cell = f"`{outcomes}` {_pct0(task['first_exact'])}, flip {_pct0(task['flip_rate'])}"
    cv = task.get("cost_usd_cv")
    return cell if cv is None else f"{cell}, cost CV {cv:.2f}"


def _attempts_cells(summary: dict[str, Any]) -> list[str]:
    """The highest Pass@<=N and the median TTCS with the solved trials it counted."""
    block = summary.get("attempts")
    if not block:
        return ["-", "-"]
    top = block["pass_at_most"][str(block["max_attempts"])]
    ttcs = block["ttcs_s"]
    timed = f"{_num(ttcs['median'], 2)} ({ttcs['known']} of {ttcs['solved']})"
    return [f"{_pct(top)} (N={block['max_attempts']})", timed]


def render_markdown(document: dict[str, Any]) -> str:
    reports = ranked(configurations_of(document))
    names = [r["run"].get("name") or r["run"]["agent"] for r in reports]
    retried = any(r["summary"].get("attempts") for r in reports)
    rows = []
    for name, report in zip(names, reports, strict=True):
        s, run = report["summary"], report["run"]
        rank = "quarantined" if run.get("quarantined") else _num(rank_of(report), 0)
        rows.append(
            [
                rank,
                name,
                _num(s["score"]),
                _num(s["quality"]),
                _pct(s["coverage"]),
                _pct(s["first_exact"]),
                _pct(s["final_exact"]),
                _pct(s["eof_normalized"]),
                _pct(s.get("final_eof_normalized")),
                interval_text(s.get("first_exact_ci")),
                _num(s["flip_rate"]),
                _pct(s["flaky_tasks"]),
                _pct(s["pass_at_k"]),
                _pct(s["pass_hat_k"]),
                _num(_median(s["tokens"]), 0),
                _num(_median(s["cost_usd"]), 4),
                _num(_median(s["wall_s"]), 2),
                _num(s["cost_usd"].get("cv"), 2),
                _num(s.get("cost_per_success"), 4),
                _num(_median(s.get("output_tokens") or {}), 0),
                _num(s["wall_s"].get("total"), 1),
                _num(s.get("similarity")),
                *(_attempts_cells(s) if retried else []),
            ]
        )
    k = "/".join(dict.fromkeys(str(r["summary"]["k"]) for r in reports)) or "k"
    headers = ["rank", "configuration", "score", "quality", "coverage", "first", "final"]
    headers += ["EOF first", "EOF final", "first 95% CI (task bootstrap)", "flip"]
    headers += ["flaky tasks", f"pass@{k}", f"pass^{k}"]
    headers += ["tokens (median)", "cost USD (median)", "wall s (median)", "cost CV in tasks"]
    headers += ["cost USD / success", "output tokens (median)", "wall s (total)", "similarity"]
    if retried:
        headers += ["Pass@<=N", "TTCS s (median, timed of solved)"]
    lines = ["# agentbench report", "", "## Leaderboard", "", *markdown_table(headers, rows)]
    lines += ["", RANKING_RULE]
    if document.get("arms"):
        lines += _arms(document["arms"], medians=len(reports) == 1)
    notes = [(n, line) for n, r in zip(names, reports, strict=True) for line in evidence_lines(r)]
    if notes:
        lines += ["", "## Evidence", "", *(f"- {name}: {line}" for name, line in notes)]
    rollups = document.get("rollups")
    if rollups:
        lines += _rollups(rollups)
    counted = set(rollups["configurations"]) if rollups else set(names)
    shown = [(n, r) for n, r in zip(names, reports, strict=True) if n in counted]
    rates = [family_rates(r) for _, r in shown]
    families = sorted({f for r in rates for f in r})
    lines += ["", "## Families (first exact)", ""]
    if rollups:
        lines += ["Complete configurations only (see Rollups for those left out).", ""]
    lines += markdown_table(
        ["family", *(n for n, _ in shown)],
        [[f, *(_pct(r.get(f)) for r in rates)] for f in families],
    )
    named = list(zip(names, reports, strict=True))
    if any(r.get("classes") for r in reports):
        lines += ["", "## Classes (first and final exact over solvable tasks)", ""]
        lines += markdown_table(CLASS_HEADERS, class_rows(named))
    if any(r.get("integrity") for r in reports):
        lines += ["", "## Integrity (no-solution tasks)", ""]
        lines += [f"- {note}" for note in integrity_notes(named)] + [""]
        lines += markdown_table(INTEGRITY_HEADERS, integrity_rows(named))
    if any(r.get("trajectories") for r in reports):
        lines += ["", "## Trajectories (per trial; time in total seconds; costs per solved task)"]
        lines += ["", *markdown_table(TRAJECTORY_HEADERS, trajectory_rows(named))]
    if any(r.get("measures") for r in reports):
        lines += ["", "## Code measures (medians over scored trials; see docs/measures.md)", ""]
        lines += markdown_table(MEASURE_HEADERS, measure_rows(named))
    judged = document.get("judgements")
    if judged:
        lines += [
            *judgements.heading(judged),
            *markdown_table(judgements.HEADERS, judgements.rows(judged)),
        ]
        lines += ["", *(f"- {line}" for line in judgements.notes(judged))]
    lines += ["", "## Tasks", ""]
    lines += [
        "First exact per repeat in repeat order (P pass, F fail, - not scored), then the "
        "first-exact share, flip rate and cost CV within the task (left out when cost is "
        "unknown); the class is the task's most frequent failure (docs/metrics.md).",
        "",
    ]
    by_id = [{t["id"]: t for t in r["tasks"]} for r in reports]
    task_ids = sorted({t for tasks in by_id for t in tasks})
    headers = [h for name in names for h in (name, f"{name} class")]
    task_rows = []
    for task_id in task_ids:
        cells = [task_id]
        for tasks in by_id:
            task = tasks.get(task_id)
            if task is None:
                cells += ["not run", "-"]
            else:
                cells += [consistency_cell(task), task.get("failure_class") or UNKNOWN]
        task_rows.append(cells)
    lines += markdown_table(["task", *headers], task_rows)
    return "\n".join(lines) + "\n"
