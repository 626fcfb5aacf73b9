"""Where the grading work goes: a local pool of processes, or a Dask cluster.

An executor hands batches of students (:class:`~autograder.pipeline.payloads.StudentNotebook`,
each carrying its notebook's bytes) to workers and yields their results
(:class:`~autograder.pipeline.payloads.GradedNotebook`) as they come back. Every worker
grades the same way (:mod:`autograder.pipeline.worker`); none writes the course: the caller
records each result (:mod:`autograder.pipeline.record`).

* :class:`LocalExecutor` (``--executor local``, the default): ``--jobs N`` processes on
  this machine, each with a zygote launched early by the command line; nothing to start.
* :class:`DaskExecutor` (``--executor dask``): the workers of a Dask cluster
  (``--scheduler ADDRESS``: Slurm, PBS, Kubernetes, anything Dask reaches), or of a local
  cluster started for the run when no address is given. Each worker starts its own zygote
  once; a worker that dies mid-batch costs that batch a second run elsewhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.sharedctypes import Synchronized

from autograder.course import Course
from autograder.errors import AutograderError
from autograder.kernel.fs import remove_tree
from autograder.pipeline import LOST_AFTER, worker_context
from autograder.pipeline.payloads import GradedNotebook, StudentNotebook
from autograder.pipeline.reference import AssignmentReference, read_reference
from autograder.pipeline.worker import (
    GradingWorker,
    WorkerSettings,
    close_installed,
    current_worker,
    follow_stop,
    grade_batch,
    hold,
    install,
    stop_grading,
)
from autograder.sandbox.bwrap import Sandbox
from autograder.sandbox.zygote import (
    Handoff,
    Zygote,
    ZygoteError,
    close_zygotes,
    kill_launched,
    launch_zygotes,
)
from autograder.submission import ERROR

EXECUTORS = ("local", "dask")
# Students per Dask task. Measured on a 2-core machine at a load of 16: a task's round trip
# with two 300 KB notebooks each way took 330 ms, against seconds per notebook under the
# same load; Dask sends the next task before one ends, so that is mostly hidden. Small
# batches keep every worker busy to the end of a class, show progress often, and cost
# little when a worker dies (its batch is graded again). See docs/cluster.md.
BATCH_SIZE = 2
# What the local cluster's workers load first: they leave Ctrl-C to the command.
DASK_PRELOAD = "autograder.pipeline.dask_preload"
RESUBMISSIONS = 3  # tries of a batch whose result the scheduler lost
CONNECT_TIMEOUT = 10  # seconds to reach a scheduler before saying it cannot be reached
WORKERS_TIMEOUT = 60  # seconds to wait for a first worker to join the scheduler
POLL_SECONDS = 0.2  # how often the grading loop looks for results and for a stop
CHECK_SECONDS = 1.0  # how often it asks the scheduler whether it still has workers


def batches(students: Sequence[StudentNotebook], size: int) -> list[list[StudentNotebook]]:
    """Splits ``students`` into batches of ``size`` (the last may be smaller)."""
    iterator = iter(students)
    return [list(batch) for batch in iter(lambda: list(itertools.islice(iterator, size)), [])]


def _failed(batch: Sequence[StudentNotebook], error: BaseException) -> list[GradedNotebook]:
    message = f"grading failed: {type(error).__name__}: {error}"
    return [
        GradedNotebook(dataclasses.replace(s.submission, status=ERROR, message=message), None)
        for s in batch
    ]


# The local pool's worker processes: what their initializer gives them.
_reference: AssignmentReference | None = None
_settings: WorkerSettings | None = None


def _start_kept_worker(
    settings: WorkerSettings,
    sandbox: Sandbox,
    counter: Synchronized,
    handoffs: list[Handoff],
    stop: object,
) -> None:
    """Makes this pool process a grading worker, with the zygote handed off for its turn to start.

    A kept pool's workers stop here: each task names its own assignment. A one-run pool's
    (:func:`_start_local_worker`) also learn the run's assignment. ``stop`` is the
    command's event for stopping (see :func:`autograder.pipeline.worker.follow_stop`).
    """
    follow_stop(stop)
    with counter.get_lock():
        counter.value += 1
        number = counter.value
    kernels = None
    for position, handoff in enumerate(handoffs, start=1):
        if position == number:
            kernels = Zygote.adopt(handoff, sandbox, settings.limits, number)
        else:
            handoff.channel.close()  # another worker's zygote
    install(GradingWorker(settings, sandbox=sandbox, kernels=kernels))


def _start_local_worker(
    settings: WorkerSettings,
    sandbox: Sandbox,
    reference: AssignmentReference,
    counter: Synchronized,
    handoffs: list[Handoff],
    stop: object,
) -> None:
    global _reference, _settings
    _start_kept_worker(settings, sandbox, counter, handoffs, stop)
    _reference, _settings = reference, settings
    current_worker(settings).grader_for(reference)  # waits for the zygote


def _each_as_done(
    submit: Callable[[StudentNotebook], Future], students: Sequence[StudentNotebook]
) -> Iterator[list[GradedNotebook]]:
    """Submits each student alone; yields the results in the order they finish.

    In that order, progress shows each student at once. A pool whose process died is a
    :class:`ZygoteError`.
    """
    try:
        futures = [submit(student) for student in students]
        for future in as_completed(futures):
            yield future.result()
    except BrokenProcessPool as error:
        # A worker died outside a student's kernel: its zygote did not start.
        raise ZygoteError(f"a grading process failed: {error}") from error


def _grade_local(batch: list[StudentNotebook]) -> list[GradedNotebook]:
    assert _reference is not None and _settings is not None
    return grade_batch(_reference, batch, _settings)


class LocalExecutor:
    """``--jobs N`` grading processes on this machine (one grades in this process).

    Args:
        jobs: How many students at once.
        zygotes: Zygotes launched early by the command line, one per job; launched here
            when None. Closed when grading is done.
        sandbox: The sandbox detected for the course (the zygotes were started in it).
        keep: Keep the processes and their zygotes between grading runs, until
            :meth:`close`: a caller that grades several assignments (or classes) in a row
            starts them once, not once per run (each zygote imports torch and the
            notebooks' modules: seconds of a core). Every run must then use the same
            limits and sandbox settings.
    """

    name = "local"

    def __init__(
        self,
        jobs: int = 1,
        zygotes: list[Zygote] | None = None,
        sandbox: Sandbox | None = None,
        keep: bool = False,
    ) -> None:
        self.jobs = max(1, jobs)
        self.zygotes = zygotes
        self.sandbox = sandbox
        self.workers = self.jobs
        self.keep = keep
        self._kept: _KeptWorkers | None = None
        self._stop = None  # the pool processes' stop event, made with the first pool

    def stop_event(self) -> object:
        """The event that tells this executor's pool processes to stop (made on first use)."""
        if self._stop is None:
            self._stop = worker_context().Event()
        return self._stop

    def stop(self) -> None:
        """Ends the students being graded now, and starts no other; safe in a signal handler.

        Kills the zygotes this process started (their kernels die with them), and tells
        the pool processes to start nobody else and kill their own zygotes (see
        :func:`autograder.pipeline.worker.follow_stop`).
        """
        if self._stop is not None:
            self._stop.set()
        kill_launched()

    def reference(self, course: Course, assignment: str) -> AssignmentReference:
        """Reads what the workers need of ``assignment``, here."""
        return read_reference(course, assignment)

    def sandbox_line(self, seen: set[str]) -> str:
        """How student code was isolated, for the status file."""
        assert self.sandbox is not None
        return self.sandbox.describe()

    def sandbox_enabled(self, requested: bool) -> bool:
        """Whether student code ran in bubblewrap: here it may be off where it cannot run."""
        assert self.sandbox is not None
        return self.sandbox.enabled

    def grade(
        self,
        reference: AssignmentReference,
        students: Sequence[StudentNotebook],
        settings: WorkerSettings,
    ) -> Iterator[list[GradedNotebook]]:
        """Grades ``students``; yields each one's result as soon as it is done."""
        assert self.sandbox is not None, "the local executor needs the course's sandbox"
        if self.keep:
            if students:
                try:
                    yield from self._kept_workers(settings).grade(reference, students, settings)
                except ZygoteError:
                    self.close()  # a broken pool grades nothing more: the next run starts anew
                    raise
            return
        workers = max(1, min(self.jobs, len(students)))
        zygotes = self.zygotes
        if zygotes is None and students:
            zygotes = launch_zygotes(self.sandbox, settings.limits, workers)
        zygotes = zygotes or []
        try:
            if not students:
                return
            if workers == 1:
                grading = GradingWorker(
                    settings, sandbox=self.sandbox, kernels=zygotes[0] if zygotes else None
                )
                try:
                    for student in students:
                        yield grading.grade(reference, [student])
                finally:
                    grading.close()
                return
            handoffs = [kernels.handoff() for kernels in zygotes[:workers]]
            context = worker_context()
            counter = context.Value("i", 0)
            stop = self.stop_event()
            pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=context,
                initializer=_start_local_worker,
                initargs=(settings, self.sandbox, reference, counter, handoffs, stop),
            )
            try:
                yield from _each_as_done(
                    lambda student: pool.submit(_grade_local, [student]), students
                )
            finally:
                # Left early (stopped, or a result could not be recorded): the students
                # not sent yet are dropped rather than graded for nobody.
                pool.shutdown(wait=True, cancel_futures=True)
        finally:
            close_zygotes(zygotes)

    @property
    def kept_zygotes(self) -> list[Zygote]:
        """The zygotes kept between runs (none before the first run, or without ``keep``)."""
        return list(self._kept.zygotes) if self._kept is not None else []

    def _kept_workers(self, settings: WorkerSettings) -> _KeptWorkers:
        if self._kept is None:
            assert self.sandbox is not None
            zygotes = self.zygotes
            if zygotes is None:
                zygotes = launch_zygotes(self.sandbox, settings.limits, self.jobs)
            self._kept = _KeptWorkers(self.jobs, zygotes, self.sandbox, settings, self.stop_event())
        return self._kept

    def close(self) -> None:
        """Stops the kept processes and zygotes (without ``keep``, each run stopped its own)."""
        if self._kept is not None:
            self._kept.close()
            self._kept = None


