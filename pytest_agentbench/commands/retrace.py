"""`agentbench retrace`: rebuild a run's trajectories from its raw evidence, then report it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_agentbench.commands import report
from pytest_agentbench.fs.wording import plural

HELP = (
    "rebuild a run directory's trajectories and their figures from the raw evidence its "
    "trials kept (raw.jsonl.gz), with today's parsers, then report it as `report` does"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory")
    parser.add_argument("--format", choices=report.FORMATS, default="text", help="output format")
    parser.add_argument("-o", "--output", type=Path, help="write the report here, not stdout")


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.run.trajectories import retrace

    done = retrace(args.run_dir)
    line = f"retraced {plural(len(done.rebuilt), 'trial')} in {args.run_dir}"
    if done.without_evidence:
        line += (
            f"; {plural(len(done.without_evidence), 'trial')} kept no raw evidence "
            f"(--agentbench-raw-limit 0, or an older run) and stay as recorded"
        )
    print(line, file=sys.stderr)
    report.emit(report.rendered(args.run_dir, args.format), args.output)
    return 0
