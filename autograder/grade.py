"""Autograde collected submissions and write feedback, one student at a time.

A student whose grading fails gets a status and a message; the rest of the class is graded.
"""

from __future__ import annotations

import dataclasses

from autograder.collect import OK, Submission
from autograder.course import Course

ERROR = "error"


def _last_lines(text: str, count: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-count:])


def autograde(course: Course, assignment: str, submissions: list[Submission]) -> list[Submission]:
    """Runs nbgrader autograde, then generate_feedback, for every collected student.

    Test cells are restored from the gradebook before grading (nbgrader's
    OverwriteCells), so a student cannot change the tests, only the answers.

    Args:
        course: The course, with the assignment released (in the gradebook).
        assignment: The assignment id.
        submissions: The outcome of :func:`autograder.collect.collect`.

    Returns:
        The submissions with their status updated: ``error`` where nbgrader failed.
    """
    api = course.api()
    results = []
    for submission in submissions:
        if submission.status != OK:
            results.append(submission)
            continue
        graded = api.autograde(assignment, submission.student_id, force=True, create=True)
        if not graded["success"]:
            message = "autograde failed: " + _last_lines(graded.get("error") or graded["log"])
            results.append(dataclasses.replace(submission, status=ERROR, message=message))
            continue
        feedback = api.generate_feedback(assignment, submission.student_id, force=True)
        if not feedback["success"]:
            message = "feedback failed: " + _last_lines(feedback.get("error") or feedback["log"])
            results.append(dataclasses.replace(submission, message=message))
            continue
        results.append(submission)
    return results
