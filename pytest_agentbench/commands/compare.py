"""`agentbench compare BASE CAND [--gates gates.toml]`: paired differences and CI gates.

Exit codes: 0 every gate passes (or no gates), 1 a gate fails, 2 the input is unusable (the
one-line message says why, as for every agentbench command), 3 no gate fails but one is
undetermined.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_agentbench.commands import write_output
from pytest_agentbench.fs.wording import plural, points
from pytest_agentbench.report.table import format_table
from pytest_agentbench.report.trajectories import paired_trajectory_text

HELP = (
    "compare two runs task by task (paired) and check gates: exit 0 pass, 1 a gate failed, "
    "2 unusable input, 3 a gate undetermined"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "base", help="run directory or JSON report; DIR=CONFIG picks a configuration"
    )
    parser.add_argument(
        "candidate",
        nargs="?",
        help="run directory or JSON report; DIR=CONFIG as for base (not with --arms)",
    )
    parser.add_argument(
        "--arms",
        metavar="BASE,CANDIDATE",
        help="compare two arms of one run with arms: BASE names its run directory, e.g. "
        "agentbench compare RUN_DIR --arms vanilla,core",
    )
    parser.add_argument(
        "--gates", type=Path, help="TOML file of [[gate]] tables and optional [splits]"
    )
    parser.add_argument("--json", type=Path, help="also write the comparison as JSON here")
    parser.add_argument(
        "--markdown",
        type=Path,
        help="also write the gates' verdicts as Markdown here (a CI job summary)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="seed of the bootstrap intervals (default 0: the same runs give the same intervals)",
    )
    parser.add_argument(
        "--require-same",
        metavar="FIELD,...",
        help="refuse to compare unless these identity fields are equal on both sides, e.g. "
        "model,cli_version (fields: agent, model, reasoning, cli_version, sandbox, tasks, ...)",
    )


def split_spec(spec: str) -> tuple[Path, str | None]:
    """SOURCE or SOURCE=NAME; the name itself may hold "=" (mock pass_prob=0.3)."""
    if not Path(spec).exists():
        for index in [i for i, char in enumerate(spec) if char == "="]:
            if Path(spec[:index]).exists():
                return Path(spec[:index]), spec[index + 1 :]
    return Path(spec), None


def pick(spec: str) -> Any:
    """The single configuration SPEC names: a source, or SOURCE=NAME (name or identity key)."""
    from pytest_agentbench.scoring.configurations import GIVE_SOURCE, load_source, merge

    path, name = split_spec(spec)
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
    return points(value) if kind == "rate" else f"{value:.3f}x"


def header(comparison: Any) -> list[str]:
    """Who is compared with whom, and every identity field on which they differ."""
    from pytest_agentbench.scoring.compare import difference_text

    lines = [f"base      {comparison.base}", f"candidate {comparison.candidate}"]
    found = [difference_text(name, d) for name, d in comparison.differences.items()]
    lines += [f"differs   {text}" for text in found] or [
        "differs   nothing: same identity, same tasks"
    ]
    return lines


def _p(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def render(comparison: Any) -> list[str]:
    from pytest_agentbench.scoring.compare import OUTCOMES, RATE_METRICS, RATIO_METRICS

    rows = [
        [
            t["id"],
            f"{t['base_trials']}/{t['candidate_trials']}",
            _number(t["first_exact"], "rate"),
            _number(t["final_exact"], "rate"),
            _number(t["tokens_ratio"], "ratio"),
        ]
        for t in comparison.tasks
    ]
    headers = ["task", "trials b/c", "d first", "d final", "tokens ratio"]
    lines = [*header(comparison), ""]
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
        lines.append(
            f"{label}: {_number(s['point'], kind)}  {interval}  sign test p={_p(s['sign_test_p'])}"
            f"  ({s['pairs']} task pairs)"
        )
        if s["mcnemar"] is not None:
            m = s["mcnemar"]
            lines.append(
                f"  McNemar exact p={_p(m['p'])}: {m['base_only']} base-only and "
                f"{m['candidate_only']} candidate-only passes of {m['paired_trials']} paired trials"
            )
    for outcome in OUTCOMES:
        c = comparison.passes[outcome]
        lines.append(
            f"{outcome} passes: base {c['base']}, candidate {c['candidate']} of {c['slots']} trial "
            f"slots (unknown outcomes: {c['base_unknown']} counted as base passes, "
            f"{c['candidate_unknown']} as candidate failures)"
        )
    lines.append(f"bootstrap seed {comparison.seed}")
    if paired_trajectory_text(comparison.trajectories):
        lines.append("candidate - base, " + paired_trajectory_text(comparison.trajectories))
    if comparison.measures:
        lines += ["", *measure_table(comparison.measures)]
    if len(comparison.classes) > 1:
        lines += ["", *class_table(comparison.classes)]
    if comparison.no_solution:
        lines.append(
            f"not compared on accuracy: {plural(len(comparison.no_solution), 'no-solution task')} "
            "(scored on integrity)"
        )
    if comparison.excluded:
        lines.append("excluded:")
        lines += [f"  {e['task']} ({e['metrics']}): {e['reason']}" for e in comparison.excluded]
    return lines


def measure_table(block: dict[str, Any]) -> list[str]:
    """Per code measure figure: candidate - base, the mean per-task difference of the medians
    with its interval and how many tasks paired."""
    from pytest_agentbench.report.measures import PAIRED_MEASURE_HEADERS, paired_measure_rows

    rows = [row[1:] for row in paired_measure_rows([("", block)])]
    title = (
        "code measures, candidate - base: mean per-task difference of the medians over "
        f"scored trials ({plural(block['tasks'], 'task')} paired)"
    )
    return [title, *format_table(PAIRED_MEASURE_HEADERS[1:], rows, right={1, 3})]


def class_table(classes: list[dict[str, Any]]) -> list[str]:
    """The per-class breakdown: paired tasks, trials and mean differences per task class."""
    rows = [
        [
            row["category"] or "(none)",
            str(row["tasks"]),
            f"{row['base_trials']}/{row['candidate_trials']}",
            _number(row["first_exact"], "rate"),
            _number(row["final_exact"], "rate"),
            _number(row["tokens_ratio"], "ratio"),
        ]
        for row in classes
    ]
    headers = ["class", "tasks", "trials b/c", "d first", "d final", "tokens ratio"]
    return format_table(headers, rows, right={1, 2, 3, 4, 5})


def sides(args: argparse.Namespace) -> tuple[str, str]:
    """The two configuration specs: BASE and CANDIDATE, or with --arms A,B the arms A and B of
    the one run BASE names (each arm of a run with arms is a configuration of its own)."""
    if args.arms is None:
        if args.candidate is None:
            raise ValueError("compare needs BASE and CANDIDATE, or one run and --arms BASE,CAND")
        return args.base, args.candidate
    names = [name.strip() for name in args.arms.split(",")]
    if len(names) != 2 or not all(names) or args.candidate is not None:
        raise ValueError(
            f"--arms {args.arms}: give one run directory and two of its arms, e.g. "
            "agentbench compare RUN_DIR --arms vanilla,core"
        )
    return f"{args.base}={names[0]}", f"{args.base}={names[1]}"


def comparators(gates: Any, base_spec: str, cand_spec: str, base: Any) -> dict[str | None, Any]:
    """Each `against` of the gates as a configuration: an arm (a configuration) of the
    candidate's or the base's source, or a run directory or report; None is the base."""
    found: dict[str | None, Any] = {None: base}
    for against in gates.against():
        if against is None:
            continue
        tried = []
        for spec in dict.fromkeys((cand_spec, base_spec)):
            try:
                found[against] = pick(f"{split_spec(spec)[0]}={against}")
                break
            except ValueError as exc:
                tried.append(str(exc))
        else:
            try:
                found[against] = pick(against)
            except ValueError as exc:
                raise ValueError(
                    f"{gates.path}: against {against!r}: no arm of that name ({tried[0]}), "
                    f"nor a run: {exc}"
                ) from None
    return found


def gate_block(
    args: argparse.Namespace, comparison: Any, base: str, cand: str, require_same: list[str]
) -> dict[str, Any]:
    """Every gate's verdicts (scoring/gates.py), each comparator held to the base's rules:
    runs that measure different things, or differ in a --require-same field, are refused."""
    from pytest_agentbench.scoring.compare import difference_text, differences, pairing_problems
    from pytest_agentbench.scoring.gates import judge, load_gates_file

    gates = load_gates_file(args.gates)
    candidate = pick(cand)
    against = comparators(gates, base, cand, pick(base))
    for name, comparator in against.items():
        if name is None:
            continue  # the base: compare() checked it
        problems = pairing_problems(comparator, candidate)
        if problems:
            raise ValueError(
                f"{gates.path}: against {name!r} cannot be paired with the candidate; "
                "differing fields:\n  " + "\n  ".join(problems)
            )
        found = differences(comparator, candidate)
        required = [field for field in require_same if field in found]
        if required:
            shown = "; ".join(difference_text(field, found[field]) for field in required)
            raise ValueError(f"{gates.path}: against {name!r}: --require-same: {shown}")
    return judge(gates, candidate, against, comparison)


def run(args: argparse.Namespace) -> int:
    from pytest_agentbench.report.gates import gates_markdown, gates_text
    from pytest_agentbench.scoring.compare import compare, parse_require_same
    from pytest_agentbench.scoring.gates import load_gates_file
    from pytest_agentbench.scoring.stats import COMPARE_SEED

    require_same = parse_require_same(args.require_same) if args.require_same else []
    if args.gates:
        load_gates_file(args.gates)  # a bad gates file stops compare before any work
    elif args.markdown:
        raise ValueError("--markdown writes the gates' verdicts: give --gates too")
    seed = COMPARE_SEED if args.seed is None else args.seed
    base, candidate = sides(args)
    comparison = compare(pick(base), pick(candidate), seed=seed, require_same=require_same)
    block = gate_block(args, comparison, base, candidate, require_same) if args.gates else None
    print("\n".join(render(comparison)))
    if block is not None:
        print("\n".join(gates_text(block)))
    if args.json:
        document = comparison.to_json()
        if block is not None:
            document["gates"] = block
        write_output("--json", args.json, json.dumps(document, indent=1) + "\n")
    if args.markdown and block is not None:
        write_output("--markdown", args.markdown, gates_markdown(block))
    return 0 if block is None else int(block["exit"])
