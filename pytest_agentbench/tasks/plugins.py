"""Plugin directories an arm delivers: read whole, admitted by PluginBench's rules, listed.

A plugin is a directory with a `.claude-plugin/plugin.json` manifest, skills, agents and
synchronous command hooks, kept whole (every file, its mode and bytes; Git internals left
out). Admission refuses what the CLI would ignore or load out of sight of the run, and what
a run could not tell apart: a root plugin.json, default paths of unsupported components
(commands/, workflows/, output-styles/, monitors/, .mcp.json, .lsp.json, settings.json, a
root SKILL.md), front-matter keys outside the admitted sets, hooks that are not synchronous
commands, matchers that are not exact names, two hooks with one event and command, symlinks,
non-regular files and dotenv files. `components` lists what a plugin declares, the list a
discovery receipt would check the CLI against.
"""

from __future__ import annotations

import json
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.tasks.keys import did_you_mean

MANIFEST = ".claude-plugin/plugin.json"
HOOKS_FILE = "hooks/hooks.json"
MANIFEST_KEYS = (
    "name",
    "version",
    "description",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "displayName",
    "skills",
    "hooks",
)
# Manifest fields of components no arm may deliver, and why.
REFUSED_KEYS = {
    "commands": "commands are not supported (move each command to a skill)",
    "agents": "the manifest agents field is not supported (put agents in agents/NAME.md)",
    "mcpServers": "MCP servers are not supported",
    "lspServers": "LSP servers are not supported",
    "outputStyles": "output styles are not supported",
    "dependencies": "plugin dependencies are not supported",
    "monitors": "monitors are not supported",
    "apps": "apps are not supported",
    "userConfig": "plugin options are not supported",
}
# Default paths of components no arm may deliver (the CLI would load them unasked).
REFUSED_PATHS = {
    "commands": "commands are not supported (move each command to a skill)",
    "workflows": "workflows are not supported",
    "output-styles": "output styles are not supported",
    "monitors": "monitors are not supported",
    ".mcp.json": "MCP servers are not supported",
    ".lsp.json": "LSP servers are not supported",
    "settings.json": "plugin settings are not supported",
    "SKILL.md": "a plugin is not a skill; put skills in skills/<name>/SKILL.md",
    "plugin.json": f"only {MANIFEST} is read; move the manifest there",
}
SKILL_KEYS = (
    "name",
    "description",
    "dependencies",
    "license",
    "metadata",
    "allowed-tools",
    "disable-model-invocation",
    "user-invocable",
    "argument-hint",
    "paths",
)
BOOLEAN_SKILL_KEYS = ("disable-model-invocation", "user-invocable")
AGENT_KEYS = ("name", "description")
HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionStart",
    "SessionEnd",
)
HOOK_KEYS = ("type", "command", "timeout")
DATA_VARIABLES = ("${PLUGIN_DATA}", "${CLAUDE_PLUGIN_DATA}")
_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MATCHER = re.compile(r"[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*")


