"""The judges' tally (docs/judges.md explains every figure): per judge, each side's wins,
losses and ties over matched pairs with a Wilson interval and a sign test, position
consistency, Bradley-Terry strengths for more than two sides, findings by severity, gold
accuracy, usage and the flags; between judges, Cohen's kappa.

A pair's two orders are combined into one outcome: each answered order is a vote for a side
(or none, a tie), and the side with more votes wins the pair; a pair none of whose orders was
answered is not counted. Unknown usage is never zero: a total with an unknown part is null.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from pytest_agentbench.judge.calls import ANSWER, TRANSPORT
from pytest_agentbench.judge.judging import GOLD_THRESHOLD, read_judgements
from pytest_agentbench.judge.pairs import REFERENCE
from pytest_agentbench.judge.stats import (
    bradley_terry,
    bradley_terry_intervals,
    cohen_kappa,
    wilson_interval,
)
from pytest_agentbench.judge.verdict import SEVERITIES
from pytest_agentbench.scoring.stats import COMPARE_LEVEL, binomial_two_sided

MIN_CONSISTENCY = 0.5  # position consistency below this flags the judge
A_RATE_BAND = (0.2, 0.8)  # side-A rate outside this, over MIN_A_ASKS answers, flags it
MIN_A_ASKS = 10

Record = dict[str, Any]


def _answered(record: Record) -> bool:
    return record.get("error") is None and record.get("winner") is not None


def _pair_id(record: Record) -> tuple[Any, ...]:
    return (record["kind"], record["task"], record["repeat"], record["gold"], *record["sides"])


def _outcomes(records: Iterable[Record]) -> list[tuple[tuple[str, str], str, list[Record]]]:
    """Each pair's sides, its combined outcome (a side or tie) and its answered records."""
    grouped: dict[tuple[Any, ...], list[Record]] = defaultdict(list)
    for record in records:
        if _answered(record):
            grouped[_pair_id(record)].append(record)
    outcomes = []
    for answered in grouped.values():
        first, second = answered[0]["sides"]
        votes = sum((r["winner"] == first) - (r["winner"] == second) for r in answered)
        outcome = first if votes > 0 else second if votes < 0 else "tie"
        outcomes.append(((first, second), outcome, answered))
    return outcomes


def _rate(wins: int, losses: int, ties: int) -> dict[str, Any]:
    decided = wins + losses
    return {
        "pairs": decided + ties,
        "wins": wins,
        "losses": losses,
        "ties": ties,
        "win_rate": wins / decided if decided else None,
        "interval": wilson_interval(wins, decided),
        "p_value": binomial_two_sided(wins, losses) if decided else None,
    }


def _position(records: Sequence[Record], outcomes: list[Any]) -> dict[str, Any]:
    both = [rs for _, _, rs in outcomes if len({r["first"] for r in rs}) == 2]
    consistent = sum(1 for rs in both if len({r["winner"] for r in rs}) == 1)
    answered = [r for r in records if _answered(r)]
    a_votes = sum(1 for r in answered if r["verdict"] == "A")
    return {
        "pairs": len(both),
        "consistent": consistent,
        "consistency": consistent / len(both) if both else None,
        "answers": len(answered),
        "a_votes": a_votes,
        "a_rate": a_votes / len(answered) if answered else None,
    }


def _usage(records: Sequence[Record]) -> dict[str, Any]:
    tokens = [
        None
        if r["input_tokens"] is None or r["output_tokens"] is None
        else r["input_tokens"] + r["output_tokens"]
        for r in records
    ]
    costs = [r["cost_usd"] for r in records]
    known_tokens = [t for t in tokens if t is not None]
    known_costs = [c for c in costs if c is not None]
    return {
        "calls": len(records),
        "unknown_calls": sum(1 for t in tokens if t is None),
        "tokens": sum(known_tokens) if len(known_tokens) == len(tokens) else None,
        "known_tokens": sum(known_tokens) if known_tokens else None,
        "cost_usd": sum(known_costs) if len(known_costs) == len(costs) else None,
        "known_cost_usd": sum(known_costs) if known_costs else None,
    }


def _findings(records: Sequence[Record], sides: Sequence[str]) -> dict[str, Any]:
    found: dict[str, dict[str, int]] = {s: dict.fromkeys(SEVERITIES, 0) for s in sides}
    answers = dict.fromkeys(sides, 0)
    for record in records:
        if not _answered(record):
            continue
        for side in record["sides"]:
            answers[side] += 1
        for finding in record["findings"]:
            found[finding["side"]][finding["severity"]] += 1
    return {s: {**found[s], "answers": answers[s]} for s in sides}


def _gold(records: Sequence[Record], threshold: float) -> dict[str, Any] | None:
    if not records:
        return None
    answered = [r for r in records if _answered(r)]
    correct = sum(1 for r in answered if r["winner"] == REFERENCE)
    return {
        "pairs": len({_pair_id(r) for r in records}),
        "answers": len(answered),
        "correct": correct,
        "accuracy": correct / len(answered) if answered else None,
        "threshold": threshold,
    }


