"""`agentbench serve-script SCRIPT.json`: a scripted model for agent CLIs, on 127.0.0.1."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from pytest_agentbench.testing.model_server import ScriptedModelServer, ScriptError, load_script

HELP = (
    "serve a scripted model (Responses, Messages and Chat Completions APIs) on 127.0.0.1 "
    "until it has been idle for the script's idle_timeout"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script", type=Path, help="the script (JSON; see docs/agents.md)")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    parser.add_argument(
        "--idle-timeout", type=float, help="seconds without requests before stopping"
    )
    parser.add_argument("--record", type=Path, help="write every request as JSON lines here")


def run(args: argparse.Namespace) -> int:
    try:
        script = load_script(args.script)
    except ScriptError as exc:
        raise ValueError(str(exc)) from None
    if args.idle_timeout is not None:
        script = dataclasses.replace(script, idle_timeout=args.idle_timeout)
    server = ScriptedModelServer(script, port=args.port).start()
    print(f"serving {args.script} on {server.base_url}", flush=True)
    print(f"  codex, opencode: --agent-opt base_url={server.openai_base_url}", flush=True)
    print(f"  claude:          --agent-opt base_url={server.base_url}", flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()
    if args.record:
        with args.record.open("w", encoding="utf-8") as out:
            for record in server.requests:
                out.write(json.dumps(record.to_json()) + "\n")
    print(f"served {len(server.requests)} requests; usage {server.served_usage()}", flush=True)
    return 0
