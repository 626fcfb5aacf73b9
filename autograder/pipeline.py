"""Grade a class end to end: build, collect, autograde, feedback, export."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.build import build
from autograder.collect import collect
from autograder.course import Course
from autograder.export import grade_rows, write_csv
from autograder.grade import autograde


@dataclass(frozen=True)
class GradingResult:
    """What grading a class produced.

    Attributes:
        rows: One row per student, as written to the CSV.
        csv: The grades file, ``exports/<assignment>_grades.csv``.
        feedback: The folder of per-student feedback HTML.
    """

    rows: list[dict]
    csv: Path
    feedback: Path


def grade_class(course: Course, assignment: str, submissions: Path) -> GradingResult:
    """Grades every submission of ``assignment`` found in ``submissions``.

    Args:
        course: The course to grade in (its gradebook, submitted/, autograded/, ...).
        assignment: The assignment id.
        submissions: A folder with one entry (folder, notebook or zip) per student.

    Returns:
        The grade rows and where the CSV and the feedback were written.
    """
    build(course, [assignment])  # records the tests and points in the gradebook
    collected = collect(course, assignment, submissions)
    graded = autograde(course, assignment, collected)
    rows = grade_rows(course, assignment, graded)
    csv_path = write_csv(rows, course.exports / f"{assignment}_grades.csv")
    return GradingResult(rows, csv_path, course.root / "feedback")
