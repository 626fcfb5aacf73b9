"""Hostile and broken submissions graded in one batch with honest ones.

The batch must finish; each attack gets its expected status and no more than its
answers earn honestly (``autograder/fixtures/adversarial/expected_outcomes.csv``); the
honest students in the same batch get exactly their usual grades; nothing is written
outside the students' folders and nothing they started survives. Short time limits keep
the two infinite loops cheap.
"""

from __future__ import annotations

import csv
import os
import shutil
import sqlite3
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.authoring.wrong_answers import FIXTURES, submissions_folder
from autograder.course import REPO, Course
from autograder.pipeline.run import GradingResult, grade_class
from autograder.sandbox.bwrap import course_sandbox
from autograder.sandbox.limits import Limits
from tests.support.adversarial import ADVERSARIAL, load_attacks, load_expected, write_adversarial
from tests.support.small_class import full_marks

ASSIGNMENT, ATTACKS = load_attacks()
EXPECTED = load_expected()
# Graded first and last (students are taken in name order), and in between.
HONEST = {"aaa_perfect": "perfect", "blank": "blank", "zzz_perfect": "perfect"}
# Attacks that only the sandbox stops (they read or write other folders).
NEEDS_SANDBOX = {"reads_hidden_tests_and_solutions", "writes_outside_its_folder"}
BACKGROUND_MARKER = b"autograder-adversarial-background"
# Entries only collect sees, made in the batch's folder at test time (a link, a zip bomb,
# ids nbgrader would glob or a spreadsheet would run): each is refused, with its reason.
ENTRIES = {
    "copycat": ("missing", "symbolic link"),
    "*": ("unreadable", "not a usable student id"),
    "=HYPERLINK(1)": ("unreadable", "not a usable student id"),
    "zip_bomb": ("unreadable", "would expand to"),
}
# Small enough that the disk filler meets it at once.
BATCH_LIMITS = Limits(cell_timeout=10, notebook_timeout=120, disk_mb=64)


def _honest_scores() -> dict[str, dict[str, str]]:
    with (FIXTURES / ASSIGNMENT / "expected_scores.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def test_every_attack_has_an_expected_outcome():
    assert set(ATTACKS) == set(EXPECTED)
    statuses = {row["status"] for row in EXPECTED.values()}
    assert statuses == {"ok", "timeout", "memory", "tampered", "unreadable", "missing", "error"}


def test_adversarial_fixtures_are_up_to_date(built_course: Course, tmp_path):
    fresh = tmp_path / "adversarial"
    fresh.mkdir()
    shutil.copy(ADVERSARIAL / "attacks.py", fresh)
    written = write_adversarial(built_course, fresh)
    for path in written:
        committed = ADVERSARIAL / path.relative_to(fresh)
        assert committed.is_file(), f"{committed} is missing: run `make fixtures`"
        if path.suffix == ".ipynb" and path.parent.name != "corrupt_json":
            assert nbformat.read(committed, as_version=4) == nbformat.read(path, as_version=4), (
                f"{committed} is stale: run `make fixtures` and commit"
            )
        else:
            assert committed.read_bytes() == path.read_bytes()


@pytest.fixture(scope="module")
def batch(built_course: Course, tmp_path_factory) -> tuple[Course, GradingResult]:
    folder = tmp_path_factory.mktemp("adversarial-class")
    shutil.copytree(ADVERSARIAL / "submissions", folder, dirs_exist_ok=True)
    for student, fixture in HONEST.items():
        shutil.copytree(submissions_folder(ASSIGNMENT) / fixture, folder / student)
    perfect = folder / "aaa_perfect" / f"{ASSIGNMENT}.ipynb"
    (folder / "copycat").symlink_to(folder / "aaa_perfect")
    for odd_id in ("*", "=HYPERLINK(1)"):
        (folder / odd_id).mkdir()
        shutil.copy(perfect, folder / odd_id / f"{ASSIGNMENT}.ipynb")
    with zipfile.ZipFile(folder / "zip_bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{ASSIGNMENT}.ipynb", bytes(300 * 2**20))  # 300 MB of zeros
    root = tmp_path_factory.mktemp("adversarial-course")
    course = Course.at(root, release=root / "release")
    return course, grade_class(course, ASSIGNMENT, folder, jobs=2, limits=BATCH_LIMITS)


def _rows(result: GradingResult) -> dict[str, dict]:
    return {row["student_id"]: row for row in result.rows}


SANDBOX_ON = course_sandbox(Course.repository()).enabled


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_attack_gets_its_status_and_no_more_than_it_earned(batch, student: str):
    if student in NEEDS_SANDBOX and not SANDBOX_ON:
        pytest.skip("only the sandbox (bubblewrap) stops this attack, and it is off here")
    row = _rows(batch[1])[student]
    want = EXPECTED[student]
    assert row["status"] == want["status"], row["message"]
    assert float(want["min_score"]) <= row["score"] <= float(want["max_score"]), row["message"]
    assert row["max_score"] == full_marks(ASSIGNMENT)
    if row["status"] != "ok":
        assert row["message"], "a status other than ok says why"


# Answer code that reaches for grading machinery (issue 19): the report flags it for review.
REACHING = {
    "swallows_errors_showtraceback", "swallows_errors_custom_exc",
    "swallows_errors_transformer_manager", "swallows_errors_kernel_shell_traitlet",
    "neuters_the_guard", "reads_caller_frame", "reads_traceback_frames", "calls_hidden_oracle",
    "rebinds_test_helpers", "lazy_dict_reads_the_test", "gc_finds_the_guard",
    "aten_kernel_override", "lying_tensor_subclass", "settrace_in_main_thread",
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(REACHING))
def test_code_that_reaches_for_the_grader_is_flagged_for_review(batch, student: str):
    row = _rows(batch[1])[student]
    assert row["review_flags"] > 0
    assert f"- {student}: cell " in batch[1].report.markdown.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(ENTRIES))
