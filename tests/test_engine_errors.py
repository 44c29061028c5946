"""Whatever way an engine fails to answer, the trial's failure is the machine's: an
InfrastructureError of the Docker engine, and the pool hears whether the engine answered."""

from __future__ import annotations

import docker.errors
import pytest
import requests

from pytest_agentbench.sandbox.base import InfrastructureError
from pytest_agentbench.sandbox.docker import engine_errors


@pytest.mark.parametrize(
    ("error", "answered"),
    [
        (docker.errors.APIError("500 Server Error"), True),
        (requests.exceptions.ConnectionError("refused"), False),
        (requests.exceptions.ChunkedEncodingError("connection broken midway"), False),
        (requests.exceptions.ReadTimeout("read timed out"), False),
    ],
)
def test_an_engine_failure_is_an_infrastructure_failure(error: Exception, answered: bool) -> None:
    heard: list[bool] = []
    with (
        pytest.raises(InfrastructureError, match="starting the container"),
        engine_errors("starting the container", heard.append),
    ):
        raise error
    assert heard == [answered]


def test_any_other_error_passes_through() -> None:
    with pytest.raises(KeyError), engine_errors("starting the container"):
        raise KeyError("not the engine's")
