"""Treatment receipts: what an arm declared against what the CLI itself says it loaded.

Before the first model call a discovery run of the CLI (each adapter's own machine-readable
listing, no user message) reports the components it sees, kind by kind. The receipt puts each
kind's expected names beside the seen ones: equal is `verified`, different is `mismatch` (the
trial stops as a harness error, never the agent's), and a kind the CLI cannot list is
`unverified` until the first request on the wire shows it. Kinds are open: a new component
kind is one more entry, expected and seen.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentbench.agents.delivery import Places
from pytest_agentbench.tasks.arms import Arm
from pytest_agentbench.tasks.plugins import components

TREATMENT_FILE = "treatment.json"  # in the trial directory
SCHEMA = 1
VERIFIED, MISMATCH, UNVERIFIED = "verified", "mismatch", "unverified"
WIRE_SHOWN, WIRE_MISSING = "verified_on_wire", "missing_on_wire"
MISMATCH_CAUSE = "treatment_mismatch"  # the infrastructure cause of a stopped trial
DISCOVERY_CAUSE = "treatment_discovery"  # the discovery run itself failed


@dataclass
class Discovery:
    """What one discovery run reported. A kind mapped to None is one the CLI cannot list."""

    method: str  # how the CLI was asked, for people
    cli_version: str | None = None
    seen: dict[str, list[str] | None] = field(default_factory=dict)
    builtin: dict[str, list[str]] = field(default_factory=dict)  # the CLI's own, recorded apart
    other: dict[str, list[str]] = field(default_factory=dict)  # e.g. the task's project files
    model_calls: int | None = None  # what the CLI says it spent; 0 proves no model call
    error: str | None = None  # the run failed or its answer could not be read


def expected(arm: Arm, places: Places, skills_by_dir: bool = False) -> dict[str, list[str]]:
    """The components the arm declares, kind by kind, as a CLI names them: guidance by its
    home path (`~/.claude/CLAUDE.md`), skills by their front matter name (by their directory
    name for a CLI that names them so: Claude Code); user hooks none (an arm declares hooks
    only inside plugins); its plugins' skills as `plugin:skill` (the skill named the same
    way) and hooks as `plugin:Event[matcher]: command`."""
    guidance = [f"~/{places.guidance}"] if arm.guidance is not None and places.guidance else []
    want = {
        "guidance": guidance,
        "skills": sorted(s.dir_name if skills_by_dir else s.name for s in arm.skills),
        "hooks": [],
    }
    if arm.plugins:
        hooks = (f"{p.name}:{hook}" for p in arm.plugins for hook in components(p)["hooks"])
        want["plugin_hooks"] = sorted(hooks)
        want["plugin_skills"] = sorted(
            f"{p.name}:{s.dir.rsplit('/', 1)[-1] if skills_by_dir else s.name}"
            for p in arm.plugins
            for s in p.skills
        )
    return want


def plugin_hook_name(plugin: str, event: str, matcher: str, command: str) -> str:
    """A plugin hook as the receipt names it (`plugin` without its marketplace)."""
    return f"{plugin.split('@', 1)[0]}:{event}[{matcher}]: {command}"


def delivered_hashes(arm: Arm, home: Path, places: Places) -> dict[str, str | None]:
    """sha256 of each delivered file in the private home (None: gone), by home path: the
    guidance, the skills' files and the plugins' trees."""
    paths = [places.guidance] if arm.guidance is not None and places.guidance else []
    if places.skills:
        paths += [f"{places.skills}/{f.rel}" for skill in arm.skills for f in skill.files]
    if places.plugins:
        paths += [
            f"{places.plugins.format(name=p.name)}/{f.rel}" for p in arm.plugins for f in p.files
        ]
    hashes: dict[str, str | None] = {}
    for rel in paths:
        try:
            hashes[f"~/{rel}"] = hashlib.sha256((home / rel).read_bytes()).hexdigest()
        except OSError:
            hashes[f"~/{rel}"] = None
    return hashes


def build(agent: str, arm: Arm, want: Mapping[str, list[str]], found: Discovery) -> dict[str, Any]:
    """The receipt of a discovery run: each kind expected against seen, and its status."""
    components: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    # A kind the arm declares nothing of is still checked where the CLI lists some.
    undeclared: dict[str, list[str]] = {
        kind: [] for kind, seen in found.seen.items() if seen and kind not in want
    }
    for kind, names in {**want, **undeclared}.items():
        seen = found.seen.get(kind)
        if seen is None or found.error:
            status = UNVERIFIED
        elif sorted(seen) == sorted(names):
            status = VERIFIED
        else:
            status = MISMATCH
            missing = sorted(set(names) - set(seen))
            extra = sorted(set(seen) - set(names))
            problems.append(
                f"{kind}: "
                + "; ".join(
                    part
                    for part in (
                        f"declared but not seen {missing}" if missing else "",
                        f"seen but not declared {extra}" if extra else "",
                    )
                    if part
                )
            )
        components[kind] = {"expected": sorted(names), "seen": seen, "status": status}
    if found.model_calls:
        problems.append(f"discovery spent model calls: {found.model_calls}")
    return {
        "schema": SCHEMA,
        "agent": agent,
        "arm": arm.name,
        "discovery": {
            "method": found.method,
            "cli_version": found.cli_version,
            "model_calls": found.model_calls,
            "error": found.error,
        },
        "components": components,
        "builtin": found.builtin,
        "other": found.other,
        "problems": problems,
        "status": status_of(components, problems),
    }


def status_of(components: Mapping[str, Mapping[str, Any]], problems: list[str]) -> str:
    """mismatch when anything disagrees, else unverified while a kind is, else verified."""
    if problems:
        return MISMATCH
    if any(c["status"] == UNVERIFIED for c in components.values()):
        return UNVERIFIED
    return VERIFIED


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def first_request_text(wire: str) -> str | None:
    """Every string of the first agent request on the wire (a wire.jsonl text), joined; None
    when the wire holds none. A side request without tools (a session title, a token count)
    carries no instructions and is passed over."""
    for line in wire.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("has_tools") is False:
            continue
        request = record.get("request")
        if isinstance(request, Mapping):
            return "\n".join(_strings(request))
    return None


def check_wire(receipt: dict[str, Any], arm: Arm, wire: str | None) -> None:
    """Settle each unverified kind on the first request: the guidance text and every skill
    name must be in it (`wire`), else the kind is `missing_on_wire` and the receipt a
    mismatch. Without a recorded wire (unmetered) the kinds stay unverified."""
    text = first_request_text(wire) if wire else None
    receipt["wire"] = "first request checked" if text is not None else "no request recorded"
    if text is None:
        return
    needles = {
        "guidance": [arm.guidance.strip()] if arm.guidance is not None else [],
        "skills": [skill.name for skill in arm.skills],
    }
    for kind, component in receipt["components"].items():
        if component["status"] != UNVERIFIED or not needles.get(kind):
            continue  # nothing declared to look for: absence is no proof
        absent = [n[:60] for n in needles[kind] if n not in text]
        component["status"] = WIRE_MISSING if absent else WIRE_SHOWN
        if absent:
            receipt["problems"].append(f"{kind}: not in the first request: {absent}")
    if receipt["problems"]:
        receipt["status"] = MISMATCH
    elif any(c["status"] == UNVERIFIED for c in receipt["components"].values()):
        receipt["status"] = UNVERIFIED
    else:
        receipt["status"] = VERIFIED


def check_after(
    receipt: dict[str, Any],
    before: Mapping[str, str | None],
    after: Mapping[str, str | None],
    reported: Mapping[str, Any] | None,
) -> None:
    """Record what holds after coding: the delivered files unchanged (hashed before and
    after), and what the CLI reported of itself while coding (version, skills, plugins,
    hooks that ran) with whether its skills and version are the receipt's. Recorded, never
    judged: what the agent did to its own home is its doing."""
    changed = sorted(k for k in before if before[k] != after.get(k))
    facts: dict[str, Any] = {"delivered_unchanged": not changed, "delivered_changed": changed}
    if reported is not None:
        facts["reported"] = dict(reported)
        builtin = set(receipt["builtin"].get("commands", ()))
        if reported.get("all_skills") is not None:  # the CLI's built-in ones left out
            skills = sorted(s for s in reported["all_skills"] if s not in builtin)
            parts = receipt["components"]
            declared = [
                *parts["skills"]["expected"],
                *parts.get("plugin_skills", {}).get("expected", []),
            ]
            facts["skills"] = skills
            facts["skills_match"] = skills == sorted(declared)
        version = receipt["discovery"]["cli_version"]
        if reported.get("cli_version") is not None and version is not None:
            facts["cli_version_match"] = reported["cli_version"] == version
    receipt["after"] = facts
