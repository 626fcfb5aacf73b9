"""Every source notebook passes its own tests; every student notebook runs and fails them all.

The executed source notebooks are also read as a learner would see them: every drawing fits
the page, and no graded test cell prints a value.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import multiprocessing
import re
import struct
from concurrent.futures import ProcessPoolExecutor

import nbformat
import pytest
from nbgrader import utils

from autograder.authoring.wrong_answers import submissions_folder
from autograder.cli import main
from autograder.course import Course, assignment_ids, lesson_of, parts_of
from autograder.learner.validate import CheckReport, check_notebook
from autograder.sandbox.limits import cores_each
from autograder.site.execute import ExecutionError, keep

ASSIGNMENTS = assignment_ids()
# Exercises a lesson asks for, across its parts (02a and 02b: lesson 02); each part has one
# at least.
MIN_EXERCISES = 4
# A notebook's page in JupyterLab is about 1,200 CSS px wide: 900 pt. A wider drawing is
# shrunk to fit, and its labels with it, or scrolled sideways.
PAGE_WIDTH_PT = 900
PT_PER_PX = 72 / 96  # CSS pixels: 96 per inch; points: 72 per inch
_SVG_WIDTH = re.compile(r"<svg\b[^>]*?\bwidth=\"([\d.]+)(pt|px)?\"")


def _raised(cell) -> bool:
    return any(output.output_type == "error" for output in cell.get("outputs", []))


def _errors_outside_tests(report: CheckReport) -> list[str]:
    """Returns the sources of non-graded code cells that raised: Run All would stop there.

    A cell's second run (:func:`run_twice`) counts for itself: see the test of that.
    """
    return [
        cell.source
        for cell in report.executed.cells
        if cell.cell_type == "code"
        and not utils.is_grade(cell)
        and not cell.get("id", "").endswith(AGAIN)
        and _raised(cell)
    ]


def _stderr_outside_tests(report: CheckReport) -> list[str]:
    """Returns what non-graded code cells wrote to stderr: JupyterLab shows it in red.

    A warning a demonstration means to show is caught and printed (``expect_warning``);
    one that reaches stderr is a warning the text does not explain, or that shows on one
    run and not the next (torch gives many of its warnings once per process). A cell's
    second run (:func:`run_twice`) counts for itself: see the test of that.
    """
    return [
        f"{cell.source[:80]!r}: {output.text[-300:]}"
        for cell in report.executed.cells
        if cell.cell_type == "code"
        and not utils.is_grade(cell)
        and not cell.get("id", "").endswith(AGAIN)
        for output in _stderr(cell)
    ]


def _stderr(cell) -> list:
    """The stderr outputs of ``cell``."""
    return [o for o in cell.get("outputs", []) if o.output_type == "stream" and o.name == "stderr"]


def _svg_widths_pt(text: str) -> list[float]:
    """The width of every ``<svg>`` element in ``text``, in points."""
    return [
        float(number) * (1.0 if unit == "pt" else PT_PER_PX)
        for number, unit in _SVG_WIDTH.findall(text)
    ]


def _png_width_pt(encoded: str) -> float:
    """The width of a base64 PNG in points, one image pixel shown as one CSS pixel."""
    header = base64.b64decode(encoded[:64])  # the IHDR chunk comes first
    (width,) = struct.unpack(">I", header[16:20])
    return width * PT_PER_PX


def drawing_widths(cell) -> list[float]:
    """The width in points of each drawing a code cell shows: SVG, PNG, or SVG inside HTML."""
    widths = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "image/svg+xml" in data:
            widths += _svg_widths_pt("".join(data["image/svg+xml"]))
        elif "text/html" in data:
            widths += _svg_widths_pt("".join(data["text/html"]))
        if "image/png" in data:
            width = output.get("metadata", {}).get("image/png", {}).get("width")
            widths.append(width * PT_PER_PX if width else _png_width_pt(data["image/png"]))
    return widths


def test_drawing_widths_reads_svg_html_and_png():
    png = base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 1200, 300) + b"\0" * 5
    ).decode()
    cell = {
        "outputs": [
            {"data": {"image/svg+xml": '<svg width="1663pt" height="808pt">'}},
            {"data": {"text/html": '<p>report</p><svg width="400px" height="10px">'}},
            {"data": {"image/png": png}, "metadata": {}},
            {"data": {"text/plain": "<svg width=...>"}},
        ]
    }
    assert drawing_widths(cell) == [1663.0, 300.0, 900.0]


AGAIN = "-again"


def run_twice(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``notebook`` with each code cell followed by a copy of itself: each runs twice in a row.

    The copies carry no nbgrader metadata (they score nothing) and an id ending in
    :data:`AGAIN`, so a failure of the second run is told from one of the first.
    """
    doubled = copy.deepcopy(notebook)
    cells = []
    for cell in doubled.cells:
        cells.append(cell)
        if cell.cell_type == "code":
            again = nbformat.v4.new_code_cell(cell.source)
            again.id = f"{cell.id}{AGAIN}"
            cells.append(again)
    doubled.cells = cells
    return doubled


