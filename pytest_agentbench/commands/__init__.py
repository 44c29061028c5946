"""Subcommands of the `agentbench` console script (see pytest_agentbench.cli)."""
