"""The `agentbench` console script: one subcommand per module in pytest_agentbench.commands.

Each command module defines ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; one
that defines ``PYTEST_ARGS`` gets the arguments it does not know as ``args.pytest_args``.

Bad input is never a traceback: a command raises ValueError (or pytest.UsageError, or an
OSError naming a file) with a message that names the file or argument and the fix, and the
script prints it as one line and exits 2, the code argparse uses for usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

import pytest

COMMANDS = {
    "list": "pytest_agentbench.commands.list_tasks",
    "report": "pytest_agentbench.commands.report",
    "retrace": "pytest_agentbench.commands.retrace",
    "measure": "pytest_agentbench.commands.measure",
    "judge": "pytest_agentbench.commands.judge",
    "review": "pytest_agentbench.commands.review",
    "merge": "pytest_agentbench.commands.merge",
    "compare": "pytest_agentbench.commands.compare",
    "validate": "pytest_agentbench.commands.validate",
    "check": "pytest_agentbench.commands.check",
    "status": "pytest_agentbench.commands.status",
    "stop": "pytest_agentbench.commands.stop",
    "serve-script": "pytest_agentbench.commands.serve_script",
    "clean": "pytest_agentbench.commands.clean",
    "view": "pytest_agentbench.commands.view",
}
USAGE_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentbench", description="Inspect tasks and reports of pytest-agentbench runs."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run, _pytest_args=hasattr(module, "PYTEST_ARGS"))
    return parser


def error_line(exc: Exception) -> str:
    """One line for a bad-input error: an OSError as 'FILE: reason', anything else as is."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return " ".join(str(exc).split())


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args._pytest_args:  # a command that hands on what it does not know to pytest
        args.pytest_args = extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return int(args._run(args))
    except BrokenPipeError:
        return 0
    except (OSError, ValueError, pytest.UsageError) as exc:
        print(f"agentbench {args.command}: {error_line(exc)}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
