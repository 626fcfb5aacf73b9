"""Grading on a Dask cluster started from its command lines: the same grades, one writer.

A real ``dask scheduler`` and two ``dask worker`` processes (127.0.0.1 only) grade a
sample of every assignment (``perfect``, ``blank`` and one wrong answer) through
``--executor dask``; during the first assignment one worker is killed with SIGKILL in the
middle of a batch. One class, graded once, serves every test here.
"""

from __future__ import annotations

import csv
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import dask
import distributed  # noqa: F401  (its config defaults, before dask.config.set below)
import psutil
import pytest
from nbgrader.api import Gradebook

from autograder import cli
from autograder.authoring.wrong_answers import FIXTURES, submissions_folder
from autograder.course import Course, assignment_ids
from autograder.errors import SandboxError
from autograder.kernel.fs import remove_tree
from autograder.pipeline.executors import BATCH_SIZE, DaskExecutor, batches
from autograder.pipeline.export import csv_cell
from autograder.pipeline.payloads import GradedNotebook, WorkerSettings, student_notebook
from autograder.pipeline.record import Recorder
from autograder.pipeline.reference import read_reference, scratch_course
from autograder.pipeline.run import GradingResult, grade_class
from autograder.pipeline.worker import GradingWorker
from autograder.sandbox.limits import Limits
from autograder.submission import OK, Submission, load_status
from tests.support.parts import one_part_per_lesson

# One part of each lesson: grading on the cluster does not depend on the notebook, and
# every part's fixtures are graded on one machine (test_pipeline).
ASSIGNMENTS = one_part_per_lesson(assignment_ids())
KILLED_IN = ASSIGNMENTS[0]
START_TIMEOUT = 120  # seconds for the scheduler and the workers to come up on a busy machine
# Dask's 30 s to connect, and to hear from a peer, are short on a machine that other test
# runs share (its scheduler was seen unresponsive for 30 s there).
TIMEOUTS = {"distributed.comm.timeouts.connect": "120s", "distributed.comm.timeouts.tcp": "300s"}


