"""The suite: every family of every module, expanded into Specs sorted by id."""

from __future__ import annotations

from functools import cache

from pytest_agentbench.suites.mechanical.families import (
    files,
    languages,
    lookalikes,
    markers,
    replace,
    titles,
    traps,
)
from pytest_agentbench.suites.mechanical.spec import Family, Spec
from pytest_agentbench.suites.mechanical.unicode import VARIANTS

FAMILIES: tuple[Family, ...] = (
    *replace.FAMILIES,
    *titles.FAMILIES,
    *traps.FAMILIES,
    *lookalikes.FAMILIES,
    *markers.FAMILIES,
    *languages.FAMILIES,
    *files.FAMILIES,
)


@cache
def _all_specs() -> tuple[Spec, ...]:
    found = sorted((s for f in FAMILIES for s in f.specs(VARIANTS)), key=lambda s: s.id)
    ids = [s.id for s in found]
    if len(set(ids)) != len(ids):
        raise AssertionError("duplicate task ids in the mechanical suite")
    return tuple(found)


def specs() -> list[Spec]:
    """Every task of the suite, sorted by id; no tree is built here."""
    return list(_all_specs())
