"""The arms file: vanilla and named treatments, each a set of bytes delivered to the agent.

An arm is what a trial receives besides the task: guidance (the CLI's user-level instruction
file), skills (directories in its user-level skills folder), plugins (whole plugin
directories, installed the CLI's own way: tasks/plugins.py), a prompt prefix, the legs its
session runs in (segments, tasks/segments.py), and whether the provider's prefix cache is
primed before the trial (prefix_cache = "warm"). The file is
validated whole before any trial; every error names the file, the arm, the key and the fix
(an unknown key its line too, and the key meant).
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_agentbench.tasks.keys import key_line, unknown_keys
from pytest_agentbench.tasks.plugins import Plugin, PluginError, load_plugins

VANILLA = "vanilla"
GUIDANCE_LIMIT = 32_768  # bytes, all guidance files of an arm together
KEYS = ("guidance", "skills", "prompt_prefix", "segments", "prefix_cache", "plugins")
COLD, WARM = "cold", "warm"
PREFIX_CACHES = (COLD, WARM)  # warm: a one-step priming run of the same CLI goes first
TASK_PREFIXES = ("seed_wrong", "seed_correct")  # prompt_prefix = "task:FIELD"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
CAPABILITY_KEYS = ("subagents", "max_threads")  # [capabilities]: the same for every arm
_SKILL_KEYS = ("name", "description")


class ArmsError(ValueError):
    """A bad arms file: the message names the file, the arm, the key and the fix."""


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill, as delivered: its path below the skills folder, mode and bytes."""

    rel: str  # "<skill dir name>/<path inside it>"
    mode: int  # permission bits
    data: bytes


@dataclass(frozen=True)
class Skill:
    """A skill directory, kept whole: delivered as skills/<dir name>/ with every file."""

    path: Path
    name: str  # front matter `name`
    description: str  # front matter `description`
    files: tuple[SkillFile, ...]

    @property
    def dir_name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Capabilities:
    """What the agent may do beyond its own turn, the same for vanilla and every treatment:
    spawn subagents, and at most how many at once (None: the CLI's own limit)."""

    subagents: bool = True
    max_threads: int | None = None

    def set_keys(self) -> list[str]:
        """The capabilities that differ from the CLI's defaults: those an agent must enforce."""
        default = Capabilities()
        return [k for k in CAPABILITY_KEYS if getattr(self, k) != getattr(default, k)]

    def fields(self) -> dict[str, bool | int]:
        """What they add to a configuration's identity: nothing at the defaults."""
        return {k: getattr(self, k) for k in self.set_keys()}


DEFAULT_CAPABILITIES = Capabilities()


