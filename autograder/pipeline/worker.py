"""One grading worker process: its zygote, started once, and the batches it grades.

Every worker grades the same way, whatever started it (a process of the local pool, a
Dask worker on another machine, or the command itself with ``--jobs 1``): one
:class:`GradingWorker` per process holds the zygote (started once, its sandbox and its
block of uids claimed with the machine-wide lock) and a
:class:`~autograder.pipeline.autograde.Grader` for the assignment at hand. A task is a
batch of students (:func:`grade_batch`); the worker returns their graded notebooks and
writes nothing outside its own temporary folders.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socket
import tempfile
import threading
import warnings
from multiprocessing.util import Finalize
from pathlib import Path

from autograder import interrupts
from autograder.course import Course
from autograder.errors import SandboxError
from autograder.kernel.fs import remove_tree
from autograder.pipeline.autograde import Grader
from autograder.pipeline.payloads import GradedNotebook, StudentNotebook, WorkerSettings
from autograder.pipeline.reference import AssignmentReference
from autograder.sandbox.bwrap import Sandbox, course_sandbox
from autograder.sandbox.limits import Limits
from autograder.sandbox.zygote import Zygote, kill_launched
from autograder.submission import ERROR, INTERRUPTED

_log = logging.getLogger(__name__)


class GradingWorker:
    """The grading state of one process: a zygote, and a grader for the current assignment.

    Args:
        settings: How to grade.
        sandbox: The sandbox the caller detected (the local pool's); detected here when None.
        kernels: A zygote the caller launched (it stays the caller's); started here when None.
    """

    def __init__(
        self,
        settings: WorkerSettings,
        sandbox: Sandbox | None = None,
        kernels: Zygote | None = None,
    ) -> None:
        # As in the command line: nbgrader's gradebook warns about its own internals
        # (SQLAlchemy autoflush) on every autograde, in every worker process.
        warnings.filterwarnings("ignore", module="nbgrader")
        self.settings = settings
        self.folder = Path(tempfile.mkdtemp(prefix="autograder-worker-"))
        self.sandbox = sandbox or self._detect_sandbox()
        self.zygote = kernels
        self._own_zygote = kernels is None
        self.grader: Grader | None = None
        self._digest = ""

    def _detect_sandbox(self) -> Sandbox:
        # The scratch courses live under self.folder: hidden from the students' kernels.
        sandbox = course_sandbox(Course.at(self.folder), enabled=self.settings.sandbox)
        if self.settings.sandbox and self.settings.require_sandbox and not sandbox.enabled:
            raise SandboxError(
                f"worker on {socket.gethostname()} refuses to grade: the sandbox is not "
                f"available there ({sandbox.reason}); install bubblewrap with unprivileged "
                "user namespaces on every worker, or grade with --no-sandbox"
            )
        return sandbox

    def launch(self) -> None:
        """Starts the zygote without waiting for it (it imports torch for seconds)."""
        if self.zygote is None:
            # Inside this worker's folder: whatever a killed worker leaves is in one place.
            run_dir = self.folder / "zygote"
            self.zygote = Zygote(self.sandbox, run_dir, _with_torch_threads(self.settings.limits))
            self.zygote.launch()

    def grader_for(self, reference: AssignmentReference) -> Grader:
        """Returns the grader of ``reference``'s assignment (the zygote is kept across).

        Each assignment's scratch course lives in this worker's folder while its grader
        is the current one, and goes with it: a warm worker may come back to an assignment
        it graded before (a late submission after another assignment). A grader that fails
        to start is not kept, so the next batch tries again.
        """
        if self.grader is None or self._digest != reference.digest:
            grader, self.grader = self.grader, None
            if grader is not None:
                grader.close()
                remove_tree(self.folder / self._digest)
            self.launch()
            folder = self.folder / reference.digest
            grader = Grader(
                reference, self.settings.limits, self.sandbox, kernels=self.zygote, folder=folder
            )
            try:
                grader.start()
            except BaseException:
                grader.close()
                remove_tree(folder)
                raise
            self.grader, self._digest = grader, reference.digest
        return self.grader

    def grade(
        self, reference: AssignmentReference, batch: list[StudentNotebook]
    ) -> list[GradedNotebook]:
        """Grades a batch of students; one student's failure does not stop the others.

        Once the command that started this process is stopping, nobody else is started.
        """
        if interrupts.stopping():
            return [_not_started(student) for student in batch]
        grader = self.grader_for(reference)
        results = []
        for student in batch:
            if interrupts.stopping():
                results.append(_not_started(student))
            else:
                results.append(_grade_one(grader, student, self.settings.feedback))
        return results

    def close(self) -> None:
        """Stops the zygote (if started here) and removes this worker's folders.

        Each step runs even when the one before failed (a grader closed by a signal while
        its student was being graded may raise): the folders go in any case.
        """
        grader, self.grader = self.grader, None
        try:
            if grader is not None:
                grader.close()
        finally:
            try:
                if self.zygote is not None and self._own_zygote:
                    self.zygote.close()
            finally:
                remove_tree(self.folder)


def _grade_one(grader: Grader, student: StudentNotebook, feedback: bool) -> GradedNotebook:
    try:
        return grader.grade(student, feedback=feedback)
    except Exception as error:  # one student's failure must not stop the class
        # The status file keeps one line; the traceback goes to the log for whoever
        # has to find out why.
        _log.exception("grading %s failed", student.submission.student_id)
        message = f"grading failed: {type(error).__name__}: {error}"
        failed = dataclasses.replace(
            student.submission, status=ERROR, message=message, graded=False
        )
        return GradedNotebook(failed, None, grader.sandbox.describe())


def _not_started(student: StudentNotebook) -> GradedNotebook:
    message = "not graded: the run was stopped first"
    stopped = dataclasses.replace(
        student.submission, status=INTERRUPTED, message=message, graded=False
    )
    return GradedNotebook(stopped, None)


def follow_stop(event: object) -> None:
    """Makes this pool process stop grading when ``event`` is set (a ``multiprocessing.Event``).

    The process ignores SIGINT (a Ctrl-C reaches the whole process group: the command
    decides), and a thread waits for the event to kill the zygotes this process started
    itself (those the command started, the command kills), so that the student being
    graded ends at once. SIGTERM ends the process, as the pool expects when it stops a
    broken pool's processes, once its zygotes are killed and its folders removed.
    """
    interrupts.follow(event)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _end_on_sigterm)

    def kill_when_set() -> None:
        event.wait()  # type: ignore[attr-defined]
        kill_launched()

    threading.Thread(target=kill_when_set, name="autograder-stop", daemon=True).start()


def _end_on_sigterm(signum: int, frame: object) -> None:
    """Ends this grading process at once, leaving no zygote, kernel or folder behind."""
    # A second SIGTERM (the group's, then the pool's own) must not cut this clean-up short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        kill_launched()
        if _worker is not None:
            _worker.close()  # its scratch courses, the feedback's gradebook, its folder
    except BaseException:
        _log.debug("closing the grading worker on SIGTERM failed", exc_info=True)
    finally:
        os._exit(128 + signum)


# The grading state of this process, for the tasks of a pool or of a Dask worker.
_worker: GradingWorker | None = None
_worker_lock = threading.Lock()
_grading = threading.Lock()  # held by a Dask task while it grades (see close_installed)
CLOSE_WAIT = 30  # seconds close_installed waits for a task that is grading


def install(worker: GradingWorker) -> GradingWorker:
    """Makes ``worker`` this process's grading worker, closed when the process ends."""
    global _worker
    _worker = worker
    # Pool and Dask worker processes end with os._exit: atexit would not close the zygote.
    Finalize(worker, worker.close, exitpriority=10)
    return worker


def _with_torch_threads(limits: Limits) -> Limits:
    """``limits`` with the threads this process's kernels may use, if not chosen yet.

    A Dask worker's kernels get the worker's threads (the cores the cluster gave it); a
    process outside Dask grades alone here, with every core.
    """
    if limits.torch_threads > 0:
        return limits
    try:
        from distributed import get_worker

        threads = get_worker().state.nthreads
    except (ImportError, ValueError):  # not in a Dask worker
        return limits.sharing(1)
    return dataclasses.replace(limits, torch_threads=max(1, threads))


def close_installed() -> None:
    """Closes this process's grading worker, if any (its zygote, kernels and folders).

    The command that started a local Dask cluster runs it on every worker before it
    stops the cluster: a Dask worker process may be ended without running its exit
    handlers, which would leave the worker's folders behind.
    """
    global _worker
    # A task may still be grading (its student ends once the zygotes are killed): wait
    # for it, so that its grader is not closed under it.
    waited = _grading.acquire(timeout=CLOSE_WAIT)
    try:
        with _worker_lock:
            worker, _worker = _worker, None
        if worker is not None:
            worker.close()
    finally:
        if waited:
            _grading.release()


def current_worker(settings: WorkerSettings) -> GradingWorker:
    """Returns this process's grading worker, made (and its zygote launched) on first use.

    Raises:
        SandboxError: If the sandbox is required and does not work on this machine.
    """
    global _worker
    with _worker_lock:
        if _worker is not None and not _worker.settings.same_zygote(settings):
            _worker.close()  # another run, with other limits, on a long-lived Dask worker
            _worker = None
        if _worker is not None:
            _worker.settings = settings
        if _worker is None:
            install(GradingWorker(settings)).launch()
        return _worker


def hold(value: object) -> object:
    """Returns ``value``: a task whose result is data every batch needs."""
    return value


def grade_batch(
    reference: AssignmentReference, batch: list[StudentNotebook], settings: WorkerSettings
) -> list[GradedNotebook]:
    """Grades a batch of students in this process (the task a Dask worker runs).

    Args:
        reference: The assignment.
        batch: The students, with their notebooks.
        settings: How to grade.
    """
    with _grading:
        return current_worker(settings).grade(reference, batch)


def stop_grading() -> None:
    """Makes this process start no other student, and kills the zygotes it started.

    The command that started a local Dask cluster runs it on every worker when it is
    stopped: the student being graded ends at once (their kernel dies with the zygote),
    as a stopped grading does, without a traceback for it.
    """
    stopped = threading.Event()
    stopped.set()
    interrupts.follow(stopped)
    kill_launched()
