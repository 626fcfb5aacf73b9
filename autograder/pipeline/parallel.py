"""Grade the students of a class on workers, and record them here, one writer.

The students' notebooks go to the workers of an executor (:mod:`autograder.pipeline.executors`:
a local pool, or a Dask cluster) with what they need of the assignment
(:mod:`autograder.pipeline.reference`); the graded notebooks come back, and this process
alone writes them into the course (:mod:`autograder.pipeline.record`): gradebook,
``autograded/``, ``feedback/``. Students are independent, so the grades are the same
whatever the number of workers, which ``tests/test_pipeline.py`` checks.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Sequence
from typing import Protocol

from autograder.course import Course
from autograder.pipeline.autograde import GradedNotebook, StudentNotebook
from autograder.pipeline.progress import Progress
from autograder.pipeline.record import Recorder, student_notebook
from autograder.pipeline.reference import AssignmentReference, read_reference
from autograder.pipeline.worker import WorkerSettings
from autograder.sandbox.limits import Limits
from autograder.submission import ERROR, OK, Submission

AUTOGRADE, FEEDBACK = "autograde", "feedback"
_log = logging.getLogger(__name__)


class Executor(Protocol):
    """Where grading runs (see :mod:`autograder.pipeline.executors`)."""

    name: str

    @property
    def workers(self) -> int:
        """How many students it grades at once."""

    def grade(
        self,
        reference: AssignmentReference,
        students: Sequence[StudentNotebook],
        settings: WorkerSettings,
    ):
        """Yields lists of results as the workers send them."""

    def sandbox_line(self, seen: set[str]) -> str:
        """How student code was isolated, given what the workers said."""

    def sandbox_enabled(self, requested: bool) -> bool:
        """Whether student code ran in the sandbox, given whether it was asked for."""

    def close(self) -> None:
        """Stops what it started."""


def _selected(
    submissions: list[Submission], steps: Sequence[str], only: Collection[str] | None
) -> list[Submission]:
    if AUTOGRADE in steps:
        todo = [submission for submission in submissions if submission.status == OK]
    else:
        todo = [submission for submission in submissions if submission.graded]
    if only is not None:
        todo = [submission for submission in todo if submission.student_id in only]
    return todo


def grade_students(
    course: Course,
    assignment: str,
    submissions: list[Submission],
    *,
    executor: Executor | None = None,
    steps: Sequence[str] = (AUTOGRADE,),
    limits: Limits | None = None,
    settings: WorkerSettings | None = None,
    only: Collection[str] | None = None,
    progress: Progress | None = None,
    seen_sandboxes: set[str] | None = None,
) -> list[Submission]:
    """Autogrades and/or writes feedback for every collected student.

    Args:
        course: The course, with the assignment released.
        assignment: The assignment id.
        submissions: Every student; autograde takes those with status ``ok``, feedback
            those that were autograded.
        executor: Where to grade (required to autograde).
        steps: ``autograde``, ``feedback`` or both, in that order, per student.
        limits: Limits on each kernel (the defaults when None).
        settings: How workers grade (from ``limits``, sandbox on, when None).
        only: Grade these students only (for example one late submission); the others
            are returned unchanged.
        progress: Told how many students there are, and each one as it is done.
        seen_sandboxes: Filled with how the workers isolated student code.

    Returns:
        The submissions in the same order, with the status and message grading gave.
    """
    limits = limits or Limits()
    settings = settings or WorkerSettings(limits)
    steps = tuple(steps)
    todo = _selected(submissions, steps, only)
    progress = progress or Progress(enabled=False)
    progress.start(len(todo))
    done: dict[str, Submission] = {}
    recorder = Recorder(course, assignment, limits)

    def finish(submission: Submission, result: GradedNotebook | None = None) -> None:
        if FEEDBACK in steps and result is not None:
            submission = recorder.write_feedback(submission, result)
        elif FEEDBACK in steps:
            submission = recorder.feedback(submission)
        done[submission.student_id] = submission
        progress.done(submission)

    try:
        if AUTOGRADE not in steps:
            for submission in todo:
                finish(submission)
        else:
            if executor is None:
                raise ValueError("autograding needs an executor (autograder.pipeline.executors)")
            students = []
            for submission in todo:
                try:
                    students.append(student_notebook(course, assignment, submission))
                except (OSError, ValueError) as error:  # this student only
                    message = f"cannot be graded: {type(error).__name__}: {error}"
                    finish(dataclasses.replace(submission, status=ERROR, message=message))
            if students:
                reference = read_reference(course, assignment)
                for results in executor.grade(reference, students, settings):
                    for result in results:
                        _record(recorder, result, done, finish, seen_sandboxes)
    finally:
        progress.close()
        recorder.close()
    return [done.get(submission.student_id, submission) for submission in submissions]


def _record(
    recorder: Recorder,
    result: GradedNotebook,
    done: dict[str, Submission],
    finish,
    seen_sandboxes: set[str] | None,
) -> None:
    student = result.submission.student_id
    if student in done:
        # A batch graded twice (its first worker died after all): the first result counts.
        _log.warning("%s was graded twice; the second result is ignored", student)
        return
    if seen_sandboxes is not None and result.sandbox:
        seen_sandboxes.add(result.sandbox)
    finish(recorder.record(result), result)
