"""`agentbench review`: one trial's change reviewed by the judge model alone, its findings by
severity (docs/judges.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_agentbench.commands.judge import INCOMPLETE, add_judge_arguments, judges_of

HELP = (
    "review one trial's change with a judge model: findings by severity, appended to the run "
    "directory's reviews.jsonl"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory")
    parser.add_argument(
        "trial", help="the trial: its folder under trials/ (t01-r0, core__t01-r0) or node id"
    )
    add_judge_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.judge.calls import Budget, ask_all
    from pytest_agentbench.judge.judging import REVIEWS_FILE, review_ask
    from pytest_agentbench.judge.pairs import Side, trial_pairs
    from pytest_agentbench.judge.verdict import SEVERITIES
    from pytest_agentbench.run.measuring import kept_change
    from pytest_agentbench.run.store import OBSERVATIONS_FILE, read_observations, read_run_file
    from pytest_agentbench.run.trajectories import latest_trials, trial_directory
    from pytest_agentbench.trial.artifacts import CHANGE_FILE

    read_run_file(args.run_dir)
    observations, _ = read_observations(args.run_dir / OBSERVATIONS_FILE)
    trials = latest_trials(observations)
    found = [
        o for o in trials if args.trial in (trial_directory(args.run_dir, o).name, o.get("nodeid"))
    ]
    if not found:
        names = ", ".join(sorted(trial_directory(args.run_dir, o).name for o in trials)[:8])
        raise ValueError(f"{args.run_dir}: no trial {args.trial!r}; its trials include {names}")
    observation = found[0]
    folder = trial_directory(args.run_dir, observation)
    diff = kept_change(folder / CHANGE_FILE, observation)
    if diff is None:
        raise ValueError(f"{folder}: the trial kept no {CHANGE_FILE}; nothing to review")
    side = Side(
        str(observation.get("arm") or args.run_dir.name), args.run_dir, observation.get("arm")
    )
    # The same task loading and the same anonymised names as `judge` uses for a pair.
    prepared = trial_pairs([side], "either", tuple(args.tasks or ()) or None, Path.cwd())
    task = prepared.tasks.get(observation["task"])
    if task is None:
        raise ValueError(f"{args.run_dir}: task {observation['task']!r} is not in the sources")
    judge = judges_of(args)[0]
    facts = {"task": observation["task"], "repeat": observation["repeat"], "trial": folder.name}
    ask = review_ask(
        judge, task.prompt, diff, bool(observation["final_exact"]), facts, prepared.names
    )
    budget = Budget(usd=args.budget_usd, tokens=args.budget_tokens)
    done = ask_all(
        [ask], args.run_dir / REVIEWS_FILE, budget, lambda line: print(line, file=sys.stderr)
    )
    record = done.records.get(ask.key)
    if record is None or record["error"]:
        why = "not asked" if record is None else record["error"]["message"]
        print(f"agentbench review: {folder.name}: no review ({why})", file=sys.stderr)
        return INCOMPLETE
    print(f"{folder.name} reviewed by {judge.name}{'' if done.new else ' (cached)'}:")
    for severity in SEVERITIES:
        listed = [f for f in record["findings"] if f["severity"] == severity]
        print(f"  {severity}: {len(listed)}")
        for f in listed:
            where = f["file"] + (f":{f['line']}" if f["line"] is not None else "")
            print(f"    {where or '-'}: {f['text']}")
    return 0
