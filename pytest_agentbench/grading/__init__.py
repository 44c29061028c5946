"""Judging a finished workspace: the exact tree and verifier graders (grade), the default
pytest_agentbench_grade hook (hook), reward tasks graded in their container (reward), diff views
of a grade (diffview), changed-line digests for approach similarity (similarity), code
measures of a change (measures), its changed-line coverage on this machine or in a task's own
image (coverage, image_coverage) and task soundness for `agentbench validate` (validate).
May import sandbox/, suites/, trajectory/, tasks/, fs/ and settings; never agents/, meter/ or
anything above."""

from pytest_agentbench.grading.grade import Grade

__all__ = ["Grade"]  # as conftest.py files import it (docs/hooks.md)
