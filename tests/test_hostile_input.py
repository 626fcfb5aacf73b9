"""Submissions and student code that try to hurt the host or other students, before grading.

Collecting never follows a symbolic link, refuses zip bombs and ids nbgrader would glob,
escapes spreadsheet formulas in the CSV, removes trees of any depth, and two grading runs
on one machine never share a student uid (and one run's process hog leaves the other's
student at the same slot its full grade).
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder.course import Course
from autograder.errors import SandboxError
from autograder.kernel.fs import remove_tree
from autograder.pipeline import collect as collect_module
from autograder.pipeline.collect import collect, student_id_problem
from autograder.pipeline.export import csv_cell, write_csv
from autograder.sandbox import bwrap as sandbox
from autograder.submission import MISSING, OK, UNREADABLE
from tests.support.small_class import full_marks

ASSIGNMENT = "01a_leaf_tensors"


def _notebook(path: Path, marker: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(v4.new_notebook(cells=[v4.new_code_cell(f"# {marker}")]), path)
    return path


@pytest.fixture
def course(tmp_path) -> Course:
    return Course.at(tmp_path / "course", release=tmp_path / "course" / "release")


def _by_student(results) -> dict:
    return {result.student_id: result for result in results}


def _deep_tree(root: Path, depth: int) -> None:
    """Makes root/d/d/.../d, depth levels: deeper than a path may be written out."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("leftover", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    finally:
        os.close(fd)


def test_remove_tree_removes_a_tree_deeper_than_python_recursion(tmp_path):
    root = tmp_path / "student"
    _deep_tree(root, 3000)  # shutil.rmtree on Python 3.11 raises RecursionError here
    remove_tree(root)
    assert not root.exists()
    remove_tree(root)  # nothing there: no error


def test_collect_never_follows_symbolic_links(course, tmp_path):
    submissions = tmp_path / "submissions"
    honest = _notebook(submissions / "honest" / f"{ASSIGNMENT}.ipynb", "honest work")
    (submissions / "copycat").symlink_to(submissions / "honest")
    (submissions / "inside").mkdir()
    (submissions / "inside" / f"{ASSIGNMENT}.ipynb").symlink_to(honest)
    secret = _notebook(tmp_path / "build" / "source" / f"{ASSIGNMENT}.ipynb", "solutions")
    (submissions / "linked_file.ipynb").symlink_to(secret)
    results = _by_student(collect(course, ASSIGNMENT, submissions))
    assert results["honest"].status == OK
    for student in ("copycat", "linked_file"):
        assert results[student].status == MISSING
        assert "symbolic link" in results[student].message
    assert results["inside"].status == MISSING
    assert "symbolic links are not followed" in results["inside"].message
    submitted = course.root / "submitted"
    assert sorted(path.name for path in submitted.iterdir()) == ["honest"]


