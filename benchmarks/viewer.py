"""The viewer on a run of 100,000 trials: how soon the overview answers, how soon a trial
page does, and how much memory the server holds.

Work: one real mock run of the bundled suite (271 tasks, once each) is grown into a run
directory of 10,000 tasks x 10 repeats: task i is a copy of bundled task i mod 271 under a name
of its own, every trial keeps its template's Observation (renamed) and its trial folder
(hard links: trajectory, raw evidence, diff, failure report). ``agentbench view DIR`` then
runs as a user starts it, on a free port.

Figures:
- start: from starting the command until it prints its URL (read, scored, index built);
- overview: the index payload fetched and parsed, as the page does first (server warm);
- trial page: a trial's payload fetched and parsed, for trials never asked for before;
- in a browser (headless Chromium driven by Selenium, from Debian's chromium-driver), until
  the page has drawn: the overview loaded afresh; a trial's page reached from inside the app
  (a click, j/k); a trial's address loaded afresh (the app, the index, then the trial);
- memory: the server's peak resident set (VmHWM) after all of the above.

Targets: overview interactive in under 2 s, a trial page in under 300 ms, the server's
memory under 500 MB.

    python -m benchmarks --only viewer            # --quick: 20,000 trials
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.core import Benchmark, Context, Target, check
from benchmarks.procs import child_env, pytest_dir, run_pytest, tree_cgroup

TASKS = {"full": 10_000, "quick": 2_000}
REPEATS = 10
TRIAL_SAMPLES = 30


def template_run(ctx: Context) -> Path:
    """One mock run of the bundled suite: the trials every synthetic one is copied from."""
    where = pytest_dir(ctx.scratch / "template")
    run_pytest(where, "--agent=mock", "--repeats=1", "--agentbench-dir=run")
    return where / "run"


def grow(template: Path, out: Path, tasks: int) -> int:
    """A run directory of TASKS x REPEATS trials made of the template's; how many trials."""
    run = json.loads((template / "run.json").read_text())
    lines = (template / "observations.jsonl").read_text().splitlines()
    originals = [json.loads(line) for line in lines if line.strip()]
    (out / "trials").mkdir(parents=True)
    declared: dict[str, Any] = {}
    written = 0
    with open(out / "observations.jsonl", "w") as sink:
        for index in range(tasks):
            original = originals[index % len(originals)]
            task = f"{original['task']}-x{index // len(originals):03d}"
            declared[task] = run["tasks"][original["task"]]
            folder = template / "trials" / f"{original['task']}-r0"
            for repeat in range(REPEATS):
                observation = dict(original, task=task, repeat=repeat)
                observation["trial_id"] = f"{run['run_id']}/{task}/r{repeat}/a0"
                observation["nodeid"] = f"{task}::r{repeat}"
                sink.write(json.dumps(observation) + "\n")
                written += 1
                if folder.is_dir():
                    target = out / "trials" / f"{task}-r{repeat}"
                    shutil.copytree(folder, target, copy_function=os.link)
    run["tasks"] = declared
    run["tasks_selected"] = sorted(declared)
    run["settings"]["repeats"] = REPEATS
    (out / "run.json").write_text(json.dumps(run))
    return written


def _peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found, status
    return int(found.group(1)) / 1024


def _fetch(url: str) -> tuple[float, Any]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        data = json.loads(response.read())
    return time.perf_counter() - start, data


