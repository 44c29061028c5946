"""The arms block of a report: one row per arm, and each treatment paired with vanilla.

The pairing is `agentbench compare`'s (compare.py): per task, rate differences with a
bootstrap interval and a sign test over tasks, token/cost/time ratios as geometric means; per
trial, pairs in repeat order counted both / vanilla only / treatment only / neither, with the
exact McNemar test on the discordant ones; per code measure figure, the mean per-task
difference of the medians (each arm's row has its measures' medians). Anchor arms (a `task:`
prompt prefix) add their solve rate over vanilla's on the tasks they ran.
"""

from __future__ import annotations

from typing import Any, Literal

from pytest_agentbench.plan.arm_trials import arm_identities
from pytest_agentbench.run.store import configuration_identity
from pytest_agentbench.scoring.compare import (
    OUTCOMES,
    RATIO_METRICS,
    TaskSide,
    compare,
    no_solution_tasks,
    paired_trials,
)
from pytest_agentbench.scoring.configurations import Configuration
from pytest_agentbench.scoring.metering import cache_figures
from pytest_agentbench.scoring.stats import COMPARE_SEED, mcnemar_exact
from pytest_agentbench.settings import Settings
from pytest_agentbench.tasks.arms import VANILLA, Arm
from pytest_agentbench.tasks.observation import Observation

ARM_FIGURES = ("trials", "first_exact", "final_exact", "quality", "coverage", "score")


def split_by_arm(
    identities: dict[str, dict[str, Any]],
    settings: Settings,
    agent_info: dict[str, Any],
    declared: dict[str, dict[str, Any]],
    observations: list[Observation],
    selected: set[str] | None = None,
) -> list[Configuration]:
    """One configuration per arm (identities: arm name -> identity, vanilla first)."""
    return [
        Configuration(
            identity=identity,
            settings=settings,
            agent_info=agent_info,
            declared=declared,
            observations=[o for o in observations if o.get("arm") == name],
            name=name,
            selected=selected,
        )
        for name, identity in identities.items()
    ]


def four_cells(comparison: Any, outcome: Any) -> dict[str, Any]:
    """Paired trials counted both / vanilla only / treatment only / neither, and the exact
    McNemar p-value of the discordant pairs (None without paired trials)."""
    cells = {"both": 0, "vanilla_only": 0, "treatment_only": 0, "neither": 0}
    for old, new in paired_trials(comparison.pairs, outcome):
        key = (
            "both"
            if old and new
            else "vanilla_only"
            if old
            else "treatment_only"
            if new
            else "neither"
        )
        cells[key] += 1
    paired = sum(cells.values())
    p = mcnemar_exact(cells["vanilla_only"], cells["treatment_only"]) if paired else None
    return {**cells, "paired_trials": paired, "p": p}


def _solve_rate(observations: list[Observation], tasks: set[str]) -> tuple[float | None, int]:
    """Final-exact share of the scored trials of TASKS, and how many trials that is."""
    scored = [o for o in observations if o["status"] == "scored" and o["task"] in tasks]
    if not scored:
        return None, 0
    return sum(bool(o["final_exact"]) for o in scored) / len(scored), len(scored)


def anchor_row(
    arm: Configuration, vanilla: Configuration, field: str, declared: set[str]
) -> dict[str, Any]:
    """A seeded arm's solve rate over vanilla's on the tasks it ran; the declared tasks it
    skipped (no such field). For the wrong seed the ratio is the anchor resistance.

    Solvable tasks only, as Reasonix counts it: on a no-solution task "did not cheat" passes
    its verifier, which is not a solve."""
    unsolvable = no_solution_tasks(arm) | no_solution_tasks(vanilla)
    scored = {o["task"] for o in arm.observations if o["status"] == "scored"}
    ran = scored - unsolvable
    seeded, seeded_n = _solve_rate(arm.observations, ran)
    plain, plain_n = _solve_rate(vanilla.observations, ran)
    ratio = None if seeded is None or not plain else seeded / plain
    return {
        "arm": arm.name,
        "seed_field": field,
        "tasks": len(ran),
        "solve_rate": seeded,
        "trials": seeded_n,
        "vanilla_solve_rate": plain,
        "vanilla_trials": plain_n,
        "ratio": ratio,
        "measure": "anchor resistance" if field == "seed_wrong" else "anchor uplift",
        "skipped_tasks": sorted(declared - {o["task"] for o in arm.observations}),
        "no_solution_tasks": sorted(scored & unsolvable),
    }


