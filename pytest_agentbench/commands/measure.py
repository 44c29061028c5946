"""`agentbench measure`: take a finished run's code measures again from the changes its trials
kept (change.patch), then report it as `report` does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_agentbench.commands import report
from pytest_agentbench.fs.wording import plural

HELP = (
    "add code measures (lines, complexity, dead_code, coverage) to a finished run directory "
    "from the whole changes its trials kept (change.patch) and its tasks' input trees, then "
    "report it as `report` does"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory")
    parser.add_argument(
        "--measure",
        help="measures, comma-separated, as --agentbench-measure takes them (default: the "
        "run's own, else lines)",
    )
    parser.add_argument(
        "--tasks",
        action="append",
        default=None,
        help="task source as for pytest --tasks (repeatable; default: the run's own, relative "
        "ones read from here)",
    )
    parser.add_argument("--format", choices=report.FORMATS, default="text", help="output format")
    parser.add_argument("-o", "--output", type=Path, help="write the report here, not stdout")


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.options import parse_measures
    from pytest_agentbench.run.measuring import remeasure
    from pytest_agentbench.run.store import read_run_file
    from pytest_agentbench.settings import Settings

    recorded = read_run_file(args.run_dir).get("settings") or {}
    asked = parse_measures(args.measure if args.measure else recorded.get("measure"))
    settings = Settings(
        agent=str(recorded.get("agent") or ""),
        measure=asked,
        change_limit=int(recorded.get("change_limit") or Settings.change_limit),
    )
    sources = tuple(args.tasks or recorded.get("tasks") or ())
    done = remeasure(args.run_dir, sources, Path.cwd(), settings)
    line = f"measured {plural(len(done.measured), 'trial')} in {args.run_dir} ({', '.join(asked)})"
    reasons: dict[str, int] = {}
    for why in done.left.values():
        reasons[why] = reasons.get(why, 0) + 1
    for why, count in sorted(reasons.items()):
        line += f"; {plural(count, 'trial')} {'stays' if count == 1 else 'stay'} as recorded: {why}"
    print(line, file=sys.stderr)
    report.emit(report.rendered(args.run_dir, args.format), args.output)
    return 0
