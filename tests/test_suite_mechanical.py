"""The bundled mechanical suite: pinned by its golden file, deterministic, sound."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pytest_agentbench.suites import mechanical
from pytest_agentbench.suites.mechanical import golden
from pytest_agentbench.suites.mechanical.prompt import PREAMBLE
from pytest_agentbench.tasks.hashing import task_set_hash

ROOT = Path(__file__).resolve().parents[1]
SPECS = mechanical.specs()
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
MARKER = re.compile(r"[a-z][a-z0-9_]*")


def test_suite_matches_the_committed_golden_file():
    committed, generated = golden.read(), golden.current()
    diff = golden.differences(committed, generated)
    assert not diff, (
        "the generated mechanical suite differs from golden.tsv:\n  "
        + "\n  ".join(diff[:20])
        + "\nA change to a task must be deliberate: bump SUITE_VERSION in "
        "pytest_agentbench/suites/mechanical/spec.py, then run\n  " + golden.REGENERATE
    )
    assert committed.task_set == generated.task_set == task_set_hash(generated.hashes.values())


def test_each_suite_version_pins_one_task_set():
    history = golden.read_history()
    assert history.get(mechanical.SUITE_VERSION) == golden.read().task_set, (
        f"versions.tsv has no entry for SUITE_VERSION {mechanical.SUITE_VERSION} matching "
        f"golden.tsv; run {golden.REGENERATE}"
    )


def test_write_golden_refuses_changed_tasks_under_an_old_version(tmp_path):
    history = tmp_path / "versions.tsv"
    history.write_text(f"{mechanical.SUITE_VERSION}\t{'0' * 64}\n")
    with pytest.raises(SystemExit, match="bump SUITE_VERSION"):
        golden.write(tmp_path / "golden.tsv", history)
    assert not (tmp_path / "golden.tsv").exists()


def test_two_generations_are_equal():
    assert golden.current() == golden.current()
    assert [s.id for s in mechanical.specs()] == [s.id for s in SPECS]


def test_generation_does_not_depend_on_the_hash_seed():
    code = (
        "from pytest_agentbench.suites.mechanical import golden; print(golden.current().task_set)"
    )
    outputs = set()
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        outputs.add(run.stdout.strip())
    assert outputs == {golden.read().task_set}


def test_suite_size_and_coverage():
    assert len(SPECS) >= 250
    assert sorted(SPECS, key=lambda s: s.id) == SPECS
    languages = {s.case for s in SPECS if s.family.startswith("lang-")}
    assert len(languages) >= 12
    assert {"markdown-ar", "markdown-he", "markdown-zh", "go"} <= languages
    scales = {s.scale for s in SPECS}
    assert {"s10", "s10000", "f1", "f100"} <= scales


def test_every_task_has_a_plain_and_a_unicode_twin():
    by_variant = Counter(s.variant for s in SPECS)
    assert by_variant["plain"] == by_variant["unicode"]
    stems = Counter(s.id.rsplit("-", 1)[0] for s in SPECS)
    assert set(stems.values()) == {2}


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_id_and_tags(spec):
    case = f"-{spec.case}" if spec.case else ""
    assert spec.id == f"{spec.family}-{spec.scale}{case}-{spec.variant}"
    assert spec.category == spec.family
    assert len(spec.tags) == 4
    assert all(MARKER.fullmatch(tag) for tag in spec.tags), spec.tags
    assert spec.tags[0] == spec.family.replace("-", "_")
    assert spec.tags[3] == spec.variant


@pytest.mark.parametrize("spec", SPECS, ids=[s.id for s in SPECS])
def test_task_is_sound(spec):
    built = spec.build()
    assert built.input_files != built.expected_files
    assert built.input_files[built.keep] == built.expected_files[built.keep]
    for path in [*built.input_files, *built.expected_files]:
        assert not path.startswith("/") and ".." not in path.split("/") and "\\" not in path
    assert built.prompt.isascii()
    assert built.prompt.startswith(PREAMBLE + "\n\n")
    texts = [
        data.decode("utf-8")
        for data in [*built.input_files.values(), *built.expected_files.values()]
    ]
    paths = "\n".join([*built.input_files, *built.expected_files])
    instruction = built.prompt[len(PREAMBLE) :]
    quoted = JSON_STRING.findall(instruction)
    assert quoted, "an instruction quotes what it acts on"
    for literal in quoted:
        text = json.loads(literal)
        assert text in paths or any(text in t for t in texts), (
            f"quoted text {literal} appears in no file and no path"
        )
    _check_variant(spec, built)


def _check_variant(spec, built):
    """A Unicode twin edits text holding trap characters; a plain task stays ASCII."""
    before, after = built.input_files, built.expected_files
    changed = [p for p in before.keys() | after.keys() if before.get(p) != after.get(p)]
    raw = b"".join(before.get(p, b"") + after.get(p, b"") + p.encode() for p in changed)
    if spec.variant == "unicode":
        assert not raw.isascii(), "a Unicode twin carries non-ASCII trap characters"
    elif not spec.language.startswith("markdown-") or spec.language == "markdown-en":
        assert raw.replace(b"\xef\xbb\xbf", b"").isascii(), "a plain task is ASCII"


def test_docs_are_rendered_from_the_code():
    from pytest_agentbench.suites.mechanical import docs

    written = (ROOT / "docs" / "suite.md").read_text(encoding="utf-8")
    assert written == docs.render(), f"docs/suite.md is stale; run {docs.DOCS_COMMAND}"


@pytest.mark.parametrize(
    "spec",
    [s for s in mechanical.specs() if s.family in ("file-delete", "file-move")],
    ids=lambda spec: spec.id,
)
def test_delete_and_move_keep_look_alike_names_beside_the_target(spec):
    """With several files, the ones that must stay include names easily confused with the target."""
    import difflib

    built = spec.build()
    (target,) = sorted(set(built.input_files) - set(built.expected_files))
    name = target.rsplit("/", 1)[-1]
    others = [path.rsplit("/", 1)[-1] for path in built.input_files if path != target]
    confusable = [
        other for other in others if difflib.SequenceMatcher(None, name, other).ratio() >= 0.6
    ]
    assert len(confusable) >= (3 if len(built.input_files) > 2 else 0), (target, others[:5])
