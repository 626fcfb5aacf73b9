"""One writer per course: a second command refuses at once, or waits, or takes over a dead lock."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import REPO
from autograder.lock import LOCK_NAME, database_lock_file
from tests.support.small_class import full_marks

ASSIGNMENT = "01a_leaf_tensors"
WAIT = 600  # generous seconds on a loaded machine; every wait ends as soon as it can

# Holds a course's lock as a command does, until killed.
_HOLDER = """
import sys, time
from pathlib import Path
from autograder.course import Course
from autograder.lock import course_lock

with course_lock(Course.at(Path(sys.argv[1]), db_url=sys.argv[2] or None)):
    print("held", flush=True)
    time.sleep(600)
"""


# A student's cell that holds its kernel until the test releases it (a file in its working
# folder, which is the sandbox's own: the test reaches it through the kernel's /proc entry).
_HELD = """
import os, time
open("held-by-the-test", "w").close()
deadline = time.monotonic() + 60
while not os.path.exists("released-by-the-test") and time.monotonic() < deadline:
    time.sleep(0.1)
"""


def _release_held_students() -> int:
    """Releases every kernel that runs :data:`_HELD`; returns how many there were."""
    released = 0
    for entry in os.listdir("/proc"):
        folder = Path(f"/proc/{entry}/cwd")
        with contextlib.suppress(OSError):
            if entry.isdigit() and (folder / "held-by-the-test").exists():
                (folder / "released-by-the-test").touch()
                released += 1
    return released


def _command(*arguments: str, **options) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autograder", *arguments],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def _holder(course: Path, db_url: str = "") -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(course), db_url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def _submissions(folder: Path, student: str = "perfect") -> Path:
    shutil.copytree(submissions_folder(ASSIGNMENT) / student, folder / student)
    return folder


def _holder_pid(course: Path) -> int | None:
    try:
        return json.loads((course / LOCK_NAME).read_text()).get("pid")
    except (OSError, ValueError):
        return None


@pytest.mark.slow
def test_a_second_command_on_a_course_being_graded_refuses_at_once_or_waits(tmp_path):
    course = tmp_path / "course"
    # A student whose notebook waits until the test releases it (60 s at most): the first
    # command is still grading meanwhile.
    slow = nbformat.read(submissions_folder(ASSIGNMENT) / "perfect" / f"{ASSIGNMENT}.ipynb", 4)
    slow.cells.insert(0, v4.new_code_cell(_HELD))
    (tmp_path / "incoming" / "slow").mkdir(parents=True)
    nbformat.write(slow, tmp_path / "incoming" / "slow" / f"{ASSIGNMENT}.ipynb")
    first = _command("grade", ASSIGNMENT, str(tmp_path / "incoming"), "--course", str(course))
    deadline = time.monotonic() + WAIT
    while _holder_pid(course) != first.pid and time.monotonic() < deadline:
        assert first.poll() is None, first.communicate()
        time.sleep(0.1)
    while not (course / "submitted" / "slow").is_dir() and time.monotonic() < deadline:
        time.sleep(0.1)  # collected: grading has begun

    # Another grade of the same course, as an instructor might start in a second terminal.
    second = _command("grade", ASSIGNMENT, str(tmp_path / "incoming"), "--course", str(course))
    _, error = second.communicate(timeout=WAIT)
    assert second.returncode == 1
    assert first.poll() is None, "the first command ended before the second was refused"
    assert re.fullmatch(
        rf"error: the course {re.escape(str(course))} is being written by pid {first.pid}, "
        r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S* \(`python -m autograder grade [^`]+`\): "
        r"wait until it ends, or add --wait to start when it does\n",
        error,
    ), error
    assert not (course / "exports" / f"{ASSIGNMENT}_grades.csv").exists()

    waiting = _command("export", ASSIGNMENT, "--course", str(course), "--wait")
    said = ""
    while "waiting for pid" not in said and waiting.poll() is None:
        said += waiting.stderr.readline()  # once it waits, the slow student may end
    assert first.poll() is None, "the first command ended before the export waited"
    # The slow student's kernel may still be starting (a loaded machine): wait for it.
    while not _release_held_students() and time.monotonic() < deadline:
        assert first.poll() is None, "the first command ended before its slow student ran"
        time.sleep(0.1)
    assert time.monotonic() < deadline, "the slow student never ran"
    out, error = waiting.communicate(timeout=WAIT)
    error = said + error
    assert first.wait(timeout=WAIT) == 0
    assert waiting.returncode == 0, error
    assert f"waiting for pid {first.pid}" in error
    full = f"{full_marks(ASSIGNMENT):g}"
    assert re.search(rf"^slow\s+{full}/{full}\s+ok$", out, re.M), (
        out
    )  # after the first one's grades


def test_the_lock_of_a_dead_command_is_taken_over_and_it_says_so(tmp_path):
    course = tmp_path / "course"
    holder = _holder(course)
    os.kill(holder.pid, signal.SIGKILL)  # dies holding it: its record stays
    holder.wait()
    collect = _command(
        "collect", ASSIGNMENT, str(_submissions(tmp_path / "incoming")), "--course", str(course)
    )
    out, error = collect.communicate(timeout=WAIT)
    assert collect.returncode == 0, error
    assert f"note: took over the lock of the course {course} from pid {holder.pid}" in error
    assert "which is no longer running" in error
    assert "perfect  ok" in out
    assert (course / LOCK_NAME).read_text() == ""  # released cleanly


def test_two_courses_sharing_one_gradebook_database_have_one_writer(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'shared' / 'gradebook.db'}"
    holder = _holder(tmp_path / "course-a", db_url)
    try:
        collect = _command(
            "collect",
            ASSIGNMENT,
            str(_submissions(tmp_path / "incoming")),
            "--course",
            str(tmp_path / "course-b"),
            "--db-url",
            db_url,
        )
        _, error = collect.communicate(timeout=WAIT)
        assert collect.returncode == 1
        assert f"error: the gradebook {db_url} is being written by pid {holder.pid}" in error
        assert not (tmp_path / "course-b" / "submitted").exists()
    finally:
        holder.kill()
        holder.wait()
        database_lock_file(db_url).unlink(missing_ok=True)
