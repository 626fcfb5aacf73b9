"""Grade the students of a class in N processes side by side.

Each process is a :class:`~autograder.pipeline.autograde.Grader` with its own zygote (started by the
caller, so that it imports torch while the processes start), and takes the next student
when it is done with one, so a slow notebook holds up one process only. Students are
independent: each is graded by nbgrader in a kernel of its own, and the processes share
nothing but the gradebook, where SQLite makes a writer wait for the other (see
:data:`~autograder.pipeline.autograde.GRADEBOOK_TIMEOUT`). The grades are the same as with one
process, which ``tests/test_pipeline.py`` checks.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Collection, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.util import Finalize

from sqlalchemy.exc import SAWarning

from autograder.course import Course
from autograder.pipeline import worker_context
from autograder.pipeline.autograde import Grader
from autograder.pipeline.progress import Progress
from autograder.sandbox.bwrap import Sandbox
from autograder.sandbox.limits import Limits
from autograder.sandbox.zygote import Handoff, Zygote, ZygoteError, close_zygotes, launch_zygotes
from autograder.submission import ERROR, OK, Submission

AUTOGRADE, FEEDBACK = "autograde", "feedback"
_log = logging.getLogger(__name__)

_grader: Grader | None = None
_steps: tuple[str, ...] = ()


def _step(grader: Grader, submission: Submission, steps: Sequence[str]) -> Submission:
    try:
        if AUTOGRADE in steps:
            submission = grader.autograde(submission)
        if FEEDBACK in steps:
            submission = grader.feedback(submission)
    except Exception as error:  # one student's failure must not stop the class
        # The status file keeps one line; the traceback goes to the log for whoever
        # has to find out why.
        _log.exception("grading %s failed", submission.student_id)
        message = f"grading failed: {type(error).__name__}: {error}"
        return dataclasses.replace(submission, status=ERROR, message=message)
    return submission


def _start_worker(
    course: Course,
    assignment: str,
    limits: Limits,
    sandbox: Sandbox,
    steps: tuple[str, ...],
    counter: Synchronized,
    handoffs: list[Handoff],
) -> None:
    global _grader, _steps
    # As in the command line: nbgrader's gradebook warns about its own internals.
    warnings.filterwarnings("ignore", category=SAWarning)
    with counter.get_lock():
        counter.value += 1
        worker = counter.value
    kernels = None
    for number, handoff in enumerate(handoffs, start=1):
        if number == worker:
            kernels = Zygote.adopt(handoff, sandbox, limits, worker)
        else:
            handoff.channel.close()  # another worker's zygote
    _grader = Grader(course, assignment, limits, sandbox, kernels=kernels)
    _steps = steps
    if AUTOGRADE in steps:
        _grader.start()
        # Worker processes end with os._exit: atexit would not close the zygote's socket.
        Finalize(_grader, _grader.close, exitpriority=10)


def _work(submission: Submission) -> Submission:
    assert _grader is not None
    return _step(_grader, submission, _steps)


def grade_students(
    course: Course,
    assignment: str,
    submissions: list[Submission],
    *,
    steps: Sequence[str] = (AUTOGRADE,),
    jobs: int = 1,
    limits: Limits | None = None,
    sandbox: Sandbox | None = None,
    zygotes: list[Zygote] | None = None,
    only: Collection[str] | None = None,
    progress: Progress | None = None,
) -> list[Submission]:
    """Autogrades and/or writes feedback for every collected student.

    Args:
        course: The course, with the assignment released.
        assignment: The assignment id.
        submissions: Every student; autograde takes those with status ``ok``, feedback
            those that were autograded.
        steps: ``autograde``, ``feedback`` or both, in that order, per student.
        jobs: How many students to grade at once (processes).
        limits: Limits on each kernel (the defaults when None).
        sandbox: How kernels are isolated (required to autograde).
        zygotes: Zygotes already launched (see :func:`launch_zygotes`), at least one per
            job; they are closed when grading is done. Launched here when None.
        only: Grade these students only (for example one late submission); the others
            are returned unchanged.
        progress: Told how many students there are, and each one as it is done.

    Returns:
        The submissions in the same order, with the status and message grading gave.
    """
    limits = limits or Limits()
    steps = tuple(steps)
    if AUTOGRADE in steps and sandbox is None:
        raise ValueError(
            "autograding needs a sandbox (see autograder.sandbox.bwrap.detect_sandbox)"
        )
    sandbox = sandbox or Sandbox(bwrap=None, separate_uids=False, reason="not used")
    if AUTOGRADE in steps:
        todo = [submission for submission in submissions if submission.status == OK]
    else:
        todo = [submission for submission in submissions if submission.graded]
    if only is not None:
        todo = [submission for submission in todo if submission.student_id in only]
    progress = progress or Progress(enabled=False)
    progress.start(len(todo))
    workers = max(1, min(jobs, len(todo)))
    if AUTOGRADE in steps and zygotes is None and todo:
        zygotes = launch_zygotes(sandbox, limits, workers)
    zygotes = zygotes or []
    done: dict[str, Submission] = {}
    try:
        if workers == 1:
            grader = Grader(
                course, assignment, limits, sandbox, kernels=zygotes[0] if zygotes else None
            )
            if AUTOGRADE in steps:
                grader.start()
            try:
                for submission in todo:
                    done[submission.student_id] = _step(grader, submission, steps)
                    progress.done(done[submission.student_id])
            finally:
                grader.close()
        else:
            handoffs = [kernels.handoff() for kernels in zygotes[:workers]]
            context = worker_context()
            counter = context.Value("i", 0)
            with ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=_start_worker,
                initargs=(course, assignment, limits, sandbox, steps, counter, handoffs),
            ) as pool:
                try:
                    # In the order they finish, so that progress shows each at once.
                    for future in as_completed([pool.submit(_work, s) for s in todo]):
                        submission = future.result()
                        done[submission.student_id] = submission
                        progress.done(submission)
                except BrokenProcessPool as error:
                    # A worker died outside a student's kernel: its zygote did not start.
                    raise ZygoteError(f"a grading process failed: {error}") from error
    finally:
        progress.close()
        close_zygotes(zygotes)
    return [done.get(submission.student_id, submission) for submission in submissions]
