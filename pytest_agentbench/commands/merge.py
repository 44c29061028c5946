"""`agentbench merge`: run directories and JSON reports into one report (CI shards, reruns)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_agentbench.commands import write_output

HELP = "merge run directories or JSON reports into one JSON report (one per identity)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", type=Path, help="run directories or JSON reports")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the merged JSON report")


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.fs.wording import plural
    from pytest_agentbench.scoring.configurations import load_source, merge
    from pytest_agentbench.scoring.merged import build_document

    loaded = [config for source in args.sources for config in load_source(source)]
    configurations = merge(loaded)
    document = build_document(configurations)
    write_output("-o", args.output, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    for config in configurations:
        print(
            f"{config.name}: {plural(len(config.observations), 'trial')}, "
            f"{plural(len(config.declared), 'task')} from {plural(len(config.sources), 'source')}"
        )
    print(f"wrote {args.output} ({plural(len(configurations), 'configuration')})")
    return 0
