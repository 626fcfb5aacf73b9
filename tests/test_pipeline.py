"""The grading pipeline end to end on the fixture submissions, plus broken input."""

from __future__ import annotations

import csv
import html
import shutil
import zipfile

import nbformat
import pytest

from autograder.course import Course, assignment_ids
from autograder.fixtures import FIXTURES, submissions_folder
from autograder.pipeline import GradingResult, grade_class

ASSIGNMENTS = assignment_ids()


def _expected(assignment: str) -> dict[str, dict[str, str]]:
    with (FIXTURES / assignment / "expected_scores.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def graded(built_course: Course, tmp_path_factory) -> dict[str, GradingResult]:
    """Every assignment graded on its fixtures plus a corrupt, an empty and a zipped submission."""
    results = {}
    for assignment in ASSIGNMENTS:
        folder = tmp_path_factory.mktemp(f"submissions-{assignment}")
        shutil.copytree(submissions_folder(assignment), folder, dirs_exist_ok=True)
        (folder / "corrupt_json").mkdir()
        (folder / "corrupt_json" / f"{assignment}.ipynb").write_text('{"cells": [')
        (folder / "empty_folder").mkdir()
        perfect = folder / "perfect" / f"{assignment}.ipynb"
        with zipfile.ZipFile(folder / "zipped_perfect.zip", "w") as archive:
            archive.write(perfect, f"my work/{assignment}.ipynb")
        shutil.copy(perfect, folder / "single_file_perfect.ipynb")
        results[assignment] = grade_class(built_course, assignment, folder)
    return results


def _rows(result: GradingResult) -> dict[str, dict[str, str]]:
    with result.csv.open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_fixtures_get_exactly_their_expected_scores(graded, assignment: str):
    rows = _rows(graded[assignment])
    expected = _expected(assignment)
    assert {"perfect", "blank"} <= set(expected)
    assert len(set(expected) - {"perfect", "blank", "correct_with_torch_warning"}) >= 3
    for student, want in expected.items():
        got = {column: rows[student][column] for column in want}
        assert got == want, f"{assignment}/{student}: {rows[student]['message']}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_perfect_gets_full_marks_and_blank_zero(graded, assignment: str):
    rows = _rows(graded[assignment])
    assert float(rows["perfect"]["score"]) == float(rows["perfect"]["max_score"]) > 0
    assert float(rows["blank"]["score"]) == 0
    assert rows["perfect"]["status"] == rows["blank"]["status"] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_csv_has_ids_scores_then_one_column_per_exercise(graded, assignment: str):
    with graded[assignment].csv.open() as handle:
        header = next(csv.reader(handle))
    assert graded[assignment].csv.name == f"{assignment}_grades.csv"
    assert header[:4] == ["student_id", "assignment", "score", "max_score"]
    exercises = header[4:-2]
    assert exercises and all(name.startswith("q") for name in exercises)
    assert header[-2:] == ["status", "message"]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_broken_submissions_are_reported_and_the_rest_graded(graded, assignment: str):
    rows = _rows(graded[assignment])
    assert rows["corrupt_json"]["status"] == "unreadable"
    assert "not a readable notebook" in rows["corrupt_json"]["message"]
    assert rows["empty_folder"]["status"] == "missing"
    for student in ("zipped_perfect", "single_file_perfect"):
        assert rows[student]["status"] == "ok"
        assert rows[student]["score"] == rows["perfect"]["score"]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_pytorch_warning_in_a_correct_answer_costs_nothing(built_course, graded, assignment):
    rows = _rows(graded[assignment])
    assert float(rows["correct_with_torch_warning"]["score"]) > 0
    autograded = built_course.root / "autograded" / "correct_with_torch_warning" / assignment
    notebook = nbformat.read(autograded / f"{assignment}.ipynb", as_version=4)
    printed = [
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream"
    ]
    # The warning really fired during grading, and went to stdout, not stderr.
    assert any("Warning" in text for text in printed)


def _hidden_test_lines(course: Course, assignment: str) -> list[str]:
    source = nbformat.read(course.source / assignment / f"{assignment}.ipynb", as_version=4)
    lines, hidden = [], False
    for cell in source.cells:
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                hidden = "BEGIN" in line
            elif hidden and len(line.strip()) > 20:
                lines.append(line.strip())
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_is_written_per_student_without_hidden_tests(built_course, graded, assignment):
    hidden = _hidden_test_lines(built_course, assignment)
    assert hidden, "every notebook has hidden tests"
    for student in ("perfect", "blank"):
        feedback = built_course.root / "feedback" / student / assignment / f"{assignment}.html"
        text = html.unescape(feedback.read_text())
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"hidden tests visible in {student}'s feedback: {leaked[:3]}"
