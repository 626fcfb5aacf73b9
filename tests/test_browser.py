"""The learner's JupyterLab in a real browser: Debian's Chromium driven by Playwright.

JupyterLab starts as `make lab` starts it (``python -m autograder lab``), on a workspace
of the test's own (running, solving and validating save the notebooks), and the browser
opens make lab's first page: the first notebook, not JupyterLab's Launcher.
One server and one browser serve every notebook. For each notebook the test runs all
cells and checks what a learner sees: every graph drawn as an SVG image, every graded
test cell failing with "Exercise not answered yet" and no other cell failing, no
``/tmp/ipykernel_...`` file name in an output. In the first notebook it types the
reference answer of Exercise 1 from ``solutions/``, re-runs the answer and its tests
(they pass and say so), then clicks Validate: the dialog opens with a summary that names
the exercises still failing. Throughout: no notification pop-up (JupyterLab's news
prompt), no browser console error, and in the end no
``[E``/``[W``/Traceback line in the server log. Screenshots go to ``build/screenshots/``
(printed at the end of the pytest run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jupytext
import nbformat
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from autograd_pitfalls.passline import PASS_LINE
from autograder.course import REPO, assignment_ids
from tests.support.parts import one_part_per_lesson

ASSIGNMENTS = assignment_ids()
# The notebooks run in the browser: one part of each lesson, a and b in turn. Each costs
# the run about 8 s, mostly its kernel's start; every notebook runs headless in
# tests/test_notebooks.py (every cell, twice, and its tests) all the same.
IN_THE_BROWSER = one_part_per_lesson(ASSIGNMENTS)
TOKEN = "autograd-pitfalls-browser-test"
SCREENSHOTS = REPO / "build" / "screenshots"
SOLVED = ASSIGNMENTS[0]  # the notebook where Exercise 1 gets solved and validated
STUB_MESSAGE = "Exercise not answered yet"
RUN_TIMEOUT_S = 120
# JupyterLab's start, on a machine that other grading runs keep busy: up to five minutes.
SERVER_START_TRIES = 5 * 60 * 4  # every quarter second
IDLE = "document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status"
# JupyterLab's notification pop-ups (react-toastify toasts, one class per kind).
TOASTS = '.Toastify__toast, [class*="jp-Notification-Toast-"]'

# Every cell of the open notebook, in order: kind, prompt, and each output's mime type,
# text, and for SVG whether its image decoded with a size (JupyterLab shows SVG as <img>).
CELLS_JS = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')].map(cell => ({
  code: cell.classList.contains('jp-CodeCell'),
  prompt: cell.querySelector('.jp-InputPrompt')?.textContent ?? '',
  folded: cell.querySelector('.jp-InputPlaceholder')?.textContent ?? null,
  outputs: [...cell.querySelectorAll('.jp-OutputArea-output')].map(out => {
    const img = out.querySelector('img');
    return {
      mime: out.dataset.mimeType ?? '',
      text: out.textContent,
      svg: !!img && img.src.startsWith('data:image/svg+xml') && img.complete
           && img.naturalWidth > 0,
    };
  }),
}))"""


