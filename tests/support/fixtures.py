"""Write the sample submissions the pipeline is tested on, from one readable spec.

``autograder/fixtures/<assignment>/wrong_answers.py`` names each plausible wrong answer
(``WRONG_ANSWERS = {student: {answer_grade_id: source}}``); ``expected_scores.csv`` beside
it says what each must score. From the spec and the built notebooks this writes
``submissions/<student>/<assignment>.ipynb`` for each fixture student: ``perfect`` (the
solutions), ``blank`` (the student notebook untouched) and one per wrong answer. The
notebooks are committed so that an instructor can try ``make grade`` on them; a test fails
when they are stale.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader import utils

from autograder.authoring.wrong_answers import FIXTURES, load_wrong_answers, submissions_folder
from autograder.course import Course, assignment_ids
from autograder.errors import AutograderError

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
# Fixture students who attack the grading itself (the judge's inputs and oracle, the
# tests' helpers) instead of answering wrongly. Plain nbgrader runs the judges in the
# student's kernel, so it may score them differently: by design, and why this grader
# judges outside the kernel. Comparisons with plain nbgrader leave them out.
# The assignment where a zipped and a single-file copy of the perfect notebook are handed
# in too (tests/conftest.py): how collect reads an entry does not depend on the assignment.
PACKAGED_IN = assignment_ids()[0]
GRADER_ATTACKS = frozenset(
    {
        "reads_caller_frame",
        "calls_hidden_oracle",
        "rebinds_test_helpers",
        "rebinds_devices_to_skip_checks",
        "reads_kernel_truth",
    }
)


class FixtureError(AutograderError):
    """A fixture spec names an answer cell the notebook does not have."""


def _answer_cells(notebook: NotebookNode) -> dict[str, NotebookNode]:
    return {
        cell.metadata.nbgrader["grade_id"]: cell
        for cell in notebook.cells
        if utils.is_solution(cell)
    }


def _strip_markers(source: str) -> str:
    lines = source.splitlines()
    return "\n".join(line for line in lines if line.strip() not in SOLUTION_MARKERS)


def _answered(student: NotebookNode, answers: dict[str, str], who: str) -> NotebookNode:
    notebook = copy.deepcopy(student)
    cells = _answer_cells(notebook)
    for grade_id, source in answers.items():
        if grade_id not in cells:
            raise FixtureError(f"{who}: the notebook has no answer cell {grade_id!r}")
        cells[grade_id].source = source.strip("\n")
    return notebook


def fixture_notebooks(
    course: Course, assignment: str, fixtures: Path = FIXTURES
) -> dict[str, NotebookNode]:
    """Returns the fixture submissions of ``assignment``, by student id.

    Args:
        course: A course where ``assignment`` has been built (source and release).
        assignment: The assignment id.
        fixtures: The folder holding the specs.

    Returns:
        ``perfect``, ``blank`` and one notebook per wrong answer in the spec.

    Raises:
        FixtureError: If the spec names an answer cell that does not exist.
    """
    student = nbformat.read(course.student_notebook(assignment), as_version=4)
    source = nbformat.read(course.source / assignment / f"{assignment}.ipynb", as_version=4)
    solutions = {
        grade_id: _strip_markers(cell.source) for grade_id, cell in _answer_cells(source).items()
    }
    notebooks = {"perfect": _answered(student, solutions, "perfect"), "blank": student}
    for name, answers in load_wrong_answers(assignment, fixtures).items():
        notebooks[name] = _answered(student, answers, name)
    return notebooks


def write_fixtures(course: Course, assignment: str, fixtures: Path = FIXTURES) -> list[Path]:
    """Writes ``fixtures/<assignment>/<student>/<assignment>.ipynb`` for every fixture.

    Args:
        course: A course where ``assignment`` has been built.
        assignment: The assignment id.
        fixtures: The folder to write into.

    Returns:
        The written notebook paths, sorted.
    """
    written = []
    for name, notebook in sorted(fixture_notebooks(course, assignment, fixtures).items()):
        path = submissions_folder(assignment, fixtures) / name / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        written.append(path)
    return written
