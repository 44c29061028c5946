"""The app as static files (`agentbench view --bundle OUT/`): index.html, its assets, and one
script file per payload under data/, which the app loads as it needs them, so that a run of
any size opens at once from file:// or any static host."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_agentbench.view.page import ASSETS, asset, delivery, page
from pytest_agentbench.view.viewer import Viewer


def write_bundle(viewer: Viewer, out: Path) -> int:
    """Write the bundle into OUT (its data/ replaced); how many payloads it holds."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    for name in ASSETS:
        (out / "assets" / name).write_bytes(asset(name))
    data = out / "data"
    if data.exists():
        shutil.rmtree(data)
    written = 0
    for name in viewer.every_name():
        target = data / f"{name}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(delivery(name, viewer.text(name)), encoding="utf-8")
        written += 1
    (out / "index.html").write_text(page("bundle"), encoding="utf-8")
    return written
