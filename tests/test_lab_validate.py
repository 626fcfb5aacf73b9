"""The lab's Validate summary, the pass line, and what they reach in nbgrader."""

from __future__ import annotations

import types

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from autograd_pitfalls import passline
from autograder.course import nbgrader_config
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
    assert callable(handlers.ValidateAssignmentHandler.validate_notebook)
    assert handlers.Validator.__name__ == "Validator"  # the name it validates with
    patterns = dict(handlers.default_handlers)
    assert patterns[r"/assignments/validate"] is handlers.ValidateAssignmentHandler
    assert r"/nbgrader_version" in patterns
    assert issubclass(lab_validate.SummaryValidateHandler, handlers.ValidateAssignmentHandler)
    assert lab_validate._jupyter_server_extension_points() == [
        {"module": "autograder.learner.validate_button"}
    ]


def test_summary_names_passing_and_failing_exercises():
    assert exercise_summary(["q1"], ["q2", "q3"]) == "1 of 3 exercises pass (q1); not yet: q2, q3."
    assert exercise_summary([], ["q1", "q2"]) == "0 of 2 exercises pass; not yet: q1, q2."
    assert exercise_summary(["q1", "q2"], []) == "2 of 2 exercises pass."


def test_short_reason_keeps_the_error_line_and_drops_the_traceback():
    traceback = "\n".join(
        [
            f"{RED}-------------------------------------------",
            f"{RED}NotImplementedError{RED}  Traceback (most recent call last)",
            "Cell In[4], line 2",
            "----> 2 predict()",
            f"{RED}NotImplementedError{RED}: Exercise not answered yet: replace this line.",
        ]
    )
    assert lab_validate.short_reason(traceback) == (
        "NotImplementedError: Exercise not answered yet: replace this line."
    )
    assert lab_validate.short_reason("some stderr\n") == "some stderr"
    long = "AssertionError: first\n" + "\n".join(f"line {n}" for n in range(20))
    assert lab_validate.short_reason(long).splitlines()[-1] == "..."


def test_summarize_puts_the_summary_first_and_shortens_each_failure():
    q1 = '"""Checks one thing."""\nassert one()'
    q2 = '"""Checks another thing, on every device."""\nassert two()'
    notebook = new_notebook(cells=[_graded("q1-tests", q1), _graded("q2-tests", q2)])
    untouched = {"source": "x = 1", "error": "<pre>e</pre>", "raw_error": "e"}
    failed = [
        {"source": q2, "error": "<pre>long</pre>", "raw_error": "...\nAssertionError: wrong"},
        untouched,
    ]
    entries = lab_validate.summarize(notebook, failed)
    assert entries[0]["source"] == "1 of 2 exercises pass (q1); not yet: q2."
    assert entries[1]["source"] == "q2: Checks another thing, on every device."
    assert entries[1]["raw_error"] == "AssertionError: wrong"
    assert entries[2] is untouched  # not a graded test cell: kept as nbgrader wrote it


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

    # As the lab's Validate button does: nbgrader's handler, with the course's validator.
    handler = lab_validate.SummaryValidateHandler.__new__(lab_validate.SummaryValidateHandler)
    handler.load_config = lambda: nbgrader_config()
    handler.application = types.SimpleNamespace(settings={"root_dir": str(tmp_path)})
    output = handler.validate_notebook(path.name)
    assert output["success"], output
    failing = [entry["source"] for entry in output["value"]["failed"]]
    assert failing == [
        "1 of 2 exercises pass (q1); not yet: q2.",
        "q2: Checks that a failing test still fails.",
    ]
