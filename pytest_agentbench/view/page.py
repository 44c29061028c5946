"""The app's one page in each of its three forms: served (payloads fetched from the server),
bundled (payloads loaded as script files, which a page opened from file:// may load where it
may not fetch) and inline (every payload written into the page: one file to attach)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentbench.view.viewer import Viewer

ASSETS = ("app.js", "app.css", "chart.umd.min.js", "chart.LICENSE.md")
MODE_MARK = "<!--AGENTBENCH-MODE-->"
INLINE_MARK = "<!--AGENTBENCH-INLINE-->"
INLINE_TRIALS_BOUND = 64 << 20  # characters of trial pages one HTML file carries at most


def asset(name: str) -> bytes:
    """One of the app's files, as shipped inside the package."""
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files("pytest_agentbench.view").joinpath("assets", name).read_bytes()


def script_safe(json_text: str) -> str:
    """JSON text made safe inside a <script> element: `<`, `>` and `&` occur only inside its
    strings, where their escapes mean the same."""
    return json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def script_json(data: Any) -> str:
    """DATA as JSON that is safe inside a <script> element."""
    return script_safe(json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False))


def delivery(name: str, json_text: str) -> str:
    """The script that hands one payload (JSON text) to the app: a bundle's data file, an
    inline block."""
    return f"agentbench.deliver({script_json(name)},{script_safe(json_text)});\n"


def _template() -> str:
    return resources.files("pytest_agentbench.view").joinpath("assets", "index.html").read_text()


def mode_script(mode: str) -> str:
    """The one inline script of a served or bundled page: how the app gets its payloads. The
    server's Content-Security-Policy allows it by its hash."""
    return f"window.AGENTBENCH_MODE={script_json(mode)};"


def page(mode: str) -> str:
    """index.html for the server or a bundle: assets and payloads are fetched beside it."""
    if mode not in ("server", "bundle"):
        raise ValueError(mode)
    told = f"<script>{mode_script(mode)}</script>"
    return _template().replace(MODE_MARK, told).replace(INLINE_MARK, "")


def inline_page(payloads: Iterable[tuple[str, str]]) -> str:
    """One self-contained HTML file: the app's assets and the payloads' delivery scripts
    (inline_payloads) written into it."""
    text = _template()
    text = text.replace(
        '<link rel="stylesheet" href="assets/app.css">',
        "<style>" + asset("app.css").decode().replace("</", "<\\/") + "</style>",
    )
    for name in ("chart.umd.min.js", "app.js"):
        code = asset(name).decode().replace("</script", "<\\/script")
        text = text.replace(f'<script src="assets/{name}"></script>', f"<script>{code}</script>")
    data = "".join(f"<script>{script}</script>" for _name, script in payloads)
    told = f"<script>{mode_script('inline')}</script>"
    return text.replace(MODE_MARK, told).replace(INLINE_MARK, data)


def inline_payloads(viewer: Viewer) -> tuple[list[tuple[str, str]], int]:
    """Every payload of the viewer as delivery scripts, the trial pages only while they fit
    INLINE_TRIALS_BOUND (in order: the first trials of each configuration); and how many trial
    pages were left out."""
    kept: list[tuple[str, str]] = []
    size = left_out = 0
    for name in viewer.every_name():
        if name.startswith("trial/") and size > INLINE_TRIALS_BOUND:
            left_out += 1
            continue
        script = delivery(name, viewer.text(name))
        if name.startswith("trial/"):
            size += len(script)
        kept.append((name, script))
    return kept, left_out
