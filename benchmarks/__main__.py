"""Runner: ``python -m benchmarks [--quick] [--only NAME] [-o results.json]``.

Discovers every module of this package that exposes ``BENCHMARK`` (a core.Benchmark), runs
them in name order, prints one line per check and writes all figures as JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import benchmarks
from benchmarks.core import Benchmark, Context


def discover() -> dict[str, Benchmark]:
    """name -> Benchmark for every module of the package with a BENCHMARK attribute."""
    found: dict[str, Benchmark] = {}
    for module in pkgutil.iter_modules(benchmarks.__path__):
        if module.name.startswith("_"):
            continue
        loaded = importlib.import_module(f"benchmarks.{module.name}")
        entry = getattr(loaded, "BENCHMARK", None)
        if isinstance(entry, Benchmark):
            found[entry.name] = entry
    return dict(sorted(found.items()))


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
    }


def _format(check: dict[str, Any]) -> str:
    value = check["value"]
    text = f"  {check['name']}: {value['median']:.4g} {check['unit']}"
    text += f" [{value['min']:.4g}..{value['max']:.4g}, {value['runs']} runs]"
    if check["floor"] is not None:
        text += f"  floor {check['floor']['median']:.4g}  ratio {check['ratio']}"
    verdict = "PASS" if check["passed"] else "FAIL"
    return f"{text}  target {check['target']}  {verdict}"


def run_one(bench: Benchmark, quick: bool) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix=f"agentbench-bench-{bench.name}-"))
    started = time.perf_counter()
    try:
        checks = bench.run(Context(quick=quick, scratch=scratch))
        error = None
    except Exception as exc:  # a broken benchmark is reported, the others still run
        checks, error = [], f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "name": bench.name,
        "title": bench.title,
        "seconds": round(time.perf_counter() - started, 2),
        "error": error,
        "passed": error is None and all(c["passed"] for c in checks),
        "checks": checks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs, a fast smoke pass")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only NAME")
    parser.add_argument("-o", "--output", type=Path, help="write the figures as JSON here")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    found = discover()
    if args.list:
        for name, bench in found.items():
            print(f"{name}: {bench.title}")
        return 0
    unknown = sorted(set(args.only or ()) - set(found))
    if unknown:
        parser.error(f"--only {', '.join(unknown)}: unknown; known: {', '.join(found)}")
    selected = [b for name, b in found.items() if not args.only or name in args.only]
    results = []
    for bench in selected:
        print(f"{bench.name}: {bench.title}", flush=True)
        result = run_one(bench, args.quick)
        for check in result["checks"]:
            print(_format(check), flush=True)
        if result["error"]:
            print(f"  ERROR {result['error']}", flush=True)
        results.append(result)
    document = {
        "schema_version": 1,
        "quick": args.quick,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "benchmarks": results,
        "passed": all(r["passed"] for r in results),
    }
    if args.output:
        args.output.write_text(json.dumps(document, indent=1) + "\n")
        print(f"figures written to {args.output}")
    failed = [r["name"] for r in results if not r["passed"]]
    print("all targets met" if not failed else f"targets missed: {', '.join(failed)}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