@pytest.fixture(scope="module")
def reports(built_course: Course, tmp_path_factory) -> dict[tuple[str, str], CheckReport]:
    """Every source and student notebook checked as a learner checks it, two at a time.

    Each check starts a fresh kernel that imports torch, as ``make check`` does; two run
    at once (in fresh processes: a fork would copy this one's sockets) to use both cores.
    Each cell of a source notebook runs twice in a row (:func:`run_twice`): every
    demonstration must hold when a learner runs its cell again.
    """
    folder = tmp_path_factory.mktemp("twice")
    sources = {}
    for assignment in ASSIGNMENTS:
        source = built_course.source / assignment / f"{assignment}.ipynb"
        sources[("source", assignment)] = folder / source.name
        nbformat.write(run_twice(nbformat.read(source, as_version=4)), folder / source.name)
    paths = sources | {("student", a): built_course.student_notebook(a) for a in ASSIGNMENTS}
    context = multiprocessing.get_context("spawn")
    with (
        # Two kernels at once, each with torch's default of a thread per core, spin
        # their OpenMP threads against each other: each gets its share (kernels inherit it).
        pytest.MonkeyPatch.context() as patch,
        ProcessPoolExecutor(max_workers=2, mp_context=context) as pool,
    ):
        patch.setenv("OMP_NUM_THREADS", str(cores_each(2)))
        futures = {key: pool.submit(check_notebook, path) for key, path in paths.items()}
        done = {key: future.result() for key, future in futures.items()}
    # The website shows these executions of the student notebooks: kept in its cache, so
    # that tests/test_site.py (later in the session) renders them instead of running them.
    for assignment in ASSIGNMENTS:
        with contextlib.suppress(ExecutionError):  # a broken one fails the tests below
            keep(built_course.student_notebook(assignment), done["student", assignment].executed)
    return done


@pytest.fixture(scope="module")
def source_reports(reports) -> dict[str, CheckReport]:
    return {assignment: reports["source", assignment] for assignment in ASSIGNMENTS}