class PluginError(ValueError):
    """A plugin admission refuses: what is wrong (naming the path) and the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


@dataclass(frozen=True)
class PluginFile:
    """One file of a plugin, as delivered: its path below the plugin directory, mode, bytes."""

    rel: str
    mode: int
    data: bytes


@dataclass(frozen=True)
class PluginSkill:
    """A skill a plugin holds: its directory (relative to the plugin) and front matter."""

    dir: str
    name: str
    description: str


@dataclass(frozen=True)
class PluginAgent:
    """A custom agent a plugin holds: agents/<file>.md and its front matter."""

    file: str
    name: str
    description: str


@dataclass(frozen=True)
class PluginHook:
    """One synchronous command hook: the event, its matcher ("" for any) and the command."""

    event: str
    matcher: str
    command: str
    source: str  # the hooks file that declares it, relative to the plugin


@dataclass(frozen=True)
class Plugin:
    """A plugin directory, kept whole, with what its manifest and default paths declare."""

    path: Path
    name: str  # the manifest's name
    files: tuple[PluginFile, ...]
    skills: tuple[PluginSkill, ...]
    agents: tuple[PluginAgent, ...]
    hooks: tuple[PluginHook, ...]


def components(plugin: Plugin) -> dict[str, list[str]]:
    """What the plugin declares, by kind, as the CLI names it: skills and agents as
    `plugin:name`, hooks as `Event[matcher]: command`. Commands are always empty: admission
    refuses them."""
    return {
        "skills": [f"{plugin.name}:{s.dir.rsplit('/', 1)[-1]}" for s in plugin.skills],
        "commands": [],
        "agents": [f"{plugin.name}:{a.name}" for a in plugin.agents],
        "hooks": [f"{h.event}[{h.matcher}]: {h.command}" for h in plugin.hooks],
    }


def _is_dotenv(name: str) -> bool:
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")


def read_files(directory: Path) -> tuple[PluginFile, ...]:
    """Every file below directory (Git internals left out), sorted; PluginError on a
    symlink, a non-regular file or a dotenv file."""
    files: list[PluginFile] = []
    for entry in sorted(directory.rglob("*")):
        rel = entry.relative_to(directory)
        if ".git" in rel.parts:
            continue
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise PluginError(f"{entry} is a symlink", "copy the real file in")
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            raise PluginError(f"{entry} is not a regular file", "remove it from the plugin")
        if _is_dotenv(entry.name):
            raise PluginError(
                f"{entry} is a dotenv file", "remove it (secrets never travel with a plugin)"
            )
        files.append(PluginFile(rel.as_posix(), stat.S_IMODE(mode), entry.read_bytes()))
    return tuple(files)


def front_matter_keys(text: str, where: Path) -> dict[str, str]:
    """The top-level keys of a Markdown file's front matter and their raw one-line values
    (a following indented or `- ` block reads as its lines joined); PluginError when there is
    no front matter."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise PluginError(f"{where} has no front matter", "start it with a '---' line")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise PluginError(f"{where} front matter has no closing '---'", "add one") from None
    found: dict[str, str] = {}
    current: str | None = None
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[:1] in (" ", "\t", "-") and current is not None:
            found[current] = (found[current] + "\n" + line.strip()).strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise PluginError(f"{where} front matter line {line!r} is no key", "write key: value")
        current = key.strip()
        found[current] = value.strip()
    return found


def _unquoted(value: str) -> str:
    return value.strip().strip("'\"").strip()


def _check_keys(found: dict[str, str], allowed: tuple[str, ...], where: Path, what: str) -> None:
    for key in found:
        if key not in allowed:
            raise PluginError(
                f"{where}: {what} key `{key}` is not admitted{did_you_mean(key, allowed)}",
                f"remove it ({what} front matter takes {', '.join(allowed)})",
            )


def _paths_value(raw: str, where: Path) -> None:
    """A skill's `paths`: a list of nonempty globs, inline ([a, b]) or as `- a` lines."""
    if raw.startswith("["):
        items = [_unquoted(v) for v in raw.strip("[]").split(",")] if raw.strip("[] ") else []
    else:
        items = [_unquoted(v.removeprefix("-")) for v in raw.splitlines() if v.startswith("-")]
        if raw and not raw.startswith("-"):
            items = []
    if not items or not all(items):
        raise PluginError(
            f"{where}: paths is not a list of nonempty globs", 'write paths: ["*.py"]'
        )


def _skill(root: Path, directory: Path) -> PluginSkill:
    skill_md = directory / "SKILL.md"
    if not skill_md.is_file():
        raise PluginError(f"{skill_md} is missing", "add a SKILL.md with name and description")
    try:
        found = front_matter_keys(skill_md.read_bytes().decode(), skill_md)
    except UnicodeDecodeError:
        raise PluginError(f"{skill_md} is not UTF-8 text", "save it as UTF-8") from None
    _check_keys(found, SKILL_KEYS, skill_md, "skill")
    for key in BOOLEAN_SKILL_KEYS:
        if key in found and found[key] not in ("true", "false"):
            raise PluginError(f"{skill_md}: {key} is {found[key]!r}", "write true or false")
    if "paths" in found:
        _paths_value(found["paths"], skill_md)
    name, description = _unquoted(found.get("name", "")), _unquoted(found.get("description", ""))
    if not name or not description or "\n" in name + description:
        raise PluginError(
            f"{skill_md} needs single-line name and description", "add both to its front matter"
        )
    return PluginSkill(directory.relative_to(root).as_posix(), name, description)


