"""The course's grading service: start-up paid once for a run of grading commands.

The first ``grade``/``autograde`` with ``--keep-warm`` starts the service and grades
through it; the next command finds it warm and uses the same processes and zygotes, with
the same grades as a command that starts its own. The service never holds the course's
lock (the command does), ends when idle, when other settings are asked for, and when the
command using it is stopped (``tests/test_interrupts.py`` stops one with Ctrl-C).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from autograder.course import REPO, Course
from autograder.pipeline import service
from autograder.sandbox.limits import Limits
from tests.support.small_class import copy_small_class, expected_scores

ASSIGNMENT = "01a_leaf_tensors"
WAIT = 600  # generous seconds on a loaded machine (each wait ends as soon as it can)


def _command(course: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", *arguments, "--course", str(course)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def _service_pid(course: Path) -> int | None:
    try:
        return json.loads((course / service.FOLDER / "service.json").read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def _scores(course: Path) -> dict[str, str]:
    with (course / "exports" / f"{ASSIGNMENT}_grades.csv").open() as handle:
        return {row["student_id"]: row["score"] for row in csv.DictReader(handle)}


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def small_class(tmp_path: Path):
    submissions = tmp_path / "submissions"
    students = copy_small_class(submissions, ASSIGNMENT, 3)
    course = tmp_path / "course"
    yield course, submissions, students
    service.stop_service(Course.at(course))


@pytest.mark.slow
def test_the_next_command_grades_through_the_warm_service_until_it_is_replaced_or_idle(
    small_class,
):
    course, submissions, students = small_class
    expected = {student: expected_scores(ASSIGNMENT)[student]["score"] for student in students}
    first = _command(course, "grade", ASSIGNMENT, str(submissions), "--keep-warm", "120")
    assert first.returncode == 0, first.stderr[-3000:]
    pid = _service_pid(course)
    assert pid is not None and psutil.pid_exists(pid), "the first command started no service"
    zygotes = [
        child
        for child in psutil.Process(pid).children(recursive=True)
        if "autograder.kernel.server" in " ".join(child.cmdline())
    ]
    assert zygotes, "the warm service has no zygote"
    assert _scores(course) == expected

    # Another command on the same course: the same service, the same zygotes, no lock held.
    exported = _command(course, "export", ASSIGNMENT)
    assert exported.returncode == 0, exported.stderr  # the service holds no course lock
    again = _command(course, "autograde", ASSIGNMENT, "--regrade", "--keep-warm", "120")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _service_pid(course) == pid
    assert all(zygote.is_running() for zygote in zygotes), "the zygotes were started again"
    assert _command(course, "export", ASSIGNMENT).returncode == 0
    assert _scores(course) == expected

    # Another cell limit: the warm service cannot grade it, so it is replaced.
    other = _command(
        course, "autograde", ASSIGNMENT, "--regrade", "--cell-timeout", "60", "--keep-warm", "5"
    )
    assert other.returncode == 0, other.stderr[-3000:]
    replaced = _service_pid(course)
    assert replaced not in (None, pid) and _gone(pid, 30)
    assert not any(zygote.is_running() for zygote in zygotes)
    # Five seconds without a command: it ends by itself, and says so in its log.
    assert _gone(replaced, 60), "the idle service did not end"
    assert "idle for 5 s" in (course / service.FOLDER / "service.log").read_text()
    assert _service_pid(course) is None


def test_a_service_answers_only_for_the_settings_and_code_it_started_with(monkeypatch):
    key = service.service_key(2, Limits(torch_threads=1), True)
    assert key == service.service_key(2, Limits(torch_threads=1), True)
    assert key != service.service_key(1, Limits(torch_threads=1), True)
    assert key != service.service_key(2, Limits(torch_threads=1, cell_timeout=5), True)
    assert key != service.service_key(2, Limits(torch_threads=1), False)
    monkeypatch.setattr(service, "code_digest", lambda: "the code changed")
    assert key != service.service_key(2, Limits(torch_threads=1), True)


def test_keep_warm_defaults_to_the_variable(monkeypatch):
    monkeypatch.setenv(service.KEEP_WARM_VARIABLE, "0")
    assert service.keep_warm_default() == 0
    monkeypatch.delenv(service.KEEP_WARM_VARIABLE)
    assert service.keep_warm_default() == service.KEEP_WARM
    assert os.environ.get(service.KEEP_WARM_VARIABLE) is None


def test_a_warm_worker_grades_an_assignment_again_after_another(built_course, monkeypatch):
    """A late submission of 01a after 01b, in the same warm service: 01a's scratch course
    is laid out afresh (it used to fail: its folder from the first time was still there)."""
    from autograder.pipeline import worker as worker_module
    from autograder.pipeline.autograde import Grader
    from autograder.pipeline.payloads import WorkerSettings
    from autograder.pipeline.reference import read_reference, scratch_course
    from autograder.sandbox.bwrap import course_sandbox

    failures = []  # assignments whose next start fails (a zygote that cannot preload)

    class LayoutOnly(Grader):  # the scratch course, without a zygote or kernels
        def start(self) -> None:
            self.course = scratch_course(self.reference, self._folder)
            if self.assignment in failures:
                failures.remove(self.assignment)
                raise RuntimeError("could not start")

    monkeypatch.setattr(worker_module, "Grader", LayoutOnly)
    sandbox = course_sandbox(built_course, enabled=False)
    worker = worker_module.GradingWorker(WorkerSettings(Limits()), sandbox, kernels=object())
    first, other = (read_reference(built_course, a) for a in (ASSIGNMENT, "01b_leaf_tensors"))
    try:
        for reference in (first, other, first):
            grader = worker.grader_for(reference)
            assert grader.course is not None and grader.course.release.is_dir()
        # Only the current assignment's scratch course is kept.
        assert sorted(path.name for path in worker.folder.iterdir()) == [first.digest]
        # A grader that fails to start is not kept (its students used to get "start()
        # first" one after the other): nothing of it stays, and the next batch starts anew.
        failures.append("01b_leaf_tensors")
        with pytest.raises(RuntimeError, match="could not start"):
            worker.grader_for(other)
        assert worker.grader is None and not any(worker.folder.iterdir())
        grader = worker.grader_for(other)
        assert grader.course is not None and grader.course.release.is_dir()
        assert sorted(path.name for path in worker.folder.iterdir()) == [other.digest]
    finally:
        worker.grader = None
        worker.close()


def test_a_grading_command_reaches_the_service_without_importing_nbgrader():
    """Everything a command runs before it sends its students imports no nbgrader (half a
    second of a core): the command line, the run, the data sent, the service's client."""
    modules = [
        "autograder.cli",
        "autograder.pipeline.run",
        "autograder.pipeline.parallel",
        "autograder.pipeline.payloads",
        "autograder.pipeline.reference",
        "autograder.pipeline.service",
        "autograder.pipeline.preload",
        "autograder.sandbox.bwrap",
    ]
    code = (
        f"import importlib, sys\nfor name in {modules!r}: importlib.import_module(name)\n"
        "from autograder.cli import parser\nparser()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'nbgrader', 'nbconvert'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
