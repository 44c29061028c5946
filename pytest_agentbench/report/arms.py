"""The arms block in words and tables, shared by the terminal, Markdown and HTML reports."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.fs.wording import plural, points
from pytest_agentbench.report.measures import measure_line, paired_measure_line
from pytest_agentbench.report.trajectories import paired_trajectory_text

ARM_HEADERS = ["arm", "trials", "first", "final", "quality", "coverage", "tokens", "cost", "wall s"]
PAIRED_HEADERS = [
    "treatment",
    "outcome",
    "difference",
    "90% CI",
    "sign p",
    "both",
    "vanilla only",
    "treatment only",
    "neither",
    "McNemar p",
]
RATIO_HEADERS = ["treatment", "tokens ratio", "cost ratio", "time ratio", "tasks"]
ANCHOR_HEADERS = ["arm", "seed", "tasks", "solve rate", "vanilla", "ratio", "measure", "skipped"]


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int) -> str:
    return "unknown" if value is None else f"{value:.{digits}f}"


def _ratio(value: float | None) -> str:
    return "unknown" if value is None else f"x{value:.2f}"


def _p(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.3f}"


def _interval(figure: dict[str, Any], shown: Any) -> str:
    pair = figure["interval"]
    return "too few tasks" if pair is None else f"[{shown(pair[0])}, {shown(pair[1])}]"


def arm_rows(block: dict[str, Any]) -> list[list[str]]:
    """One row per arm: its trials, rates and mean usage per scored trial."""
    return [
        [
            row["arm"],
            str(row["trials"]),
            _pct(row["first_exact"]),
            _pct(row["final_exact"]),
            _num(row["quality"], 3),
            _pct(row["coverage"]),
            _num(row["mean_tokens"], 0),
            _num(row["mean_cost_usd"], 4),
            _num(row["mean_wall_s"], 1),
        ]
        for row in block["arms"]
    ]


def paired_rows(block: dict[str, Any]) -> list[list[str]]:
    """Per treatment and outcome: the mean per-task difference from vanilla with its interval
    and sign test, and the paired trials' four cells with the exact McNemar p."""
    rows = []
    for pair in block["paired"]:
        for outcome in ("first_exact", "final_exact"):
            figure, cells = pair[outcome], pair[outcome]["trials"]
            rows.append(
                [
                    pair["arm"],
                    outcome.replace("_exact", ""),
                    points(figure["point"]),
                    _interval(figure, points),
                    _p(figure["sign_test_p"]),
                    str(cells["both"]),
                    str(cells["vanilla_only"]),
                    str(cells["treatment_only"]),
                    str(cells["neither"]),
                    _p(cells["p"]),
                ]
            )
    return rows


def ratio_rows(block: dict[str, Any]) -> list[list[str]]:
    """Per treatment: token, cost and time over vanilla's (geometric means of task ratios)."""
    return [
        [
            pair["arm"],
            _ratio(pair["tokens_ratio"]["point"]),
            _ratio(pair["cost_usd_ratio"]["point"]),
            _ratio(pair["wall_s_ratio"]["point"]),
            str(pair["tokens_ratio"]["pairs"]),
        ]
        for pair in block["paired"]
    ]


def anchor_rows(block: dict[str, Any]) -> list[list[str]]:
    return [
        [
            row["arm"],
            row["seed_field"],
            str(row["tasks"]),
            _pct(row["solve_rate"]),
            _pct(row["vanilla_solve_rate"]),
            _num(row["ratio"], 2),
            row["measure"],
            str(len(row["skipped_tasks"])),
        ]
        for row in block["anchors"]
    ]


def paired_lines(block: dict[str, Any]) -> list[str]:
    """The paired differences in three lines per treatment, for the terminal."""
    lines = []
    width = max((len(pair["arm"]) for pair in block["paired"]), default=0) + len(" - vanilla")
    for pair in block["paired"]:
        label = f"{pair['arm']} - vanilla"
        if not pair["first_exact"]["pairs"]:
            lines.append(f"{label:<{width}} no task paired (none scored in both arms)")
            continue
        for outcome in ("first_exact", "final_exact"):
            figure, cells = pair[outcome], pair[outcome]["trials"]
            interval = _interval(figure, points)
            lines.append(
                f"{label:<{width}} {outcome.replace('_exact', ''):<5} {points(figure['point'])} "
                f"(90% CI {interval}) sign p={_p(figure['sign_test_p'])}; trials "
                f"{cells['both']}/{cells['vanilla_only']}/{cells['treatment_only']}/"
                f"{cells['neither']} McNemar p={_p(cells['p'])}"
            )
            label = ""
        lines.append(
            f"{'':<{width}} tokens {_ratio(pair['tokens_ratio']['point'])}  "
            f"cost {_ratio(pair['cost_usd_ratio']['point'])}  "
            f"time {_ratio(pair['wall_s_ratio']['point'])}  "
            + paired_trajectory_text(pair.get("trajectories") or {})
        )
    return lines


