"""Export an assignment's grades as CSV: one row per student, one column per exercise."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.api import MissingEntry

from autograder.atomic import replace_file
from autograder.course import Course, exercise_name
from autograder.pipeline.review import Flag, course_sources, notebook_flags
from autograder.submission import ERROR, MISSING, OK, UNREADABLE, Submission, one_line


def exercise_ids(course: Course, assignment: str) -> list[str]:
    """Returns the grade ids of the assignment's test cells, in notebook order.

    Args:
        course: A course where the assignment has been built.
        assignment: The assignment id.
    """
    source = nbformat.read(course.source_notebook(assignment), as_version=4)
    return [cell.metadata.nbgrader["grade_id"] for cell in source.cells if utils.is_grade(cell)]


def submission_flags(course: Course, assignment: str, students: list[str]) -> dict[str, list[Flag]]:
    """Returns each collected student's review flags (see :mod:`autograder.pipeline.review`)."""
    released = nbformat.read(course.student_notebook(assignment), as_version=4)
    course_code = course_sources(released)
    return {
        student: notebook_flags(
            course.submitted_folder(student, assignment) / f"{assignment}.ipynb", course_code
        )
        for student in students
    }


def grade_rows(
    course: Course,
    assignment: str,
    submissions: list[Submission],
    sandbox: str = "",
    device: str = "",
) -> list[dict]:
    """Returns one row per student: ids, total, max, per-exercise scores, status, message.

    A student who was not graded (missing, unreadable, or grading failed) scores 0
    everywhere and keeps the status that says why. The last column, ``review_flags``,
    counts the places in the student's code that reach for grading machinery.

    Args:
        course: The graded course.
        assignment: The assignment id.
        submissions: The students and their collection / grading status.
        sandbox: ``on`` or ``off``: whether graded students' code ran in the sandbox.
        device: ``cpu`` or ``cuda``: where the tests of graded students ran.
    """
    grade_ids = exercise_ids(course, assignment)
    flags = submission_flags(course, assignment, [s.student_id for s in submissions])
    rows = []
    with course.gradebook_db() as gradebook:
        max_score = gradebook.find_assignment(assignment).max_score
        for submission in submissions:
            row = {"student_id": submission.student_id, "assignment": assignment}
            scores = dict.fromkeys(grade_ids, 0.0)
            total = 0.0
            if submission.graded:
                try:
                    graded = gradebook.find_submission(assignment, submission.student_id)
                except MissingEntry:
                    graded = None
                if graded is not None:
                    total = graded.score
                    for notebook in graded.notebooks:
                        for grade in notebook.grades:
                            if grade.name in scores:
                                scores[grade.name] = grade.score
            row.update(score=total, max_score=max_score)
            row.update({exercise_name(grade_id): scores[grade_id] for grade_id in grade_ids})
            status, message = submission.status, submission.message
            if status == OK and not submission.graded:
                # Collected but never graded (autograde not run, or stopped before them):
                # a 0 with status ok would read as a real grade.
                status = ERROR
                message = "not graded: autograde did not run for this student"
            row.update(status=status, message=one_line(message, course))
            # Every column is filled: a student whose code never ran says so.
            ran = submission.status not in (MISSING, UNREADABLE)
            row.update(sandbox=(sandbox or "unknown") if ran else "not run")
            row.update(device=(device or "unknown") if ran else "not run")
            row.update(review_flags=len(flags[submission.student_id]))
            rows.append(row)
    return rows


# A spreadsheet reads a cell that starts with one of these as a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """Returns ``value`` as it is safe to write in a CSV cell that a spreadsheet opens.

    Numbers are written as numbers; a text that a spreadsheet would run as a formula (a
    student id ``=HYPERLINK(...)``, say) gets a leading apostrophe, so it shows as text.
    """
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def write_csv(rows: list[dict], path: Path) -> Path:
    """Writes ``rows`` (from :func:`grade_rows`) to ``path`` as CSV and returns the path.

    Raises:
        WriteError: If it cannot be written (a full disk, say); the previous CSV is kept.
    """
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else ["student_id"])
    writer.writeheader()
    for row in rows:
        writer.writerow({key: csv_cell(value) for key, value in row.items()})
    return replace_file(path, text.getvalue())
