"""The app's one page in each of its three forms: served (payloads fetched from the server),
bundled (payloads loaded as script files, which a page opened from file:// may load where it
may not fetch) and inline (every payload written into the page: one file to attach)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

ASSETS = ("app.js", "app.css", "chart.umd.min.js", "chart.LICENSE.md")
MODE_MARK = "<!--AGENTBENCH-MODE-->"
INLINE_MARK = "<!--AGENTBENCH-INLINE-->"
MODES = ("server", "bundle", "inline")


def asset(name: str) -> bytes:
    """One of the app's files, as shipped inside the package."""
    if name not in ASSETS:
        raise KeyError(name)
    return resources.files("pytest_agentbench.view").joinpath("assets", name).read_bytes()


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no `<` can close it or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def delivery(name: str, data: Any) -> str:
    """The script that hands one payload to the app (a bundle's data file, an inline block)."""
    return f"agentbench.deliver({script_json(name)},{script_json(data)});\n"


def _template() -> str:
    return resources.files("pytest_agentbench.view").joinpath("assets", "index.html").read_text()


def page(mode: str) -> str:
    """index.html for the server or a bundle: assets and payloads are fetched beside it."""
    if mode not in ("server", "bundle"):
        raise ValueError(mode)
    mode_script = f"<script>window.AGENTBENCH_MODE={script_json(mode)};</script>"
    return _template().replace(MODE_MARK, mode_script).replace(INLINE_MARK, "")


def inline_page(payloads: Iterable[tuple[str, Any]]) -> str:
    """One self-contained HTML file: the app's assets and every payload written into it."""
    text = _template()
    text = text.replace(
        '<link rel="stylesheet" href="assets/app.css">',
        "<style>" + asset("app.css").decode().replace("</", "<\\/") + "</style>",
    )
    for name in ("chart.umd.min.js", "app.js"):
        code = asset(name).decode().replace("</script", "<\\/script")
        text = text.replace(f'<script src="assets/{name}"></script>', f"<script>{code}</script>")
    data = "".join(f"<script>{delivery(name, payload)}</script>" for name, payload in payloads)
    mode_script = f"<script>window.AGENTBENCH_MODE={script_json('inline')};</script>"
    return text.replace(MODE_MARK, mode_script).replace(INLINE_MARK, data)
