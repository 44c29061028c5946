"""`agentbench report`: a run directory or JSON report as a table, HTML, Markdown or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELP = "render a run directory or JSON report: terminal table (default), html, md or json"
FORMATS = ("text", "html", "md", "json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", type=Path, help="a run directory, JSON report or merged report")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format")
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")


def load_document(path: Path) -> dict[str, Any]:
    """A JSON report as written, or the report of a run directory's record."""
    if path.is_dir():
        from pytest_agentbench.configurations import build_document, load_source, merge

        return build_document(merge(load_source(path)))
    try:
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a JSON report ({exc.msg})") from None
    return document


def render(document: dict[str, Any], form: str) -> str:
    if form == "html":
        from pytest_agentbench.report.html import render_html

        return render_html(document)
    if form == "md":
        from pytest_agentbench.report.markdown import render_markdown

        return render_markdown(document)
    if form == "json":
        return json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    from pytest_agentbench.configurations import configurations_of
    from pytest_agentbench.report.terminal import render as render_text

    blocks = []
    for report in configurations_of(document):
        name = report["run"].get("name")
        blocks.append(([f"== {name}"] if name else []) + render_text(report))
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


def run(args: argparse.Namespace) -> int:
    text = render(load_document(args.report), args.format)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    return 0
