"""A student's memory is capped as a whole: forked children and shared memory count too.

With ``--memory-mb 1024`` each process of a kernel may map 1 GB (RLIMIT_AS), so eight
forked children writing 256 MiB each, or sixteen System V segments of 128 MiB written
and detached, used to pass; the zygote's watch (``autograder/kernel/watch.py``) adds up
all of the student's processes and shared memory and stops them at the cap (status
``memory``). A student's shared memory is also removed with them: the next student of the
same zygote finds none.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat import v4

from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import Course
from autograder.pipeline.run import grade_class
from autograder.sandbox.bwrap import course_sandbox
from autograder.sandbox.limits import Limits
from autograder.submission import MEMORY, OK
from tests.support.small_class import full_marks

ASSIGNMENT = "01a_leaf_tensors"

FORKS_PAST_THE_CAP = """
import os, time
for _ in range(8):
    if os.fork() == 0:
        block = bytearray(256 * 2**20)  # 256 MiB, written below
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(60)
        os._exit(0)
time.sleep(30)
print("the children were not stopped")
"""
# System V shared memory through libc: shmget(IPC_PRIVATE, size, IPC_CREAT | 0600).
_SEGMENTS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range({count}):
    ident = libc.shmget(0, {mib} * 2**20, 0o1000 | 0o600)
    address = libc.shmat(ident, None, 0)
    ctypes.memset(address, 1, {mib} * 2**20)
    libc.shmdt(ctypes.c_void_p(address))  # detached: in no process's memory
"""
SHARED_MEMORY_PAST_THE_CAP = _SEGMENTS.format(count=16, mib=128) + (
    "import time\ntime.sleep(30)\nprint('the segments were not stopped')\n"
)
LEAVES_SHARED_MEMORY = _SEGMENTS.format(count=2, mib=64) + "print('left 2 segments')\n"
COUNTS_SHARED_MEMORY = (
    "print('segments here:', len(open('/proc/sysvipc/shm').read().splitlines()) - 1)\n"
)
# Graded in this order by one zygote: a_... leaves segments, b_... looks for them.
STUDENTS = {
    "a_leaves_shared_memory": LEAVES_SHARED_MEMORY,
    "b_counts_shared_memory": COUNTS_SHARED_MEMORY,
    "forks_past_the_cap": FORKS_PAST_THE_CAP,
    "shared_memory_past_the_cap": SHARED_MEMORY_PAST_THE_CAP,
}


@pytest.mark.slow
def test_forked_children_and_shared_memory_count_against_the_cap(tmp_path):
    course = Course.at(tmp_path / "course", release=tmp_path / "course" / "release")
    sandbox = course_sandbox(course)
    if not (sandbox.enabled or sandbox.separate_uids):
        pytest.skip("without bubblewrap or a uid per student, shared memory is not the student's")
    perfect = nbformat.read(submissions_folder(ASSIGNMENT) / "perfect" / f"{ASSIGNMENT}.ipynb", 4)
    for student, code in STUDENTS.items():
        notebook = nbformat.reads(nbformat.writes(perfect), 4)
        notebook.cells.insert(1, v4.new_code_cell(code))
        (tmp_path / "incoming" / student).mkdir(parents=True)
        nbformat.write(notebook, tmp_path / "incoming" / student / f"{ASSIGNMENT}.ipynb")
    limits = Limits(memory_mb=1024, cell_timeout=120)
    result = grade_class(course, ASSIGNMENT, tmp_path / "incoming", jobs=1, limits=limits)
    rows = {row["student_id"]: row for row in result.rows}

    for student, held in [
        ("forks_past_the_cap", "processes held"),
        ("shared_memory_past_the_cap", "shared memory segments"),
    ]:
        assert rows[student]["status"] == MEMORY, rows[student]
        message = rows[student]["message"]
        assert "more than the 1,024 MB it may use: stopped in cell 2" in message
        assert held in message
    for student in ("a_leaves_shared_memory", "b_counts_shared_memory"):
        want = (OK, full_marks(ASSIGNMENT))
        assert (rows[student]["status"], rows[student]["score"]) == want, rows[student]
    graded = course.autograded_notebook("b_counts_shared_memory", ASSIGNMENT)
    outputs = json.loads(graded.read_text())["cells"][1]["outputs"]
    assert outputs[0]["text"] == ["segments here: 0\n"], outputs
