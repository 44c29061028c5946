"""`agentbench compare BASE CAND [--gates gates.toml]`: paired differences and CI gates.

Exit codes: 0 every gate passes (or no gates), 1 a gate fails, 2 a gate is undetermined or the
input is unusable (the message says why).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_agentbench.commands import write_output
from pytest_agentbench.report.table import format_table

HELP = "compare two runs task by task (paired) and check gates: exit 0 pass, 1 fail, 2 undetermined"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "base", help="run directory or JSON report; DIR=CONFIG picks a configuration"
    )
    parser.add_argument("candidate", help="run directory or JSON report; DIR=CONFIG as for base")
    parser.add_argument("--gates", type=Path, help="TOML file of [[gate]] tables")
    parser.add_argument("--json", type=Path, help="also write the comparison as JSON here")


def pick(spec: str) -> Any:
    """The single configuration SPEC names: a source, or SOURCE=NAME (name or identity key)."""
    from pytest_agentbench.configurations import GIVE_SOURCE, load_source, merge

    path, name = Path(spec), None
    if not path.exists():  # SOURCE=NAME; the name itself may hold "=" (mock pass_prob=0.3)
        splits = [i for i, char in enumerate(spec) if char == "="]
        for index in splits:
            if Path(spec[:index]).exists():
                path, name = Path(spec[:index]), spec[index + 1 :]
                break
    if not path.exists():
        raise ValueError(f"{path}: no such run directory or report; {GIVE_SOURCE}")
    configurations = merge(load_source(path))
    if name is not None:
        chosen = [
            c for c in configurations if name in (c.name, c.label()) or c.key.startswith(name)
        ]
    else:
        chosen = configurations
    if len(chosen) != 1:
        names = ", ".join(repr(c.name) for c in configurations)
        problem = "has several configurations" if name is None else f"has no configuration {name!r}"
        raise ValueError(f"{path} {problem}; pick one with {path}=NAME (one of {names})")
    return chosen[0]


def _number(value: float | None, kind: str) -> str:
    if value is None:
        return "unknown"
    return f"{value:+.3f}" if kind == "rate" else f"{value:.3f}x"


def render(comparison: Any) -> list[str]:
    from pytest_agentbench.compare import RATE_METRICS, RATIO_METRICS

    rows = [
        [
            t["id"],
            t["repeats"],
            _number(t["first_exact"], "rate"),
            _number(t["final_exact"], "rate"),
            _number(t["tokens_ratio"], "ratio"),
        ]
        for t in comparison.tasks
    ]
    headers = ["task", "repeats", "d first", "d final", "tokens ratio"]
    lines = [f"base {comparison.base}  vs  candidate {comparison.candidate}", ""]
    lines += format_table(headers, rows, right={1, 2, 3, 4})
    lines.append("")
    for metric in RATE_METRICS + RATIO_METRICS:
        s = comparison.suite[metric]
        kind = "rate" if metric in RATE_METRICS else "ratio"
        label = (
            f"d {metric} (mean difference)"
            if kind == "rate"
            else f"{metric} ratio (geometric mean)"
        )
        interval = (
            s["note"]
            if s["interval"] is None
            else f"90% CI [{_number(s['interval'][0], kind)}, {_number(s['interval'][1], kind)}]"
        )
        p = "unknown" if s["sign_test_p"] is None else f"{s['sign_test_p']:.4f}"
        lines.append(
            f"{label}: {_number(s['point'], kind)}  {interval}  sign test p={p}  "
            f"({s['pairs']} task pairs)"
        )
    if comparison.excluded:
        lines.append("excluded:")
        lines += [f"  {e['task']} ({e['metrics']}): {e['reason']}" for e in comparison.excluded]
    return lines


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.compare import compare, evaluate_gate, gates_exit_code, load_gates

    gates = load_gates(args.gates) if args.gates else []
    comparison = compare(pick(args.base), pick(args.candidate))
    print("\n".join(render(comparison)))
    if args.json:
        write_output("--json", args.json, json.dumps(comparison.to_json(), indent=1) + "\n")
    verdicts = []
    for gate in gates:
        verdict, text = evaluate_gate(gate, comparison)
        verdicts.append(verdict)
        print(f"gate {text}")
    code = gates_exit_code(verdicts)
    if gates:
        print(f"gates: {['all pass', 'a gate failed', 'undetermined'][code]} (exit {code})")
    return code