def reused_lines(block: dict[str, Any]) -> list[str]:
    """The paired comparison's mark when vanilla's trials came from another study."""
    reused = block.get("vanilla_reused")
    if not reused:
        return []
    return [
        f"vanilla reused: {reused['trials']} of {reused['scored']} scored vanilla trials from "
        f"{', '.join(reused['runs'])}; not interleaved with the treatments' trials"
    ]


def anchor_lines(block: dict[str, Any]) -> list[str]:
    lines = []
    for row in block["anchors"]:
        skipped, unsolvable = row["skipped_tasks"], row["no_solution_tasks"]
        if not row["tasks"]:
            lines.append(
                f"anchor {row['arm']}: ran no task ({plural(len(skipped), 'task')} without "
                f"{row['seed_field']})"
            )
            continue
        lines.append(
            f"anchor {row['arm']} ({row['seed_field']}): solve rate {_pct(row['solve_rate'])} "
            f"vs vanilla {_pct(row['vanilla_solve_rate'])} on {plural(row['tasks'], 'task')}, "
            f"{row['measure']} {_num(row['ratio'], 2)}"
            + (f"; skipped {plural(len(skipped), 'task')} without it" if skipped else "")
            + (f"; left out {plural(len(unsolvable), 'no-solution task')}" if unsolvable else "")
        )
    return lines


def measure_lines(block: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The code measures for the terminal: each arm's medians in a line, and each treatment's
    mean per-task differences from vanilla in a line."""
    medians = [
        measure_line(row["measures"], f"{row['arm']} measures")
        for row in block["arms"]
        if row.get("measures")
    ]
    paired = [
        paired_measure_line(pair["measures"], f"{pair['arm']} - vanilla")
        for pair in block["paired"]
        if pair.get("measures")
    ]
    return medians, paired


def cache_lines(block: dict[str, Any]) -> list[str]:
    """Each arm's prefix cache and cache-hit share, and the warm arms' priming runs apart;
    nothing when no arm is warm."""
    rows = [(row["arm"], row.get("cache")) for row in block["arms"]]
    if not any(cache and cache["prefix_cache"] == "warm" for _, cache in rows):
        return []
    lines = []
    for arm, cache in rows:
        if not cache:
            continue
        if cache["metered_trials"]:
            share = f"{_pct(cache['cache_hit_share'])} metered over " + plural(
                cache["metered_trials"], "trial"
            )
        else:
            share = f"{_pct(cache['reported_cache_hit_share'])} as reported over " + plural(
                cache["reported_trials"], "trial"
            )
        line = f"cache {arm} ({cache['prefix_cache']}): cache-hit share {share}"
        priming = cache.get("priming")
        if priming:
            given = (priming["tokens"] or {}).get("input")
            line += (
                f"; priming apart: {plural(priming['runs'], 'run')}, "
                f"{'unknown' if priming['requests'] is None else priming['requests']} requests, "
                f"input {'unknown' if given is None else given}, "
                f"cost {_num(priming['cost_usd'], 4)}"
            )
            if priming["failed"]:
                line += f", {priming['failed']} failed"
        lines.append(line)
    return lines


def delivery_lines(block: dict[str, Any]) -> list[str]:
    """Where the agent was given the arms, and the skills its homes held after the trials."""
    delivery = block.get("delivery")
    if delivery == "none":
        lines = ["delivery: none (the agent runs no model; only prompt prefixes reach it)"]
    elif isinstance(delivery, dict):
        lines = ["delivery: " + ", ".join(f"{k} -> {v}" for k, v in sorted(delivery.items()))]
    else:
        lines = []
    found = [(row["arm"], row.get("skills_found")) for row in block["arms"]]
    if any(skills is not None for _, skills in found):
        shown = [
            f"{arm}: {', '.join(skills) or 'none'}" for arm, skills in found if skills is not None
        ]
        lines.append("skills in the homes after the trials: " + "; ".join(shown))
    plugins = [(row["arm"], row.get("plugins_found")) for row in block["arms"]]
    if any(names is not None for _, names in plugins):
        shown = [f"{arm}: {', '.join(names)}" for arm, names in plugins if names]
        lines.append("plugins installed in the homes: " + "; ".join(shown))
    return lines


NOTES = [
    "paired: mean per-task difference, bootstrap CI over tasks, sign test; trials paired in",
    "repeat order: both/vanilla only/treatment only/neither exact; ratios: geometric means",
]