@dataclass(frozen=True)
class Arm:
    """One arm: what its trials receive. Vanilla receives nothing."""

    name: str
    guidance: str | None = None
    skills: tuple[Skill, ...] = ()
    plugins: tuple[Plugin, ...] = ()  # plugin directories, kept whole (tasks/plugins.py)
    prompt_prefix: str | None = None  # text, or "task:seed_wrong" / "task:seed_correct"
    segments: int | None = None  # legs of one session per trial; None: the task's or the run's
    prefix_cache: str = COLD  # WARM: the trial follows a priming run (trial/priming.py)
    capabilities: Capabilities = DEFAULT_CAPABILITIES  # the arms file's, shared by every arm

    @property
    def warm(self) -> bool:
        return self.prefix_cache == WARM

    @property
    def is_vanilla(self) -> bool:
        return self.name == VANILLA

    @property
    def task_prefix_field(self) -> str | None:
        """The task field the prefix comes from ("seed_wrong"), None for a literal prefix."""
        if self.prompt_prefix and self.prompt_prefix.startswith("task:"):
            return self.prompt_prefix.removeprefix("task:")
        return None

    def prefix_for(self, task: Any) -> str | None:
        """The prefix for task's prompt; raises LookupError when the task lacks the field
        the arm takes it from (the task is skipped in this arm)."""
        field = self.task_prefix_field
        if field is None:
            return self.prompt_prefix
        value = getattr(task, field, None)
        if not value:
            raise LookupError(f"task {task.id} has no {field}")
        return str(value)

    @property
    def identity(self) -> str:
        """A hash of every byte the arm delivers (guidance, each skill's and plugin's file's
        path, mode and bytes, the prefix or its task: marker, the legs) and of a warm prefix
        cache, so two arms with the same bytes, legs and cache are equal (a cold arm, and an
        arm without plugins, hashes as before the key existed)."""
        digest = hashlib.sha256()

        def part(tag: bytes, data: bytes) -> None:
            digest.update(tag + len(data).to_bytes(8, "big") + data)

        if self.guidance is not None:
            part(b"g", self.guidance.encode())
        for skill in self.skills:
            for f in skill.files:
                part(b"p", f.rel.encode())
                part(b"m", f.mode.to_bytes(4, "big"))
                part(b"d", f.data)
        for plugin in self.plugins:  # none: the hash is the one before plugins existed
            for item in plugin.files:
                part(b"P", f"{plugin.name}/{item.rel}".encode())  # as delivered
                part(b"m", item.mode.to_bytes(4, "big"))
                part(b"d", item.data)
        if self.prompt_prefix is not None:
            part(b"x", self.prompt_prefix.encode())
        if self.segments is not None:
            part(b"s", str(self.segments).encode())
        if self.warm:
            part(b"c", WARM.encode())
        return digest.hexdigest()[:16]

    def configuration_fields(self) -> dict[str, str | int]:
        """What the arm adds to a configuration's identity: nothing for vanilla, so that a
        vanilla arm pools with a plain run of the same settings; capabilities other than the
        defaults, for every arm, so that runs with other capabilities never pool."""
        caps = self.capabilities.fields()
        extra: dict[str, str | int] = (
            {"capabilities": json.dumps(caps, sort_keys=True)} if caps else {}
        )
        if self.is_vanilla:
            return extra
        legs = {"segments": self.segments} if self.segments is not None else {}
        return {"arm": self.name, "arm_identity": self.identity, **legs, **extra}


def _fail(path: Path, arm: str | None, key: str | None, problem: str, fix: str) -> ArmsError:
    where = " ".join(p for p in (f"[arm.{arm}]" if arm is not None else None, key) if p)
    return ArmsError(f"{path}: {where + ': ' if where else ''}{problem}; {fix}")


def _regular_file(path: Path, target: Path, arm: str, key: str) -> Path:
    """target, refused unless it is a regular file reached without a symlink."""
    try:
        st = target.lstat()
    except FileNotFoundError:
        raise _fail(
            path, arm, key, f"{target} does not exist", "fix the path (relative to the arms file)"
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise _fail(path, arm, key, f"{target} is a symlink", "point at the real file")
    if not stat.S_ISREG(st.st_mode):
        raise _fail(path, arm, key, f"{target} is not a regular file", "name a regular file")
    return target


def _paths(path: Path, arm: str, key: str, value: Any) -> list[Path]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, arm, key, "must be a list of paths", f'write {key} = ["path", ...]')
    return [path.parent / v for v in value]


def _guidance(path: Path, arm: str, value: Any) -> str | None:
    parts: list[bytes] = []
    for target in _paths(path, arm, "guidance", value):
        data = _regular_file(path, target, arm, "guidance").read_bytes()
        parts.append(data if data.endswith(b"\n") else data + b"\n")
    if not parts:
        return None
    joined = b"\n".join(parts)  # each part ends in a newline: a blank line between files
    if len(joined) > GUIDANCE_LIMIT:
        raise _fail(
            path,
            arm,
            "guidance",
            f"{len(joined):,} bytes in all, more than {GUIDANCE_LIMIT:,}",
            "shorten or drop a file",
        )
    try:
        return joined.decode()
    except UnicodeDecodeError:
        raise _fail(path, arm, "guidance", "is not UTF-8 text", "save the files as UTF-8") from None