def _flags(position: dict[str, Any], gold: dict[str, Any] | None) -> list[str]:
    flags = []
    if position["consistency"] is not None and position["consistency"] < MIN_CONSISTENCY:
        flags.append(
            f"position consistency {position['consistency']:.2f} < {MIN_CONSISTENCY} "
            f"over {position['pairs']} pairs"
        )
    low, high = A_RATE_BAND
    if position["answers"] >= MIN_A_ASKS and not low <= position["a_rate"] <= high:
        flags.append(f"side-A rate {position['a_rate']:.2f} outside {low}-{high}")
    if gold is not None:
        accuracy = gold["accuracy"]
        if accuracy is None:
            flags.append("gold pairs asked but none answered")
        elif accuracy < gold["threshold"]:
            flags.append(
                f"gold accuracy {accuracy:.2f} < {gold['threshold']} over {gold['answers']} answers"
            )
    return flags


def _judge(
    name: str, records: Sequence[Record], sides: Sequence[str], threshold: float
) -> dict[str, Any]:
    trial = [r for r in records if r["kind"] == "trial"]
    outcomes = _outcomes(trial)
    tallies = {s: [0, 0, 0] for s in sides}  # wins, losses, ties
    pairings: dict[tuple[str, str], list[int]] = {
        pair: [0, 0, 0] for pair in combinations(sides, 2)
    }
    for (first, second), outcome, _ in outcomes:
        if outcome == "tie":
            tallies[first][2] += 1
            tallies[second][2] += 1
            pairings[(first, second)][2] += 1
            continue
        loser = second if outcome == first else first
        tallies[outcome][0] += 1
        tallies[loser][1] += 1
        pairings[(first, second)][0 if outcome == first else 1] += 1
    position = _position(trial, outcomes)
    gold = _gold([r for r in records if r["kind"] == "gold"], threshold)
    errors = [r for r in records if r.get("error")]
    block: dict[str, Any] = {
        "judge": name,
        "asked": len(records),
        "judge_errors": sum(1 for r in errors if r["error"]["kind"] == ANSWER),
        "failed_calls": sum(1 for r in errors if r["error"]["kind"] == TRANSPORT),
        "sides": {s: _rate(*tallies[s]) for s in sides},
        "pairings": [{"sides": list(pair), **_rate(*counts)} for pair, counts in pairings.items()],
        "position": position,
        "findings": _findings(trial, sides),
        "gold": gold,
        "usage": _usage(records),
        "bradley_terry": _bradley_terry(outcomes, sides) if len(sides) > 2 else None,
    }
    block["flags"] = _flags(position, gold)
    return block


def _bradley_terry(outcomes: list[Any], sides: Sequence[str]) -> dict[str, Any]:
    index = {s: k for k, s in enumerate(sides)}
    games = [
        (index[a], index[b], 0.5 if won == "tie" else float(won == a))
        for (a, b), won, _ in outcomes
    ]
    strengths = bradley_terry(games, len(sides))
    intervals = bradley_terry_intervals(games, len(sides))
    return {
        "pairs": len(games),
        "strengths": {
            s: {"strength": strengths[k], "interval": intervals[k]} for s, k in index.items()
        },
    }


def _agreement(by_judge: dict[str, list[Record]]) -> list[dict[str, Any]]:
    verdicts = {
        judge: {(*_pair_id(r), r["first"]): r["verdict"] for r in rs if _answered(r)}
        for judge, rs in by_judge.items()
    }
    rows = []
    for one, other in combinations(sorted(verdicts), 2):
        common = sorted(set(verdicts[one]) & set(verdicts[other]), key=repr)
        labels = [(verdicts[one][k], verdicts[other][k]) for k in common]
        agreed = sum(1 for a, b in labels if a == b)
        rows.append(
            {
                "judges": [one, other],
                "answers": len(labels),
                "agreement": agreed / len(labels) if labels else None,
                "kappa": cohen_kappa(labels),
            }
        )
    return rows


def tally(selection: dict[str, Any], records: Sequence[Record]) -> dict[str, Any]:
    """The tally of a judge request (judging.json) from its records."""
    sides = list(selection["sides"])
    threshold = float(selection.get("gold_threshold", GOLD_THRESHOLD))
    by_judge: dict[str, list[Record]] = {j: [] for j in selection["judges"]}
    for record in records:
        by_judge.setdefault(record["judge"], []).append(record)
    judges = [_judge(name, rs, sides, threshold) for name, rs in by_judge.items()]
    return {
        "sides": sides,
        "which": selection.get("which"),
        "level": COMPARE_LEVEL,
        "prompts": len(selection["keys"]),
        "missing": len(selection["keys"]) - len(records),
        "omitted": selection.get("omitted") or [],
        "judges": judges,
        "agreement": _agreement(by_judge) if len(by_judge) > 1 else [],
        "flagged": [j["judge"] for j in judges if j["flags"]],
    }


def judgements_block(run_dir: Path) -> dict[str, Any] | None:
    """The tally of the run directory's latest judge request; None when it was never judged."""
    found = read_judgements(run_dir)
    return None if found is None else tally(*found)
