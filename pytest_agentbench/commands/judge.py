"""`agentbench judge`: blind pairwise judges of two or more sides' changes (docs/judges.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentbench.judge.asking import Asker
    from pytest_agentbench.judge.pairs import Side

HELP = (
    "ask blind judges (a model over an API, or an agent CLI) which of two sides' changes to "
    "each task is better: two or more arms of a run (--pair), or two or more run directories; "
    "writes judgements.jsonl and prints the tally"
)
INCOMPLETE = 1  # some prompt is not answered (failed calls, the budget): run again


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that name the judge, shared with `agentbench review`."""
    parser.add_argument(
        "--judge-model",
        action="append",
        default=None,
        help="the judge's model (repeatable: several judges, and their agreement)",
    )
    parser.add_argument(
        "--judge-api", choices=("openai", "anthropic"), default="openai", help="the model's API"
    )
    parser.add_argument(
        "--judge-base-url",
        help="the API's base URL (OpenAI: with /v1; Anthropic: without), e.g. a local server",
    )
    parser.add_argument(
        "--judge-agent", choices=("claude", "codex"), help="ask this agent CLI instead of an API"
    )
    parser.add_argument(
        "--judge-prices", type=Path, help="a price table (as --agentbench-prices) for the cost"
    )
    parser.add_argument(
        "--judge-timeout", type=float, default=300.0, help="seconds per call (default 300)"
    )
    parser.add_argument("--budget-usd", type=float, help="stop asking once this much is spent")
    parser.add_argument("--budget-tokens", type=int, help="stop asking once this many are used")
    parser.add_argument(
        "--tasks",
        action="append",
        default=None,
        help="task source as for pytest --tasks (repeatable; default: the runs' own)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pytest_agentbench.judge.judging import GOLD_THRESHOLD
    from pytest_agentbench.judge.pairs import WHICH

    parser.add_argument("run_dirs", type=Path, nargs="+", help="a run directory, or several")
    parser.add_argument("--pair", help="arms of the one run directory, comma-separated: A,B[,C]")
    parser.add_argument(
        "--which", choices=WHICH, default="either", help="which pairs: by their verifier outcome"
    )
    parser.add_argument(
        "--gold", action="store_true", help="also ask reference-against-worse pairs, and score"
    )
    parser.add_argument(
        "--gold-threshold",
        type=float,
        default=GOLD_THRESHOLD,
        help=f"flag a judge whose gold accuracy is below this (default {GOLD_THRESHOLD})",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    add_judge_arguments(parser)


def judges_of(args: argparse.Namespace) -> list[Asker]:
    """The Askers the options name."""
    from pytest_agentbench.agents.prices import load_prices
    from pytest_agentbench.judge.agent import agent_asker
    from pytest_agentbench.judge.api import api_asker
    from pytest_agentbench.judge.asking import JudgeError

    models = args.judge_model or []
    prices = load_prices(args.judge_prices) if args.judge_prices else {}
    if args.judge_agent:
        try:
            return [
                agent_asker(
                    args.judge_agent,
                    m,
                    args.judge_base_url,
                    timeout=args.judge_timeout,
                    prices=prices,
                )
                for m in models or [None]
            ]
        except JudgeError as exc:
            raise ValueError(str(exc)) from None  # it names --judge-agent and the fix
    if not models:
        raise ValueError("name the judge: --judge-model MODEL (with --judge-api), or --judge-agent")
    return [
        api_asker(args.judge_api, m, args.judge_base_url, prices, args.judge_timeout)
        for m in models
    ]


def sides_of(args: argparse.Namespace) -> list[Side]:
    from pytest_agentbench.judge.pairs import Side
    from pytest_agentbench.run.store import OBSERVATIONS_FILE, read_observations, read_run_file

    for run_dir in args.run_dirs:
        read_run_file(run_dir)  # a run directory, or the error saying it is not one
    if args.pair:
        if len(args.run_dirs) != 1:
            raise ValueError("--pair names arms of one run directory; give exactly one")
        arms = [a.strip() for a in args.pair.split(",")]
        if len(arms) < 2 or len(set(arms)) != len(arms) or not all(arms):
            raise ValueError(f"--pair {args.pair!r}: name two or more different arms, A,B[,C]")
        run_dir = args.run_dirs[0]
        observations, _ = read_observations(run_dir / OBSERVATIONS_FILE)
        present = sorted({str(o["arm"]) for o in observations if o.get("arm")})
        unknown = [a for a in arms if a not in present]
        if unknown:
            raise ValueError(
                f"--pair: {run_dir} has no arm {', '.join(unknown)}; its arms: "
                f"{', '.join(present) or 'none (compare two run directories instead)'}"
            )
        return [Side(arm, run_dir, arm) for arm in arms]
    if len(args.run_dirs) < 2:
        raise ValueError("judge two sides: --pair A,B (arms of the run) or two run directories")
    labels = [d.name or str(d) for d in args.run_dirs]
    if len(set(labels)) != len(labels):
        labels = [str(d) for d in args.run_dirs]
    return [Side(label, d, None) for label, d in zip(labels, args.run_dirs, strict=True)]


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.judge.calls import Budget
    from pytest_agentbench.judge.judging import JUDGEMENTS_FILE, judge_pairs, pair_asks
    from pytest_agentbench.judge.pairs import gold_pairs, trial_pairs
    from pytest_agentbench.judge.tally import judgements_block
    from pytest_agentbench.report.judgements import terminal_lines

    def log(line: str) -> None:
        print(f"agentbench judge: {line}", file=sys.stderr, flush=True)

    sides = sides_of(args)
    judges = judges_of(args)
    prepared = trial_pairs(sides, args.which, tuple(args.tasks or ()) or None, Path.cwd())
    for left in prepared.omitted:
        where = f"{left['task']} r{left['repeat']} ({' vs '.join(left['sides'])})"
        log(f"left out {where}: {left['why']}")
    pairs = list(prepared.pairs)
    gold = gold_pairs(prepared.judged_tasks()) if args.gold else []
    asks = pair_asks(pairs + gold, judges, prepared.names)
    log(
        f"{len(pairs)} pairs{f' and {len(gold)} gold pairs' if args.gold else ''}, both orders, "
        f"{len(judges)} judge{'s' if len(judges) != 1 else ''}: {len(asks)} prompts"
    )
    request = {
        "which": args.which,
        "gold": args.gold,
        "gold_threshold": args.gold_threshold,
        "omitted": prepared.omitted,
    }
    budget = Budget(usd=args.budget_usd, tokens=args.budget_tokens)
    run_dir = args.run_dirs[0]
    done = judge_pairs(run_dir, sides, asks, request, budget, log)
    cache = len(done.records) - done.new
    log(f"asked {done.new}, {cache} from the cache ({run_dir / JUDGEMENTS_FILE})")
    block = judgements_block(run_dir)
    assert block is not None
    if args.format == "json":
        print(json.dumps(block, indent=1))
    else:
        print("\n".join(terminal_lines(block)))
    return INCOMPLETE if block["missing"] or done.failed else 0
