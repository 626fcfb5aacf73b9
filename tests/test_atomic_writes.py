"""The grader's files are written whole or not at all, and a full disk is one clear line.

The CSV, the report and its plot, the status file and the feedback pages go through
``autograder.atomic.replace_file``: a reader never sees half a file, and a write that
fails keeps the previous file. A full disk is shown on a real one where this machine lets
a test mount a small tmpfs in a mount namespace of its own (``unshare -m``); everywhere,
failures are also injected into the write itself.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autograder import atomic, cli
from autograder.atomic import WriteError, replace_file
from autograder.authoring.build import build
from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import REPO, Course
from autograder.pipeline.export import write_csv
from autograder.pipeline.record import Recorder
from autograder.pipeline.report import plot_pass_rates
from autograder.pipeline.run import collect_class, export_class
from autograder.submission import Submission, save_status

ASSIGNMENT = "01a_leaf_tensors"


def _fail_with(monkeypatch, code: int, where: str = "fsync") -> None:
    """Makes the next writes fail as the system would with ``code``, half-way through."""

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(atomic.os, where, fail)


def _leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "grades.csv"
    replace_file(target, "student_id,score\nperfect,13\n")
    _fail_with(monkeypatch, errno.ENOSPC)
    with pytest.raises(WriteError) as failed:
        replace_file(target, "student_id,score\n" + "x,0\n" * 1000)
    assert str(failed.value) == (
        f"cannot write {target}: No space left on device; the previous one was kept"
    )
    assert target.read_text() == "student_id,score\nperfect,13\n"
    assert _leftovers(tmp_path) == []


def test_a_reader_never_sees_half_a_file(tmp_path):
    target = tmp_path / "grades.csv"
    versions = [("row\n" * 20_000).replace("row", str(n)) for n in range(2)]
    replace_file(target, versions[0])
    seen, stop = set(), threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(hashlib.sha256(target.read_bytes()).hexdigest())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(200):
            replace_file(target, versions[n % 2])
    finally:
        stop.set()
        reader.join()
    assert seen <= {hashlib.sha256(v.encode()).hexdigest() for v in versions}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
def test_every_writer_keeps_its_previous_file_when_the_write_fails(tmp_path, monkeypatch, code):
    course = Course.at(tmp_path / "course")
    students = [Submission("perfect", "ok", graded=True)]
    written = {
        "csv": write_csv([{"student_id": "perfect", "score": 13.0}], tmp_path / "grades.csv"),
        "status": save_status(course, ASSIGNMENT, students),
        "plot": plot_pass_rates([], tmp_path / "report.png", "pass rates"),
    }
    recorder = Recorder.__new__(Recorder)  # only its feedback files: no gradebook needed
    recorder.course, recorder.assignment = course, ASSIGNMENT
    recorder.put_feedback("perfect", {f"{ASSIGNMENT}.html": b"<html>first</html>"})
    written["feedback"] = course.feedback / "perfect" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    before = {name: path.read_bytes() for name, path in written.items()}

    _fail_with(monkeypatch, code, where="replace")
    writers = {
        "csv": lambda: write_csv([{"student_id": "other", "score": 0.0}], written["csv"]),
        "status": lambda: save_status(course, ASSIGNMENT, [Submission("other", "ok")]),
        "plot": lambda: plot_pass_rates([], written["plot"], "another title"),
        "feedback": lambda: recorder.put_feedback(
            "perfect", {f"{ASSIGNMENT}.html": b"<html>second</html>"}
        ),
    }
    for name, write in writers.items():
        with pytest.raises(WriteError, match=r"; the previous one was kept$"):
            write()
        assert written[name].read_bytes() == before[name], name
        assert _leftovers(written[name].parent) == [], name


@pytest.fixture(scope="module")
def collected_course(tmp_path_factory) -> Course:
    """01 built and two students collected (not graded): enough to export and report."""
    root = tmp_path_factory.mktemp("full-disk")
    course = Course.at(root / "course")
    build(course, [ASSIGNMENT])
    for student in ("perfect", "blank"):
        shutil.copytree(submissions_folder(ASSIGNMENT) / student, root / "incoming" / student)
    collect_class(course, ASSIGNMENT, root / "incoming")
    export_class(course, ASSIGNMENT)
    return course


def test_the_report_keeps_its_previous_page_when_the_write_fails(collected_course, monkeypatch):
    from autograder.pipeline import report

    page = report.write_report(collected_course, ASSIGNMENT).markdown
    before = page.read_bytes()
    monkeypatch.setattr(report, "plot_pass_rates", lambda exercises, path, title: path)
    _fail_with(monkeypatch, errno.ENOSPC, where="replace")
    with pytest.raises(WriteError, match=r"_report\.md: No space left on device; the previous"):
        report.write_report(collected_course, ASSIGNMENT)
    assert page.read_bytes() == before and _leftovers(page.parent) == []


def test_a_write_error_is_one_line_and_no_traceback(collected_course, monkeypatch, capsys):
    # Fault-injected: as root, a folder's permissions do not stop this process's writes.
    csv_path = collected_course.exports / f"{ASSIGNMENT}_grades.csv"
    before = csv_path.read_bytes()
    _fail_with(monkeypatch, errno.EACCES, where="replace")
    status = cli.main(["export", ASSIGNMENT, "--course", str(collected_course.root)])
    error = capsys.readouterr().err
    assert status == 1
    assert (
        error == f"error: cannot write {csv_path}: Permission denied; the previous one was kept\n"
    )
    assert csv_path.read_bytes() == before


def _can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]
    return subprocess.run(probe, capture_output=True).returncode == 0


# Inside a mount namespace of its own: exports/ becomes a tmpfs holding the files it had
# and little room more, filled up; then the command runs on the full disk.
_FULL_DISK = """
set -e
exports="$1"; shift
cp -a "$exports" "$exports.before"
mount -t tmpfs -o size=512k tmpfs "$exports"
cp -a "$exports.before/." "$exports/"
dd if=/dev/zero of="$exports/filler" bs=4k 2>/dev/null || true
rm "$exports/filler.small" 2>/dev/null || true
set +e
"$@"
echo "status=$?"
for file in "$exports"/*; do sha256sum "$file"; done
ls -a "$exports"
"""


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="no tmpfs can be mounted here (not root)")
@pytest.mark.parametrize(
    ("command", "written"), [("export", "grades.csv"), ("report", "report.png")]
)
def test_a_full_disk_keeps_the_previous_file_and_says_so_in_one_line(
    collected_course, command, written
):
    exports = collected_course.exports
    cli.main(["report", ASSIGNMENT, "--course", str(collected_course.root)])
    before = {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in exports.iterdir()
    }
    result = subprocess.run(
        [
            "unshare", "-m", "sh", "-c", _FULL_DISK, "full-disk", str(exports),
            sys.executable, "-m", "autograder", command, ASSIGNMENT,
            "--course", str(collected_course.root),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    shutil.rmtree(f"{exports}.before")
    assert "status=1" in result.stdout, result.stdout + result.stderr
    target = exports / f"{ASSIGNMENT}_{written}"
    assert result.stderr == (
        f"error: cannot write {target}: No space left on device; the previous one was kept\n"
    )
    for name, digest in before.items():
        assert f"{digest}  {exports / name}" in result.stdout, f"{name} changed"
    assert ".tmp" not in result.stdout
