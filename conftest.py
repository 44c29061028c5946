"""Repository-level pytest configuration for running the bundled suite from this checkout.

The plugin registers itself through its pytest11 entry point once the package is installed
(`pip install -e .`), so `pytest --agent=mock` here runs the bundled tasks. Settings for the
project's own tests live in pytest.ini; this file deliberately defines no `pytest_plugins`,
because task directories below it are collected from other root directories too.
"""
