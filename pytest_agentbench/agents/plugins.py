"""What a CLI needs, besides the plugin's files, to load an arm's plugins natively.

The files go where each CLI installs a plugin (delivery.Places.plugins). Claude Code 2.1.332
then needs a local marketplace it knows of and the plugins enabled, both declared in its
user settings (`extraKnownMarketplaces` with a `directory` source, `enabledPlugins`), which
it reads at start with no network and no prompt; it loads each plugin from the marketplace
folder. Codex 0.171.0 loads a plugin from its install cache
($CODEX_HOME/plugins/cache/MARKETPLACE/NAME/VERSION, what `codex plugin add` writes) once
`plugins."NAME@MARKETPLACE".enabled` is set (an override: the harness ignores the user's
config.toml), and runs its hooks only with `--dangerously-bypass-hook-trust`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pytest_agentbench.tasks.plugins import Plugin

MARKETPLACE = "agentbench"
CLAUDE_MARKETPLACE = "agentbench-marketplace"  # in CLAUDE_CONFIG_DIR
CLAUDE_PLACE = f".claude/{CLAUDE_MARKETPLACE}/plugins/{{name}}"
CODEX_PLACE = f".codex/plugins/cache/{MARKETPLACE}/{{name}}/local"


def plugin_id(plugin: Plugin) -> str:
    return f"{plugin.name}@{MARKETPLACE}"


def install_claude(plugins: Sequence[Plugin], config_host: Path, config_inner: str) -> None:
    """The marketplace manifest beside the delivered plugins, and the user settings that
    declare the marketplace (at its path as the CLI sees it) and enable each plugin."""
    if not plugins:
        return
    market = config_host / CLAUDE_MARKETPLACE / ".claude-plugin" / "marketplace.json"
    market.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"name": p.name, "source": f"./plugins/{p.name}"} for p in plugins]
    manifest = {"name": MARKETPLACE, "owner": {"name": "agentbench"}, "plugins": entries}
    market.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    settings_path = config_host / "settings.json"
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    source = {"source": "directory", "path": f"{config_inner.rstrip('/')}/{CLAUDE_MARKETPLACE}"}
    settings.setdefault("extraKnownMarketplaces", {})[MARKETPLACE] = {"source": source}
    settings.setdefault("enabledPlugins", {}).update({plugin_id(p): True for p in plugins})
    settings_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")


def codex_enabled(plugins: Sequence[Plugin]) -> list[str]:
    """The config override that enables the installed plugins: `codex exec` and the
    discovery's `codex app-server` both take it (without it neither sees them)."""
    if not plugins:
        return []
    enabled = ",".join(f"{json.dumps(plugin_id(p))}={{enabled=true}}" for p in plugins)
    return ["-c", f"plugins={{{enabled}}}"]


def codex_args(plugins: Sequence[Plugin]) -> list[str]:
    """`codex exec` arguments that enable the installed plugins, and let their hooks run
    (codex asks a person to trust a hook otherwise; the arms file is that review)."""
    hooks = ["--dangerously-bypass-hook-trust"] if any(p.hooks for p in plugins) else []
    return [*codex_enabled(plugins), *hooks]
