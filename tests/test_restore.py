"""Restoring a submission's nbgrader cells from the released notebook, without kernels."""

from __future__ import annotations

import copy

import pytest
from nbformat import v4

from autograder.preprocessors.restore import protected_names, restore_cells
from autograder.submission import MEMORY, OK, TAMPERED, TIMEOUT, outcome, record, reset


def _cell(grade_id: str, source: str, **flags: object):
    nbgrader = {
        "grade": False,
        "grade_id": grade_id,
        "locked": False,
        "schema_version": 3,
        "solution": False,
        "task": False,
        **flags,
    }
    cell = v4.new_code_cell(source, metadata={"nbgrader": nbgrader})
    cell.id = grade_id
    return cell


def _template():
    intro = v4.new_markdown_cell("Exercise 1")
    intro.id = "cell-000"
    return [
        intro,
        _cell("q1-answer", "def f():\n    raise NotImplementedError()", solution=True),
        _cell("q1-tests", "assert f() == 1", grade=True, locked=True, points=2),
        _cell("q2-answer", "def g():\n    raise NotImplementedError()", solution=True),
        _cell("q2-tests", "assert g() == 2", grade=True, locked=True, points=3),
    ]


def _answered():
    cells = copy.deepcopy(_template())
    cells[1].source = "def f():\n    return 1"
    cells[3].source = "def g():\n    return 2"
    return cells


def _ids(cells):
    return [cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id")) for cell in cells]


def test_restore_leaves_an_honest_submission_unchanged():
    cells, issues = restore_cells(_template(), _answered())
    assert issues == []
    assert [cell.source for cell in cells] == [cell.source for cell in _answered()]


def test_restore_puts_a_deleted_test_cell_back_after_its_answer():
    submission = [cell for cell in _answered() if cell.id != "q1-tests"]
    cells, issues = restore_cells(_template(), submission)
    assert _ids(cells) == ["cell-000", "q1-answer", "q1-tests", "q2-answer", "q2-tests"]
    assert cells[2].source == "assert f() == 1"
    assert issues == ["q1-tests was deleted (restored from the source)"]


@pytest.mark.parametrize(
    ("change", "reported"),
    [({"points": 100}, "points"), ({"locked": False}, "locked"), ({"grade": False}, "grade")],
)
def test_restore_resets_changed_metadata_and_reports_it(change, reported):
    submission = _answered()
    submission[2].metadata.nbgrader.update(change)
    cells, issues = restore_cells(_template(), submission)
    assert cells[2].metadata.nbgrader == _template()[2].metadata.nbgrader
    assert issues == [f"q1-tests: changed {reported} (restored)"]


def test_restore_puts_back_an_edited_locked_cell():
    submission = _answered()
    submission[2].source = "assert True"
    cells, issues = restore_cells(_template(), submission)
    assert cells[2].source == "assert f() == 1"
    assert issues == ["q1-tests: edited a locked cell (the source's version is graded)"]


def test_restore_turns_an_unknown_grade_id_into_a_plain_cell():
    submission = _answered()
    submission[2].metadata.nbgrader["grade_id"] = "bonus"
    submission[2].metadata.nbgrader["points"] = 100
    submission[2].source, submission[2].id = "assert True", "bonus"
    cells, issues = restore_cells(_template(), submission)
    bonus = next(cell for cell in cells if cell.get("id") == "bonus")
    assert "nbgrader" not in bonus.metadata
    assert _ids(cells) == ["cell-000", "q1-answer", "q1-tests", "bonus", "q2-answer", "q2-tests"]
    assert issues == [
        "a cell has nbgrader metadata 'bonus' the source does not have",
        "q1-tests was deleted (restored from the source)",
    ]


def test_restore_finds_stripped_test_cells_by_their_text():
    submission = _answered()
    for index, cell in enumerate(submission):
        cell.metadata = {}
        cell.id = f"stripped-{index}"
    cells, issues = restore_cells(_template(), submission)
    graded = [cell for cell in cells if cell.metadata.get("nbgrader", {}).get("grade")]
    assert [cell.metadata.nbgrader["grade_id"] for cell in graded] == ["q1-tests", "q2-tests"]
    assert len(cells) == len(submission)  # found in place, not added again
    assert "q1-tests had lost its nbgrader metadata (restored)" in issues


def test_restore_keeps_the_last_copy_of_a_duplicated_test_cell():
    submission = _answered()
    fake = copy.deepcopy(submission[2])
    fake.source, fake.id = "assert True", "fake"
    submission.insert(2, fake)
    cells, issues = restore_cells(_template(), submission)
    assert "nbgrader" not in cells[2].metadata
    assert cells[3].metadata.nbgrader["grade_id"] == "q1-tests"
    assert "q1-tests appears twice (the last copy is graded)" in issues


def test_protected_names_are_the_imports_outside_answer_cells():
    notebook = v4.new_notebook(
        cells=[
            v4.new_code_cell("import torch\nfrom torch import nn\nimport numpy as np\n%matplotlib"),
            v4.new_code_cell("from autograd_pitfalls import assert_grad_close as agc"),
            _cell("q1-answer", "import os", solution=True),
        ]
    )
    assert protected_names(notebook) == {
        "agc": "autograd_pitfalls:assert_grad_close",
        "nn": "torch:nn",
        "np": "numpy",
        "torch": "torch",
    }


def test_outcome_takes_the_most_serious_status_and_every_message():
    notebook = v4.new_notebook()
    assert outcome(notebook) == (OK, "")
    record(notebook, MEMORY, "cell 3 ran out of memory")
    record(notebook, TIMEOUT, "cell 5 ran past its limit")
    record(notebook, TAMPERED, "replaced torch.allclose")
    assert outcome(notebook) == (
        TAMPERED,
        "replaced torch.allclose; cell 5 ran past its limit; cell 3 ran out of memory",
    )
    reset(notebook)
    assert outcome(notebook) == (OK, "")


def test_a_test_cell_moved_above_its_answer_is_noted():
    from nbformat.v4 import new_code_cell

    from autograder.preprocessors.restore import moved_tests

    def cell(grade_id):
        made = new_code_cell("x = 1")
        made.metadata["nbgrader"] = {"grade_id": grade_id}
        return made

    in_order = [cell("q1-answer"), cell("q1-tests"), cell("q2-answer"), cell("q2-tests")]
    assert moved_tests(in_order) == []
    moved = [cell("q1-tests"), cell("q1-answer"), cell("q2-answer"), cell("q2-tests")]
    assert moved_tests(moved) == [
        "q1-tests was moved above q1-answer (graded in the order handed in: "
        "the test ran before the answer was defined)"
    ]
