"""A small class of sample students with known scores, for tests that stop a grading run.

The tests that interrupt grading (a signal, a lost scheduler, a killed pool process) grade
a few students of one assignment, watch its status file, and compare what was recorded
with the fixtures' expected scores.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from autograder.authoring.wrong_answers import FIXTURES, submissions_folder


def expected_scores(assignment: str) -> dict[str, dict[str, str]]:
    """The expected scores of ``assignment``'s sample students, by student id."""
    with (FIXTURES / assignment / "expected_scores.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def full_marks(assignment: str) -> float:
    """The points of ``assignment``'s perfect sample submission: every point there is."""
    return float(expected_scores(assignment)["perfect"]["score"])


def copy_small_class(folder: Path, assignment: str, size: int) -> list[str]:
    """Copies ``size`` students into ``folder``: perfect, blank, then wrong answers.

    Returns:
        The student ids copied, in that order.
    """
    wrong = sorted(name for name in expected_scores(assignment) if name not in ("perfect", "blank"))
    students = ["perfect", "blank", *[name for name in wrong if "correct" not in name]][:size]
    for student in students:
        shutil.copytree(submissions_folder(assignment) / student, folder / student)
    return students


def status_entries(course: Path, assignment: str) -> dict[str, dict]:
    """The students of the grading command's status file, or {} before it is written."""
    path = course / "exports" / f"{assignment}_status.json"
    try:
        return json.loads(path.read_text())["students"]
    except (OSError, ValueError, KeyError):
        return {}