def _relative_paths(root: Path, value: Any, key: str) -> list[Path]:
    """A manifest field naming paths in the plugin: a string or a list of strings."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise PluginError(f"{root / MANIFEST}: {key} must name paths", f'write "{key}": "./dir"')
    paths = []
    for item in items:
        target = (root / item).resolve()
        if not target.is_relative_to(root.resolve()):
            raise PluginError(
                f"{root / MANIFEST}: {key} {item!r} leaves the plugin", "name a path in it"
            )
        paths.append(target)
    return paths


def _skills(root: Path, manifest: dict[str, Any]) -> tuple[PluginSkill, ...]:
    """Skills under skills/ (always scanned) and under the paths the manifest names: each
    directory holding a SKILL.md, or a named skill directory itself."""
    folders = [root / "skills"]
    if "skills" in manifest:
        folders += _relative_paths(root, manifest["skills"], "skills")
    found: dict[str, PluginSkill] = {}
    for folder in folders:
        if not folder.is_dir():
            if folder != root / "skills":
                raise PluginError(f"{folder} is not a directory", "fix the manifest's skills")
            continue
        dirs = [folder] if (folder / "SKILL.md").is_file() else sorted(folder.iterdir())
        for directory in dirs:
            if directory.is_dir():
                skill = _skill(root, directory)
                found.setdefault(skill.dir, skill)
    return tuple(found.values())


def _agents(root: Path) -> tuple[PluginAgent, ...]:
    folder = root / "agents"
    if not folder.exists():
        return ()
    entries = sorted(folder.iterdir())
    if not entries:
        raise PluginError(f"{folder} is empty", "remove it or add an agent .md file")
    agents = []
    for entry in entries:
        if entry.is_dir() or entry.suffix != ".md":
            raise PluginError(
                f"{entry} is not a .md file directly in agents/", "agents/ holds only NAME.md files"
            )
        try:
            found = front_matter_keys(entry.read_bytes().decode(), entry)
        except UnicodeDecodeError:
            raise PluginError(f"{entry} is not UTF-8 text", "save it as UTF-8") from None
        _check_keys(found, AGENT_KEYS, entry, "agent")
        name, description = (
            _unquoted(found.get("name", "")),
            _unquoted(found.get("description", "")),
        )
        if not _KEBAB.fullmatch(name) or not description:
            raise PluginError(
                f"{entry} needs a kebab-case name and a description",
                "write name: my-agent and description: ... in its front matter",
            )
        agents.append(PluginAgent(entry.name, name, description))
    return tuple(agents)


def _hooks_file(root: Path, path: Path) -> list[PluginHook]:
    where = path.relative_to(root.resolve()).as_posix()
    try:
        data = json.loads(path.read_bytes().decode())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PluginError(f"{path} is not a JSON hooks file ({exc})", "fix its JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks"), dict):
        raise PluginError(f"{path} has no hooks table", 'write {"hooks": {"Event": [...]}}')
    for key in data:
        if key not in ("hooks", "description"):
            raise PluginError(
                f"{path}: key `{key}` is not admitted", "keep only hooks and description"
            )
    hooks = []
    for event, groups in data["hooks"].items():
        if event not in HOOK_EVENTS:
            raise PluginError(
                f"{path}: {event!r} is no hook event{did_you_mean(event, HOOK_EVENTS)}",
                f"use one of {', '.join(HOOK_EVENTS)}",
            )
        if not isinstance(groups, list):
            raise PluginError(
                f"{path}: {event} is not a list", f'write "{event}": [{{"hooks": [...]}}]'
            )
        for group in groups:
            matcher = group.get("matcher", "") if isinstance(group, dict) else None
            if not isinstance(matcher, str) or (
                matcher not in ("", "*") and not _MATCHER.fullmatch(matcher)
            ):
                raise PluginError(
                    f"{path}: {event} matcher {matcher!r} is not exact names",
                    'use "", "*" or names of letters, digits and _ joined by |',
                )
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not handlers:
                raise PluginError(f"{path}: {event} has a group without hooks", "list its hooks")
            for handler in handlers:
                hooks.append(_command_hook(path, event, matcher, handler, where))
    return hooks


def _command_hook(path: Path, event: str, matcher: str, handler: Any, where: str) -> PluginHook:
    if not isinstance(handler, dict) or handler.get("type") != "command":
        kind = handler.get("type") if isinstance(handler, dict) else handler
        raise PluginError(
            f"{path}: {event} hook of type {kind!r} is not supported", 'use "type": "command"'
        )
    for key in handler:
        if key not in HOOK_KEYS:
            problem = "is asynchronous: not supported" if key == "async" else "is not admitted"
            raise PluginError(
                f"{path}: {event} hook key `{key}` {problem}", f"keep only {', '.join(HOOK_KEYS)}"
            )
    command = handler.get("command")
    if not isinstance(command, str) or not command.strip():
        raise PluginError(f"{path}: {event} hook has no command", "give it a command")
    named = [v for v in DATA_VARIABLES if v in command]
    if named:
        raise PluginError(
            f"{path}: {event} hook command names {named[0]}",
            "write below ${CLAUDE_PLUGIN_ROOT} or the workspace instead (codex replaces it)",
        )
    return PluginHook(event, matcher, command, where)


def _hooks(root: Path, manifest: dict[str, Any]) -> tuple[PluginHook, ...]:
    files = [(root / HOOKS_FILE).resolve()] if (root / HOOKS_FILE).exists() else []
    if "hooks" in manifest:
        files += [p for p in _relative_paths(root, manifest["hooks"], "hooks") if p not in files]
    hooks: list[PluginHook] = []
    for path in files:
        hooks += _hooks_file(root, path)
    return tuple(hooks)


def _manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    if not path.is_file():
        raise PluginError(f"{path} is missing", "add a manifest with at least a name")
    try:
        manifest = json.loads(path.read_bytes().decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise PluginError(f"{path} is not JSON ({exc})", "fix its JSON") from None
    if not isinstance(manifest, dict):
        raise PluginError(f"{path} is not a JSON object", 'write {"name": "my-plugin"}')
    for key in manifest:
        if key in REFUSED_KEYS:
            raise PluginError(f"{path}: {REFUSED_KEYS[key]}", f"remove `{key}` from the manifest")
        if key not in MANIFEST_KEYS:
            raise PluginError(
                f"{path}: key `{key}` is not admitted{did_you_mean(key, MANIFEST_KEYS)}",
                f"remove it (a manifest takes {', '.join(MANIFEST_KEYS)})",
            )
    if not isinstance(manifest.get("name"), str) or not _KEBAB.fullmatch(manifest["name"]):
        raise PluginError(f"{path}: name must be kebab-case", 'write "name": "my-plugin"')
    return manifest


def load_plugin(directory: Path) -> Plugin:
    """The plugin directory, read whole and admitted; PluginError naming the path and fix."""
    try:
        st = directory.lstat()
    except FileNotFoundError:
        raise PluginError(
            f"{directory} does not exist", "fix the path (relative to the arms file)"
        ) from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PluginError(f"{directory} is not a directory", "name a plugin directory")
    files = read_files(directory)
    for name, why in REFUSED_PATHS.items():
        if (directory / name).exists():
            raise PluginError(f"{directory / name}: {why}", f"remove {name} from the plugin")
    manifest = _manifest(directory)
    return Plugin(
        path=directory,
        name=manifest["name"],
        files=files,
        skills=_skills(directory, manifest),
        agents=_agents(directory),
        hooks=_hooks(directory, manifest),
    )


def load_plugins(directories: list[Path]) -> tuple[Plugin, ...]:
    """The arm's plugins; PluginError also for two plugins of one name (each is installed
    under its name), and for two hooks with one event and command (the CLI names a hook's
    run by them alone, so the session could not tell them apart)."""
    plugins = tuple(load_plugin(d) for d in directories)
    names: set[str] = set()
    hooks: set[tuple[str, str]] = set()
    for plugin in plugins:
        if plugin.name in names:
            raise PluginError(f"two plugins are named {plugin.name}", "rename one")
        names.add(plugin.name)
        for hook in plugin.hooks:
            if (hook.event, hook.command) in hooks:
                raise PluginError(
                    f"{plugin.path}: two {hook.event} hooks run {hook.command!r}",
                    "keep one (the CLI could not tell their runs apart)",
                )
            hooks.add((hook.event, hook.command))
    return plugins
