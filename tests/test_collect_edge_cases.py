"""One student's entry never stops the class: odd files, macOS zips, hidden names, deep code.

Collection reads only regular files (a FIFO named like the notebook would block it for
ever: it is never opened), skips macOS's ``__MACOSX/`` and ``._*`` files, and gives every
other entry a row; the review of a cell too deep for Python's parser, and observations a
probe should never have sent, fail only what they concern.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import stat
import threading
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder.authoring.build import build
from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import Course
from autograder.pipeline import judge as judging
from autograder.pipeline.collect import collect
from autograder.pipeline.report import write_report
from autograder.pipeline.review import cell_flags
from autograder.pipeline.run import collect_class, export_class
from autograder.submission import OK, UNREADABLE

ASSIGNMENT = "01a_leaf_tensors"
THOUSAND_TERMS = "total = " + " + ".join(["1"] * 1000)


def _notebook(path: Path, source: str = "# mine") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(v4.new_notebook(cells=[v4.new_code_cell(source)]), path)
    return path


@pytest.fixture
def course(tmp_path) -> Course:
    return Course.at(tmp_path / "course", release=tmp_path / "course" / "release")


def _by_student(results) -> dict:
    return {result.student_id: result for result in results}


def _collect_within(course: Course, folder: Path, seconds: float = 120) -> dict:
    """Collects in a thread: a collection that blocks fails the test instead of hanging it."""
    results: list = []
    worker = threading.Thread(
        target=lambda: results.extend(collect(course, ASSIGNMENT, folder)), daemon=True
    )
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "collection blocked"
    return _by_student(results)


def test_a_fifo_named_like_the_notebook_is_never_opened(course, tmp_path):
    folder = tmp_path / "submissions"
    _notebook(folder / "honest" / f"{ASSIGNMENT}.ipynb")
    (folder / "piped").mkdir(parents=True)
    fifo = folder / "piped" / f"{ASSIGNMENT}.ipynb"
    os.mkfifo(fifo)
    os.mkfifo(folder / "alone.ipynb")  # an entry that is itself a FIFO
    try:
        results = _collect_within(course, folder)
    finally:
        for path in (fifo, folder / "alone.ipynb"):  # unblock a reader, if one is stuck
            descriptor = os.open(path, os.O_RDWR | os.O_NONBLOCK)
            os.close(descriptor)
    assert results["honest"].status == OK
    assert (results["piped"].status, results["piped"].message) == (
        UNREADABLE,
        f"{ASSIGNMENT}.ipynb is a FIFO, not a file: not read",
    )
    assert (results["alone"].status, results["alone"].message) == (
        UNREADABLE,
        "alone.ipynb is a FIFO, not a file: not read",
    )


def test_sockets_and_devices_are_unreadable_entries(course, tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock.ipynb"))
    try:
        device = folder / "dev.ipynb"
        try:
            os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
        except PermissionError:
            device = None  # not root: the socket shows the rule
        results = _collect_within(course, folder)
    finally:
        server.close()
    assert results["sock"].status == UNREADABLE
    assert results["sock"].message == "sock.ipynb is a socket, not a file: not read"
    if device is not None:
        assert results["dev"].message == "dev.ipynb is a character device, not a file: not read"


def test_a_folder_zipped_by_macos_is_graded(course, tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    notebook = _notebook(tmp_path / "work" / f"{ASSIGNMENT}.ipynb")
    with zipfile.ZipFile(folder / "mac_user.zip", "w") as archive:
        archive.write(notebook, f"hw1/{ASSIGNMENT}.ipynb")
        archive.writestr(f"__MACOSX/hw1/._{ASSIGNMENT}.ipynb", b"\x00\x05\x16\x07 resource fork")
        archive.writestr("hw1/.DS_Store", b"\x00\x00\x00\x01Bud1")
    _notebook(folder / "copied_by_finder" / f"{ASSIGNMENT}.ipynb")
    (folder / "copied_by_finder" / f"._{ASSIGNMENT}.ipynb").write_bytes(b"\x00\x05\x16\x07")
    results = _collect_within(course, folder)
    assert results["mac_user"].status == OK, results["mac_user"].message
    assert results["mac_user"].message == f"graded hw1/{ASSIGNMENT}.ipynb as {ASSIGNMENT}.ipynb"
    assert (results["copied_by_finder"].status, results["copied_by_finder"].message) == (OK, "")


def test_every_entry_gets_a_row_or_a_logged_reason(course, tmp_path, caplog):
    folder = tmp_path / "submissions"
    for name in (".student", "..x", "fine"):
        _notebook(folder / name / f"{ASSIGNMENT}.ipynb")
    (folder / ".DS_Store").write_bytes(b"Bud1")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / "._fine").write_bytes(b"\x00\x05\x16\x07")
    _notebook(folder / "twice" / f"{ASSIGNMENT}.ipynb")
    with zipfile.ZipFile(folder / "twice.zip", "w") as archive:
        archive.writestr(f"{ASSIGNMENT}.ipynb", "{}")
    with caplog.at_level(logging.INFO, logger="autograder"):
        results = _collect_within(course, folder)
    assert sorted(results) == ["..x", ".student", "fine", "twice"]
    for hidden in (".student", "..x"):
        assert results[hidden].status == UNREADABLE
        assert "must start with a letter or digit" in results[hidden].message
    assert results["twice"].status == OK
    assert results["twice"].message == "also found twice.zip: not graded"
    logged = caplog.text
    for skipped in (".DS_Store", ".ipynb_checkpoints", "._fine"):
        assert f"skipped {skipped}: a file systems and tools leave" in logged
    assert "twice.zip is twice's second entry" in logged


def test_a_cell_too_deep_for_the_review_gets_a_flag_not_an_error():
    flags = cell_flags(THOUSAND_TERMS + "\nimport gc", cell=4)
    assert [flag.what for flag in flags] == [
        "code the review could not read (nested too deeply): read this cell yourself"
    ]
    assert flags[0].cell == 4


@pytest.mark.slow
def test_a_thousand_term_expression_stops_neither_export_nor_report(tmp_path):
    course = Course.at(tmp_path / "course", release=tmp_path / "course" / "release")
    build(course, [ASSIGNMENT])
    folder = tmp_path / "submissions"
    shutil.copytree(submissions_folder(ASSIGNMENT) / "blank", folder / "long_sum")
    path = folder / "long_sum" / f"{ASSIGNMENT}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(v4.new_code_cell(THOUSAND_TERMS))
    nbformat.write(notebook, path)
    shutil.copytree(submissions_folder(ASSIGNMENT) / "perfect", folder / "perfect")
    collect_class(course, ASSIGNMENT, folder)
    rows, _ = export_class(course, ASSIGNMENT)
    assert {row["student_id"]: row["review_flags"] for row in rows} == {
        "long_sum": 1,
        "perfect": 0,
    }
    text = write_report(course, ASSIGNMENT).markdown.read_text()
    assert "- long_sum: cell " in text and "could not read (nested too deeply)" in text


# Two hidden checks in one cell: observations of the first malformed, the second right.
TWO_CHECKS = '''"""Checks double and triple."""
### BEGIN HIDDEN TESTS
def cases(rng):
    return [{"x": torch.arange(3.0)}]


def observe_double(case):
    return {"y": double(case["x"])}


def observe_triple(case):
    return {"y": triple(case["x"])}


### BEGIN JUDGE
def judge_double(seen, case):
    assert torch.equal(seen["y"].values, 2 * case["x"]), "double(x) should be 2 x"


def judge_triple(seen, case):
    assert torch.equal(seen["y"].values, 3 * case["x"]), "triple(x) should be 3 x"


### END JUDGE
probe_and_judge("double", cases, observe_double, judge_double)
probe_and_judge("triple", cases, observe_triple, judge_triple)
### END HIDDEN TESTS
'''
SETUP = "import torch\nfrom autograd_pitfalls.probe import probe_and_judge\n"


def _tensor(dtype: str, values: list) -> dict:
    record = {
        "cls": "Tensor", "dtype": dtype, "device": "cpu", "shape": [len(values)],
        "requires_grad": False, "is_leaf": True, "grad_fn": None, "version": 0,
        "values": values,
    }  # fmt: skip
    return {"__tensor__": record}


def _sent(check: str, value) -> str:
    case = {"__dict__": {"value": {"__dict__": {"y": value}}}}
    return json.dumps({"__dict__": {"check": check, "cases": [case]}})


@pytest.mark.parametrize(
    ("malformed", "message"),
    [
        (json.dumps([["check", "double"], ["cases", []]]), "the observations are not this check's"),
        (_sent("double", _tensor("torch.int64", ["nan", 1, 2])), "malformed observations"),
        (_sent("double", _tensor("torch.qint8", [0, 2, 4])), "malformed observations"),
    ],
    ids=["a-list-for-a-dict", "nan-in-an-integer-tensor", "a-quantized-dtype"],
)
def test_malformed_observations_fail_their_check_alone(malformed, message):
    right = _sent("triple", _tensor("torch.float32", [0.0, 3.0, 6.0]))
    verdict = judging.Judges(SETUP).judge(
        "q1-tests", TWO_CHECKS, {"double": [malformed], "triple": [right]}, seed=7
    )
    assert len(verdict.failures) == 1, verdict.failures
    assert verdict.failures[0].startswith("double") and message in verdict.failures[0]