def test_collect_refuses_a_zip_that_expands_past_the_limit(course, tmp_path, monkeypatch):
    monkeypatch.setattr(collect_module, "MAX_UNZIPPED_BYTES", 10_000)
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    with zipfile.ZipFile(submissions / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{ASSIGNMENT}.ipynb", "0" * 50_000)  # compresses to ~100 bytes
    _notebook(submissions / "honest" / f"{ASSIGNMENT}.ipynb", "honest")
    results = _by_student(collect(course, ASSIGNMENT, submissions))
    assert results["bomb"].status == UNREADABLE
    assert "would expand to" in results["bomb"].message
    assert results["honest"].status == OK


def test_collect_refuses_a_notebook_past_the_size_limit(course, tmp_path, monkeypatch):
    monkeypatch.setattr(collect_module, "MAX_NOTEBOOK_BYTES", 1_000)
    submissions = tmp_path / "submissions"
    path = _notebook(submissions / "big" / f"{ASSIGNMENT}.ipynb", "x" * 5_000)
    assert path.stat().st_size > 1_000
    result = collect(course, ASSIGNMENT, submissions)[0]
    assert result.status == UNREADABLE and "more than the" in result.message


@pytest.mark.parametrize("student", ["*", "a[b]", "?", "=HYPERLINK(x)", "-rf", ".hidden2", "a b"])
def test_student_ids_that_nbgrader_would_glob_or_a_shell_misread_are_refused(student):
    assert student_id_problem(student)


@pytest.mark.parametrize("student", ["s12345", "jane.doe@uni.edu", "José_García", "a-b+c"])
def test_ordinary_student_ids_are_accepted(student):
    assert student_id_problem(student) == ""


def test_collect_reports_a_globbing_id_and_grades_the_rest(course, tmp_path):
    submissions = tmp_path / "submissions"
    _notebook(submissions / "*" / f"{ASSIGNMENT}.ipynb", "glob")
    _notebook(submissions / "honest" / f"{ASSIGNMENT}.ipynb", "honest")
    results = _by_student(collect(course, ASSIGNMENT, submissions))
    assert results["*"].status == UNREADABLE and "not a usable student id" in results["*"].message
    assert results["honest"].status == OK
    assert not (course.root / "submitted" / "*").exists()


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(tmp_path):
    assert csv_cell('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert csv_cell("+1") == "'+1" and csv_cell("@SUM(A1)") == "'@SUM(A1)"
    assert csv_cell("jane") == "jane" and csv_cell(3.0) == "3" and csv_cell(-2.5) == "-2.5"
    path = write_csv([{"student_id": "=1+1", "score": 2.0}], tmp_path / "grades.csv")
    with path.open() as handle:
        assert list(csv.DictReader(handle)) == [{"student_id": "'=1+1", "score": "2"}]


def test_uid_blocks_are_never_shared_between_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "UID_BLOCKS", 2)
    first, first_claim = sandbox.claim_uid_block(tmp_path)
    second, second_claim = sandbox.claim_uid_block(tmp_path)
    assert {first, second} == {0, 1}
    with pytest.raises(SandboxError, match="held by other runs"):
        sandbox.claim_uid_block(tmp_path)
    first_claim.close()  # that run ends: its block is free again
    again, again_claim = sandbox.claim_uid_block(tmp_path)
    assert again == first
    again_claim.close()
    second_claim.close()


def test_uid_block_claims_hold_across_processes(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setattr(sandbox, "UID_BLOCKS", 1)
    _, claim = sandbox.claim_uid_block(tmp_path)
    probe = (
        "import sys; from pathlib import Path; from autograder.sandbox import bwrap as sandbox; "
        "from autograder.errors import SandboxError\n"
        "sandbox.UID_BLOCKS = 1\n"
        "try:\n    sandbox.claim_uid_block(Path(sys.argv[1]))\n"
        "except SandboxError:\n    sys.exit(3)\n"
    )
    other_run = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], check=False)
    assert other_run.returncode == 3
    claim.close()
    assert subprocess.run([sys.executable, "-c", probe, str(tmp_path)]).returncode == 0


@pytest.mark.slow
def test_students_collected_but_never_graded_are_not_exported_as_ok(tmp_path):
    from autograder.authoring.build import build
    from autograder.pipeline.run import collect_class, export_class

    course = Course.at(tmp_path / "course", release=tmp_path / "course" / "release")
    build(course, [ASSIGNMENT])
    submissions = tmp_path / "submissions"
    _notebook(submissions / "honest" / f"{ASSIGNMENT}.ipynb", "honest")
    collect_class(course, ASSIGNMENT, submissions)
    rows, _ = export_class(course, ASSIGNMENT)  # autograde never ran (it crashed, say)
    assert [(row["student_id"], row["status"]) for row in rows] == [("honest", "error")]
    assert "not graded" in rows[0]["message"]


# Run A's student: fills its uid's process limit with children that sleep, and holds them
# until the test says run B is done (a file in its working folder), or 30 s at most; its
# children outlive it, for the grader to end.
_HOG = """
import os
import time

children = []
try:
    while len(children) < 10_000:
        pid = os.fork()
        if pid == 0:
            os.execvp("sleep", ["sleep", "61.5"])
        children.append(pid)
except OSError:
    pass
print(f"holding {len(children)} processes")
deadline = time.monotonic() + 30
while not os.path.exists("hog-release") and time.monotonic() < deadline:
    time.sleep(0.1)
"""

