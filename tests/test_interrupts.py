"""Ctrl-C and SIGTERM stop a grading command cleanly, and running it again finishes the class.

Each case runs ``python -m autograder grade`` on four students of 01 in a process group of
its own (as a terminal runs a command), waits until one student is recorded, and then
sends the signal: to the whole group (what Ctrl-C in a terminal does) or to the command
alone (what ``kill`` does). The command must end with the status a shell expects and one
line that says how to go on, keep every student it recorded with their exact grade, mark
the others ``interrupted`` in the status file, the CSV and the report, and leave no
process or temporary folder behind. The same command run again grades only those.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from autograder import interrupts
from autograder.course import REPO, Course
from autograder.pipeline.service import stop_service
from tests.support.small_class import copy_small_class, expected_scores, status_entries

ASSIGNMENT = "01a_leaf_tensors"
# Students recorded before the signal is sent: with two grading at a time, at least one of
# the four has not started then, so every case stops some.
SIGNAL_AFTER = 1
CLASS_SIZE = 4
WAIT = 600  # generous seconds for anything to happen on a loaded machine (ends early)


def _grade(course: Path, submissions: Path, tmp: Path, options: list[str], log: Path):
    command = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, str(submissions)]
    command += ["--course", str(course), *options]
    with log.open("w") as output:
        return subprocess.Popen(
            command,
            cwd=REPO,
            env={**os.environ, "TMPDIR": str(tmp)},
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own, as a terminal gives
        )


def _descendants(process: subprocess.Popen, seen: dict[int, psutil.Process]) -> None:
    try:
        for child in psutil.Process(process.pid).children(recursive=True):
            seen.setdefault(child.pid, child)
    except psutil.NoSuchProcess:
        pass


def _left_running(seen: dict[int, psutil.Process]) -> list[str]:
    """The processes of ``seen`` still running after a generous wait (ends when none is)."""
    deadline = time.monotonic() + 60
    while True:
        alive = []
        for process in seen.values():
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{process.pid} {' '.join(process.cmdline())[:100]}")
            except psutil.NoSuchProcess:
                continue
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def _rows(course: Path) -> dict[str, dict[str, str]]:
    with (course / "exports" / f"{ASSIGNMENT}_grades.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


# The four ways a grading command meets a signal that differ in what receives it: the
# warm service's command (its processes in a session of their own), the command that
# grades in its own process, and a Dask cluster's command with its workers (Ctrl-C reaches
# them too) or without. (A group SIGTERM to `--jobs 2 --keep-warm 0`, whose grading
# processes get the signal themselves, was a fifth case until make test ran past 15
# minutes: Ctrl-C to the Dask command covers grading processes that get the signal.)
CASES = {
    # Through the course's grading service, which the command started (the default outside
    # the tests): it is in a session of its own (Ctrl-C does not reach it), and ends when
    # the command is stopped.
    "ctrl-c-jobs-2": (signal.SIGINT, "group", ["--jobs", "2", "--keep-warm", "60"]),
    "sigterm-jobs-1": (signal.SIGTERM, "command", ["--jobs", "1"]),
    "ctrl-c-dask": (signal.SIGINT, "group", ["--executor", "dask", "--jobs", "2"]),
    "sigterm-dask": (signal.SIGTERM, "command", ["--executor", "dask", "--jobs", "2"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_signal_stops_grading_keeps_what_was_graded_and_a_rerun_finishes(tmp_path_factory, case):
    signum, target, options = CASES[case]
    # A short name: a Dask worker's kernels have their sockets four folders below it.
    tmp_path = tmp_path_factory.mktemp("signal")
    submissions, course, tmp = tmp_path / "submissions", tmp_path / "course", tmp_path / "tmp"
    tmp.mkdir()
    students = copy_small_class(submissions, ASSIGNMENT, CLASS_SIZE)
    expected = expected_scores(ASSIGNMENT)

    process = _grade(course, submissions, tmp, options, tmp_path / "first.log")
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and process.poll() is None:
        _descendants(process, seen)
        entries = status_entries(course, ASSIGNMENT).values()
        if sum(entry["graded"] or entry["status"] != "ok" for entry in entries) >= SIGNAL_AFTER:
            break
        time.sleep(0.1)
    assert process.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
    _descendants(process, seen)
    if target == "group":
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    status = process.wait(timeout=WAIT)
    output = (tmp_path / "first.log").read_text()

    assert status == 128 + signum, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith(f"error: interrupted by {signal.Signals(signum).name}: "), output
    assert "run the same command again" in last
    assert "Traceback" not in output, output[-3000:]
    assert _left_running(seen) == [], "processes left behind"
    assert sorted(os.listdir(tmp)) == [], "temporary files left behind"

    recorded = status_entries(course, ASSIGNMENT)
    graded = {student for student, entry in recorded.items() if entry["graded"]}
    stopped = {student for student, entry in recorded.items() if entry["status"] == "interrupted"}
    assert len(graded) >= SIGNAL_AFTER and stopped, recorded
    assert graded | stopped == set(students) and not graded & stopped
    rows = _rows(course)
    assert set(rows) == set(students)
    for student in graded:
        assert rows[student]["score"] == expected[student]["score"], rows[student]
        assert rows[student]["status"] == "ok"
    for student in stopped:
        assert rows[student]["status"] == "interrupted" and rows[student]["score"] == "0"
        assert "run the command again" in rows[student]["message"]
    report = (course / "exports" / f"{ASSIGNMENT}_report.md").read_text()
    assert f"| interrupted | {len(stopped)} |" in report
    first_graded = {
        student: (course / "autograded" / student / ASSIGNMENT).stat().st_mtime_ns
        for student in graded
    }

    again = _grade(course, submissions, tmp, options, tmp_path / "again.log")
    assert again.wait(timeout=WAIT) == 0, (tmp_path / "again.log").read_text()[-3000:]
    stop_service(Course.at(course))  # the second run's, when it started one
    rows = _rows(course)
    for student in students:
        got = {column: rows[student][column] for column in expected[student]}
        assert got == expected[student], rows[student]
        assert rows[student]["status"] == "ok"
    for student, mtime in first_graded.items():  # graded once: not again
        assert (course / "autograded" / student / ASSIGNMENT).stat().st_mtime_ns == mtime


def test_a_critical_block_defers_the_signal_to_its_end(monkeypatch):
    monkeypatch.setattr(interrupts, "_received", None)
    monkeypatch.setattr(interrupts, "_raised", False)
    done = []
    # Whatever the test run had (ignored, in a job started in the background by a shell).
    before = signal.getsignal(signal.SIGINT)
    with interrupts.stopping_on_signals():
        with pytest.raises(interrupts.Interrupted) as stopped, interrupts.critical():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)  # the handler runs here, and must not raise
            done.append("the block ran to its end")
        assert done and stopped.value.exit_status == 143
        os.kill(os.getpid(), signal.SIGINT)  # a second signal is noted, not raised
        interrupts.check()
    assert signal.getsignal(signal.SIGINT) is before  # put back as it was


def test_stop_callbacks_run_at_the_signal_even_inside_a_deferring_block():
    ran = []
    with interrupts.stopping_on_signals():
        interrupts.on_stop(lambda: ran.append("stopped"))
        with interrupts.deferring():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
            assert ran == ["stopped"] and interrupts.received() == signal.SIGINT
        with pytest.raises(interrupts.Interrupted) as stopped:
            interrupts.check()
    assert stopped.value.exit_status == 130
