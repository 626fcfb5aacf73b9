"""Recording in one gradebook session writes what nbgrader's autograde converter writes.

The same graded notebooks of the test class are recorded into two copies of its course:
once by nbgrader's converter (``autograder.pipeline.record`` as it was), once by
:class:`~autograder.pipeline.save_grades.GradebookRecording`. Every row of the gradebook
that recording writes, and every file of ``autograded/`` with its permissions, must be the
same, for a late student (the penalty plugin's clamp) and one a grader already scored by
hand (flagged for review) too.
"""

from __future__ import annotations

import shutil
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.plugins import LateSubmissionPlugin

from autograder import course as course_module
from autograder.course import Course
from autograder.pipeline import record as record_module
from autograder.pipeline.record import Recorder

ASSIGNMENT = "02b_version_counter"
DUE = datetime(2026, 3, 1, 12, 0)


class OverPenalty(LateSubmissionPlugin):
    """A late-penalty plugin that asks for more than the score: nbgrader keeps the score."""

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: int):
        return score + 1


def _copy_course(graded_course: Course, root: Path) -> Course:
    """The assignment's part of the graded course: gradebook, source, release, submissions."""
    course = Course.at(root, release=root / "release")
    root.mkdir()
    shutil.copy(graded_course.gradebook, course.gradebook)
    shutil.copytree(graded_course.source / ASSIGNMENT, course.source / ASSIGNMENT)
    shutil.copytree(graded_course.release / ASSIGNMENT, course.release / ASSIGNMENT)
    for student in _students(graded_course):
        shutil.copytree(
            graded_course.submitted_folder(student, ASSIGNMENT),
            course.submitted_folder(student, ASSIGNMENT),
        )
    return course


def _students(course: Course) -> list[str]:
    return sorted(
        path.parent.parent.name
        for path in (course.root / "autograded").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    )


def _late_and_hand_graded(course: Course, late: str, by_hand: str) -> None:
    """Makes ``late`` submit a day after the due date, and gives ``by_hand`` a manual score."""
    with Gradebook(course.gradebook_url()) as gradebook:
        gradebook.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
        grade = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, by_hand).grades[0]
        grade.manual_score = 0.5
        gradebook.db.commit()
    stamp = (DUE + timedelta(days=1)).isoformat()
    (course.submitted_folder(late, ASSIGNMENT) / "timestamp.txt").write_text(stamp)


def _rows(course: Course, students: list[str]) -> dict:
    """Everything recording writes in the gradebook, by student."""
    rows = {}
    with Gradebook(course.gradebook_url()) as gradebook:
        for student in students:
            submission = gradebook.find_submission(ASSIGNMENT, student)
            notebooks = [
                (
                    notebook.name,
                    notebook.late_submission_penalty,
                    sorted(
                        (g.name, g.auto_score, g.manual_score, g.needs_manual_grade)
                        for g in notebook.grades
                    ),
                    sorted((c.name, c.auto_comment, c.manual_comment) for c in notebook.comments),
                )
                for notebook in submission.notebooks
            ]
            rows[student] = (submission.timestamp, notebooks)
    return rows


def _files(course: Course, student: str) -> list[tuple[str, bytes, int]]:
    folder = course.root / "autograded" / student / ASSIGNMENT
    return sorted(
        (str(path.relative_to(folder)), path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
        for path in folder.rglob("*")
        if path.is_file()
    )


@pytest.mark.slow
def test_one_session_records_what_the_converter_records(
    built_course, graded, tmp_path, monkeypatch
):
    students = _students(built_course)
    assert len(students) >= 10
    # Late with full marks, so that a penalty above the score shows the clamp.
    late, by_hand = "perfect", "blank"
    assert {late, by_hand} <= set(students)
    notebooks = {
        student: built_course.autograded_notebook(student, ASSIGNMENT).read_bytes()
        for student in students
    }
    # A penalty above the score, so that nbgrader's clamp to the score shows.
    settings = course_module.nbgrader_config

    def over_penalty(*args, **kwargs):
        config = settings(*args, **kwargs)
        config.AssignLatePenalties.plugin_class = OverPenalty
        return config

    monkeypatch.setattr(course_module, "nbgrader_config", over_penalty)
    recorded = {}
    for way in ("converter", "session"):
        course = _copy_course(built_course, tmp_path / way)
        _late_and_hand_graded(course, late, by_hand)
        with monkeypatch.context() as patch:
            if way == "converter":
                patch.setattr(record_module, "recordable", lambda *args: False)
            with Recorder(course, ASSIGNMENT) as recorder:
                problems = {s: recorder.save_grades(s, notebooks[s]) for s in students}
                # A notebook that cannot be read: that student fails alone, and has no
                # autograded folder.
                failed = recorder.save_grades("corrupt", b"{ not a notebook")
        assert problems == dict.fromkeys(students, ""), way
        assert failed.startswith("recording grades failed: "), (way, failed)
        assert not (course.root / "autograded" / "corrupt").exists()
        recorded[way] = course
    converter, session = recorded["converter"], recorded["session"]
    assert _rows(session, students) == _rows(converter, students)
    for student in students:
        assert _files(session, student) == _files(converter, student), student
    with Gradebook(session.gradebook_url()) as gradebook:
        notebook = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, late)
        assert notebook.late_submission_penalty == notebook.score > 0
        flagged = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, by_hand).grades[0]
        assert flagged.needs_manual_grade