def _expected(assignment: str) -> dict[str, dict[str, str]]:
    with (FIXTURES / assignment / "expected_scores.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def _sample(assignment: str) -> list[str]:
    """``perfect``; in :data:`KILLED_IN` also ``blank`` and the first wrong answer (by name).

    Three students make two batches there, one for the worker that is killed; elsewhere
    one student shows the assignment graded on the cluster (each fixture's scores are
    checked on one machine, in test_pipeline).
    """
    if assignment != KILLED_IN:
        return ["perfect"]
    wrong = sorted(name for name in _expected(assignment) if name not in ("perfect", "blank"))
    wrong = [name for name in wrong if "correct" not in name]
    return ["blank", "perfect", wrong[0]]


class Seen:
    """A progress display that remembers what it was told."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start(self, total: int) -> None:
        self.events.append(("start", total))

    def done(self, submission: Submission) -> None:
        self.events.append((submission.student_id, submission.status))

    def close(self) -> None:
        self.events.append(("close",))


class KillingProgress(Seen):
    """Kills, with SIGKILL, the first worker seen running a student's kernel.

    From the start of grading, a thread watches each worker's processes: when one has a
    kernel forked from its zygote (a second ``autograder.kernel.server`` process under it),
    that worker is in the middle of a batch, and is killed there.
    """

    def __init__(self, executor: DaskExecutor) -> None:
        super().__init__()
        self.executor = executor
        self.killed: dict = {}
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self, total: int) -> None:
        super().start(total)
        pids = self.executor.client.run(os.getpid)
        self._watcher = threading.Thread(target=self._watch, args=(pids,), daemon=True)
        self._watcher.start()

    def _watch(self, pids: dict[str, int]) -> None:
        while not self._stop.is_set():
            for address, pid in pids.items():
                kernels = _kernels_under(pid)
                if len(kernels) >= 2:  # the zygote and a student's kernel
                    busy = self.executor.client.processing(workers=[address])[address]
                    # The zygote runs in <worker folder>/zygote: the killed worker's leftovers.
                    folder = str(Path(kernels[0].cwd()).parent)
                    os.kill(pid, signal.SIGKILL)
                    self.killed = {"address": address, "pid": pid, "busy": busy, "folder": folder}
                    return
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
        super().close()


def _kernels_under(pid: int) -> list[psutil.Process]:
    """The zygote and the kernels it forked under a worker process, zygote first."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if "autograder.kernel.server" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return sorted(found, key=lambda process: process.create_time())


@dataclass
class ClusterRun:
    course: Course
    results: dict[str, GradingResult] = field(default_factory=dict)
    progress: dict[str, Seen] = field(default_factory=dict)
    late: GradingResult | None = None
    killed: dict = field(default_factory=dict)


def _scheduler_address(path: Path, process: subprocess.Popen, log: Path) -> str:
    """The address the scheduler wrote to its file (which appears before it is written)."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if path.is_file():
            try:
                return json.loads(path.read_text())["address"]
            except ValueError:
                pass
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the dask scheduler did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler and two workers, started as an instructor would, on 127.0.0.1 only."""
    folder = tmp_path_factory.mktemp("dask-cluster")
    dask_command = str(Path(sys.executable).with_name("dask"))
    env = {
        **os.environ,
        "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": TIMEOUTS["distributed.comm.timeouts.connect"],
        "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": TIMEOUTS["distributed.comm.timeouts.tcp"],
    }
    scheduler_file = folder / "scheduler.json"
    processes = []
    logs = []

    def start(name: str, *arguments: str) -> subprocess.Popen:
        log = folder / f"{name}.log"
        logs.append(log)
        with log.open("w") as handle:
            process = subprocess.Popen(
                [dask_command, *arguments],
                stdout=handle,
                stderr=subprocess.STDOUT,
                cwd=folder,
                env=env,
            )
        processes.append(process)
        return process

    try:
        scheduler = start(
            "scheduler",
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
            # If this test run is killed before its teardown, the cluster ends by itself.
            "--idle-timeout",
            "900s",
        )
        address = _scheduler_address(scheduler_file, scheduler, logs[0])
        for number in (1, 2):
            start(
                f"worker-{number}",
                "worker",
                address,
                "--name",
                f"grader-{number}",
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
                "--death-timeout",
                "120s",
            )
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def cluster_graded(dask_cluster, tmp_path_factory) -> ClusterRun:
    """Every assignment's sample graded on the cluster, a worker killed during the first."""
    root = tmp_path_factory.mktemp("cluster-course")
    run = ClusterRun(Course.at(root / "course", release=root / "course" / "release"))
    config = dask.config.set(TIMEOUTS)
    executor = DaskExecutor(dask_cluster)
    try:
        executor.client.wait_for_workers(2, timeout=START_TIMEOUT)
        for assignment in ASSIGNMENTS:
            folder = root / f"incoming-{assignment}"
            for student in _sample(assignment):
                shutil.copytree(submissions_folder(assignment) / student, folder / student)
            progress = KillingProgress(executor) if assignment == KILLED_IN else Seen()
            run.progress[assignment] = progress
            run.results[assignment] = grade_class(
                run.course, assignment, folder, executor=executor, progress=progress
            )
            if assignment == KILLED_IN:
                run.killed = progress.killed
        # A late student joins the last assignment, graded alone on the cluster.
        late = root / "incoming-late"
        shutil.copytree(submissions_folder(ASSIGNMENTS[-1]) / "perfect", late / "late_perfect")
        run.progress["late"] = Seen()
        run.late = grade_class(
            run.course,
            ASSIGNMENTS[-1],
            late,
            executor=executor,
            only={"late_perfect"},
            progress=run.progress["late"],
        )
    finally:
        executor.close()
        config.__exit__(None, None, None)
        if run.killed.get("folder"):
            remove_tree(run.killed["folder"])  # what the killed worker could not remove
    return run


def _rows(result: GradingResult) -> dict[str, dict[str, str]]:
    """The rows of one grading run as its CSV had them (a later run rewrites the file)."""
    return {
        row["student_id"]: {column: str(csv_cell(value)) for column, value in row.items()}
        for row in result.rows
    }


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_sample_of_every_assignment_gets_its_expected_scores_on_the_cluster(
    cluster_graded, assignment
):
    rows = _rows(cluster_graded.results[assignment])
    expected = _expected(assignment)
    assert sorted(rows) == sorted(_sample(assignment))
    for student in _sample(assignment):
        want = expected[student]
        got = {column: rows[student][column] for column in want}
        assert got == want, f"{assignment}/{student}: {rows[student]['message']}"
        assert rows[student]["status"] == "ok"
        assert rows[student]["sandbox"] in ("on", "off")
    _, grading = load_status(cluster_graded.course, assignment)
    assert grading["executor"] == "dask"
    assert "Dask workers of tcp://127.0.0.1:" in grading["sandbox"]


@pytest.mark.slow
def test_a_worker_killed_mid_batch_costs_no_student_and_counts_none_twice(cluster_graded):
    killed = cluster_graded.killed
    assert killed, "no worker was seen grading a student"
    assert killed["busy"], "the killed worker had no batch in hand"
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)  # it is gone
    students = _sample(KILLED_IN)
    rows = _rows(cluster_graded.results[KILLED_IN])
    expected = _expected(KILLED_IN)
    for student in students:
        assert {column: rows[student][column] for column in expected[student]} == expected[student]
    # Each student reported once, recorded once, with one submission in the gradebook.
    events = cluster_graded.progress[KILLED_IN].events
    assert Counter(event[0] for event in events[1:-1]) == Counter(students)
    assert events[0] == ("start", len(students)) and events[-1] == ("close",)
    with Gradebook(cluster_graded.course.gradebook_url()) as gradebook:
        submitted = [s.student.id for s in gradebook.find_assignment(KILLED_IN).submissions]
    assert sorted(submitted) == sorted(students)


