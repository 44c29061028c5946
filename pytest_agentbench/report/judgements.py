"""The judges' tally in words: a few lines for the terminal, a table for Markdown
(docs/judges.md explains every figure)."""

from __future__ import annotations

from typing import Any

from pytest_agentbench.judge.verdict import SEVERITIES

HEADERS = ["judge", "side", "pairs", "wins", "losses", "ties", "win rate", "interval", "sign p"]
HEADERS += ["position consistency", "gold accuracy", "findings (crit/major/minor)", "flags"]


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(pair: list[float] | None) -> str:
    return "-" if pair is None else f"[{pair[0]:.2f}, {pair[1]:.2f}]"


def _gold(judge: dict[str, Any]) -> str:
    gold = judge["gold"]
    if gold is None:
        return "-"
    return f"{_num(gold['accuracy'])} of {gold['answers']}"


def _consistency(judge: dict[str, Any]) -> str:
    position = judge["position"]
    return f"{_num(position['consistency'])} of {position['pairs']}"


def _findings(judge: dict[str, Any], side: str) -> str:
    found = judge["findings"][side]
    return "/".join(str(found[s]) for s in SEVERITIES)


def rows(block: dict[str, Any]) -> list[list[str]]:
    table = []
    for judge in block["judges"]:
        for side in block["sides"]:
            s = judge["sides"][side]
            table.append(
                [
                    judge["judge"],
                    side,
                    str(s["pairs"]),
                    str(s["wins"]),
                    str(s["losses"]),
                    str(s["ties"]),
                    _num(s["win_rate"]),
                    _interval(s["interval"]),
                    _num(s["p_value"], 3),
                    _consistency(judge),
                    _gold(judge),
                    _findings(judge, side),
                    "; ".join(judge["flags"]) or "-",
                ]
            )
    return table


def _usage(judge: dict[str, Any]) -> str:
    usage = judge["usage"]
    tokens = "unknown" if usage["tokens"] is None else str(usage["tokens"])
    cost = "unknown" if usage["cost_usd"] is None else f"{usage['cost_usd']:.4f} USD"
    return f"{usage['calls']} calls, {tokens} tokens, {cost}"


def notes(block: dict[str, Any]) -> list[str]:
    """What the table leaves out: Bradley-Terry, agreement, errors, omitted and missing."""
    lines = []
    for judge in block["judges"]:
        name = judge["judge"]
        lines.append(
            f"{name}: {_usage(judge)}; {judge['judge_errors']} unparsed answers, "
            f"{judge['failed_calls']} failed calls"
        )
        bt = judge["bradley_terry"]
        if bt is not None:
            shown = ", ".join(
                f"{side} {_num(v['strength'])} {_interval(v['interval'])}"
                for side, v in bt["strengths"].items()
            )
            lines.append(f"{name}: Bradley-Terry strengths over {bt['pairs']} pairs: {shown}")
    for row in block["agreement"]:
        one, other = row["judges"]
        lines.append(
            f"agreement {one} / {other}: kappa {_num(row['kappa'])}, "
            f"{_num(row['agreement'])} equal over {row['answers']} answers"
        )
    if block["missing"]:
        lines.append(f"{block['missing']} of {block['prompts']} prompts not answered yet")
    if block["omitted"]:
        lines.append(f"{len(block['omitted'])} pairs left out (agentbench judge names them)")
    return lines


def terminal_lines(block: dict[str, Any]) -> list[str]:
    """A few lines: each judge's wins per side with the interval, and its flags."""
    level = round(block["level"] * 100)
    lines = [f"judges ({' vs '.join(block['sides'])}, {block['which']} pairs; {level}% Wilson):"]
    for judge in block["judges"]:
        sides = ", ".join(
            f"{side} {s['wins']}-{s['losses']}-{s['ties']} "
            f"win rate {_num(s['win_rate'])} {_interval(s['interval'])}"
            for side, s in judge["sides"].items()
        )
        lines.append(f"  {judge['judge']}: {sides}; consistency {_consistency(judge)}")
        if judge["gold"] is not None:
            lines.append(f"  {judge['judge']}: gold accuracy {_gold(judge)}")
        lines += [f"  FLAG {judge['judge']}: {flag}" for flag in judge["flags"]]
    return lines + [f"  {line}" for line in notes(block)]


def heading(block: dict[str, Any]) -> list[str]:
    """The Markdown section's heading and its one-line key (the table follows)."""
    level = round(block["level"] * 100)
    title = f"## Judges ({' vs '.join(block['sides'])}; {block['which']} pairs)"
    key = f"Win rate over decided pairs with its {level}% Wilson interval; see docs/judges.md."
    return ["", title, "", key, ""]
