"""The arms file: what each arm delivers, its identity, and every error a bad file gets."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentbench.tasks.arms import GUIDANCE_LIMIT, Arm, ArmsError, front_matter, load_arms

SKILL_MD = "---\nname: quality\ndescription: Check your work before you stop.\n---\nBody.\n"


def skill(root: Path, name: str = "quality", text: str = SKILL_MD) -> Path:
    directory = root / "skills" / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(text)
    return directory


def arms_file(root: Path, text: str) -> Path:
    path = root / "arms.toml"
    path.write_text(text)
    return path


def test_vanilla_comes_first_then_file_order_with_every_component(tmp_path):
    (tmp_path / "core.md").write_text("Be careful.")
    (tmp_path / "extra.md").write_text("Run the tests.\n")
    directory = skill(tmp_path)
    (directory / "scripts").mkdir()
    (directory / "scripts" / "check.sh").write_text("#!/bin/sh\n")
    (directory / "scripts" / "check.sh").chmod(0o755)
    path = arms_file(
        tmp_path,
        '[arm.zeta]\nprompt_prefix = "Hint: "\n'
        '[arm.core]\nguidance = ["core.md", "extra.md"]\nskills = ["skills/quality"]\n'
        '[arm.anchor]\nprompt_prefix = "task:seed_wrong"\n',
    )
    vanilla, zeta, core, anchor = load_arms(path)
    assert (vanilla, zeta.name, core.name, anchor.name) == (
        Arm("vanilla"),
        "zeta",
        "core",
        "anchor",
    )
    assert core.guidance == "Be careful.\n\nRun the tests.\n"
    (quality,) = core.skills
    assert (quality.name, quality.description) == ("quality", "Check your work before you stop.")
    assert [(f.rel, f.mode) for f in quality.files] == [
        ("quality/SKILL.md", 0o644 & ~_umask()),
        ("quality/scripts/check.sh", 0o755),
    ]
    assert zeta.prefix_for(SimpleNamespace(id="t", seed_wrong=None)) == "Hint: "
    assert anchor.prefix_for(SimpleNamespace(id="t", seed_wrong="It cannot be done.")) == (
        "It cannot be done."
    )
    with pytest.raises(LookupError, match="task t has no seed_wrong"):
        anchor.prefix_for(SimpleNamespace(id="t", seed_wrong=None))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_file_with_no_arms_or_an_empty_vanilla_table_is_vanilla_alone(tmp_path):
    assert load_arms(arms_file(tmp_path, "")) == (Arm("vanilla"),)
    assert load_arms(arms_file(tmp_path, "[arm.vanilla]\n")) == (Arm("vanilla"),)


def test_vanilla_adds_nothing_to_a_configuration_and_treatments_add_name_and_hash(tmp_path):
    (tmp_path / "core.md").write_text("Be careful.\n")
    path = arms_file(tmp_path, '[arm.core]\nguidance = ["core.md"]\n')
    vanilla, core = load_arms(path)
    assert vanilla.configuration_fields() == {}
    assert core.configuration_fields() == {"arm": "core", "arm_identity": core.identity}


def test_identity_changes_with_every_delivered_byte_and_mode(tmp_path):
    (tmp_path / "core.md").write_text("Be careful.\n")
    directory = skill(tmp_path)
    path = arms_file(tmp_path, '[arm.core]\nguidance = ["core.md"]\nskills = ["skills/quality"]\n')
    seen = {load_arms(path)[1].identity}
    (tmp_path / "core.md").write_text("Be careful!\n")
    seen.add(load_arms(path)[1].identity)
    (directory / "notes.md").write_text("")
    seen.add(load_arms(path)[1].identity)
    (directory / "notes.md").chmod(0o700)
    seen.add(load_arms(path)[1].identity)
    (directory / "notes.md").rename(directory / "other.md")
    seen.add(load_arms(path)[1].identity)
    assert len(seen) == 5
    assert load_arms(path)[1].identity == load_arms(path)[1].identity


@given(st.text(max_size=20), st.text(max_size=20))
def test_identity_tells_guidance_from_prefix(a, b):
    """Parts are length-framed: moving bytes from one component to another changes the hash."""
    assert (
        Arm("x", guidance=a + b).identity != Arm("x", guidance=a, prompt_prefix=b or "p").identity
    )


def test_a_warm_prefix_cache_is_part_of_the_identity_and_cold_is_the_default(tmp_path):
    (tmp_path / "core.md").write_text("Be careful.\n")
    text = '[arm.a]\nguidance = ["core.md"]\n[arm.b]\nguidance = ["core.md"]\n'
    _, plain, cold = load_arms(arms_file(tmp_path, text + 'prefix_cache = "cold"\n'))
    _, _, warm = load_arms(arms_file(tmp_path, text + 'prefix_cache = "warm"\n'))
    assert (plain.prefix_cache, cold.prefix_cache, warm.prefix_cache) == ("cold", "cold", "warm")
    assert warm.warm and not cold.warm
    # A cold arm hashes as an arm written before the key existed; a warm one does not pool.
    assert plain.identity == cold.identity != warm.identity
    assert warm.configuration_fields() == {"arm": "b", "arm_identity": warm.identity}
    (only_warm,) = load_arms(arms_file(tmp_path, '[arm.w]\nprefix_cache = "warm"\n'))[1:]
    assert only_warm.identity != Arm("w").identity


def test_guidance_at_the_limit_loads_and_one_byte_more_is_refused(tmp_path):
    (tmp_path / "g.md").write_text("x" * (GUIDANCE_LIMIT - 1) + "\n")
    path = arms_file(tmp_path, '[arm.big]\nguidance = ["g.md"]\n')
    assert len(load_arms(path)[1].guidance.encode()) == GUIDANCE_LIMIT
    (tmp_path / "g.md").write_text("x" * GUIDANCE_LIMIT + "\n")
    with pytest.raises(ArmsError) as excinfo:
        load_arms(path)
    assert str(excinfo.value) == (
        f"{path}: [arm.big] guidance: 32,769 bytes in all, more than 32,768; shorten or drop a file"
    )


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ArmsError) as excinfo:
        load_arms(arms_file(tmp_path, text))
    return str(excinfo.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[arm.core]\nskills = []\nguidence = []\n",
            ":3: unknown key `guidence` in [arm.core] (did you mean `guidance`?); an arm takes "
            "guidance, skills, prompt_prefix",
        ),
        (
            '[arm]\ncore = { prompt_prefx = "x" }\n',
            ":2: unknown key `prompt_prefx` in [arm.core] (did you mean `prompt_prefix`?)",
        ),
        ('[arm.core]\nguidance = ["no.md"]\n', "no.md does not exist; fix the path"),
        ('[arm.core]\nguidance = "a.md"\n', 'must be a list of paths; write guidance = ["path"'),
        ('[arm.core]\nskills = ["skills/none"]\n', "none does not exist; fix the path"),
        ('[arm.core]\nprompt_prefix = ""\n', "prompt_prefix: must be non-empty text"),
        ("[arm.core]\nprompt_prefix = 3\n", "prompt_prefix: must be non-empty text"),
        ('[arm.core]\nprompt_prefix = "task:seed"\n', 'names no task field; use "task:seed_wrong"'),
        ('[arm.vanilla]\nprompt_prefix = "x"\n', "[arm.vanilla]: vanilla receives nothing"),
        ('[arm."a b"]\nprompt_prefix = "x"\n', "[arm.a b]: bad arm name; use 1-40 letters"),
        ('[arm."a::b"]\nprompt_prefix = "x"\n', "[arm.a::b]: bad arm name"),
        ("arm = 3\n", "arm: is not a table; write [arm.NAME] tables"),
        (
            '[arm.core]\nprompt_prefix = "x"\n[arms.more]\n',
            ":3: unknown table `arms` (did you mean `arm`?); put each arm in an [arm.NAME] table",
        ),
        ("[arm\n", "not valid TOML"),
        (
            '[arm.hot]\nprefix_cache = "wram"\n',
            ':2: [arm.hot] prefix_cache: \'wram\' is not a prefix cache; use "cold" or "warm"',
        ),
        ("[arm.hot]\nprefix_cache = true\n", 'prefix_cache: True is not a prefix cache; use "c'),
        ('[arm.vanilla]\nprefix_cache = "warm"\n', "[arm.vanilla]: vanilla receives nothing"),
    ],
)
def test_each_bad_value_is_named_with_its_fix(tmp_path, text, expected):
    message = _error(tmp_path, text)
    assert message.startswith(str(tmp_path / "arms.toml") + ":")
    assert expected in message


def test_a_missing_arms_file_is_named(tmp_path):
    with pytest.raises(ArmsError, match=r"arms\.toml: not found; give the path"):
        load_arms(tmp_path / "arms.toml")


def test_symlinked_or_special_guidance_is_refused(tmp_path):
    (tmp_path / "real.md").write_text("x\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    (tmp_path / "dir.md").mkdir()
    assert "link.md is a symlink; point at the real file" in _error(
        tmp_path, '[arm.core]\nguidance = ["link.md"]\n'
    )
    assert "dir.md is not a regular file; name a regular file" in _error(
        tmp_path, '[arm.core]\nguidance = ["dir.md"]\n'
    )


def test_non_utf8_guidance_is_refused(tmp_path):
    (tmp_path / "bin.md").write_bytes(b"\xff\xfe\n")
    assert "guidance: is not UTF-8 text" in _error(tmp_path, '[arm.core]\nguidance = ["bin.md"]\n')


def test_skill_problems_are_refused(tmp_path):
    directory = skill(tmp_path)
    text = '[arm.core]\nskills = ["skills/quality"]\n'
    (directory / "link").symlink_to(directory / "SKILL.md")
    assert "link is a symlink; copy the real file in" in _error(tmp_path, text)
    (directory / "link").unlink()
    os.mkfifo(directory / "pipe")
    assert "pipe is not a regular file; remove it from the skill" in _error(tmp_path, text)
    (directory / "pipe").unlink()
    (directory / "SKILL.md").rename(directory / "README.md")
    assert "SKILL.md is missing; add a SKILL.md with name and description" in _error(tmp_path, text)
    (tmp_path / "skills" / "alias").symlink_to(directory)
    assert "alias is not a directory" in _error(tmp_path, '[arm.core]\nskills = ["skills/alias"]\n')
    (tmp_path / "file").write_text("")
    assert "file is not a directory" in _error(tmp_path, '[arm.core]\nskills = ["file"]\n')


def test_two_skills_with_one_directory_name_are_refused(tmp_path):
    skill(tmp_path / "a")
    skill(tmp_path / "b")
    message = _error(tmp_path, '[arm.core]\nskills = ["a/skills/quality", "b/skills/quality"]\n')
    assert "two skill directories are named quality; rename one" in message


def test_bad_front_matter_names_the_skill_file_and_the_fix(tmp_path):
    skill(tmp_path, text="---\nname: q\n---\n")
    message = _error(tmp_path, '[arm.core]\nskills = ["skills/quality"]\n')
    assert message == (
        f"{tmp_path / 'arms.toml'}: [arm.core] skills: "
        f"{tmp_path / 'skills/quality/SKILL.md'} front matter has no description; "
        "start it with '---', single-line 'name:' and 'description:', and '---'"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: q\n", "has no front matter"),
        ("---\nname: q\ndescription: d\n", "has no closing '---'"),
        ("---\ndescription: d\n---\n", "has no name"),
        ("---\nname: q\ndescription:\n---\n", "has no description"),
        ("---\nname: q\ndescription: |\n  two\n  lines\n---\n", "description is a block"),
        ("---\nname: q\ndescription: one\n  two\n---\n", "description spans lines"),
    ],
)
def test_front_matter_needs_single_line_name_and_description(text, problem):
    with pytest.raises(ValueError, match=problem):
        front_matter(text)


def test_front_matter_ignores_other_keys_and_quotes():
    text = "---\nname: 'q'\nlicense: MIT\nmetadata:\n  nested: yes\ndescription: \"d: e\"\n---\n"
    assert front_matter(text) == {"name": "q", "description": "d: e"}


single_line = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30
).filter(lambda v: v.strip().strip("'\"").strip() and v.strip()[:1] not in "|>")


@given(single_line, single_line)
def test_any_single_line_name_and_description_are_read_back(name, description):
    text = f"---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\nBody.\n"
    assert front_matter(text) == {
        "name": name.strip().strip("'\"").strip(),
        "description": description.strip().strip("'\"").strip(),
    }


def test_a_skill_md_that_is_not_utf8_is_refused(tmp_path):
    directory = skill(tmp_path)
    (directory / "SKILL.md").write_bytes(b"---\nname: \xff\n---\n")
    message = _error(tmp_path, '[arm.core]\nskills = ["skills/quality"]\n')
    assert message.endswith("skills/quality/SKILL.md is not UTF-8 text; save it as UTF-8")
