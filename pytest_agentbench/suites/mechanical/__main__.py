"""python -m pytest_agentbench.suites.mechanical [--write-golden]

Without options, prints every task (id, category, scale, variant, fixture hash) and
the task-set hash. --write-golden rewrites golden.tsv after a deliberate change.
"""

from __future__ import annotations

import argparse
import sys

from pytest_agentbench.suites.mechanical import golden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentbench.suites.mechanical")
    parser.add_argument(
        "--write-golden",
        action="store_true",
        help=f"rewrite {golden.GOLDEN_PATH.name} from the code (bump SUITE_VERSION first)",
    )
    args = parser.parse_args(argv)
    if args.write_golden:
        written = golden.write()
        print(f"wrote {len(written.hashes)} tasks to {golden.GOLDEN_PATH}")
        print(f"task-set {written.task_set}")
        return 0
    from pytest_agentbench.suites.catalog import print_catalog

    print_catalog(sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