def _chromium() -> str:
    """Debian's Chromium; skips only where the setup could not have installed it."""
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    can_install = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if can_install or os.environ.get("CI"):
        pytest.fail("chromium is missing although the setup can install it: run make setup")
    pytest.skip("chromium is not installed and cannot be here (not root with apt-get)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_serving(base: str, log: Path) -> None:
    """Waits until the JupyterLab at base answers; fails the test with its log if it never does."""
    for _ in range(SERVER_START_TRIES):
        try:
            _api(base, "/api/status")
            return
        except OSError:
            time.sleep(0.25)
    pytest.fail(f"JupyterLab did not start:\n{log.read_text()}")


def _api(base: str, path: str, method: str = "GET") -> object:
    request = urllib.request.Request(f"{base}{path}?token={TOKEN}", method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[tuple[str, Path, Path]]:
    """JupyterLab started by `make lab`'s command, on a workspace of this test's own.

    Yields (url, workspace, server log). Running, solving and validating save notebooks:
    they are this test's copies, made by the command itself.
    """
    folder = tmp_path_factory.mktemp("browser")
    root = folder / "workspace"
    log = folder / "server.log"
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "autograder",
        "lab",
        f"--workspace={root}",
        f"--port={port}",
        f"--token={TOKEN}",
        "--no-browser",
    ]
    with log.open("w") as handle:
        server = subprocess.Popen(command, cwd=REPO, stdout=handle, stderr=handle)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(base, log)
        yield base, root, log
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(request) -> Iterator[Browser]:
    executable = _chromium()
    if SCREENSHOTS.exists():
        shutil.rmtree(SCREENSHOTS)
    SCREENSHOTS.mkdir(parents=True)
    request.config.browser_screenshots = SCREENSHOTS  # printed by conftest's summary
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's own sandbox cannot start as root (CI, containers).
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def tab(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    """One page for every notebook (JupyterLab loads once), and its console errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    shared = context.new_page()
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    shared.on("console", on_console)
    shared.on("pageerror", lambda error: errors.append(str(error)))
    yield shared, errors
    context.close()


@pytest.fixture
def page(tab) -> tuple[Page, list[str]]:
    """The shared page, with the console errors logged during this test only."""
    shared, errors = tab
    errors.clear()
    return shared, errors


def _open(page: Page, base: str, notebook: str) -> float:
    """Opens ``notebook``; returns the seconds until its new kernel was ready (idle)."""
    opened = time.perf_counter()
    # ?reset: start from an empty workspace, so only this notebook is open.
    page.goto(f"{base}/lab/tree/{notebook}?reset&token={TOKEN}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    _wait_for_kernel(page)
    return time.perf_counter() - opened


def _wait_for_kernel(page: Page) -> None:
    """Waits until the page's kernel is connected and idle (the status bar says so).

    Commands sent before are dropped; and leaving the page while the kernel starts makes
    Jupyter Server log an uncaught exception (jupyter-server/jupyter_server#1265).
    """
    page.wait_for_function(
        "() => document.querySelector('.jp-StatusBar-Widget') &&"
        " document.body.innerText.includes('| Idle')",
        timeout=60_000,
    )


def _wait_until_idle(page: Page, started: int) -> None:
    """Waits until the kernel ran ``started`` cells and is idle.

    A cell shows that it ran by its prompt's number; a test cell opens folded, and its
    fold has no number: it shows that it ran by its output (every test cell prints one).
    """
    page.wait_for_function(
        rf"""() => {{
          const cells = [...document.querySelectorAll('.jp-CodeCell')];
          const ran = cells.filter(cell => cell.querySelector('.jp-InputPlaceholder')
            ? cell.querySelector('.jp-OutputArea-output') !== null
            : /\[\d+\]/.test(cell.querySelector('.jp-InputPrompt')?.textContent ?? ''));
          const running = cells.some(
            cell => (cell.querySelector('.jp-InputPrompt')?.textContent ?? '').includes('*'));
          return {IDLE} === 'idle' && !running && ran.length >= {started};
        }}""",
        timeout=RUN_TIMEOUT_S * 1000,
    )


def _menu(page: Page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{menu}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def _cells(page: Page) -> list[dict]:
    return page.evaluate(CELLS_JS)


def _failed(cell: dict) -> bool:
    # JupyterLab shows errors and stderr with this mime type; nbgrader scores both 0.
    return any(out["mime"] == "application/vnd.jupyter.stderr" for out in cell["outputs"])


def _shot(page: Page, name: str, cell_index: int | None = None) -> None:
    if cell_index is not None:
        cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(cell_index)
        cell.scroll_into_view_if_needed()
        cell.evaluate("node => node.scrollIntoView({block: 'start'})")
        time.sleep(0.3)  # let the scroll settle before the picture
    page.screenshot(path=SCREENSHOTS / f"{name}.png")


def _grade_ids(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.metadata.get("nbgrader", {}).get("grade_id", "") for cell in notebook.cells]


def _reference_answer(assignment: str, grade_id: str) -> str:
    """The answer cell ``grade_id`` of ``solutions/``, without nbgrader's markers."""
    source = jupytext.read(REPO / "solutions" / assignment / f"{assignment}.py")
    [cell] = [c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    lines = cell.source.splitlines()
    return "\n".join(
        line
        for line in lines
        if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


@pytest.mark.slow
def test_make_labs_first_page_is_the_first_notebook_not_the_launcher(lab, page):
    base, _, _ = lab
    browser_page, console_errors = page
    browser_page.goto(f"{base}/?token={TOKEN}")  # what make lab's printed address opens
    browser_page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    _wait_for_kernel(browser_page)  # the first notebook's kernel starts by itself
    current = browser_page.locator(".lm-DockPanel .lm-TabBar-tab.lm-mod-current").inner_text()
    assert current.strip() == f"{ASSIGNMENTS[0]}.ipynb"
    assert browser_page.locator(".jp-Launcher:visible").count() == 0
    listed = browser_page.locator(".jp-DirListing-itemText").all_inner_texts()
    assert [name.strip() for name in listed] == [f"{a}.ipynb" for a in ASSIGNMENTS]
    # In the sidebar's default width the longest name may lose its ".ipynb" (about 45 px),
    # never part of the notebook's own name (make lab hides the "Modified" column for it).
    clipped = browser_page.evaluate(
        "() => [...document.querySelectorAll('.jp-DirListing-itemText')]"
        ".filter(n => n.scrollWidth > n.clientWidth + 45).map(n => n.textContent)"
    )
    assert not clipped, f"file names cut off in the file browser: {clipped}"
    _shot(browser_page, "0-make-lab-first-page")
    assert not console_errors, f"browser console errors: {console_errors}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", IN_THE_BROWSER)
def test_notebook_runs_in_the_browser_as_a_learner_sees_it(lab, page, assignment: str, request):
    base, root, _ = lab
    browser_page, console_errors = page
    path = f"{assignment}.ipynb"
    notebook = nbformat.read(root / path, as_version=4)
    grade_ids = _grade_ids(notebook)
    code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)

    ready = _open(browser_page, base, path)
    browser_page.locator(".jp-NotebookPanel .jp-Cell").first.click()
    # Run All, timed as a learner waits for it: from the click, on a kernel that was
    # just started, until every cell ran (printed at the end of the pytest run), with the
    # time from opening the notebook until its kernel was ready (it imports the course's
    # modules as it starts: make lab's learner kernel).
    started = time.perf_counter()
    _menu(browser_page, "Run", "Run All Cells")
    _wait_until_idle(browser_page, code_cells)
    run_all = getattr(request.config, "run_all_seconds", {})
    run_all[assignment] = (time.perf_counter() - started, ready)
    request.config.run_all_seconds = run_all

    # make lab turns JupyterLab's news off: no pop-up asks about "official Jupyter news".
    assert browser_page.locator(TOASTS).count() == 0, browser_page.locator(TOASTS).all_inner_texts()
    assert "Jupyter news" not in browser_page.inner_text("body")
    # make lab turns nbgrader's Create Assignment panel off (it could unlock a test cell).
    assert browser_page.locator("#nbgrader-create_assignemnt").count() == 0  # nbgrader's id
    assert browser_page.get_by_title("Nbgrader Create Assignment").count() == 0

    cells = _cells(browser_page)
    assert len(cells) == len(notebook.cells), "every cell is in the page"
    tests = [i for i, grade_id in enumerate(grade_ids) if grade_id.endswith("-tests")]
    assert tests, "the notebook has graded test cells"
    for index in tests:
        # Folded: the learner sees the first line of what it checks, and its result.
        assert (cells[index]["folded"] or "").startswith('"""Checks'), cells[index]["folded"]
        text = " ".join(out["text"] for out in cells[index]["outputs"])
        assert _failed(cells[index]) and STUB_MESSAGE in text, (
            f"{grade_ids[index]} should fail with '{STUB_MESSAGE}' before it is answered"
        )
    others = [i for i, cell in enumerate(cells) if cell["code"] and i not in tests]
    failing = {
        notebook.cells[i].source[:80]: " ".join(out["text"] for out in cells[i]["outputs"])[-1500:]
        for i in others
        if _failed(cells[i])
    }
    assert not failing, f"cells outside the tests failed (source: outputs): {failing}"

    svgs = [out for cell in cells for out in cell["outputs"] if out["mime"] == "image/svg+xml"]
    drawing = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and re.search(r"^draw\(", cell.source, re.MULTILINE)
    ]
    assert len(svgs) >= max(1, len(drawing)), "each graph shows as an SVG output"
    assert all(out["svg"] for out in svgs), "an SVG graph did not render"
    for index in drawing:
        assert any(out["svg"] for out in cells[index]["outputs"]), notebook.cells[index].source
    texts = " ".join(out["text"] for cell in cells for out in cell["outputs"])
    # diagnose() names a cell "Cell In[7], line 3" (PyTorch's own anomaly traces keep the
    # file name: they are not ours to rename).
    assert not re.search(r"\bat /tmp/ipykernel_\d+/", texts), "diagnose named a temporary file"
    if re.search(r"\bby \w+ at ", texts):  # diagnose named the line of a write
        assert re.search(r"\bat Cell In\[\d+\], line \d+", texts), "diagnose names the cell"

    first_graph = next(i for i, cell in enumerate(cells) if any(o["svg"] for o in cell["outputs"]))
    _shot(browser_page, f"{assignment}-1-graph", first_graph)
    _shot(browser_page, f"{assignment}-2-not-answered", tests[0])
    if assignment == SOLVED:
        _solve_first_exercise_and_validate(browser_page, assignment, grade_ids, tests)
    assert not console_errors, f"browser console errors: {console_errors}"


def _solve_first_exercise_and_validate(page: Page, assignment, grade_ids, tests) -> None:
    test_index = tests[0]
    exercise = grade_ids[test_index].removesuffix("-tests")
    answer_index = grade_ids.index(f"{exercise}-answer")
    assert answer_index == test_index - 1, "the answer cell comes right before its tests"
    editor = page.locator(".jp-NotebookPanel .jp-Cell").nth(answer_index).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(_reference_answer(assignment, f"{exercise}-answer"))
    page.keyboard.press("Shift+Enter")  # runs the answer, selects its test cell
    page.keyboard.press("Shift+Enter")  # runs the test cell (folded: its result shows)
    # The test cell's output changes from the stub's error to the pass line.
    page.wait_for_function(
        """([index, passed]) => {
          const cell = document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[index];
          return cell.querySelector('.jp-OutputArea').textContent.includes(passed)
            && IDLE === 'idle';
        }""".replace("IDLE", IDLE),
        arg=[test_index, PASS_LINE],
        timeout=RUN_TIMEOUT_S * 1000,
    )
    cells = _cells(page)
    assert not _failed(cells[answer_index]) and not _failed(cells[test_index])
    assert PASS_LINE in " ".join(out["text"] for out in cells[test_index]["outputs"])
    # The picture ends with the test cell's pass line, under the answer and the tests.
    output = page.locator(".jp-NotebookPanel .jp-Cell").nth(test_index).locator(".jp-OutputArea")
    output.evaluate("node => node.scrollIntoView({block: 'end'})")
    time.sleep(0.3)
    _shot(page, f"{assignment}-3-solved")

    page.locator(".jp-ToolbarButtonComponent-label", has_text=re.compile("^Validate$")).click()
    dialog = page.locator(".jp-Dialog #validation-message")
    dialog.wait_for(timeout=RUN_TIMEOUT_S * 1000)
    text = dialog.inner_text()
    _shot(page, f"{assignment}-4-validate")
    failing = [g.removesuffix("-tests") for g in grade_ids if g.endswith("-tests")]
    failing.remove(exercise)
    # The grader's verdict: the summary first, then each exercise with its points.
    assert text.startswith(f"1 of {len(failing) + 1} exercises pass ({exercise}); not yet: ")
    assert f"not yet: {', '.join(failing)}." in text, text[:500]
    assert "Graded as the grader grades it: visible tests and hidden checks." in text
    assert f"{exercise} 2/2 points: visible tests pass; hidden checks pass" in text, text
    for name in failing:
        assert re.search(rf"{name} 0/\d+ points: not answered yet", text), f"{name}: {text}"
    assert "The following cell failed" not in text  # nbgrader's heading, hidden
    assert len(text) < 3000, f"the Validate dialog should be short, it has {len(text)} chars"
    wide = dialog.evaluate(
        "node => [...node.querySelectorAll('pre')].some(p => p.scrollWidth > p.clientWidth + 1)"
    )
    assert not wide, "a message in the Validate dialog runs off its right edge"
    page.locator(".jp-Dialog .jp-mod-accept").click()


@pytest.mark.slow
def test_the_class_report_page_renders_with_its_plot(graded, page):
    """The HTML report ``make grade`` writes beside the Markdown, opened as an instructor would."""
    browser_page, console_errors = page
    report = graded[SOLVED].report
    browser_page.goto(report.page.as_uri())
    assert browser_page.title() == f"{SOLVED}: class report"
    assert browser_page.locator("h2", has_text="Exercises").count() == 1
    assert browser_page.locator("table").count() >= 2
    plot = browser_page.locator("img").first
    assert plot.evaluate("img => img.complete && img.naturalWidth > 0"), "the plot did not load"
    _shot(browser_page, f"{SOLVED}-5-class-report")
    assert not console_errors, f"browser console errors: {console_errors}"


@pytest.mark.slow
def test_browser_session_left_the_server_log_clean(lab):
    # Runs after the notebooks (pytest keeps file order): the whole session's log.
    _, _, log = lab
    problems = [
        line
        for line in log.read_text().splitlines()
        if line.startswith(("[E ", "[W ")) or "Traceback" in line
    ]
    assert not problems, "\n".join(problems)


# --- the zh-CN edition: last, in a JupyterLab of its own ---------------------------------

# What the zh-CN interface and notebook show where the English ones show "| Idle", the
# Run menu, the stub's error and the summary (the language pack's and the catalogs' words).
ZH_IDLE = "| 空闲"
ZH_RUN, ZH_RUN_ALL = "运行", "运行所有单元格"


@pytest.fixture(scope="module")
def lab_zh_cn(tmp_path_factory) -> Iterator[tuple[str, Path, Path]]:
    """JupyterLab as `make lab LANG=zh-CN` starts it, on a workspace of this test's own."""
    folder = tmp_path_factory.mktemp("browser-zh-CN")
    port = _free_port()
    log = folder / "server.log"
    command = [sys.executable, "-m", "autograder", "lab", "--lang=zh-CN"]
    command += [f"--workspace={folder / 'workspace'}", f"--port={port}", f"--token={TOKEN}"]
    with log.open("w") as handle:
        server = subprocess.Popen(
            [*command, "--no-browser"],
            cwd=REPO,
            stdout=handle,
            stderr=handle,
            env={**os.environ, "LANG": "zh-CN"},  # as make passes it: no locale
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(base, log)
        yield base, folder / "workspace" / "zh-CN", log
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_zh_cn_notebook_runs_and_validates_in_a_chinese_interface(lab_zh_cn, page):
    from autograd_pitfalls.messages import translate

    base, root, log = lab_zh_cn
    browser_page, console_errors = page
    path = f"{SOLVED}.ipynb"
    notebook = nbformat.read(root / path, as_version=4)
    assert notebook.metadata["autograd_pitfalls"]["language"] == "zh-CN"
    grade_ids = _grade_ids(notebook)
    browser_page.goto(f"{base}/lab/tree/{path}?reset&token={TOKEN}")
    browser_page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    browser_page.wait_for_function(
        f"() => document.body.innerText.includes({ZH_IDLE!r})", timeout=60_000
    )
    assert browser_page.locator(".lm-MenuBar-itemLabel", has_text=ZH_RUN).count() == 1
    _shot(browser_page, f"zh-CN-{SOLVED}-0-opened")
    browser_page.locator(".jp-NotebookPanel .jp-Cell").first.click()
    _menu(browser_page, ZH_RUN, ZH_RUN_ALL)
    _wait_until_idle(browser_page, sum(cell.cell_type == "code" for cell in notebook.cells))
    cells = _cells(browser_page)
    tests = [i for i, grade_id in enumerate(grade_ids) if grade_id.endswith("-tests")]
    stub = translate("Exercise not answered yet: replace this line with your answer.", "zh-CN")
    for index in tests:  # the visible tests fail, in Chinese
        text = " ".join(out["text"] for out in cells[index]["outputs"])
        assert _failed(cells[index]) and stub in text, text[-500:]
    others = [i for i, cell in enumerate(cells) if cell["code"] and i not in tests]
    assert not [i for i in others if _failed(cells[i])], "cells outside the tests failed"
    _shot(browser_page, f"zh-CN-{SOLVED}-1-not-answered", tests[0])

    exercise = grade_ids[tests[0]].removesuffix("-tests")
    editor = browser_page.locator(".jp-NotebookPanel .jp-Cell").nth(tests[0] - 1)
    editor.locator(".cm-content").click()
    browser_page.keyboard.press("Control+a")
    browser_page.keyboard.insert_text(_reference_answer(SOLVED, f"{exercise}-answer"))
    browser_page.keyboard.press("Shift+Enter")
    browser_page.keyboard.press("Shift+Enter")
    browser_page.wait_for_function(
        """([index, passed]) => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[index]
             .querySelector('.jp-OutputArea').textContent.includes(passed)""",
        arg=[tests[0], PASS_LINE],
        timeout=RUN_TIMEOUT_S * 1000,
    )
    browser_page.locator(".jp-ToolbarButtonComponent-label", has_text="Validate").click()
    dialog = browser_page.locator(".jp-Dialog #validation-message")
    dialog.wait_for(timeout=RUN_TIMEOUT_S * 1000)
    text = dialog.inner_text()
    _shot(browser_page, f"zh-CN-{SOLVED}-2-validate")
    assert text.startswith(f"{len(tests)} 个练习中有 1 个通过（{exercise}）；尚未通过："), text[
        :300
    ]
    assert "按评分器的方式评分：可见测试和隐藏测试。" in text, text[:500]
    assert f"{exercise} 2/2 分: 可见测试通过；隐藏测试通过" in text, text[:800]
    browser_page.locator(".jp-Dialog .jp-mod-accept").click()
    assert not console_errors, f"browser console errors: {console_errors}"
    problems = [
        line
        for line in log.read_text().splitlines()
        if line.startswith(("[E ", "[W ")) or "Traceback" in line or "setlocale" in line
    ]
    assert not problems, "\n".join(problems)