class _KeptWorkers:
    """The processes (or, with one job, the worker in this process) a kept executor reuses."""

    def __init__(
        self,
        jobs: int,
        zygotes: list[Zygote],
        sandbox: Sandbox,
        settings: WorkerSettings,
        stop: object,
    ) -> None:
        self.zygotes = zygotes
        self.settings = settings
        self.pool: ProcessPoolExecutor | None = None
        self.worker: GradingWorker | None = None
        if jobs == 1:
            self.worker = GradingWorker(settings, sandbox=sandbox, kernels=zygotes[0])
            return
        context = worker_context()
        self.pool = ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=context,
            initializer=_start_kept_worker,
            initargs=(
                settings,
                sandbox,
                context.Value("i", 0),
                [z.handoff() for z in zygotes],
                stop,
            ),
        )

    def grade(
        self,
        reference: AssignmentReference,
        students: Sequence[StudentNotebook],
        settings: WorkerSettings,
    ) -> Iterator[list[GradedNotebook]]:
        if not settings.same_zygote(self.settings):
            raise AutograderError(
                "a kept local executor grades every run with the limits and sandbox "
                "settings of its first: make another executor for other limits"
            )
        if self.worker is not None:
            self.worker.settings = settings  # feedback on or off, as this run asks
            for student in students:
                yield self.worker.grade(reference, [student])
            return
        pool = self.pool
        assert pool is not None
        futures: list[Future] = []

        def submit(student: StudentNotebook) -> Future:
            futures.append(pool.submit(grade_batch, reference, [student], settings))
            return futures[-1]

        try:
            yield from _each_as_done(submit, students)
        finally:
            for future in futures:
                future.cancel()  # left early: the students not started stay so

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
        if self.pool is not None:
            self.pool.shutdown()
        close_zygotes(self.zygotes)


