"""Each student's status between the steps of grading: ``exports/<assignment>_status.json``.

``collect`` writes it, ``autograde`` and ``feedback`` update it, ``export`` and
``report`` read it, so the steps can run as separate commands. It also records how the
class was graded: the sandbox and the limits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autograder.course import Course
from autograder.outcome import OK, Submission


def status_file(course: Course, assignment: str) -> Path:
    """The status file of ``assignment`` in ``course``."""
    return course.exports / f"{assignment}_status.json"


def save_status(
    course: Course, assignment: str, submissions: list[Submission], **details: Any
) -> Path:
    """Writes every student's status, with ``details`` merged over the file's earlier ones.

    Args:
        course: The course.
        assignment: The assignment id.
        submissions: Every student, with status and message.
        details: How the class was graded, for example ``sandbox`` and ``limits``.

    Returns:
        The written file.
    """
    path = status_file(course, assignment)
    previous = json.loads(path.read_text()) if path.is_file() else {}
    data = {
        "assignment": assignment,
        "grading": {**previous.get("grading", {}), **details},
        "students": {
            submission.student_id: {
                "status": submission.status,
                "message": submission.message,
                "graded": submission.graded,
            }
            for submission in sorted(submissions, key=lambda s: s.student_id)
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def load_status(course: Course, assignment: str) -> tuple[list[Submission], dict[str, Any]]:
    """Returns every student's submission and how the class was graded.

    Without a status file (submissions put in ``submitted/`` by hand, nbgrader's way),
    every student folder holding the assignment counts as collected.

    Args:
        course: The course.
        assignment: The assignment id.
    """
    path = status_file(course, assignment)
    if path.is_file():
        data = json.loads(path.read_text())
        submissions = [
            Submission(
                student, entry["status"], entry.get("message", ""), entry.get("graded", False)
            )
            for student, entry in sorted(data.get("students", {}).items())
        ]
        return submissions, data.get("grading", {})
    submitted = course.root / "submitted"
    students = sorted(
        folder.name
        for folder in (submitted.iterdir() if submitted.is_dir() else [])
        if (folder / assignment).is_dir()
    )
    return [Submission(student, OK) for student in students], {}
