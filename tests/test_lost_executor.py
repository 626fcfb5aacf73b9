"""A lost scheduler or a broken pool stops grading with a clear error and a CSV, not a hang.

A real ``dask scheduler`` and one ``dask worker`` (127.0.0.1 only) grade a small class of
01 through ``--executor dask --lost-after 5``; once a student is recorded, the scheduler is
killed with SIGKILL. Locally, one process of a ``--jobs 2`` pool is killed. Either way the
command must end with one line saying what was lost, keep the students it recorded with
their exact grades, and write the CSV and the report with the others ``interrupted``.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from autograder.course import REPO
from tests.support.small_class import copy_small_class, expected_scores, status_entries

ASSIGNMENT = "01a_leaf_tensors"
WAIT = 600  # generous seconds on a loaded machine; every wait ends as soon as it can
LOST_AFTER = 5
# Dask's defaults are short for a machine that other test runs share (see test_cluster).
DASK_ENV = {
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "120s",
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": "300s",
}


def _wait_for_a_recorded_student(process: subprocess.Popen, course: Path, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not any(entry["graded"] for entry in status_entries(course, ASSIGNMENT).values()):
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "no student was recorded"
        time.sleep(0.1)


def _check_class(course: Path, students: list[str], why: str) -> None:
    """Recorded students have their exact grade; the others are interrupted, with ``why``."""
    expected = expected_scores(ASSIGNMENT)
    with (course / "exports" / f"{ASSIGNMENT}_grades.csv").open() as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(students)
    recorded = status_entries(course, ASSIGNMENT)
    stopped = [student for student in students if not recorded[student]["graded"]]
    assert stopped and len(stopped) < len(students), recorded
    for student in students:
        if student in stopped:
            assert rows[student]["status"] == "interrupted", rows[student]
            assert why in rows[student]["message"]
        else:
            assert rows[student]["score"] == expected[student]["score"]
            assert rows[student]["status"] == "ok"
    report = (course / "exports" / f"{ASSIGNMENT}_report.md").read_text()
    assert f"| interrupted | {len(stopped)} |" in report


def _grade(arguments: list[str], log: Path, env: dict) -> subprocess.Popen:
    with log.open("w") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, *arguments],
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_a_killed_scheduler_stops_grade_with_what_was_graded_kept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lost")  # short: the worker's kernel sockets are below
    env = {**os.environ, **DASK_ENV, "TMPDIR": str(folder)}
    dask = str(Path(sys.executable).with_name("dask"))
    processes = []
    try:
        with (folder / "scheduler.log").open("w") as log:
            scheduler = subprocess.Popen(
                [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                 "--scheduler-file", str(folder / "scheduler.json")],
                cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        processes.append(scheduler)
        deadline = time.monotonic() + WAIT
        while not (folder / "scheduler.json").is_file():
            assert scheduler.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(0.5)  # written whole
        address = json.loads((folder / "scheduler.json").read_text())["address"]
        with (folder / "worker.log").open("w") as log:
            processes.append(
                subprocess.Popen(
                    [dask, "worker", address, "--nthreads", "1", "--nworkers", "1",
                     "--host", "127.0.0.1", "--no-dashboard", "--death-timeout", "60s"],
                    cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )  # fmt: skip
        students = copy_small_class(folder / "incoming", ASSIGNMENT, 4)
        course, log = folder / "course", folder / "grade.log"
        grade = _grade(
            [str(folder / "incoming"), "--course", str(course), "--executor", "dask",
             "--scheduler", address, "--batch-size", "1", "--lost-after", str(LOST_AFTER)],
            log, env,
        )  # fmt: skip
        processes.append(grade)
        _wait_for_a_recorded_student(grade, course, log)
        scheduler.kill()
        assert grade.wait(timeout=WAIT) == 1, log.read_text()[-3000:]
        last = log.read_text().strip().splitlines()[-1]
        assert last.startswith(
            f"error: lost the Dask scheduler at {address} for {LOST_AFTER} s (--lost-after): "
            "grading stopped; the students graded so far are recorded"
        ), log.read_text()[-3000:]
        _check_class(course, students, "lost the Dask scheduler")
    finally:
        for process in reversed(processes):
            _stop(process)


def _pool_processes(command: subprocess.Popen) -> list[psutil.Process]:
    """The grading processes of a local pool: the children of the command's forkserver."""
    found = []
    for process in psutil.Process(command.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if "forkserver" in " ".join(process.cmdline()):
                found += process.children()
    return found


@pytest.mark.slow
def test_a_killed_grading_process_stops_grade_with_what_was_graded_kept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("broken")
    students = copy_small_class(folder / "incoming", ASSIGNMENT, 6)
    course, log = folder / "course", folder / "grade.log"
    (folder / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(folder / "tmp")}
    grade = _grade([str(folder / "incoming"), "--course", str(course), "--jobs", "2"], log, env)
    try:
        _wait_for_a_recorded_student(grade, course, log)
        pool = _pool_processes(grade)
        assert len(pool) == 2, pool
        pool[0].kill()
        assert grade.wait(timeout=WAIT) == 1, log.read_text()[-3000:]
        last = log.read_text().strip().splitlines()[-1]
        assert last.startswith("error: a grading process failed: "), log.read_text()[-3000:]
        _check_class(course, students, "grading stopped: ZygoteError: a grading process failed")
    finally:
        _stop(grade)