def front_matter(text: str) -> dict[str, str]:
    """SKILL.md's `name` and `description`, each a single-line value; ValueError otherwise.

    Only these two keys are read (no YAML parser): a key at the start of a line, its value on
    the same line, no block scalar and no indented continuation.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("has no front matter (a first line '---')")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise ValueError("front matter has no closing '---'") from None
    found: dict[str, str] = {}
    current: str | None = None
    for line in lines[1:end]:
        if line[:1] in (" ", "\t") and line.strip():
            if current in _SKILL_KEYS:
                raise ValueError(f"front matter {current} spans lines; keep it on one line")
            continue
        key, sep, value = line.partition(":")
        current = key.strip() if sep else None
        if current in _SKILL_KEYS:
            value = value.strip()
            if value[:1] in ("|", ">"):
                raise ValueError(f"front matter {current} is a block; keep it on one line")
            found[current] = value.strip("'\"").strip()
    for key in _SKILL_KEYS:
        if not found.get(key):
            raise ValueError(f"front matter has no {key}")
    return found


def _skill(path: Path, arm: str, directory: Path) -> Skill:
    try:
        st = directory.lstat()
    except FileNotFoundError:
        raise _fail(
            path,
            arm,
            "skills",
            f"{directory} does not exist",
            "fix the path (relative to the arms file)",
        ) from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise _fail(
            path, arm, "skills", f"{directory} is not a directory", "name a skill directory"
        )
    files: list[SkillFile] = []
    for entry in sorted(directory.rglob("*")):
        mode = entry.lstat().st_mode
        if stat.S_ISDIR(mode):
            continue
        if stat.S_ISLNK(mode):
            raise _fail(path, arm, "skills", f"{entry} is a symlink", "copy the real file in")
        if not stat.S_ISREG(mode):
            raise _fail(
                path, arm, "skills", f"{entry} is not a regular file", "remove it from the skill"
            )
        rel = f"{directory.name}/{entry.relative_to(directory).as_posix()}"
        files.append(SkillFile(rel, stat.S_IMODE(mode), entry.read_bytes()))
    skill_md = directory / "SKILL.md"
    if not any(f.rel == f"{directory.name}/SKILL.md" for f in files):
        raise _fail(
            path,
            arm,
            "skills",
            f"{skill_md} is missing",
            "add a SKILL.md with name and description",
        )
    try:
        text = skill_md.read_bytes().decode()
    except UnicodeDecodeError:
        raise _fail(
            path, arm, "skills", f"{skill_md} is not UTF-8 text", "save it as UTF-8"
        ) from None
    try:
        meta = front_matter(text)
    except ValueError as exc:
        raise _fail(
            path,
            arm,
            "skills",
            f"{skill_md} {exc}",
            "start it with '---', single-line 'name:' and 'description:', and '---'",
        ) from None
    return Skill(directory, meta["name"], meta["description"], tuple(files))


def _skills(path: Path, arm: str, value: Any) -> tuple[Skill, ...]:
    skills = tuple(_skill(path, arm, d) for d in _paths(path, arm, "skills", value))
    seen: set[str] = set()
    for skill in skills:
        if skill.dir_name in seen:
            raise _fail(
                path,
                arm,
                "skills",
                f"two skill directories are named {skill.dir_name}",
                "rename one (each is delivered as skills/<directory name>)",
            )
        seen.add(skill.dir_name)
    return skills


def _plugins(path: Path, arm: str, value: Any) -> tuple[Plugin, ...]:
    try:
        return load_plugins(_paths(path, arm, "plugins", value))
    except PluginError as exc:
        raise _fail(path, arm, "plugins", exc.problem, exc.fix) from None


def _prefix(path: Path, arm: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(
            path, arm, "prompt_prefix", "must be non-empty text", "write text or drop the key"
        )
    if value.startswith("task:") and value.removeprefix("task:") not in TASK_PREFIXES:
        raise _fail(
            path,
            arm,
            "prompt_prefix",
            f"{value!r} names no task field",
            "use " + " or ".join(f'"task:{f}"' for f in TASK_PREFIXES),
        )
    return value


def _segments(path: Path, arm: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _fail(
            path,
            arm,
            "segments",
            f"must be a whole number of legs >= 1, got {value!r}",
            "write segments = 3 (1: one unbroken session)",
        )
    return value


def _prefix_cache(path: Path, arm: str, value: Any) -> str:
    if value not in PREFIX_CACHES:
        line = key_line(path.read_text(), ("arm", arm), "prefix_cache")
        raise _fail(
            path.with_name(f"{path.name}:{line}") if line is not None else path,
            arm,
            "prefix_cache",
            f"{value!r} is not a prefix cache",
            "use " + " or ".join(f'"{v}"' for v in PREFIX_CACHES),
        )
    return str(value)


def _arm(path: Path, name: str, body: Any) -> Arm:
    if not _NAME.fullmatch(name):
        raise _fail(
            path,
            name,
            None,
            "bad arm name",
            "use 1-40 letters, digits, '-' or '_', starting with a letter or digit",
        )
    if not isinstance(body, dict):
        raise _fail(
            path, name, None, "is not a table", f"write [arm.{name}] with keys {', '.join(KEYS)}"
        )
    unknown = unknown_keys(body, KEYS, path, within=("arm", name))
    if unknown:
        raise ArmsError(f"{unknown}; an arm takes {', '.join(KEYS)}")
    if name == VANILLA and body:
        raise _fail(path, name, None, "vanilla receives nothing", "give the treatment another name")
    return Arm(
        name=name,
        guidance=_guidance(path, name, body["guidance"]) if "guidance" in body else None,
        skills=_skills(path, name, body["skills"]) if "skills" in body else (),
        plugins=_plugins(path, name, body["plugins"]) if "plugins" in body else (),
        prompt_prefix=_prefix(path, name, body["prompt_prefix"])
        if "prompt_prefix" in body
        else None,
        segments=_segments(path, name, body["segments"]) if "segments" in body else None,
        prefix_cache=_prefix_cache(path, name, body["prefix_cache"])
        if "prefix_cache" in body
        else COLD,
    )


def _capabilities(path: Path, value: Any) -> Capabilities:
    if not isinstance(value, dict):
        raise _fail(path, None, "capabilities", "is not a table", "write [capabilities]")
    unknown = unknown_keys(value, CAPABILITY_KEYS, path, within=("capabilities",))
    if unknown:
        raise ArmsError(f"{unknown}; [capabilities] takes {', '.join(CAPABILITY_KEYS)}")
    subagents = value.get("subagents", True)
    if not isinstance(subagents, bool):
        raise _fail(
            path,
            None,
            "[capabilities] subagents",
            f"{subagents!r} is not true or false",
            "write subagents = true or subagents = false",
        )
    threads = value.get("max_threads")
    if threads is not None and (
        not isinstance(threads, int) or isinstance(threads, bool) or threads < 1
    ):
        raise _fail(
            path,
            None,
            "[capabilities] max_threads",
            f"must be a whole number >= 1, got {threads!r}",
            "write max_threads = 4, or drop it for the CLI's own limit",
        )
    if threads is not None and not subagents:
        raise _fail(
            path,
            None,
            "[capabilities] max_threads",
            "is set with subagents = false",
            "drop max_threads, or allow subagents",
        )
    return Capabilities(subagents, threads)


def load_arms(path: Path) -> tuple[Arm, ...]:
    """Vanilla first, then the file's arms in file order, each with the file's capabilities;
    ArmsError on any problem."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise _fail(path, None, None, "not found", "give the path of an arms TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(path, None, None, f"not valid TOML ({exc})", "fix the syntax") from None
    unknown = unknown_keys(data, ("arm", "capabilities"), path)
    if unknown:
        raise ArmsError(
            f"{unknown}; put each arm in an [arm.NAME] table, capabilities in [capabilities]"
        )
    caps = _capabilities(path, data["capabilities"]) if "capabilities" in data else Capabilities()
    tables = data.get("arm", {})
    if not isinstance(tables, dict):
        raise _fail(path, None, "arm", "is not a table", "write [arm.NAME] tables")
    arms = [Arm(VANILLA, capabilities=caps)]
    for name, body in tables.items():
        arm = _arm(path, name, body)
        if not arm.is_vanilla:
            arms.append(replace(arm, capabilities=caps))
    return tuple(arms)
