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
import csv
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
    course: Course, assignment: str, fixtures: Path = FIXTURES, student_notebook: Path | None = None
) -> dict[str, NotebookNode]:
    """Returns the fixture submissions of ``assignment``, by student id.

    Args:
        course: A course where ``assignment`` has been built (source and release).
        assignment: The assignment id.
        fixtures: The folder holding the specs.
        student_notebook: The released notebook the answers go into (the English one,
            ``course.student_notebook(assignment)``, when None).

    Returns:
        ``perfect``, ``blank`` and one notebook per wrong answer in the spec.

    Raises:
        FixtureError: If the spec names an answer cell that does not exist.
    """
    student = nbformat.read(student_notebook or course.student_notebook(assignment), as_version=4)
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


# --- the fixtures of another edition -----------------------------------------------------

# How many wrong answers each edition's fixtures have besides perfect and blank.
EDITION_WRONG_ANSWERS = 3


def edition_students(assignment: str, fixtures: Path = FIXTURES) -> list[str]:
    """The English fixtures an edition repeats: perfect, blank and the first wrong answers.

    The wrong answers are the spec's first ones that score below full marks and are no
    attack on the grading (those are the grader's business, the same in every edition).
    """
    with (fixtures / assignment / "expected_scores.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    full = next(float(row["score"]) for row in rows if row["student_id"] == "perfect")
    wrong = [
        row["student_id"]
        for row in rows
        if row["student_id"] in load_wrong_answers(assignment, fixtures)
        and float(row["score"]) < full
        and row["student_id"] not in GRADER_ATTACKS
    ]
    return ["perfect", "blank", *wrong[:EDITION_WRONG_ANSWERS]]


def edition_folder(assignment: str, language: str, fixtures: Path = FIXTURES) -> Path:
    """``autograder/fixtures/<assignment>/submissions-<language>/``."""
    return fixtures / assignment / f"submissions-{language}"


def edition_student_id(language: str, student: str) -> str:
    """The id an edition's fixture is graded under beside the English ones: ``zh-CN_perfect``."""
    return f"{language}_{student}"


def write_edition_fixtures(
    course: Course, assignment: str, language: str, fixtures: Path = FIXTURES
) -> list[Path]:
    """Writes an edition's fixtures: the same answers in that edition's student notebook."""
    from autograder.i18n.edition import edition_notebook

    notebooks = fixture_notebooks(
        course, assignment, fixtures, edition_notebook(course, assignment, language)
    )
    written = []
    for student in edition_students(assignment, fixtures):
        path = edition_folder(assignment, language, fixtures) / student / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebooks[student], path)
        written.append(path)
    return written
