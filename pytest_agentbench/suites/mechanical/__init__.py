"""The bundled suite of mechanical editing tasks, generated deterministically from code.

from pytest_agentbench.suites import mechanical
for spec in mechanical.specs():      # ids and metadata only: fast
    built = spec.build()             # prompt, input tree, expected tree
"""

from pytest_agentbench.suites.mechanical.registry import FAMILIES, specs
from pytest_agentbench.suites.mechanical.source import tasks
from pytest_agentbench.suites.mechanical.spec import SUITE_NAME, SUITE_VERSION, Built, Spec

__all__ = [
    "FAMILIES",
    "SUITE_NAME",
    "SUITE_VERSION",
    "Built",
    "Spec",
    "specs",
    "tasks",
]
