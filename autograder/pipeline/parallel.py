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
import hashlib
import json
import logging
import signal
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol

from autograder import interrupts
from autograder.atomic import WriteError
from autograder.course import Course
from autograder.pipeline.payloads import (
    GradedNotebook,
    StudentNotebook,
    WorkerSettings,
    student_notebook,
)
from autograder.pipeline.progress import Progress
from autograder.pipeline.reference import AssignmentReference
from autograder.sandbox.limits import Limits
from autograder.submission import ERROR, INTERRUPTED, MISSING, OK, UNREADABLE, Submission

if TYPE_CHECKING:  # it imports nbgrader's converters: made in the background (see below)
    from autograder.pipeline.record import Recorder

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

    def reference(self, course: Course, assignment: str) -> AssignmentReference:
        """Reads what its workers need of ``assignment`` (:func:`read_reference`)."""

    def sandbox_line(self, seen: set[str]) -> str:
        """How student code was isolated, given what the workers said."""

    def sandbox_enabled(self, requested: bool) -> bool:
        """Whether student code ran in the sandbox, given whether it was asked for."""

    def stop(self) -> None:
        """Ends the students being graded as fast as it can, and starts no other.

        Called from a signal handler (:func:`autograder.interrupts.on_stop`): it must
        not block or raise.
        """

    def close(self) -> None:
        """Stops what it started."""


class _LazyRecorder:
    """The run's :class:`~autograder.pipeline.record.Recorder`, made when first needed.

    Making it imports nbgrader's converters and nbconvert: half a second of a core, which
    a grading command used to spend before it sent its first student. :meth:`make_meanwhile`
    makes it in a thread once the students are sent, while the workers (or the grading
    service) start on them, so that it is ready by the first result.
    """

    def __init__(self, course: Course, assignment: str, limits: Limits) -> None:
        self._arguments = (course, assignment, limits)
        self._made: Future[Recorder] | None = None

    @staticmethod
    def _make(course: Course, assignment: str, limits: Limits) -> Recorder:
        from autograder.pipeline.record import Recorder

        return Recorder(course, assignment, limits)

    def make_meanwhile(self) -> Future[Recorder]:
        """Starts making the recorder in a thread of its own (once); returns its future."""
        if self._made is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix="recorder")
            self._made = pool.submit(self._make, *self._arguments)
            pool.shutdown(wait=False)  # its thread ends once the recorder is made
        return self._made

    def get(self) -> Recorder:
        """Returns the recorder, waiting for it (and starting it if nothing did)."""
        return self.make_meanwhile().result()

    def close(self) -> None:
        """Closes the recorder, if one was made (waiting for one being made)."""
        if self._made is not None and self._made.exception() is None:
            self._made.result().close()


def _interrupted(submission: Submission, why: str) -> Submission:
    """``submission`` as a student the run did not finish: graded again by the next run."""
    message = f"not graded: {why}; run the command again to grade this student"
    return dataclasses.replace(submission, status=INTERRUPTED, message=message, graded=False)


def _to_feedback(submissions: list[Submission], only: Collection[str] | None) -> list[Submission]:
    todo = [submission for submission in submissions if submission.graded]
    return [s for s in todo if only is None or s.student_id in only]


