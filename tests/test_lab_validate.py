"""The lab's Validate summary, the pass line, and what they reach in nbgrader."""

from __future__ import annotations

import asyncio
import html

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from autograd_pitfalls import passline
from autograder.learner import validate_button as lab_validate
from autograder.learner.summary import exercise_summary
from autograder.learner.validate import check_notebook

RED = "\x1b[0;31m"


def _graded(grade_id: str, source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata.nbgrader = {"grade": True, "grade_id": grade_id, "locked": True, "points": 1}
    return cell


def test_nbgrader_still_has_what_lab_validate_reaches():
    # The one place that reaches into nbgrader's server extension: if an nbgrader upgrade
    # moves these, this fails before the lab's Validate button does.
    handlers = lab_validate.NBGRADER_HANDLERS
    assert isinstance(handlers.ValidateAssignmentHandler.root_dir, property)
    patterns = dict(handlers.default_handlers)
    assert patterns[r"/assignments/validate"] is handlers.ValidateAssignmentHandler
    assert r"/nbgrader_version" in patterns
    assert issubclass(lab_validate.VerdictValidateHandler, handlers.ValidateAssignmentHandler)
    assert lab_validate._jupyter_server_extension_points() == [
        {"module": "autograder.learner.validate_button"}
    ]


def test_summary_names_passing_and_failing_exercises():
    assert exercise_summary(["q1"], ["q2", "q3"]) == "1 of 3 exercises pass (q1); not yet: q2, q3."
    assert exercise_summary([], ["q1", "q2"]) == "0 of 2 exercises pass; not yet: q1, q2."
    assert exercise_summary(["q1", "q2"], []) == "2 of 2 exercises pass."


def _exercise(name, score, points, visible="pass", hidden="pass", messages=()):
    return {
        "exercise": name,
        "score": score,
        "max_score": points,
        "visible": visible,
        "hidden": hidden,
        "messages": list(messages),
    }


def _verdict(exercises, status="ok", message="", changed=()):
    return {
        "notebook": "x.ipynb",
        "assignment": "01a_leaf_tensors",
        "status": status,
        "message": message,
        "score": sum(e["score"] for e in exercises),
        "max_score": sum(e["max_score"] for e in exercises),
        "changed": list(changed),
        "exercises": exercises,
    }


def test_the_dialog_gives_the_summary_then_each_exercise_with_points_and_whole_messages():
    long = "hidden case 2 of 5: " + "the gradient of w is wrong; " * 30 + "<b>not bold</b>"
    verdict = _verdict(
        [
            _exercise("q1", 2, 2),
            _exercise("q2", 0, 2, hidden="fail", messages=[long]),
            _exercise("q3", 0, 3, visible="not answered", hidden="not run"),
        ]
    )
    [entry] = lab_validate.dialog_answer(verdict)["failed"]
    assert entry["source"] == "1 of 3 exercises pass (q1); not yet: q2, q3."
    page = entry["error"]
    assert "Points: <b>2/7</b>" in page and "hidden checks" in page
    assert html.escape(long) in page  # whole, escaped: nothing cut, no markup injected
    assert "<b>q3</b> 0/3 points: not answered yet" in page
    # Scoped to the dialog: nbgrader's "The following cell failed:" hidden, messages wrapped.
    assert "#validation-message > div:not(.jp-RenderedText) { display: none; }" in page
    assert "white-space: pre-wrap" in page
    assert entry["raw_error"].splitlines()[1] == "q2: visible tests pass; hidden checks fail"


def test_the_dialog_says_success_only_when_every_exercise_passes_and_nothing_was_edited():
    assert lab_validate.dialog_answer(_verdict([_exercise("q1", 2, 2)])) == {}
    edited = _verdict([_exercise("q1", 2, 2)], changed=["q1-tests"])
    assert (
        "q1-tests: this locked cell was edited"
        in (lab_validate.dialog_answer(edited)["failed"][0]["error"])
    )
    late = _verdict([_exercise("q1", 2, 2)], status="timeout", message="cell 3 ran too long")
    assert "timeout: cell 3 ran too long" in lab_validate.dialog_answer(late)["failed"][0]["error"]


def test_pass_line_is_for_test_cells_only_and_needs_ipython():
    assert passline.is_test_cell('\n"""Checks that f works."""\nassert f()')
    assert not passline.is_test_cell('"""A module docstring."""')
    assert not passline.is_test_cell("print('Checks')")
    assert passline.install() is False  # plain pytest: no IPython shell to hook into


def test_a_test_cell_that_logs_to_stderr_passes_in_make_check_and_the_lab(tmp_path):
    # An answer that logs (logging writes to stderr) is not a failing one: nbgrader alone
    # would fail the cell, and the grader does not.
    logs = '"""Checks that logging costs nothing."""\nimport logging\nlogging.warning("epoch 1")'
    fails = '"""Checks that a failing test still fails."""\nassert False, "wrong"'
    notebook = new_notebook(cells=[_graded("q1-tests", logs), _graded("q2-tests", fails)])
    for cell in notebook.cells:
        cell.metadata.nbgrader.update(schema_version=3, solution=False)
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    path = tmp_path / "logs.ipynb"
    nbformat.write(notebook, path)

    report = check_notebook(path)
    assert [(e.exercise, e.passed) for e in report.exercises] == [("q1", True), ("q2", False)]

    # As the lab's Validate button does (the check in a process of its own): a notebook
    # not named after an assignment runs its visible tests only, with the same rule.
    output = asyncio.run(lab_validate.run_check(path))
    assert output["success"], output
    [entry] = output["value"]["failed"]
    assert entry["source"] == "1 of 2 exercises pass (q1); not yet: q2."
    assert "Visible tests only" in entry["error"] and "wrong" in entry["error"]


def test_make_check_still_checks_after_a_new_course_version_changes_the_cells(tmp_path):
    """The learner course's gradebook knows the old version's cells; nbgrader would refuse."""
    import json

    from autograder.authoring.wrong_answers import submissions_folder
    from autograder.learner.verdict import grade_at_home, learner_course

    course = learner_course(tmp_path / "check-course")
    notebook = submissions_folder("01a_leaf_tensors") / "blank" / "01a_leaf_tensors.ipynb"
    [first] = grade_at_home([notebook], course=course)
    # As if the previous version of the course had one graded cell more than this one...
    with course.gradebook_db() as gradebook:
        gradebook.update_or_create_grade_cell(
            "q9-tests", "01a_leaf_tensors", "01a_leaf_tensors", max_score=1, cell_type="code"
        )
    # ...and the learner then pulled this version: its source is newer than the build.
    record = course.root / "built.json"
    record.write_text(json.dumps({"01a_leaf_tensors": "an older version"}))

    [again] = grade_at_home([notebook], course=course)

    assert again.as_dict() == first.as_dict()