def test_entries_collect_refuses_are_reported_in_the_batch(batch, student: str):
    row = _rows(batch[1])[student]
    status, reason = ENTRIES[student]
    assert (row["status"], row["score"]) == (status, 0)
    assert reason in row["message"]


@pytest.mark.slow
def test_the_csv_never_starts_a_cell_with_a_formula(batch):
    text = batch[1].csv.read_text()
    assert "\n'=HYPERLINK" in text
    assert "\n=" not in text


@pytest.mark.slow
def test_no_student_folder_is_left_on_the_host(batch):
    # Every kernel's folder (the deep tree and the disk filler's included) is removed.
    # The temporary folder is this test run's own (conftest.py): another run's live
    # kernels are not counted.
    import tempfile

    assert "pytest" in tempfile.gettempdir()
    left = [
        path for path in Path(tempfile.gettempdir()).glob("autograder-*/k[0-9]*") if path.is_dir()
    ]
    assert left == []


@pytest.mark.slow
def test_honest_students_in_the_batch_get_exactly_their_grades(batch):
    rows = _rows(batch[1])
    expected = _honest_scores()
    for student, fixture in HONEST.items():
        got = {
            column: f"{rows[student][column]:g}"
            for column in expected[fixture]
            if column != "student_id"
        }
        want = {
            column: value for column, value in expected[fixture].items() if column != "student_id"
        }
        assert got == want, student
        assert rows[student]["status"] == "ok"


def _markers(*roots: Path) -> list[Path]:
    return [path for root in roots for path in root.rglob("ATTACKED-*")]


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOX_ON, reason="only the sandbox stops writes outside the folder")
def test_no_attack_wrote_outside_its_folder(batch):
    course, _ = batch
    assert _markers(course.root, REPO / "solutions", REPO / "notebooks", REPO / "autograder") == []
    with sqlite3.connect(course.gradebook) as gradebook:
        tables = {name for (name,) in gradebook.execute("SELECT name FROM sqlite_master")}
    assert "attacked" not in tables


@pytest.mark.slow
def test_nothing_a_student_started_survives_grading(batch):
    survivors = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if BACKGROUND_MARKER in cmdline:
            survivors.append((entry, cmdline[:80]))
    assert survivors == []


@pytest.mark.slow
def test_50_mb_of_output_is_cut_in_the_graded_notebook_and_the_feedback(batch):
    course, _ = batch
    student = "prints_50_mb"
    graded = course.root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    feedback = course.root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert graded.stat().st_size < 2_000_000
    assert feedback.stat().st_size < 2_000_000


@pytest.mark.slow
def test_the_report_and_the_csv_show_each_status(batch):
    _, result = batch
    assert result.report is not None
    text = result.report.markdown.read_text()
    for status in ("tampered", "timeout", "memory", "error", "unreadable", "missing"):
        count = sum(row["status"] == status for row in result.rows)
        assert count > 0 and f"| {status} | {count} |" in text
    assert "- deleted_test_cell: tampered: q1-tests was deleted" in text
    with result.csv.open() as handle:
        header = next(csv.reader(handle))
    assert header[-5:] == ["status", "message", "sandbox", "device", "review_flags"]
