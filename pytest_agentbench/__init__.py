"""pytest-agentbench: benchmark coding-agent CLIs on file-editing tasks with pytest."""

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("pytest")

__all__ = ["__version__", "hookimpl"]
