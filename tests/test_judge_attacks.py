"""Issue 19's attacks on a second assignment, graded in one batch with honest students.

The first assignment's batch (``tests/test_adversarial.py``) has the same attacks among
many others. Here, on ``04b_assembling_tensors``: each attack earns nothing, gets the
status it should (``ok`` or ``tampered``: never an error of the grader's), and the report
and the CSV flag its code for review; the honest students are graded exactly.
"""

from __future__ import annotations

import csv
import shutil

import nbformat
import pytest

from autograder.authoring.wrong_answers import FIXTURES, submissions_folder
from autograder.course import Course
from autograder.pipeline.run import GradingResult, grade_class
from tests.support.adversarial import JUDGE_ATTACKS, load_attacks, load_expected, write_adversarial

ASSIGNMENT, ATTACKS = load_attacks(JUDGE_ATTACKS)
EXPECTED = load_expected(JUDGE_ATTACKS)
HONEST = {"aaa_perfect": "perfect", "blank": "blank", "zzz_perfect": "perfect"}
HONEST_ATTACKS = {"tqdm_and_thread_pool"}


def test_every_attack_has_an_expected_outcome():
    assert set(ATTACKS) == set(EXPECTED)


def test_judge_attack_fixtures_are_up_to_date(built_course: Course, tmp_path):
    fresh = tmp_path / "judge_attacks"
    fresh.mkdir()
    shutil.copy(JUDGE_ATTACKS / "attacks.py", fresh)
    for path in write_adversarial(built_course, fresh):
        committed = JUDGE_ATTACKS / path.relative_to(fresh)
        assert committed.is_file(), f"{committed} is missing: run `make fixtures`"
        assert nbformat.read(committed, as_version=4) == nbformat.read(path, as_version=4), (
            f"{committed} is stale: run `make fixtures` and commit"
        )


@pytest.fixture(scope="module")
def batch(built_course: Course, tmp_path_factory) -> GradingResult:
    folder = tmp_path_factory.mktemp("judge-attacks-class")
    shutil.copytree(JUDGE_ATTACKS / "submissions", folder, dirs_exist_ok=True)
    for student, fixture in HONEST.items():
        shutil.copytree(submissions_folder(ASSIGNMENT) / fixture, folder / student)
    root = tmp_path_factory.mktemp("judge-attacks-course")
    course = Course.at(root, release=root / "release")
    return grade_class(course, ASSIGNMENT, folder, jobs=2)


def _rows(result: GradingResult) -> dict[str, dict]:
    return {row["student_id"]: row for row in result.rows}


@pytest.mark.slow
@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_attack_earns_nothing_and_is_flagged(batch, student: str):
    row = _rows(batch)[student]
    want = EXPECTED[student]
    assert row["status"] == want["status"], row["message"]
    assert float(want["min_score"]) <= row["score"] <= float(want["max_score"]), row["message"]
    if student in HONEST_ATTACKS:
        assert row["review_flags"] == 0
    else:
        assert row["review_flags"] > 0, "the report should point the instructor at this code"
        assert f"- {student}: cell " in batch.report.markdown.read_text()


@pytest.mark.slow
def test_honest_students_in_the_batch_get_exactly_their_grades(batch):
    rows = _rows(batch)
    with (FIXTURES / ASSIGNMENT / "expected_scores.csv").open() as handle:
        expected = {row["student_id"]: row for row in csv.DictReader(handle)}
    for student, fixture in HONEST.items():
        want = {key: value for key, value in expected[fixture].items() if key != "student_id"}
        got = {key: f"{rows[student][key]:g}" for key in want}
        assert got == want, student
        assert rows[student]["status"] == "ok" and rows[student]["review_flags"] == 0
