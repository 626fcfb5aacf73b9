"""Every source notebook passes its own tests; every student notebook runs and fails them all."""

from __future__ import annotations

import pytest
from nbgrader import utils

from autograder.cli import main
from autograder.course import Course, assignment_ids
from autograder.learner.validate import CheckReport, check_notebook

ASSIGNMENTS = assignment_ids()
MIN_EXERCISES = 4


def _errors_outside_tests(report: CheckReport) -> list[str]:
    """Returns the sources of non-graded code cells that raised: Run All would stop there."""
    return [
        cell.source
        for cell in report.executed.cells
        if cell.cell_type == "code"
        and not utils.is_grade(cell)
        and any(output.output_type == "error" for output in cell.outputs)
    ]


@pytest.fixture(scope="module")
def source_reports(built_course: Course) -> dict[str, CheckReport]:
    return {
        assignment: check_notebook(built_course.source / assignment / f"{assignment}.ipynb")
        for assignment in ASSIGNMENTS
    }


@pytest.fixture(scope="module")
def student_reports(built_course: Course) -> dict[str, CheckReport]:
    return {
        assignment: check_notebook(built_course.student_notebook(assignment))
        for assignment in ASSIGNMENTS
    }


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_passes_every_exercise(source_reports, assignment: str):
    report = source_reports[assignment]
    assert len(report.exercises) >= MIN_EXERCISES
    assert report.ok, report.format()
    assert not _errors_outside_tests(report)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_runs_and_fails_every_exercise(student_reports, assignment: str):
    report = student_reports[assignment]
    passed = [result.exercise for result in report.exercises if result.passed]
    assert not passed, f"exercises pass without an answer: {passed}"
    assert not _errors_outside_tests(report), "a cell outside the tests raised: Run All stops"
    assert not report.changed


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_draws_graphs(student_reports, assignment: str):
    svgs = [
        output
        for cell in student_reports[assignment].executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if "image/svg+xml" in output.get("data", {})
    ]
    assert len(svgs) >= 2, "each notebook draws at least two autograd graphs"


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
