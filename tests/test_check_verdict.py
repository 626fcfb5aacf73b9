"""make check gives every fixture the points the grader gives, exercise by exercise.

The background run (``tests/support/background_grading.py``) grades the class as an
instructor does, reads from that course what ``make check`` would tell each fixture's
learner, then checks a sample of the fixture notebooks as a learner's ``make check`` does,
in a learner course of its own (its own secret, so other hidden inputs, and another student
id). The sample holds every fixture whose points the hidden checks decided and shows every
outcome of the class; both courses must give each exercise of each one the same verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import assignment_ids
from tests.support.background_grading import outcomes, sample_to_check_at_home

ASSIGNMENTS = assignment_ids()


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_make_check_gives_every_fixture_the_points_the_grader_gives(
    graded, told_in_class, checked_at_home, assignment
):
    rows = {row["student_id"]: row for row in graded[assignment].rows}
    in_class = {path: v for path, v in told_in_class.items() if Path(path).stem == assignment}
    at_home = {path: v for path, v in checked_at_home.items() if Path(path).stem == assignment}
    assert len(in_class) >= 5
    hidden_checked = {
        path for path, verdict in in_class.items() if any(e["visible"] == "pass" for e in verdict)
    }
    assert hidden_checked <= set(at_home), "the sample leaves out hidden-checked fixtures"
    differing = {}
    for path, verdict in at_home.items():
        student = Path(path).parent.name
        scores = {e["exercise"]: e["score"] for e in verdict["exercises"]}
        grader = {name: float(rows[student][name]) for name in scores}
        if (
            scores != grader
            or verdict["score"] != float(rows[student]["score"])
            or outcomes(path, verdict["exercises"]) != outcomes(path, in_class[path])
        ):
            differing[student] = (verdict["exercises"], in_class[path], rows[student])
    assert not differing, f"make check and the grader disagree: {differing}"
    shown_at_home = set().union(*(outcomes(path, v["exercises"]) for path, v in at_home.items()))
    shown_in_class = set().union(*(outcomes(path, v) for path, v in in_class.items()))
    assert shown_at_home == shown_in_class, "the sample misses outcomes the class shows"


def test_the_sample_holds_the_hidden_checked_fixtures_and_one_of_each_outcome():
    def verdict(*exercises: tuple[str, str, str, float]) -> list[dict]:
        keys = ("exercise", "visible", "hidden", "score")
        return [dict(zip(keys, exercise, strict=True)) for exercise in exercises]

    blank = verdict(("q1", "not answered", "not run", 0.0), ("q2", "not answered", "not run", 0.0))
    wrong_q1 = verdict(("q1", "fail", "not run", 0.0), ("q2", "not answered", "not run", 0.0))
    in_class = {
        "a/perfect/01_x.ipynb": verdict(("q1", "pass", "pass", 2.0), ("q2", "pass", "pass", 3.0)),
        "a/blank/01_x.ipynb": blank,
        "a/wrong_q1/01_x.ipynb": wrong_q1,
        "a/also_wrong_q1/01_x.ipynb": wrong_q1,
        "a/hard_coded/01_x.ipynb": verdict(
            ("q1", "pass", "fail", 0.0), ("q2", "not answered", "not run", 0.0)
        ),
        # The same outcomes in another assignment are other outcomes.
        "a/blank/02_y.ipynb": blank,
    }
    sample = sample_to_check_at_home(in_class)
    # Hidden-checked: perfect, hard_coded. Blank alone shows q1 not answered (and 02's
    # blank is another assignment's); one of the two wrong q1s shows q1 failing visibly.
    assert {"a/perfect/01_x.ipynb", "a/hard_coded/01_x.ipynb"} <= set(sample)
    assert {"a/blank/01_x.ipynb", "a/blank/02_y.ipynb"} <= set(sample)
    assert len({"a/wrong_q1/01_x.ipynb", "a/also_wrong_q1/01_x.ipynb"} & set(sample)) == 1
    assert len(sample) == 5
    assert sample == [notebook for notebook in in_class if notebook in sample]  # in order


# Fixtures that pass the visible tests on purpose and fail the hidden checks: the attacks on
# the grading, which pass the visible tests and then reach for what the judge knows.
ATTACKS_ON_THE_GRADING = ("calls_hidden_oracle", "reads_caller_frame", "rebinds_")
# Exercises whose visible tests may pass a wrong answer: prediction exercises whose visible
# tests check only the form, as their text says (checking more would print the answer), and
# the predictions of 01, 03 and 04, redesigned in issue 35.
VISIBLE_TESTS_CHECK_THE_FORM = {
    ("02a_version_counter", "q1"),
    ("05a_embedding_max_norm", "q1"),
    ("05b_embedding_max_norm", "q4"),
    ("06b_debugging_clinic", "q4"),
    ("01a_leaf_tensors", "q1"),
    ("03a_data_vs_detach", "q1"),
    ("04a_assembling_tensors", "q1"),
}


@pytest.mark.slow
def test_a_wrong_answer_fails_the_visible_tests_where_they_can_check_it(told_in_class):
    """A learner who runs an exercise's tests sees them fail for an answer worth 0 (issue 37).

    Only the attacks on the grading and the exercises whose visible tests check the form
    pass the visible tests and fail the hidden checks.
    """
    passing_wrong_answers = sorted(
        (Path(notebook).stem, Path(notebook).parent.name, exercise["exercise"])
        for notebook, exercises in told_in_class.items()
        for exercise in exercises
        if exercise["visible"] == "pass" and exercise["hidden"] == "fail"
    )
    unexpected = [
        (assignment, student, exercise)
        for assignment, student, exercise in passing_wrong_answers
        if not student.startswith(ATTACKS_ON_THE_GRADING)
        and (assignment, exercise) not in VISIBLE_TESTS_CHECK_THE_FORM
    ]
    assert not unexpected, f"the visible tests pass these wrong answers: {unexpected}"


@pytest.mark.slow
def test_make_check_says_which_exercises_only_the_hidden_checks_fail(told_in_class):
    """Where the visible tests pass and the grader gives 0, the check says so, and why.

    Validate used to say "pass" there (issue: a wrong prediction in 01 passed).
    """
    hidden_only = [
        (Path(notebook).parent.name, exercise)
        for notebook, exercises in told_in_class.items()
        for exercise in exercises
        if exercise["visible"] == "pass" and exercise["hidden"] == "fail"
    ]
    assert len(hidden_only) >= 3, "fixtures that hard-code the visible examples exist"
    for student, exercise in hidden_only:
        assert exercise["score"] == 0, (student, exercise)
        assert any(m.startswith("hidden checks: ") for m in exercise["messages"]), student
    first = ASSIGNMENTS[0]
    blank = told_in_class[str(submissions_folder(first) / "blank" / f"{first}.ipynb")]
    assert {e["visible"] for e in blank} == {"not answered"}
    assert {e["hidden"] for e in blank} == {"not run"}