_GRADE_ONE_RUN = """
import json
import sys
from pathlib import Path

from autograder.course import Course
from autograder.sandbox.limits import Limits
from autograder.pipeline.run import grade_class

if __name__ == "__main__":
    root, submissions = Path(sys.argv[1]), Path(sys.argv[2])
    course = Course.at(root, release=root / "release")
    limits = Limits(cell_timeout=60, notebook_timeout=180, processes=64)
    result = grade_class(course, sys.argv[3], submissions, jobs=1, limits=limits)
    rows = [[row["student_id"], row["status"], row["score"], row["message"]] for row in result.rows]
    print(json.dumps(rows))
"""


def _hog_parents() -> set[int]:
    """The host pids of the processes whose children are run A's sleepers (its kernel)."""
    parents = set()
    for entry in os.listdir("/proc"):
        try:
            if Path(f"/proc/{entry}/cmdline").read_bytes() != b"sleep\x0061.5\x00":
                continue
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        parents.add(int(status.split("\nPPid:", 1)[1].split()[0]))
    return parents


def _hog_children() -> int:
    count = 0
    for entry in os.listdir("/proc"):
        try:
            count += Path(f"/proc/{entry}/cmdline").read_bytes() == b"sleep\x0061.5\x00"
        except OSError:
            continue
    return count


@pytest.mark.slow
def test_two_runs_at_once_a_hog_in_one_costs_the_other_nothing(tmp_path):
    import json
    import subprocess
    import sys
    import time

    from autograder.authoring.wrong_answers import submissions_folder

    if not sandbox.course_sandbox(Course.repository()).separate_uids:
        pytest.skip("without a uid per student the process limit is the grader's")
    perfect = submissions_folder(ASSIGNMENT) / "perfect" / f"{ASSIGNMENT}.ipynb"
    hog = nbformat.read(perfect, as_version=4)
    hog.cells.insert(0, v4.new_code_cell(_HOG))
    for run in ("a", "b"):
        (tmp_path / run / "submissions").mkdir(parents=True)
    # One student per run, one job: both are the first student of the first worker.
    (tmp_path / "a" / "submissions" / "hog").mkdir()
    nbformat.write(hog, tmp_path / "a" / "submissions" / "hog" / f"{ASSIGNMENT}.ipynb")
    (tmp_path / "b" / "submissions" / "perfect").mkdir()
    shutil.copy(perfect, tmp_path / "b" / "submissions" / "perfect")
    script = tmp_path / "grade_one_run.py"
    script.write_text(_GRADE_ONE_RUN)

    def start(run: str) -> subprocess.Popen:
        folder = tmp_path / run
        arguments = [str(folder / "course"), str(folder / "submissions"), ASSIGNMENT]
        return subprocess.Popen(
            [sys.executable, str(script), *arguments], stdout=subprocess.PIPE, text=True
        )

    run_a = start("a")
    deadline = time.monotonic() + 120
    while _hog_children() < 20 and time.monotonic() < deadline and run_a.poll() is None:
        time.sleep(0.2)
    assert _hog_children() >= 20, "run A's student never started its processes"
    run_b = start("b")  # while run A's student holds its processes
    out_b, _ = run_b.communicate(timeout=300)
    assert _hog_children() >= 20, "run A's student let go before run B was graded"
    # Let run A's student end now (the grader then ends its children), not after its 30 s:
    # its kernel works in a folder of the sandbox's own, which its /proc entry reaches.
    for kernel in _hog_parents():
        with contextlib.suppress(OSError):
            Path(f"/proc/{kernel}/cwd/hog-release").touch()
    out_a, _ = run_a.communicate(timeout=300)
    assert run_a.returncode == 0 and run_b.returncode == 0
    [(student, status, score, message)] = json.loads(out_b.strip().splitlines()[-1])
    assert (student, status, score) == ("perfect", OK, full_marks(ASSIGNMENT)), message
    [(student, *_)] = json.loads(out_a.strip().splitlines()[-1])
    assert student == "hog"
    assert _hog_children() == 0, "run A's student left processes behind"