def _collected(submission: Submission) -> bool:
    """Whether collection left a notebook to grade for this student."""
    return submission.status not in (MISSING, UNREADABLE)


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
    regrade: bool = False,
    progress: Progress | None = None,
    seen_sandboxes: set[str] | None = None,
    save: Callable[[list[Submission]], object] | None = None,
) -> list[Submission]:
    """Autogrades and/or writes feedback for every collected student.

    A student whose notebook was graded against the same tests already (the same
    notebook, the same reference) keeps that grade, unless ``regrade`` or ``only`` names
    them: a run that was stopped grades only what it did not finish when run again.

    A signal (see :mod:`autograder.interrupts`) stops the run between two results: the
    students recorded stay recorded, the others are returned ``interrupted``, and the
    caller raises the signal (:func:`autograder.interrupts.check`) once it has saved them.
    An executor that fails (its pool died, its scheduler was lost) leaves the same, and
    its error is raised after ``save``.

    Args:
        course: The course, with the assignment released.
        assignment: The assignment id.
        submissions: Every student; autograde takes those with a collected notebook,
            feedback those that were autograded.
        executor: Where to grade (required to autograde).
        steps: ``autograde``, ``feedback`` or both, in that order, per student.
        limits: Limits on each kernel (the defaults when None).
        settings: How workers grade (from ``limits``, sandbox on, when None).
        only: Grade these students only (for example one late submission), whatever was
            recorded for them; the others are returned unchanged.
        regrade: Grade every collected student again, even those graded as they are.
        progress: Told how many students there are, and each one as it is done.
        seen_sandboxes: Filled with how the workers isolated student code.
        save: Called with the whole class as it stands after each student is recorded,
            and once more at the end, stopped or not: the status file follows the
            gradebook student by student.

    Returns:
        The submissions in the same order, with the status and message grading gave.
    """
    limits = limits or Limits()
    settings = settings or WorkerSettings(limits)
    steps = tuple(steps)
    progress = progress or Progress(enabled=False)
    done: dict[str, Submission] = {}
    stopped_by: BaseException | None = None
    recorder = _LazyRecorder(course, assignment, limits)

    def current() -> list[Submission]:
        return [done.get(submission.student_id, submission) for submission in submissions]

    def finish(submission: Submission, result: GradedNotebook | None = None) -> None:
        # One student at a time, whole: a signal waits until the gradebook, autograded/,
        # feedback/ and the status file all have them.
        with interrupts.deferring():
            if FEEDBACK in steps and result is not None:
                submission = recorder.get().write_feedback(submission, result)
            elif FEEDBACK in steps:
                submission = recorder.get().feedback(submission)
            done[submission.student_id] = submission
            if save is not None:
                save(current())
        progress.done(submission)

    todo: list[Submission] = []
    try:
        with interrupts.deferring():
            if AUTOGRADE not in steps:
                todo = _to_feedback(submissions, only)
                progress.start(len(todo))
                for submission in todo:
                    if interrupts.received():
                        break
                    finish(submission)
            else:
                if executor is None:
                    raise ValueError(
                        "autograding needs an executor (autograder.pipeline.executors)"
                    )
                students, reference, fingerprint, unreadable = _to_grade(
                    course, assignment, submissions, only, regrade, todo, settings, executor
                )
                progress.start(len(todo))
                for submission in unreadable:
                    finish(submission)
                if students:
                    remove = interrupts.on_stop(executor.stop)
                    try:
                        batches = executor.grade(reference, students, settings)
                        # The students go at the loop's first step, and are graded while
                        # the recorder is made.
                        recorder.make_meanwhile()
                        for results in batches:
                            if interrupts.received():
                                break  # whatever came after the signal may have been cut short
                            for result in results:
                                _record(
                                    recorder.get(),
                                    result,
                                    fingerprint,
                                    done,
                                    finish,
                                    seen_sandboxes,
                                )
                    finally:
                        remove()
    except Exception as error:  # the executor failed: keep what was recorded, then say why
        if interrupts.received() is None:
            stopped_by = error
    finally:
        progress.close()
        recorder.close()
    why = ""
    if interrupts.received() is not None:
        why = f"the run was stopped ({signal.Signals(interrupts.received()).name})"
    elif stopped_by is not None:
        why = f"grading stopped: {type(stopped_by).__name__}: {stopped_by}"
    if why:
        for submission in todo:
            if submission.student_id not in done:
                done[submission.student_id] = _interrupted(submission, why)
    graded = current()
    if save is not None:
        with interrupts.deferring():
            try:
                save(graded)
            except WriteError:
                if stopped_by is None:
                    raise
                # What stopped the run was probably this very disk: that is raised.
                _log.debug("the status file could not be saved", exc_info=True)
    if stopped_by is not None:
        raise stopped_by
    return graded


def _to_grade(
    course: Course,
    assignment: str,
    submissions: list[Submission],
    only: Collection[str] | None,
    regrade: bool,
    todo: list[Submission],
    settings: WorkerSettings,
    executor: Executor,
) -> tuple[list[StudentNotebook], AssignmentReference | None, str, list[Submission]]:
    """Reads the notebooks to grade; fills ``todo`` with their students.

    Returns:
        The students to send to the workers, the assignment's reference, what the grades
        are a function of (:func:`grading_fingerprint`), and the students whose notebook
        cannot be read (status ``error``: they alone fail).
    """
    candidates = [s for s in submissions if _collected(s)]
    if only is not None:
        candidates = [s for s in candidates if s.student_id in only]
    if not candidates:
        return [], None, "", []
    reference = executor.reference(course, assignment)
    fingerprint = grading_fingerprint(reference, settings)
    students, unreadable = [], []
    for submission in candidates:
        # A student graded before starts again from what collecting said of them.
        fresh = dataclasses.replace(submission, status=OK, message=submission.note)
        try:
            student = student_notebook(course, assignment, fresh)
        except (OSError, ValueError) as error:  # this student only
            todo.append(submission)
            message = f"cannot be graded: {type(error).__name__}: {error}"
            failed = dataclasses.replace(submission, status=ERROR, message=message, graded=False)
            unreadable.append(failed)
            continue
        if (
            only is None
            and not regrade
            and submission.graded_as_it_is(student.submission.digest, fingerprint)
        ):
            continue  # graded as it is, against these tests: kept
        todo.append(submission)
        students.append(student)
    return students, reference, fingerprint, unreadable


def grading_fingerprint(reference: AssignmentReference, settings: WorkerSettings) -> str:
    """What a student's grade is a function of, besides their notebook: a short digest.

    The assignment's tests and points (the reference), the limits and whether the
    sandbox was asked for; not the threads each kernel gets, which follow ``--jobs``.
    """
    limits = {**settings.limits.as_dict(), "torch_threads": 0}
    about = json.dumps([reference.digest, limits, settings.sandbox], sort_keys=True)
    return hashlib.sha256(about.encode()).hexdigest()[:16]


def _record(
    recorder: Recorder,
    result: GradedNotebook,
    fingerprint: str,
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
    with interrupts.deferring():
        recorded = recorder.record(result)
        if recorded.graded:
            recorded = dataclasses.replace(recorded, reference=fingerprint)
        finish(recorded, result)
