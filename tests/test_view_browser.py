"""`agentbench view` in a real browser: Debian's chromium driven by Selenium through Debian's
chromedriver, headless at 1280x900.

One browser and one two-arm mock run (with a task whose id, prompt and files are hostile HTML)
serve the whole module; the server is the real command, started as a subprocess, its URL read
from what it prints. Every page visited is checked for console errors and horizontal scroll,
and saved as a screenshot under the test's tmp_path (the paths are printed).
"""

from __future__ import annotations

import contextlib
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from test_judges import judge
from tiny_tasks import TINY_RUN, make_tasks

from pytest_agentbench.cli import main
from pytest_agentbench.testing.model_server import ScriptedModelServer

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

pytestmark = [pytest.mark.real, pytest.mark.xdist_group("view-browser")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WIDTH, HEIGHT = 1280, 900
WAIT_S = 15.0
HOSTILE_ID = "<img src=x onerror=alert(1)>"
HOSTILE_PROMPT = "Replace <script>alert(2)</script> in notes.txt with <img src=x onerror=alert(3)>."
HOSTILE_BEFORE = "<script>alert(4)</script>"
# What a missing value looks like when it slips into the page as text ("--- /dev/null" may not).
SLIPS = re.compile(r"(?m)^(null|undefined|NaN)$|\bundefined\b|\bNaN\b|\[object Object\]")
URL = re.compile(r"http://127\.0\.0\.1:\d+/\S*")
MOCK_RUN = [*TINY_RUN, "-p", "no:cacheprovider", "-q"]


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium (pip install -e '.[test]')"
    if CHROMIUM is None or CHROMEDRIVER is None:
        return "needs Debian's chromium and chromium-driver (.ci/install-browser.sh)"
    return None


# ---------------------------------------------------------------------------------------------
# Runs and the server


def write_suite(root: Path, count: int) -> None:
    """count tiny tasks plus one whose id, prompt, category and files are hostile HTML."""
    tasks = make_tasks(root, count)
    hostile = tasks / HOSTILE_ID
    (hostile / "workspace").mkdir(parents=True)
    (hostile / "expected").mkdir()
    (hostile / "task.toml").write_text(
        f'prompt = "{HOSTILE_PROMPT}"\ncategory = "<b>hostile</b>"\n', encoding="utf-8"
    )
    (hostile / "workspace" / "notes.txt").write_text(f"{HOSTILE_BEFORE}\n", encoding="utf-8")
    (hostile / "expected" / "notes.txt").write_text(f"{HOSTILE_ID}\n", encoding="utf-8")


def mock_run(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """A mock run of the tiny tasks in cwd, as a user starts it (trials fail on purpose)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *MOCK_RUN, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> None:
    output, _ = process.communicate(timeout=120)
    assert process.returncode in (0, 1), output  # 1: some trials failed, as the mock intends


def agentbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_agentbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextlib.contextmanager
def serving(*sources: Path) -> Iterator[str]:
    """`agentbench view SOURCES --port 0` running; yields the URL it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_agentbench.cli", "view", *map(str, sources), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    reader = threading.Thread(target=_pump, args=(stdout, lines), daemon=True)
    reader.start()
    try:
        yield _printed_url(process, lines)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)  # the pipe is at its end once the server is gone
        stdout.close()


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


def _printed_url(process: subprocess.Popen[str], lines: queue.Queue[str]) -> str:
    seen: list[str] = []
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            if process.poll() is not None:
                break
            continue
        seen.append(line)
        match = URL.search(line)
        if match:
            return match.group(0)
    pytest.fail(f"agentbench view printed no URL (exit {process.poll()}): {''.join(seen)}")


@pytest.fixture(scope="module")
def arms_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-arm mock run: vanilla and `core`, 7 tasks, 2 repeats each."""
    root = tmp_path_factory.mktemp("view-run")
    write_suite(root, 6)
    (root / "arms.toml").write_text('[arm.core]\nprompt_prefix = "Change nothing else."\n')
    run = root / "run"
    finish(mock_run(root, "--arms=arms.toml", f"--agentbench-dir={run}"))
    return run


@pytest.fixture(scope="module")
def server(arms_run: Path) -> Iterator[str]:
    with serving(arms_run) as url:
        yield url


# ---------------------------------------------------------------------------------------------
# The browser


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    why = _missing()
    if why:
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        f"--window-size={WIDTH},{HEIGHT}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Both paths given: Selenium Manager has nothing to look up or download.
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_window_size(WIDTH, HEIGHT)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(browser: WebDriver) -> Iterator[WebDriver]:
    """The module's browser, its console log drained before the test and checked after."""
    browser.get_log("browser")
    yield browser
    assert_quiet_console(browser)


def assert_quiet_console(driver: WebDriver) -> None:
    entries = driver.get_log("browser")
    errors = [entry for entry in entries if entry["level"] == "SEVERE"]
    assert not errors, errors


def renders(driver: WebDriver) -> int:
    count = driver.execute_script("return document.getElementById('main').dataset.renders")
    return int(count or 0)


def until(driver: WebDriver, condition: Callable[[WebDriver], Any], timeout: float = WAIT_S) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def rendered(driver: WebDriver, action: Callable[[], object]) -> None:
    """Do action (a click, a key, a URL) and wait until the app has drawn the page it leads to."""
    before = renders(driver)
    action()
    until(driver, lambda d: renders(d) > before)


def visit(driver: WebDriver, url: str) -> None:
    """Open url as a fresh document and wait for its first page."""
    driver.get("about:blank")
    driver.get(url)
    until(driver, lambda d: renders(d) > 0)


def route(driver: WebDriver) -> str:
    return str(driver.execute_script("return document.getElementById('main').dataset.route"))


def find(driver: WebDriver, css: str) -> WebElement:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def find_all(driver: WebDriver, css: str) -> list[WebElement]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def press(driver: WebDriver, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()


def choose(element: WebElement, *, value: str | None = None, text: str | None = None) -> None:
    from selenium.webdriver.support.ui import Select

    select = Select(element)
    if value is not None:
        select.select_by_value(value)
    else:
        select.select_by_visible_text(str(text))


def assert_no_alert(driver: WebDriver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.dismiss()


def check(driver: WebDriver, shots: Path, name: str) -> None:
    """Save the page (first: a failing page is the one worth looking at), then check that it
    fits 1280 px with no horizontal scroll and that the console is quiet."""
    screenshot(driver, shots / f"{name}.png")
    width, inner = driver.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]"
    )
    assert width <= inner, f"{name}: the page scrolls sideways ({width} > {inner})"
    slip = re.search(SLIPS, find(driver, "main").text)
    assert slip is None, f"{name}: a missing value shown as {slip.group(0) if slip else ''}"
    assert_quiet_console(driver)


def screenshot(driver: WebDriver, path: Path) -> None:
    """The whole page: the window made as tall as the page for the shot, then put back."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(WIDTH, min(max(height, HEIGHT), 4000))
    try:
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(WIDTH, HEIGHT)
    print(f"screenshot: {path}")


# ---------------------------------------------------------------------------------------------
# The tests


def test_overview_to_a_task_to_a_failed_trial_and_through_its_steps(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    visit(page, server)
    assert route(page) == ""
    assert len(find_all(page, ".card h3")) >= 2  # a card per arm
    until(page, lambda d: len(find_all(d, ".chart-box canvas")) == 3)
    check(page, tmp_path, "overview")

    # The hardest tasks come first: the first (of the plain tasks) has a failed trial.
    plain = [link for link in find_all(page, "section a.task-link") if link.text != HOSTILE_ID]
    rendered(page, plain[0].click)
    assert route(page).startswith("task/")
    check(page, tmp_path, "task")

    rendered(page, find(page, "a.o-F.trial-link").click)
    trial = route(page)
    assert trial.startswith("trial/")
    assert find(page, "h1 .o-F").text == "F"
    assert "::" in find(page, ".copy-row code").text  # the node id to paste
    find(page, ".copy-row button").click()  # copied, or selected where no clipboard is allowed
    until(page, lambda d: find(d, ".copy-row .copied").text != "")
    check(page, tmp_path, "trial")

    title = find(page, "#step-title")
    count = len(find_all(page, "#step-list button"))
    assert count >= 3 and title.text == f"Step 1 of {count}"
    find(page, "#step-next").click()
    assert find(page, "#step-title").text == f"Step 2 of {count}"
    press(page, "n")
    assert find(page, "#step-title").text == f"Step 3 of {count}"
    press(page, "p")
    assert find(page, "#step-title").text == f"Step 2 of {count}"
    current = find(page, "#step-list button[aria-current=step]")
    assert current.text.startswith("2.")
    calls = 0
    for _ in range(count):  # through every step: the agent's show their tool calls
        calls += len(find_all(page, "#step-detail .tool-call"))
        press(page, "n")
    assert calls and find(page, "#step-title").text == f"Step {count} of {count}"

    rendered(page, lambda: press(page, "j"))
    assert route(page).startswith("trial/") and route(page) != trial
    rendered(page, lambda: press(page, "k"))
    assert route(page) == trial

    rendered(page, page.back)  # the back button: each page has its own history entry
    assert route(page) != trial and route(page).startswith("trial/")
    rendered(page, page.back)
    rendered(page, page.back)
    assert route(page).startswith("task/")


def test_search_and_filters_narrow_the_task_table(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    visit(page, server)
    rendered(page, lambda: press(page, "/"))  # from any page: the tasks page, search focused
    assert route(page) == "tasks"
    until(page, lambda d: d.switch_to.active_element.get_attribute("id") == "search")
    total = len(find_all(page, "tbody a.task-link"))
    assert total == 7

    page.switch_to.active_element.send_keys("t01")
    until(page, lambda d: len(find_all(d, "tbody a.task-link")) == 1)
    assert find(page, "tbody a.task-link").text == "t01"
    assert "q=t01" in page.current_url

    from selenium.webdriver.common.keys import Keys

    find(page, "#search").send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)  # as a user empties it
    until(page, lambda d: len(find_all(d, "tbody a.task-link")) == total)
    choose(find(page, "#filter-family"), value="rename")
    until(page, lambda d: "family=rename" in d.current_url)
    families = {cell.text for cell in find_all(page, "tbody tr td:nth-child(2)")}
    assert families == {"rename"}

    choose(find(page, "#filter-outcome"), value="F")
    for row in find_all(page, "tbody tr"):
        assert row.find_elements("css selector", "a.o-F"), row.text
    check(page, tmp_path, "tasks-filtered")

    # A deep link brings the filters back.
    visit(page, f"{server}#/tasks?family=edit&q=t0")
    assert find(page, "#filter-family").get_attribute("value") == "edit"
    assert find(page, "#search").get_attribute("value") == "t0"
    assert all(link.text.startswith("t0") for link in find_all(page, "tbody a.task-link"))


def test_compare_two_arms_and_follow_a_mcnemar_cell_to_its_trials(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    visit(page, server)
    rendered(page, find(page, "#nav-compare").click)
    if find(page, "#compare-base option:checked").text != "vanilla":
        rendered(page, lambda: choose(find(page, "#compare-base"), text="vanilla"))
    if find(page, "#compare-candidate option:checked").text != "core":
        rendered(page, lambda: choose(find(page, "#compare-candidate"), text="core"))
    pair = route(page)
    assert pair.startswith("compare/")
    metrics = find(page, "section table").text
    assert "first_exact" in metrics and "[" in metrics  # each difference with its interval
    check(page, tmp_path, "compare")

    cell = "#mcnemar-first_exact-{}".format
    counts = {
        name: int(find(page, cell(name)).text.replace(",", ""))
        for name in ("both", "base_only", "candidate_only", "neither")
    }
    assert sum(counts.values()) == 14  # 7 tasks x 2 repeats, paired
    name = max(counts, key=lambda name: (counts[name], name != "both"))
    rendered(page, find(page, cell(name)).click)
    assert route(page) == f"{pair}/cell/{name}"
    rows = find_all(page, "tbody tr")
    assert len(rows) == counts[name]
    assert all(len(row.find_elements("css selector", "a.trial-link")) == 2 for row in rows)
    check(page, tmp_path, "compare-cell")

    rendered(page, find(page, "tbody tr a.trial-link").click)
    assert route(page).startswith("trial/")
    assert "vanilla" in find(page, ".facts").text


def test_hostile_names_prompts_and_diffs_render_as_text(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    visit(page, f"{server}#/tasks?q={quote('<img', safe='')}")
    links = find_all(page, "tbody a.task-link")
    assert [link.text for link in links] == [HOSTILE_ID]
    rendered(page, links[0].click)
    assert_no_alert(page)
    assert find(page, "h1").text == HOSTILE_ID
    assert "<b>hostile</b>" in find(page, ".facts").text
    check(page, tmp_path, "hostile-task")

    rendered(page, find(page, "a.trial-link").click)
    assert_no_alert(page)
    text = find(page, "main").text
    assert HOSTILE_ID in find(page, "h1").text
    assert HOSTILE_PROMPT in text
    if find_all(page, "pre.diff"):
        assert HOSTILE_BEFORE in text
    # Nothing of the data became markup: the app's own scripts are the only ones.
    assert not find_all(page, "main img, main script, main b, main iframe")
    assert len(find_all(page, "script[src]")) == 2
    check(page, tmp_path, "hostile-trial")


def test_help_opens_with_question_mark_and_closes_with_escape(page: WebDriver, server: str) -> None:
    visit(page, server)
    help_box = find(page, "#help")
    assert not help_box.is_displayed()
    press(page, "?")
    until(page, lambda d: help_box.is_displayed())
    assert "next / previous trial" in help_box.text
    from selenium.webdriver.common.keys import Keys

    press(page, Keys.ESCAPE)
    until(page, lambda d: not help_box.is_displayed())


def test_dark_scheme_is_dark_and_still_fits(page: WebDriver, server: str, tmp_path: Path) -> None:
    dark = {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    page.execute_cdp_cmd("Emulation.setEmulatedMedia", dark)
    try:
        visit(page, server)
        until(page, lambda d: len(find_all(d, ".chart-box canvas")) == 3)
        background = page.execute_script("return getComputedStyle(document.body).backgroundColor")
        red, green, blue = map(int, re.findall(r"\d+", background)[:3])
        assert red + green + blue < 150, background
        check(page, tmp_path, "overview-dark")
    finally:
        page.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_the_page_of_a_live_run_updates_as_trials_finish(page: WebDriver, tmp_path: Path) -> None:
    write_suite(tmp_path, 3)
    run = tmp_path / "live"
    finish(mock_run(tmp_path, "-k", "t00", f"--agentbench-dir={run}"))  # 2 trials so far
    with serving(run) as url:
        visit(page, f"{url}#/tasks")
        assert len(find_all(page, "a.trial-link")) == 2
        resumed = mock_run(tmp_path, f"--agentbench-resume={run}")
        until(page, lambda d: len(find_all(d, "a.trial-link")) == 8, timeout=30)
        finish(resumed)
        check(page, tmp_path, "live")


def test_a_bundle_opens_from_file_and_loads_trials_lazily(
    page: WebDriver, arms_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bundle"
    made = agentbench("view", str(arms_run), "--bundle", str(out))
    assert made.returncode == 0, made.stdout + made.stderr
    assert (out / "index.html").is_file() and (out / "data" / "index.js").is_file()

    visit(page, (out / "index.html").as_uri())
    assert len(find_all(page, ".card h3")) >= 2
    until(page, lambda d: len(find_all(d, ".chart-box canvas")) == 3)
    check(page, tmp_path, "bundle-overview")

    rendered(page, find(page, "section a.task-link").click)
    rendered(page, find(page, "a.trial-link").click)
    assert route(page).startswith("trial/")
    assert find(page, "#step-title").text.startswith("Step 1 of")
    check(page, tmp_path, "bundle-trial")

    rendered(page, find(page, "#nav-compare").click)
    assert route(page).startswith("compare/")
    check(page, tmp_path, "bundle-compare")


def test_the_html_report_is_the_same_app_with_its_data_inlined(
    page: WebDriver, arms_run: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report.html"
    made = agentbench("report", str(arms_run), "--format", "html", "-o", str(report))
    assert made.returncode == 0, made.stdout + made.stderr
    assert not (tmp_path / "assets").exists()  # one file: nothing beside it is loaded

    visit(page, report.as_uri())
    assert len(find_all(page, ".card h3")) >= 2
    until(page, lambda d: len(find_all(d, ".chart-box canvas")) == 3)
    check(page, tmp_path, "report-overview")
    rendered(page, find(page, "a.trial-link").click)
    assert find(page, "#step-title").text.startswith("Step 1 of")
    rendered(page, find(page, "#nav-compare").click)
    assert route(page).startswith("compare/")
    check(page, tmp_path, "report-compare")


def test_a_payload_missing_from_a_bundle_says_so(
    page: WebDriver, arms_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bundle"
    assert agentbench("view", str(arms_run), "--bundle", str(out)).returncode == 0
    first = sorted((out / "data" / "trial").glob("*/0.js"))[0]
    first.unlink()
    visit(page, f"{(out / 'index.html').as_uri()}#/trial/{first.parent.name}/0")
    assert "not in this bundle" in find(page, "main").text
    # The browser logs the missing file itself; nothing else may be in the console.
    errors = [e for e in page.get_log("browser") if e["level"] == "SEVERE"]
    assert all("0.js" in e["message"] for e in errors), errors


def test_the_judges_table_names_the_winner_flags_show_and_a_review_lists_its_findings(
    page: WebDriver,
    arm_run: Path,  # conftest.py: vanilla, and core with longer diffs
    tmp_path: Path,
) -> None:
    core = next(p.name for p in (arm_run / "trials").iterdir() if p.name.startswith("core"))
    with ScriptedModelServer({"judge": "shorter", "turns": []}) as model:
        assert judge(model, arm_run) == 0
        asked = ["review", str(arm_run), core, "--judge-model", "judge-1", "--judge-api"]
        assert main([*asked, "openai", "--judge-base-url", model.openai_base_url]) == 0

    with serving(arm_run) as url:
        visit(page, url)
        judges = find(page, "#judges")
        assert "openai:judge-1" in judges.text and "Prefers vanilla" in judges.text
        winner = find(page, "#judges tr.preferred")
        assert winner.get_attribute("data-side") == "vanilla" and "preferred" in winner.text
        cells = [
            td.text
            for td in find(page, '#judges tr[data-side="vanilla"]').find_elements(
                "css selector", "td"
            )
        ]
        assert cells[2] == "2 / 0 / 0" and cells[3].startswith("100.0%") and "[" in cells[3]
        loser = find(page, '#judges tr[data-side="core"]').text
        assert "0 / 0 / 4" in loser  # the judge's minor findings in core's changes
        assert not find_all(page, "#judges .badge.flag")
        check(page, tmp_path, "judges-overview")

        rendered(page, find(page, "#judges a.reviewed-link").click)
        assert route(page).startswith("trial/")
        reviews = find(page, "#reviews")
        row = find(page, '#reviews tr[data-severity="minor"]').text
        assert "minor" in row and "NOTES.agent.md:1" in row and "never asked for" in row
        assert "openai:judge-1" in reviews.text
        check(page, tmp_path, "judges-trial-review")

        rendered(page, find(page, "#nav-compare").click)
        if find(page, "#compare-base option:checked").text != "vanilla":
            rendered(page, lambda: choose(find(page, "#compare-base"), text="vanilla"))
        if find(page, "#compare-candidate option:checked").text != "core":
            rendered(page, lambda: choose(find(page, "#compare-candidate"), text="core"))
        assert "Prefers vanilla" in find(page, "#judges").text
        check(page, tmp_path, "judges-compare")

        # Judged again while the page is open, with gold pairs and a second judge that always
        # answers "A" (judge-1's pair answers come from the cache): the overview shows both
        # judges, their flags and their agreement without a reload.
        visit(page, url)
        with ScriptedModelServer({"judge": "first", "turns": []}) as model:
            assert judge(model, arm_run, "--gold", "--judge-model", "judge-2") == 0
        until(page, lambda d: len(find_all(d, "#judges .card.judge")) == 2, timeout=30)
        badges = {
            card.get_attribute("data-judge"): [
                b.text for b in card.find_elements("css selector", ".badge.flag")
            ]
            for card in find_all(page, "#judges .card.judge")
        }
        assert badges == {
            "openai:judge-1": ["below gold threshold"],
            "openai:judge-2": ["position-inconsistent", "below gold threshold"],
        }
        text = find(page, "#judges").text
        assert "FLAG: gold accuracy 0.50 < 0.8" in text and "Agreement openai:judge-1" in text
        check(page, tmp_path, "judges-flagged")

    report = tmp_path / "report.html"
    made = agentbench("report", str(arm_run), "--format", "html", "-o", str(report))
    assert made.returncode == 0, made.stdout + made.stderr
    visit(page, report.as_uri())
    assert len(find_all(page, "#judges .badge.flag")) == 3
    assert find_all(page, "#judges a.reviewed-link")
    check(page, tmp_path, "judges-report")
