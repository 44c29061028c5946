"""`agentbench report`: a run directory or JSON report as a table, HTML, Markdown or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_agentbench.commands import write_output

HELP = (
    "render a run directory or JSON report: terminal table (default), html, md, json or csv; "
    "or a run directory's trajectories as ATIF files (--format atif -o DIR)"
)
FORMATS = ("text", "html", "md", "json", "csv")  # one document each; atif writes a directory


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", type=Path, help="a run directory, JSON report or merged report")
    parser.add_argument(
        "--format", choices=(*FORMATS, "atif"), default="text", help="output format"
    )
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")


def load_document(path: Path) -> dict[str, Any]:
    """A JSON report as written, or the report of a run directory's record."""
    from pytest_agentbench.scoring.configurations import load_source, merge, read_document
    from pytest_agentbench.scoring.merged import build_document

    if path.is_dir():
        from pytest_agentbench.judge.tally import judgements_block

        document = build_document(merge(load_source(path)))
        judged = judgements_block(path)
        if judged is not None:
            document["judgements"] = judged
        return document
    return read_document(path)


def html_page(source: Path) -> str:
    """The viewer as one self-contained page, the source's payloads inlined (trial pages up
    to a size a file people attach can carry; the page says which are left out)."""
    from pytest_agentbench.view.page import inline_page, inline_payloads
    from pytest_agentbench.view.viewer import Viewer

    viewer = Viewer([source])
    payloads, left_out = inline_payloads(viewer)
    if left_out:
        print(
            f"{source}: {left_out} trial pages left out of the HTML file (over its size "
            f"bound); agentbench view {source} shows every one",
            file=sys.stderr,
        )
    return inline_page(payloads)


def rendered(source: Path, form: str) -> str:
    """The source in one of FORMATS."""
    if form == "html":
        return html_page(source)
    return render(load_document(source), form, source)


def render(document: dict[str, Any], form: str, source: Path) -> str:
    if form == "md":
        from pytest_agentbench.report.markdown import render_markdown

        return render_markdown(document)
    if form == "json":
        return json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    if form == "csv":
        from pytest_agentbench.report.csvfile import render_csv

        return render_csv(document)
    from pytest_agentbench.report.terminal import render as render_text
    from pytest_agentbench.report.terminal import render_rollups
    from pytest_agentbench.scoring.configurations import configurations_of

    blocks = []
    for report in configurations_of(document):
        name = report["run"].get("name")
        blocks.append(([f"== {name}"] if name else []) + render_text(report))
    if document.get("rollups"):
        blocks.append(
            render_rollups(document["rollups"], f"agentbench report {source} --format md")
        )
    if document.get("judgements"):
        from pytest_agentbench.report.judgements import terminal_lines

        blocks.append(terminal_lines(document["judgements"]))
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def export_trajectories(args: argparse.Namespace) -> int:
    """--format atif: one ATIF-v1.4 file per trial of a run directory, into -o DIR."""
    from pytest_agentbench.run.trajectories import export_atif

    if args.output is None or not args.report.is_dir():
        raise ValueError(
            f"{args.report}: --format atif writes one file per trial: give a run directory "
            "and -o DIR (the directory to write them to)"
        )
    written = export_atif(args.report, args.output)
    print(f"wrote {written} ATIF trajectories to {args.output}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.format == "atif":
        return export_trajectories(args)
    try:
        text = rendered(args.report, args.format)
    except (KeyError, TypeError) as exc:
        if args.report.is_dir():
            raise  # built here from the run directory: a missing field is a bug, not input
        raise ValueError(
            f"{args.report}: not a complete pytest-agentbench JSON report (no field {exc}); "
            "give its run directory, or a report written by --agentbench-json or agentbench merge"
        ) from None
    emit(text, args.output)
    return 0


def emit(text: str, output: Path | None) -> None:
    """The rendered report to stdout, or to -o FILE (saying so)."""
    if output is None:
        sys.stdout.write(text)
    else:
        write_output("-o", output, text)
        print(f"wrote {output}")
