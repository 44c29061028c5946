"""The HTML report: one self-contained static file (inline CSS, JS and SVG; no network).

Sections: a sortable leaderboard of configurations, per-family breakdown and plots, and a
per-task grid with one coloured cell per repeat whose tooltip summarises the final diff.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from pytest_agentbench.fs import names
from pytest_agentbench.fs.wording import plural
from pytest_agentbench.report import arms
from pytest_agentbench.report.breakdowns import (
    CLASS_HEADERS,
    INTEGRITY_HEADERS,
    class_rows,
    integrity_notes,
    integrity_rows,
)
from pytest_agentbench.report.evidence import evidence_lines
from pytest_agentbench.report.trajectories import TRAJECTORY_HEADERS, trajectory_rows
from pytest_agentbench.scoring.configurations import configurations_of
from pytest_agentbench.scoring.document import simulated_figures
from pytest_agentbench.tasks.observation import Observation, trial_tokens

UNKNOWN = "unknown"
SIMULATED = " (simulated)"
PALETTE = ("#3b6fb6", "#d9822b", "#4a9d5b", "#a64ca6", "#c23b3b", "#6b6b6b", "#2a9d9d")

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d1d1f;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.muted{color:#666}table{border-collapse:collapse;margin:4px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f3f3f5;position:sticky;top:0}td.name,th.name{text-align:left}
table.sortable th{cursor:pointer}table.sortable th:after{content:" \\2195";color:#aaa}
th.asc:after{content:" \\2191"!important;color:#000!important}
th.desc:after{content:" \\2193"!important;color:#000!important}
tr.quarantined td{color:#999;font-style:italic}
.grid td{padding:2px 4px}.cells{display:flex;gap:2px}
.cell{width:14px;height:14px;border-radius:2px;display:inline-block}
.P{background:#2e9e4f}.R{background:#e0b12e}.F{background:#cf3f3f}.S{background:#9a9a9a}
.legend span{margin-right:12px}.legend .cell{vertical-align:middle;margin-right:4px}
svg text{font:11px system-ui,sans-serif;fill:#333}
"""

SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.querySelectorAll("th");
  heads.forEach(function (th, column) {
    th.addEventListener("click", function () {
      var ascending = !th.classList.contains("asc");
      heads.forEach(function (h) { h.classList.remove("asc", "desc"); });
      th.classList.add(ascending ? "asc" : "desc");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.sort, y = b.cells[column].dataset.sort;
        var unknownX = x === undefined || x === "", unknownY = y === undefined || y === "";
        if (unknownX || unknownY) { return unknownX === unknownY ? 0 : unknownX ? 1 : -1; }
        var nx = Number(x), ny = Number(y);
        var order = isNaN(nx) || isNaN(ny) ? String(x).localeCompare(String(y)) : nx - ny;
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _pct(value: float | None) -> str:
    return UNKNOWN if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return UNKNOWN if value is None else f"{value:.{digits}f}"


def _stat(stat: dict[str, Any], key: str) -> float | None:
    return stat.get(key) if stat and stat.get("known") else None


def _td(text: str, sort: object = None, cls: str = "") -> str:
    value = "" if sort is None else escape(str(sort))
    attr = f' class="{cls}"' if cls else ""
    return f'<td{attr} data-sort="{value}">{escape(text)}</td>'


LEADERBOARD_COLUMNS = (
    "rank",
    "configuration",
    "score",
    "quality",
    "coverage",
    "first exact",
    "final exact",
    "EOF-normalized (first)",
    "EOF-normalized (final)",
    "first exact 95% CI (task bootstrap)",
    "flip rate",
    "pass^k",
    "tokens (median)",
    "cost USD (median)",
    "wall s (median)",
    "cost CV within tasks",
    "cost USD per success",
    "output tokens (median)",
    "wall s (total)",
    "approach similarity",
    "trials",
)


def interval_text(pair: list[float] | None) -> str:
    """A rate interval in percent, or unknown."""
    return UNKNOWN if pair is None else f"[{100 * pair[0]:.1f}%, {100 * pair[1]:.1f}%]"


def _leaderboard(reports: list[dict[str, Any]]) -> str:
    head = "".join(
        f'<th class="name">{c}</th>' if c == "configuration" else f"<th>{escape(c)}</th>"
        for c in LEADERBOARD_COLUMNS
    )
    rows = []
    by_rank = sorted(reports, key=lambda r: (r["run"].get("rank", 1) is None, r["run"].get("rank")))
    for report in by_rank:
        run, s = report["run"], report["summary"]
        quarantined = run.get("quarantined")
        rank = run.get("rank", 1)
        tokens = _stat(s["tokens"], "median")
        cost = _stat(s["cost_usd"], "median")
        wall = _stat(s["wall_s"], "median")
        name = run.get("name") or run.get("agent", "")
        simulated = simulated_figures(run)
        cells = [
            _td("quarantined" if quarantined else _num(rank, 0), rank),
            _td(name + (" (quarantined)" if quarantined else ""), name, "name"),
            _td(_num(s["score"]), s["score"]),
            _td(_num(s["quality"]), s["quality"]),
            _td(_pct(s["coverage"]), s["coverage"]),
            _td(_pct(s["first_exact"]), s["first_exact"]),
            _td(_pct(s["final_exact"]), s["final_exact"]),
            _td(_pct(s["eof_normalized"]), s["eof_normalized"]),
            _td(_pct(s.get("final_eof_normalized")), s.get("final_eof_normalized")),
            _td(interval_text(s.get("first_exact_ci")), (s.get("first_exact_ci") or [None])[0]),
            _td(_num(s["flip_rate"]), s["flip_rate"]),
            _td(_pct(s["pass_hat_k"]) + f" (k={s['k']})", s["pass_hat_k"]),
            _td(_simulated(_num(tokens, 0), "tokens", simulated), tokens),
            _td(_simulated(_num(cost, 4), "cost_usd", simulated), cost),
            _td(_simulated(_num(wall, 2), "wall_s", simulated), wall),
            _td(_num(s["cost_usd"].get("cv")), s["cost_usd"].get("cv")),
            _td(_simulated(_num(s.get("cost_per_success"), 4), "cost_usd", simulated), None),
            _td(_num(_stat(s.get("output_tokens") or {}, "median"), 0), None),
            _td(_num(_stat(s["wall_s"], "total"), 1), _stat(s["wall_s"], "total")),
            _td(_num(s.get("similarity")), s.get("similarity")),
            _td(str(s["trials"]), s["trials"]),
        ]
        cls = ' class="quarantined"' if quarantined else ""
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return (
        f'<table class="sortable" id="leaderboard"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _evidence(reports: list[dict[str, Any]]) -> str:
    """Quarantines, fixture conflicts and narrowed selections, as a list under the board."""
    items = [
        f"<li>{escape(report['run'].get('name') or report['run']['agent'])}: {escape(line)}</li>"
        for report in reports
        for line in evidence_lines(report)
    ]
    return f'<ul id="evidence">{"".join(items)}</ul>' if items else ""


def _simulated(text: str, key: str, simulated: set[str]) -> str:
    """`text`, labelled simulated when the agent made up the figure `key`."""
    return text + (SIMULATED if key in simulated else "")


def _cell_class(observation: Observation) -> str:
    if observation["status"] != "scored":
        return "S"
    if observation["first_exact"]:
        return "P"
    return "R" if observation["final_exact"] else "F"


def _cell_title(observation: Observation, simulated: set[str]) -> str:
    lines = [f"r{observation['repeat']}: {observation['status']}"]
    if observation["status"] != "scored":
        lines.append(str(observation.get("cause") or ""))
    else:
        lines.append(
            "first exact"
            if observation["first_exact"]
            else "final exact after recovery"
            if observation["final_exact"]
            else "not exact"
        )
    rounds = observation.get("rounds") or []
    if rounds:
        last = rounds[-1]
        for key in ("differing", "missing", "unexpected", "invalid"):
            if last.get(key):
                lines.append(f"{key}: {', '.join(map(names.show, last[key][:8]))}")
        if last.get("timed_out"):
            lines.append("timed out")
        elif last.get("exit_code") not in (0, None):
            lines.append(f"exit code {last['exit_code']}")
    tokens = trial_tokens(observation)
    lines.append(_simulated("tokens", "tokens", simulated) + f": {_num(tokens, 0)}")
    return "\n".join(line for line in lines if line)


def _task_grid(reports: list[dict[str, Any]], task_ids: list[str]) -> str:
    head = '<th class="name">task</th><th class="name">family</th>' + "".join(
        f'<th class="name">{escape(r["run"].get("name") or r["run"]["agent"])}</th>'
        for r in reports
    )
    by_config = []
    families: dict[str, str] = {}
    simulated = [simulated_figures(report["run"]) for report in reports]
    for report in reports:
        cells: dict[str, list[Observation]] = {}
        for obs in report["observations"]:
            cells.setdefault(obs["task"], []).append(obs)
        by_config.append(cells)
        for task in report["tasks"]:
            families.setdefault(task["id"], task.get("category") or "")
    rows = []
    for task_id in task_ids:
        tds = [
            _td(task_id, task_id, "name"),
            _td(families.get(task_id) or UNKNOWN, families.get(task_id), "name"),
        ]
        for cells, made_up in zip(by_config, simulated, strict=True):
            trials = sorted(cells.get(task_id, []), key=lambda o: o["repeat"])
            spans = "".join(
                f'<span class="cell {_cell_class(o)}" '
                f'title="{escape(_cell_title(o, made_up))}"></span>'
                for o in trials
            )
            passed = sum(1 for o in trials if o["status"] == "scored" and o["first_exact"])
            scored = sum(1 for o in trials if o["status"] == "scored")
            sort = passed / scored if scored else None
            tds.append(
                f'<td class="name" data-sort="{"" if sort is None else sort}">'
                f'<div class="cells">{spans or "unknown"}</div></td>'
            )
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<table class="sortable grid" id="tasks"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


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


ROLLUP_STATISTICS = ("median", "mean", "q1", "q3", "min", "max")


def _rollup_table(
    table_id: str, lead: list[str], trail: list[str], rows: list[tuple[list[str], Any]]
) -> str:
    """A sortable table of rollup rows: `lead` name columns, the count and statistics, then
    `trail` name columns; each row gives its name cells (lead then trail) and its figures."""
    names = [f'<th class="name">{escape(n)}</th>' for n in (*lead, *trail)]
    figures = [f"<th>{n}</th>" for n in ("n", "median", "mean", "Q1", "Q3", "min", "max")]
    head = "".join(names[: len(lead)] + figures + names[len(lead) :])
    body = []
    for cells, row in rows:
        tds = [_td(cell, cell, "name") for cell in cells]
        tds[len(lead) : len(lead)] = [_td(str(row["count"]), row["count"])] + [
            _td(_num(row[key]), row[key]) for key in ROLLUP_STATISTICS
        ]
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _rollups(rollups: dict[str, Any]) -> str:
    """Family rows over complete configurations, who was left out and why, task families."""
    families = _rollup_table(
        "rollups",
        ["family", "value"],
        ["excluded"],
        [
            (
                [
                    row["family"],
                    row["label"],
                    ", ".join(e["configuration"] for e in row["excluded"]) or "none",
                ],
                row,
            )
            for row in rollups["families"]
        ],
    )
    excluded = "".join(
        f"<li>{escape(e['configuration'])}: {escape(e['reason'])}</li>" for e in rollups["excluded"]
    )
    slices = _rollup_table(
        "task-families",
        ["by", "family", "tasks"],
        [],
        [([row["by"], row["family"], str(row["tasks"])], row) for row in rollups["task_families"]],
    )
    counted = plural(len(rollups["configurations"]), "complete configuration")
    return (
        f'<p class="muted">Score over {counted} (coverage 1, not quarantined): median, mean, '
        "quartiles (linear interpolation), range and count.</p>"
        f"{families}<h3>Excluded from rollups</h3>"
        f'<ul id="rollup-excluded">{excluded or "<li>none</li>"}</ul>'
        f"<h3>Task families (quality, complete configurations)</h3>{slices}"
    )


def _families(reports: list[dict[str, Any]]) -> tuple[str, str]:
    rates = [family_rates(r) for r in reports]
    families = sorted({f for r in rates for f in r})
    head = '<th class="name">family</th>' + "".join(
        f"<th>{escape(r['run'].get('name') or r['run']['agent'])}</th>" for r in reports
    )
    rows = []
    for family in families:
        tds = [_td(family, family, "name")]
        tds += [_td(_pct(r.get(family)), r.get(family)) for r in rates]
        rows.append(f"<tr>{''.join(tds)}</tr>")
    table = (
        f'<table class="sortable" id="families"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    return table, _family_plot(reports, families, rates)


def _family_plot(
    reports: list[dict[str, Any]], families: list[str], rates: list[dict[str, float | None]]
) -> str:
    """Grouped bars: first-exact rate per family, one bar per configuration."""
    bar, gap, height, left = 14, 18, 160, 120  # left leaves room for the first slanted label
    group = bar * len(reports) + gap
    width = left + group * max(len(families), 1) + 20
    label_room = 110  # family names are written at an angle below the bars, so they never overlap
    parts = [
        f'<svg id="family-plot" width="{width + 260}" height="{height + label_room}" role="img">'
    ]
    for tick in (0, 0.5, 1):
        y = 10 + height * (1 - tick)
        parts.append(f'<line x1="{left}" x2="{width}" y1="{y}" y2="{y}" stroke="#e3e3e3"/>')
        parts.append(f'<text x="{left - 36}" y="{y + 4}">{int(tick * 100)}%</text>')
    for fi, family in enumerate(families):
        x0 = left + fi * group
        for ci, config_rates in enumerate(rates):
            value = config_rates.get(family)
            x = x0 + ci * bar
            if value is None:
                parts.append(f'<text x="{x + 2}" y="{height + 6}" font-size="8">?</text>')
                continue
            h = height * value
            color = PALETTE[ci % len(PALETTE)]
            parts.append(
                f'<rect x="{x}" y="{10 + height - h:.1f}" width="{bar - 2}" height="{h:.1f}" '
                f'fill="{color}"><title>{escape(family)}: {_pct(value)}</title></rect>'
            )
        label_x, label_y = x0 + group / 2 - gap / 2, height + 22
        parts.append(
            f'<text x="{label_x:.1f}" y="{label_y}" text-anchor="end" '
            f'transform="rotate(-40 {label_x:.1f} {label_y})">{escape(family[:24])}</text>'
        )
    for ci, report in enumerate(reports):
        name = escape(report["run"].get("name") or report["run"]["agent"])
        color = PALETTE[ci % len(PALETTE)]
        parts.append(f'<text x="{width + 10}" y="{20 + 16 * ci}" fill="{color}">■ {name}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _distribution_plot(reports: list[dict[str, Any]], metric: str, label: str) -> str:
    """One row of dots per configuration: each scored trial's tokens or cost; unknown counted."""
    rows = []
    for report in reports:
        values = []
        unknown = 0
        for obs in report["observations"]:
            if obs["status"] != "scored":
                continue
            value = trial_tokens(obs) if metric == "tokens" else obs.get(metric)
            if value is None:
                unknown += 1
            else:
                values.append(float(value))
        name = report["run"].get("name") or report["run"]["agent"]
        rows.append((name, values, unknown, metric in simulated_figures(report["run"])))
    known = [v for _, values, _, _ in rows for v in values]
    top = max(known) if known else 1.0
    top = top if top > 0 else 1.0
    left, width, row_h = 180, 420, 26
    height = row_h * len(rows) + 30
    parts = [f'<svg id="{metric}-plot" width="{left + width + 120}" height="{height}" role="img">']
    for index, (name, values, unknown, simulated) in enumerate(rows):
        y = 18 + index * row_h
        color = PALETTE[index % len(PALETTE)]
        parts.append(f'<text x="4" y="{y + 4}">{escape(name[:28])}</text>')
        for value in values:
            x = left + width * value / top
            parts.append(f'<circle cx="{x:.1f}" cy="{y}" r="3" fill="{color}" fill-opacity="0.5"/>')
        if values:
            median = sorted(values)[len(values) // 2]
            x = left + width * median / top
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 8}" y2="{y + 8}" stroke="#000"/>'
            )
        note = ", ".join(
            (["simulated"] if simulated else []) + ([f"{unknown} unknown"] if unknown else [])
        )
        parts.append(f'<text x="{left + width + 10}" y="{y + 4}">{note}</text>')
    axis_y = height - 8
    parts.append(f'<text x="{left}" y="{axis_y}">0</text>')
    top_text = _num(top, 4 if metric == "cost_usd" else 0)
    parts.append(f'<text x="{left + width - 60}" y="{axis_y}">{escape(label)} {top_text}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _simulated_note(reports: list[dict[str, Any]]) -> str:
    """Which configurations' usage figures were made up, so no one reads them as measured."""
    made_up = [
        escape(report["run"].get("name") or report["run"]["agent"])
        for report in reports
        if simulated_figures(report["run"])
    ]
    if not made_up:
        return ""
    return (
        f'<p class="muted" id="simulated">Simulated: {", ".join(made_up)} made up the figures '
        "marked (simulated): its tokens, cost and wall time measure nothing.</p>"
    )


def _text_table(table_id: str, headers: list[str], rows: list[list[str]]) -> str:
    """A sortable table of text cells (sorted as shown)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_td(cell, cell) for cell in row) + "</tr>" for row in rows)
    return (
        f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _breakdowns(reports: list[dict[str, Any]]) -> list[str]:
    """The per-class table, and the integrity block of configurations with no-solution tasks."""
    named = [(r["run"].get("name") or r["run"]["agent"], r) for r in reports]
    parts = []
    if any(r.get("classes") for r in reports):
        parts += [
            "<h2>Classes</h2>",
            '<p class="muted">First and final exact over solvable '
            "tasks; trials and tokens over every scored trial of the class.</p>",
        ]
        parts.append(_text_table("classes", CLASS_HEADERS, class_rows(named)))
    if any(r.get("integrity") for r in reports):
        notes = "".join(f"<li>{escape(note)}</li>" for note in integrity_notes(named))
        parts += ["<h2>Integrity</h2>", f'<ul id="integrity-notes">{notes}</ul>']
        parts.append(_text_table("integrity", INTEGRITY_HEADERS, integrity_rows(named)))
    if any(r.get("trajectories") for r in reports):
        parts += [
            "<h2>Trajectories</h2>",
            '<p class="muted">What the agents did, per scored trial; time in seconds over all '
            "trials; costs per solved task (docs/trajectories.md).</p>",
            _text_table("trajectories", TRAJECTORY_HEADERS, trajectory_rows(named)),
        ]
    return parts


def _arms(block: dict[str, Any]) -> list[str]:
    """Each treatment paired with vanilla, its usage ratios and the anchor arms."""
    parts = [
        "<h2>Arms: each treatment paired with vanilla</h2>",
        f'<p class="muted">{escape(" ".join(arms.NOTES))}</p>',
        _text_table("arms-paired", arms.PAIRED_HEADERS, arms.paired_rows(block)),
        _text_table("arms-ratios", arms.RATIO_HEADERS, arms.ratio_rows(block)),
    ]
    if block["anchors"]:
        parts.append(_text_table("arms-anchors", arms.ANCHOR_HEADERS, arms.anchor_rows(block)))
    return parts + [f"<p>{escape(line)}</p>" for line in arms.delivery_lines(block)]


def render_html(document: dict[str, Any]) -> str:
    reports = configurations_of(document)
    task_ids = sorted({t["id"] for r in reports for t in r["tasks"]})
    rollups = document.get("rollups")
    counted = set(rollups["configurations"]) if rollups else None
    family_table, family_plot = _families(
        [r for r in reports if counted is None or (r["run"].get("name") in counted)]
    )
    combined = document.get("combined")
    combined_line = ""
    if combined:
        combined_line = (
            f"<p>Combined over {combined['tasks_scored']} tasks (configurations weigh equally "
            f"within a task): first exact {_pct(combined['first_exact'])}, final exact "
            f"{_pct(combined['final_exact'])}, quality {_num(combined['quality'])}</p>"
        )
    legend = (
        '<p class="legend"><span><i class="cell P"></i>first exact</span>'
        '<span><i class="cell R"></i>exact after recovery/retry</span>'
        '<span><i class="cell F"></i>not exact</span>'
        '<span><i class="cell S"></i>not scored (provider stop, infrastructure failure, '
        "error)</span></p>"
    )
    data = escape(json.dumps({"configurations": len(reports), "tasks": len(task_ids)}))
    return "".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            "<meta name='viewport' content='width=device-width, initial-scale=1'>",
            "<title>agentbench report</title>",
            f"<style>{CSS}</style></head><body data-summary='{data}'>",
            "<h1>agentbench report</h1>",
            f'<p class="muted">{plural(len(reports), "configuration")}, '
            f"{plural(len(task_ids), 'task')}. "
            "Click a column heading to sort; hover a cell for the trial's diff summary.</p>",
            "<h2>Leaderboard</h2>",
            _leaderboard(reports),
            *(_arms(document["arms"]) if document.get("arms") else []),
            _simulated_note(reports),
            _evidence(reports),
            combined_line,
            *(["<h2>Rollups</h2>", _rollups(rollups)] if rollups else []),
            "<h2>Families</h2>",
            '<p class="muted">Complete configurations only.</p>' if rollups else "",
            family_table,
            family_plot,
            *_breakdowns(reports),
            "<h2>Tokens per trial</h2>",
            _distribution_plot(reports, "tokens", "tokens"),
            "<h2>Cost per trial (USD)</h2>",
            _distribution_plot(reports, "cost_usd", "USD"),
            "<h2>Tasks</h2>",
            legend,
            _task_grid(reports, task_ids),
            f"<script>{SCRIPT}</script></body></html>\n",
        ]
    )
