"""pytest fixtures for testing agents against the scripted model server.

Enable with `-p pytest_agentbench.testing.pytest_plugin` or
`pytest_plugins = ["pytest_agentbench.testing.pytest_plugin"]` in a conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.testing.model_server import Script, ScriptedModelServer

ServerFactory = Callable[..., ScriptedModelServer]


@pytest.fixture
def agentbench_model_server() -> Iterator[ServerFactory]:
    """Start scripted model servers: `server = agentbench_model_server(script)`.

    `script` is a Script, a mapping in the script format or a path to a JSON script. Every
    server started here is stopped when the test ends.
    """
    servers: list[ScriptedModelServer] = []

    def start(
        script: Script | Mapping[str, Any] | Path | str, port: int = 0
    ) -> ScriptedModelServer:
        server = ScriptedModelServer(script, port=port).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