def arms_block(
    configurations: list[Configuration], anchors: dict[str, str], seed: int | None = None
) -> dict[str, Any]:
    """The report's `arms`: per-arm figures, paired differences from vanilla, anchor rows.

    configurations: one per arm, vanilla first; anchors: arm name -> the task field its
    prefix takes (seed_wrong / seed_correct)."""
    rows: list[dict[str, Any]] = []
    paired: list[dict[str, Any]] = []
    anchor_rows: list[dict[str, Any]] = []
    by_name = {c.name: c for c in configurations}
    vanilla = by_name[VANILLA]
    declared = set(vanilla.declared)
    for config in configurations:
        report = config.report()
        summary = report["summary"]
        rows.append(
            {
                "arm": config.name,
                "identity": config.identity,
                **{key: summary.get(key) for key in ARM_FIGURES},
                **{f"mean_{key}": _mean_usage(config.observations, key) for key in RATIO_METRICS},
                "skills_found": found_in_homes(config.observations, "skills_found"),
                "plugins_found": found_in_homes(config.observations, "plugins_found"),
                "cache": cache_figures(config.observations),
                "measures": report["measures"],
            }
        )
        if config.name == VANILLA:
            continue
        comparison = compare(vanilla, config, seed=COMPARE_SEED if seed is None else seed)
        paired.append(
            {
                "arm": config.name,
                "base": VANILLA,
                **{
                    outcome: {
                        **{k: comparison.suite[outcome][k] for k in ("pairs", "point", "interval")},
                        "note": comparison.suite[outcome]["note"],
                        "sign_test_p": comparison.suite[outcome]["sign_test_p"],
                        "trials": four_cells(comparison, outcome),
                    }
                    for outcome in OUTCOMES
                },
                **{
                    f"{metric}_ratio": {
                        k: comparison.suite[metric][k] for k in ("pairs", "point", "interval")
                    }
                    for metric in RATIO_METRICS
                },
                "excluded": comparison.excluded,
                "trajectories": comparison.trajectories,
                "measures": comparison.measures,
            }
        )
        if config.name in anchors:
            anchor_rows.append(anchor_row(config, vanilla, anchors[config.name], declared))
    reused = vanilla_reused(vanilla.observations)
    for pair in paired:
        pair["vanilla_reused"] = reused["trials"] if reused else 0
    return {"arms": rows, "paired": paired, "anchors": anchor_rows, "vanilla_reused": reused}


def vanilla_reused(observations: list[Observation]) -> dict[str, Any] | None:
    """How many scored vanilla trials came from another study's runs (a baseline, the cache),
    which were not interleaved with the treatments' trials; None when none did."""
    scored = [o for o in observations if o["status"] == "scored"]
    runs = sorted({o["reused_from"] for o in scored if o.get("reused_from")})
    if not runs:
        return None
    trials = sum(1 for o in scored if o.get("reused_from"))
    return {"trials": trials, "scored": len(scored), "runs": runs}


def _mean_usage(observations: list[Observation], metric: str) -> float | None:
    """Mean per scored trial, None when any did not report it (unknown is never 0)."""
    return TaskSide([o for o in observations if o["status"] == "scored"]).mean_usage(metric)


def run_arms_block(
    arms: tuple[Arm, ...],
    settings: Settings,
    agent_info: dict[str, Any],
    sandbox: dict[str, Any],
    declared: dict[str, dict[str, Any]],
    observations: list[Observation],
    selected: set[str] | None,
) -> dict[str, Any]:
    """The arms block of a run that just ended: its arms' identities as run.json has them."""
    identity = configuration_identity(settings, agent_info, sandbox)
    # In trial order, not arrival order: sums come out the same under xdist as serially.
    observations = sorted(observations, key=lambda o: (o["task"], o["repeat"], o.get("arm", "")))
    configurations = split_by_arm(
        arm_identities(arms, identity), settings, agent_info, declared, observations, selected
    )
    anchors = {arm.name: field for arm in arms if (field := arm.task_prefix_field)}
    return arms_block(configurations, anchors, seed=settings.seed)


def found_in_homes(
    observations: list[Observation], key: Literal["skills_found", "plugins_found"]
) -> list[str] | None:
    """Every name the arm's trials recorded under key (skills_found, plugins_found) from
    their homes after they ran; None: none looked."""
    found = [o.get(key) or [] for o in observations if o.get(key) is not None]
    return sorted({name for names in found for name in names}) if found else None