def _until_drawn(driver: Any, route: str) -> None:
    """Wait until the app has drawn ROUTE whole (main's data-route, body's data-ready)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30, poll_frequency=0.005).until(  # the default polls every 0.5 s
        lambda d: d.execute_script(
            "const main = document.getElementById('main');"
            "return main.dataset.route === arguments[0] && document.body.dataset.ready === '1'",
            route,
        )
    )


def in_browser_s(
    url: str, samples: int, trials: list[int]
) -> tuple[list[float], list[float], list[float]]:
    """Seconds in headless Chromium until a page has drawn: the overview and a trial's page
    loaded afresh (the app starts, reads the index, then what the page needs), and a trial's
    page reached from inside the app (as a click or j/k does)."""
    chromedriver = shutil.which("chromedriver")
    if chromedriver is None:
        raise RuntimeError("no chromedriver: apt-get install chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)

    def fresh(route: str) -> float:
        driver.get("about:blank")
        start = time.perf_counter()
        driver.get(f"{url}#/{route}")
        _until_drawn(driver, route)
        return time.perf_counter() - start

    def within(route: str) -> float:
        start = time.perf_counter()
        driver.execute_script("location.hash = arguments[0]", f"#/{route}")
        _until_drawn(driver, route)
        return time.perf_counter() - start

    try:
        overview = [fresh("") for _ in range(samples)]
        half = len(trials) // 2
        loaded = [fresh(f"trial/c0/{pick}") for pick in trials[:half]]
        reached = [within(f"trial/c0/{pick}") for pick in trials[half:]]
        return overview, loaded, reached
    finally:
        driver.quit()


def run(ctx: Context) -> list[dict[str, Any]]:
    tasks = TASKS["quick" if ctx.quick else "full"]
    directory = ctx.scratch / "big-run"
    trials = grow(template_run(ctx), directory, tasks)
    argv = [sys.executable, "-m", "pytest_agentbench.cli", "view", str(directory)]
    with tree_cgroup() as group:
        start = time.perf_counter()
        server = subprocess.Popen(
            argv, stdout=subprocess.PIPE, text=True, env=child_env(), preexec_fn=group.enter
        )
        measured = _measure(ctx, server, start, trials, tasks)
        tree_peak = group.peak_mb()
    return _checks(trials, tasks, *measured, tree_peak)


def _measure(
    ctx: Context, server: subprocess.Popen[str], start: float, trials: int, tasks: int
) -> tuple[float, list[float], list[float], tuple[list[float], list[float], list[float]], float]:
    """What the started server does: (start s, overview payload s, trial payload s, browser
    overview and trial page s, the server's peak RSS MB)."""
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        started = time.perf_counter() - start
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert found, line
        url = found.group(1)
        overview = []
        for _ in range(ctx.runs(5, 2)):
            seconds, index = _fetch(url + "api/index")
            overview.append(seconds)
        assert sum(c["trials"] for c in index["configurations"]) == trials
        assert len(index["tasks"]) == tasks
        _, columns = _fetch(url + "api/trials/c0")
        assert len(columns["task"]) == trials
        picks = random.Random(0).sample(range(trials), TRIAL_SAMPLES)
        trial_s = []
        for pick in picks:
            seconds, trial = _fetch(url + f"api/trial/c0/{pick}")
            assert trial["task"] == columns["task"][pick] and trial["steps"]
            trial_s.append(seconds)
        unseen = random.Random(1).sample(sorted(set(range(trials)) - set(picks)), 20)
        in_browser = in_browser_s(url, ctx.runs(3, 1), unseen)
        peak = _peak_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return started, overview, trial_s, in_browser, peak


def _checks(
    trials: int,
    tasks: int,
    started: float,
    overview: list[float],
    trial_s: list[float],
    in_browser: tuple[list[float], list[float], list[float]],
    peak: float,
    tree_peak: float,
) -> list[dict[str, Any]]:
    size = f"{trials:,} trials ({tasks:,} tasks x {REPEATS})"
    checks = [
        check(
            f"viewer start, {size}",
            unit="s",
            value=[started],
            target=Target("value", "<", 60.0),
            note="until the URL is printed: the run read, scored and indexed",
            trials=trials,
        ),
        check(
            f"viewer overview payload, {size}",
            unit="s",
            value=overview,
            target=Target("value", "<", 2.0),
            note="GET /api/index, parsed; the server already started",
            trials=trials,
        ),
        check(
            f"viewer trial page payload, {size}",
            unit="s",
            value=trial_s,
            target=Target("value", "<", 0.3),
            note=f"GET /api/trial/c0/N for {TRIAL_SAMPLES} trials never asked for, parsed",
            trials=trials,
        ),
        check(
            f"viewer server peak memory, {size}",
            unit="MB",
            value=[peak],
            target=Target("value", "<", 500.0),
            note="VmHWM of the agentbench view process after every request above",
            trials=trials,
        ),
        check(
            f"viewer peak memory with its scoring child, {size}",
            unit="MB",
            value=[tree_peak],
            target=Target("value", "<", 1000.0),
            note=(
                "the kernel's peak for a memory cgroup the command starts in: the server and "
                "the child that reads and scores the run, page cache of the files read included"
            ),
            trials=trials,
        ),
    ]
    overview_drawn, trial_loaded, trial_reached = in_browser
    checks += [
        check(
            f"viewer overview in a browser, {size}",
            unit="s",
            value=overview_drawn,
            target=Target("value", "<", 2.0),
            note="headless Chromium: loading the page until the overview has drawn",
            trials=trials,
        ),
        check(
            f"viewer trial page in a browser, {size}",
            unit="s",
            value=trial_reached,
            target=Target("value", "<", 0.3),
            note="headless Chromium: from the app's own navigation to a trial never opened "
            "before until its page has drawn",
            trials=trials,
        ),
        check(
            f"viewer trial page loaded afresh in a browser, {size}",
            unit="s",
            value=trial_loaded,
            target=Target("value", "<", 2.0),
            note="headless Chromium: a trial's address opened in a new page, the app, the "
            "index and the trial loaded, until it has drawn",
            trials=trials,
        ),
    ]
    return checks


BENCHMARK = Benchmark("viewer", "the viewer on a synthetic run of 100,000 trials", run)