@pytest.mark.slow
def test_a_late_student_is_graded_alone_on_the_cluster_and_joins_the_class(cluster_graded):
    assert cluster_graded.progress["late"].events == [
        ("start", 1),
        ("late_perfect", "ok"),
        ("close",),
    ]
    rows = _rows(cluster_graded.late)
    assert set(rows) == {*_sample(ASSIGNMENTS[-1]), "late_perfect"}
    assert rows["late_perfect"]["score"] == rows["perfect"]["score"]


@pytest.mark.slow
def test_recording_a_result_twice_leaves_one_submission_with_the_same_grades(cluster_graded):
    course, assignment = cluster_graded.course, ASSIGNMENTS[-1]
    graded = course.autograded_notebook("perfect", assignment).read_bytes()
    before = _rows(cluster_graded.results[assignment])["perfect"]["score"]
    with Recorder(course, assignment) as recorder:
        for _ in range(2):
            submission = recorder.record(GradedNotebook(Submission("perfect", OK), graded))
            assert submission.graded and submission.status == OK
    with Gradebook(course.gradebook_url()) as gradebook:
        perfect = [
            s
            for s in gradebook.find_assignment(assignment).submissions
            if s.student.id == "perfect"
        ]
        assert len(perfect) == 1
        assert f"{perfect[0].score:g}" == before


@pytest.mark.slow
def test_a_worker_grades_from_the_reference_a_gradebook_of_its_own(cluster_graded, tmp_path):
    # What workers get of the assignment gives their scratch gradebook the real cells.
    course, assignment = cluster_graded.course, ASSIGNMENTS[0]
    reference = read_reference(course, assignment)
    scratch = scratch_course(reference, tmp_path / "scratch")

    def cells(url: str) -> list[tuple]:
        with Gradebook(url) as gradebook:
            notebook = gradebook.find_notebook(assignment, assignment)
            return sorted(
                (cell.name, cell.cell_type, cell.locked, cell.source, cell.checksum)
                for cell in notebook.source_cells
            ) + sorted((cell.name, cell.max_score) for cell in notebook.grade_cells)

    assert cells(scratch.gradebook_url()) == cells(course.gradebook_url())
    with Gradebook(scratch.gradebook_url()) as gradebook:
        assert gradebook.students == []  # no student's data leaves the real gradebook


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_scheduler_stops_grade_before_anything_is_collected(
    tmp_path, capsys, monkeypatch
):
    from autograder.pipeline import executors

    # Nothing listens on the port: the connection is refused at once, and Dask retries
    # until its timeout; the command's 10 s are not what is tested.
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", 2)
    course = tmp_path / "course"
    incoming = tmp_path / "incoming"
    shutil.copytree(submissions_folder(KILLED_IN) / "perfect", incoming / "perfect")
    address = f"tcp://127.0.0.1:{_closed_port()}"
    argv = ["grade", KILLED_IN, str(incoming), "--course", str(course), "--executor", "dask"]
    status = cli.main([*argv, "--scheduler", address])
    assert status == 1
    error = capsys.readouterr().err
    assert f"error: cannot reach the Dask scheduler at {address}" in error
    assert not (course / "submitted").exists()


def test_a_worker_without_the_sandbox_refuses_to_grade_and_says_why(monkeypatch):
    monkeypatch.setattr("autograder.sandbox.bwrap.shutil.which", lambda name: None)
    with pytest.raises(SandboxError, match=r"refuses to grade.*bubblewrap is not installed"):
        GradingWorker(WorkerSettings(Limits(), sandbox=True, require_sandbox=True))
    # Turned off on purpose, or on this machine (the local pool says so in the report).
    for settings in (
        WorkerSettings(Limits(), sandbox=False, require_sandbox=True),
        WorkerSettings(Limits(), sandbox=True, require_sandbox=False),
    ):
        worker = GradingWorker(settings)
        assert not worker.sandbox.enabled
        worker.close()


def test_students_are_sent_in_batches_of_the_batch_size():
    students = list(range(2 * BATCH_SIZE + 1))
    split = batches(students, BATCH_SIZE)
    assert [len(batch) for batch in split] == [BATCH_SIZE, BATCH_SIZE, 1]
    assert [student for batch in split for student in batch] == students
    assert batches([], BATCH_SIZE) == []


@pytest.mark.slow
def test_a_workers_task_names_no_path_of_the_course(cluster_graded):
    # Workers need no shared file system: what they get is bytes, never where the course is.
    course, assignment = cluster_graded.course, ASSIGNMENTS[0]
    reference = read_reference(course, assignment)
    student = student_notebook(course, assignment, Submission("perfect", OK))
    task = pickle.dumps((reference, [student], WorkerSettings(Limits())))
    assert str(course.root).encode() not in task
    assert student.notebook in task


@pytest.mark.slow
def test_feedback_rendered_on_a_worker_is_what_this_process_renders(cluster_graded):
    course, assignment = cluster_graded.course, ASSIGNMENTS[0]
    html = course.feedback / "perfect" / assignment / f"{assignment}.html"
    from_worker = html.read_bytes()
    with Recorder(course, assignment) as recorder:
        recorder.feedback(Submission("perfect", OK, graded=True))
    assert html.read_bytes() == from_worker
