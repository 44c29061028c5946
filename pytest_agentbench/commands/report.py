"""`agentbench report`: render a JSON report again, as the terminal table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "print the summary table of a JSON report written with --agentbench-json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", type=Path, help="a JSON report")


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.report.terminal import render

    report = json.loads(args.report.read_text(encoding="utf-8"))
    print("\n".join(render(report)))
    return 0