@pytest.fixture(scope="module")
def student_reports(reports) -> dict[str, CheckReport]:
    return {assignment: reports["student", assignment] for assignment in ASSIGNMENTS}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_passes_every_exercise(source_reports, assignment: str):
    report = source_reports[assignment]
    lesson = parts_of(lesson_of(assignment), ASSIGNMENTS)
    assert report.exercises
    assert sum(len(source_reports[part].exercises) for part in lesson) >= MIN_EXERCISES
    assert report.ok, report.format()
    assert not _errors_outside_tests(report)
    assert not _stderr_outside_tests(report)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_cell_of_a_source_notebook_passes_when_run_twice_in_a_row(
    source_reports, assignment: str
):
    """A learner runs a cell again: a demonstration must not rely on what runs only once
    (a warning torch gives once per process, a tensor the cell changed in place).

    A cell's second run must pass, and so must the next cell after it: a cell run twice
    must leave what the cells below it use as one run leaves it.
    """
    cells = source_reports[assignment].executed.cells
    again = [cell for cell in cells if cell.get("id", "").endswith(AGAIN)]
    assert len(again) == sum(cell.cell_type == "code" for cell in cells) / 2
    failing = [
        f"{cell.id}: {cell.source.strip().splitlines()[0][:70]}: "
        + next(f"{o.ename}: {o.evalue[:200]}" for o in cell.outputs if o.output_type == "error")
        for cell in cells
        if cell.cell_type == "code" and not utils.is_grade(cell) and _raised(cell)
    ]
    assert not failing, "cells that fail the second time:\n" + "\n".join(failing)
    # A warning that reaches stderr only the second time (torch gives many once per
    # process) shows in red in JupyterLab just as one on the first run does.
    red = [
        f"{cell.id.removesuffix(AGAIN)}: {output.text[-300:]}"
        for cell in again
        for output in _stderr(cell)
    ]
    assert not red, "cells that write to stderr the second time:\n" + "\n".join(red)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_runs_and_fails_every_exercise(student_reports, assignment: str):
    report = student_reports[assignment]
    passed = [result.exercise for result in report.exercises if result.passed]
    assert not passed, f"exercises pass without an answer: {passed}"
    assert not _errors_outside_tests(report), "a cell outside the tests raised: Run All stops"
    assert not _stderr_outside_tests(report), "a cell outside the tests wrote to stderr"
    assert not report.changed


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_draws_graphs(student_reports, assignment: str):
    def drawings(part: str) -> int:
        return sum(
            "image/svg+xml" in output.get("data", {})
            for cell in student_reports[part].executed.cells
            if cell.cell_type == "code"
            for output in cell.outputs
        )

    lesson = parts_of(lesson_of(assignment), ASSIGNMENTS)
    assert drawings(assignment) >= 1, "each notebook draws an autograd graph"
    assert sum(map(drawings, lesson)) >= 2, "each lesson draws at least two autograd graphs"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_drawing_fits_the_page(source_reports, assignment: str):
    """A drawing wider than the page shrinks past reading: the prose's red box is lost."""
    cells = source_reports[assignment].executed.cells
    too_wide = [
        f"cell {index} ({cell.source.splitlines()[0][:60]}): {width:.0f} pt"
        for index, cell in enumerate(cells)
        if cell.cell_type == "code"
        for width in drawing_widths(cell)
        if width > PAGE_WIDTH_PT
    ]
    assert not too_wide, f"drawings wider than {PAGE_WIDTH_PT} pt: {too_wide}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_graded_test_cells_print_no_bare_value(source_reports, assignment: str):
    """A test cell that ends in an expression shows its value in the notebook and the feedback."""
    printing = [
        cell.metadata.nbgrader["grade_id"]
        for cell in source_reports[assignment].executed.cells
        if cell.cell_type == "code"
        and utils.is_grade(cell)
        and any(output.output_type == "execute_result" for output in cell.outputs)
    ]
    assert not printing, f"graded test cells that print a bare value: {printing}"


@pytest.mark.slow
def test_check_command_exit_status_says_whether_everything_passes(built_course: Course, capsys):
    assignment = ASSIGNMENTS[0]
    assert main(["check", str(built_course.student_notebook(assignment))]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "not answered yet" in out
    assert main(["check", str(built_course.source / assignment / f"{assignment}.ipynb")]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_check_command_reports_a_missing_notebook(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.ipynb")]) == 1
    assert "cannot check" in capsys.readouterr().err


@pytest.mark.slow
def test_a_nan_gradient_is_told_as_nan_not_as_a_gradient_that_never_arrived():
    """05b Exercise 3: dividing by a row's norm of 0 gives NaN; the feedback must say so."""
    assignment = "05b_embedding_max_norm"
    notebook = (
        submissions_folder(assignment) / "lookup_divides_by_zero_norm" / f"{assignment}.ipynb"
    )
    [result] = [r for r in check_notebook(notebook).exercises if r.exercise == "q3"]
    assert result.score == 0
    assert "weight.grad is not finite on rows [2]" in result.error
    assert "no gradient reached" not in result.error