class DaskExecutor:
    """The workers of a Dask cluster; a local cluster of ``workers`` processes when no address.

    Connects at once, so that a scheduler that cannot be reached stops the command before
    anything is collected.

    Args:
        scheduler: The scheduler's address (``tcp://host:8786``), or None for a local
            cluster started now and stopped by :meth:`close`.
        workers: Processes of the local cluster (ignored with a scheduler).
        batch_size: Students per task (:data:`BATCH_SIZE` when None).
        lost_after: Seconds without a scheduler that answers, or without a worker,
            after which a run stops with an error (the students recorded are kept).

    Raises:
        AutograderError: If the scheduler cannot be reached, or has no worker.
    """

    name = "dask"

    def __init__(
        self,
        scheduler: str | None = None,
        workers: int = 2,
        batch_size: int | None = None,
        lost_after: float = LOST_AFTER,
    ) -> None:
        import dask
        from distributed import Client, LocalCluster

        self.batch_size = max(1, batch_size or BATCH_SIZE)
        self.lost_after = lost_after
        self._stopping = False
        self._lost_since: float | None = None
        self._checked_at = 0.0
        self._workers = 0
        self.cluster = None
        self.scratch: str | None = None  # the local cluster's folder, removed by close
        self.address = scheduler or "a local cluster"
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as error:
                raise AutograderError(
                    f"cannot reach the Dask scheduler at {scheduler}: {error} (is it running, "
                    "and is the address the one `dask scheduler` printed?)"
                ) from error
        else:
            # One thread per worker: each grades one notebook at a time, with its zygote.
            # Its files (Dask's scratch space) go to a folder of the run's, removed at close.
            self.scratch = tempfile.mkdtemp(prefix="autograder-dask-")
            with dask.config.set({"temporary-directory": self.scratch}):  # the scheduler's too
                self.cluster = LocalCluster(
                    n_workers=max(1, workers),
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    local_directory=self.scratch,
                    preload=[DASK_PRELOAD],
                )
            self.client = Client(self.cluster)
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
        except TimeoutError as error:
            self.close()
            raise AutograderError(
                f"no Dask worker joined the scheduler at {self.address} in {WORKERS_TIMEOUT} s"
            ) from error

    @property
    def workers(self) -> int:
        """How many workers the scheduler has now (the last count, once it is lost)."""
        if self.client.status == "running":
            with contextlib.suppress(Exception):  # lost while asking: the last count stands
                self._workers = len(self.client.scheduler_info(n_workers=-1)["workers"])
        return self._workers

    def reference(self, course: Course, assignment: str) -> AssignmentReference:
        """Reads what the workers need of ``assignment``, here (they have no course folder)."""
        return read_reference(course, assignment)

    def sandbox_line(self, seen: set[str]) -> str:
        """How the workers isolated student code (each says, in its results)."""
        lines = sorted(seen) or ["no student was graded"]
        return "; ".join(lines) + f" (Dask workers of {self.address})"

    def sandbox_enabled(self, requested: bool) -> bool:
        """Whether student code ran in bubblewrap: workers refuse to grade otherwise."""
        return requested

    def grade(
        self,
        reference: AssignmentReference,
        students: Sequence[StudentNotebook],
        settings: WorkerSettings,
    ) -> Iterator[list[GradedNotebook]]:
        """Grades ``students`` in batches on the workers; yields each batch's results.

        Raises:
            SandboxError: If a worker refuses to grade without the sandbox.
        """
        from distributed import as_completed as dask_completed

        if not students:
            return
        # Each worker makes itself ready (its zygote) in its first task, not in
        # client.run: that would hold the worker's event loop while nbgrader imports.
        run = uuid.uuid4().hex[:8]
        # A task that returns the reference, rather than scattered data: a worker that dies
        # holding it loses nothing (the scheduler runs the task again); workers fetch it
        # from one another once, not once per batch.
        shared = [self.client.submit(hold, reference, key=f"reference-{run}-0")]
        pending: dict[str, tuple[object, list[StudentNotebook], int]] = {}

        def submit(batch: list[StudentNotebook], attempt: int) -> object:
            if shared[-1].cancelled():  # lost with the scheduler connection: send it again
                key = f"reference-{run}-{len(shared)}"
                shared.append(self.client.submit(hold, reference, key=key))
            first = batch[0].submission.student_id
            key = f"grade-{reference.assignment}-{first}-{run}-{attempt}"
            future = self.client.submit(
                grade_batch, shared[-1], batch, settings, key=key, pure=False
            )
            pending[future.key] = (future, batch, attempt)
            return future

        futures = dask_completed([submit(batch, 0) for batch in batches(students, self.batch_size)])
        lost: list[tuple[list[StudentNotebook], int]] = []  # to send again once reconnected
        self._lost_since = None
        try:
            while (not futures.is_empty() or lost) and not self._stopping:
                if lost and self.client.status == "running":
                    for batch, attempt in lost:
                        futures.add(submit(batch, attempt))
                    lost.clear()
                if not futures.has_ready():
                    # In short steps: a stop is seen at once, and a lost scheduler soon.
                    self._check_connection()
                    time.sleep(POLL_SECONDS)
                    continue
                for future in futures.next_batch(block=False):
                    _, batch, attempt = pending.pop(future.key)
                    try:
                        yield future.result()
                    except AutograderError:
                        raise  # the worker's machine cannot grade: the run stops and says why
                    except CancelledError as error:
                        # The client lost the scheduler for a while (it reconnects by
                        # itself): the batch's result is gone, not wrong; ask again.
                        if attempt + 1 >= RESUBMISSIONS:
                            yield _failed(batch, error)
                        else:
                            lost.append((batch, attempt + 1))
                    except Exception as error:  # this batch only (its workers died too often)
                        yield _failed(batch, error)
        finally:
            for future, _, _ in pending.values():
                future.cancel()
            if self._stopping and self.cluster is not None and self.client.status == "running":
                # The local cluster's students end now, as on the local pool. A remote
                # worker may be grading for another run as well: it finishes its batch.
                with contextlib.suppress(Exception):
                    self.client.run(stop_grading)

    def stop(self) -> None:
        """Stops waiting for the workers: no batch is sent any more, those sent are cancelled.

        Safe in a signal handler (it only sets a flag the grading loop looks at). The
        grading loop then kills the zygotes of a local cluster's workers, so that their
        students end at once; a remote worker finishes the batch it holds (it may be
        grading for another run too), and its result is dropped.
        """
        self._stopping = True

    def _check_connection(self) -> None:
        """Raises once the scheduler, or every worker, has been gone for ``lost_after`` seconds.

        Raises:
            AutograderError: Saying what was lost and for how long.
        """
        now = time.monotonic()
        if now - self._checked_at < CHECK_SECONDS:
            return
        self._checked_at = now
        lost = self._lost_now()
        if not lost:
            self._lost_since = None
            return
        if self._lost_since is None:
            self._lost_since = now
        elif now - self._lost_since >= self.lost_after:
            raise AutograderError(
                f"{lost} for {self.lost_after:g} s (--lost-after): grading stopped; the "
                "students graded so far are recorded"
            )

    def _lost_now(self) -> str:
        """What is missing now: "" while the scheduler answers and has a worker."""
        if self.client.status != "running":
            return f"lost the Dask scheduler at {self.address}"
        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"]
        except Exception:  # the connection broke while asking
            return f"lost the Dask scheduler at {self.address}"
        if not workers:
            return f"the Dask scheduler at {self.address} has had no worker"
        return ""

    def close(self) -> None:
        """Disconnects, and stops the local cluster if this executor started it."""
        if self.cluster is not None and self.client.status == "running":
            # Each worker removes its own folders now: stopping the cluster may end its
            # processes before their exit handlers run. (A remote worker keeps its zygote.)
            with contextlib.suppress(Exception):
                self.client.run(close_installed)
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None
        if self.scratch is not None:
            remove_tree(self.scratch)
            self.scratch = None
