"""make check gives every fixture the points the grader gives, exercise by exercise.

The background run (``tests/support/background_grading.py``) grades the class as an
instructor does, then checks every fixture notebook as a learner's ``make check`` does, in
a learner course of its own (its own secret, so other hidden inputs, and another student
id). Both must give each exercise of each fixture the same points.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import assignment_ids

ASSIGNMENTS = assignment_ids()


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_make_check_gives_every_fixture_the_points_the_grader_gives(
    graded, checked_at_home, assignment
):
    rows = {row["student_id"]: row for row in graded[assignment].rows}
    fixtures = sorted(
        folder.name
        for folder in submissions_folder(assignment).iterdir()
        if (folder / f"{assignment}.ipynb").is_file()
    )
    assert len(fixtures) >= 5
    differing = {}
    for student in fixtures:
        notebook = submissions_folder(assignment) / student / f"{assignment}.ipynb"
        verdict = checked_at_home[str(notebook)]
        at_home = {e["exercise"]: e["score"] for e in verdict["exercises"]}
        grader = {name: float(rows[student][name]) for name in at_home}
        if at_home != grader or verdict["score"] != float(rows[student]["score"]):
            differing[student] = (at_home, grader)
    assert not differing, f"make check and the grader disagree: {differing}"


# Fixtures that pass the visible tests on purpose and fail the hidden checks: the attacks on
# the grading, which pass the visible tests and then reach for what the judge knows.
ATTACKS_ON_THE_GRADING = ("calls_hidden_oracle", "reads_caller_frame", "rebinds_")
# Exercises whose visible tests may pass a wrong answer: prediction exercises whose visible
# tests check only the form, as their text says (checking more would print the answer), and
# the predictions of 01, 03 and 04, redesigned in issue 35.
VISIBLE_TESTS_CHECK_THE_FORM = {
    ("02_version_counter", "q1"),
    ("05_embedding_max_norm", "q1"),
    ("05_embedding_max_norm", "q4"),
    ("06_debugging_clinic", "q4"),
    ("01_leaf_tensors", "q1"),
    ("03_data_vs_detach", "q1"),
    ("04_assembling_tensors", "q1"),
}


@pytest.mark.slow
def test_a_wrong_answer_fails_the_visible_tests_where_they_can_check_it(checked_at_home):
    """A learner who runs an exercise's tests sees them fail for an answer worth 0 (issue 37).

    Only the attacks on the grading and the exercises whose visible tests check the form
    pass the visible tests and fail the hidden checks.
    """
    passing_wrong_answers = sorted(
        (Path(notebook).stem, Path(notebook).parent.name, exercise["exercise"])
        for notebook, verdict in checked_at_home.items()
        for exercise in verdict["exercises"]
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
def test_make_check_says_which_exercises_only_the_hidden_checks_fail(checked_at_home):
    """Where the visible tests pass and the grader gives 0, the check says so, and why.

    Validate used to say "pass" there (issue: a wrong prediction in 01 passed).
    """
    hidden_only = [
        (Path(notebook).parent.name, exercise)
        for notebook, verdict in checked_at_home.items()
        for exercise in verdict["exercises"]
        if exercise["visible"] == "pass" and exercise["hidden"] == "fail"
    ]
    assert len(hidden_only) >= 3, "fixtures that hard-code the visible examples exist"
    for student, exercise in hidden_only:
        assert exercise["score"] == 0, (student, exercise)
        assert any(m.startswith("hidden checks: ") for m in exercise["messages"]), student
    first = ASSIGNMENTS[0]
    blank = checked_at_home[str(submissions_folder(first) / "blank" / f"{first}.ipynb")]
    assert {e["visible"] for e in blank["exercises"]} == {"not answered"}
    assert {e["hidden"] for e in blank["exercises"]} == {"not run"}
