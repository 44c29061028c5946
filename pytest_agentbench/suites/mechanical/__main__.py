"""python -m pytest_agentbench.suites.mechanical [--write-golden] [--write-docs PATH]

Without options, compares the generated suite with golden.tsv and lists what differs.
--write-golden rewrites golden.tsv after a deliberate change (bump SUITE_VERSION first);
--write-docs renders docs/suite.md from the code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_agentbench.suites.mechanical import docs, golden


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentbench.suites.mechanical")
    parser.add_argument(
        "--write-golden",
        action="store_true",
        help=f"rewrite {golden.GOLDEN_PATH.name} from the code (bump SUITE_VERSION first)",
    )
    parser.add_argument("--write-docs", type=Path, metavar="PATH", help="render docs/suite.md")
    args = parser.parse_args(argv)
    if args.write_docs:
        args.write_docs.write_text(docs.render(), encoding="utf-8")
        print(f"wrote {args.write_docs}")
        return 0
    if args.write_golden:
        written = golden.write()
        print(f"wrote {len(written.hashes)} tasks to {golden.GOLDEN_PATH}")
        print(f"task-set {written.task_set}")
        return 0
    diff = golden.differences(golden.read(), golden.current())
    for line in diff:
        print(line)
    print("golden.tsv is up to date" if not diff else f"{len(diff)} differences")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
