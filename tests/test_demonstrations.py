"""Demonstrations the grader skips: marked by the author, locked, read by nothing graded.

Skipping them must change no score: every fixture keeps its expected score with them
skipped (``tests/test_pipeline.py``, which grades every fixture; the expected scores were
set by grading every cell), the marks are checked against every later cell of each
source, and a student's own cell that reads what a skipped demonstration defines makes
the grader run the notebook whole.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat import v4

from autograder.demonstrations import (
    SKIP_TAG,
    bound_names,
    defined_names,
    skippable_ids,
    skipped_names_read,
    unsafe_marks,
)
from tests.conftest import ASSIGNMENTS
from tests.support.small_class import expected_scores


def _cell(source: str, grade_id: str = "", tagged: bool = False, locked: bool = True):
    cell = v4.new_code_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "locked": locked, "grade": False}
    if tagged:
        cell.metadata["tags"] = [SKIP_TAG]
    return cell


def test_defined_names_are_what_a_cell_leaves_in_the_namespace():
    source = (
        "import numpy as np, os.path\n"
        "from math import pi as circle\n"
        "x, (y, *rest) = 1, (2, 3)\n"
        "for item in []: pass\n"
        "with open('f') as handle: pass\n"
        "def helper():\n"
        "    local = 1\n"
        "    global shared\n"
        "    shared = local\n"
        "class Shape:\n"
        "    side = 2\n"
        "squares = [n * n for n in range(3)]\n"
        "if (found := 3): pass\n"
        "%matplotlib inline\n"
    )
    expected = {"np", "os", "circle", "x", "y", "rest", "item", "handle", "helper", "shared"}
    expected |= {"Shape", "squares", "found"}
    assert defined_names(source) == expected
    # What the grader looks for after a run: more rather than fewer (locals too).
    assert defined_names(source) | {"local", "side", "n"} <= bound_names(source)


def test_unsafe_marks_name_what_a_student_could_edit_and_what_a_later_cell_reads():
    cells = [
        _cell("plot = draw(x)", "demo-plot", tagged=True),
        _cell("graph = draw(x)", "", tagged=True),  # no grade id: not locked
        _cell("unlocked = 1", "demo-unlocked", tagged=True, locked=False),
        _cell("print(plot)"),
        _cell("graph = 2\nprint(graph)"),  # defines it again before reading it: fine
        _cell("print(unlocked)", "q1-tests"),
    ]
    problems = unsafe_marks(cells)
    assert any("cell 2 is tagged" in problem for problem in problems)
    assert any("demo-unlocked is tagged" in problem for problem in problems)
    assert "cell 4 reads 'plot', which demo-plot defines" in problems
    assert "q1-tests reads 'unlocked', which demo-unlocked defines" in problems
    assert not any("graph" in problem for problem in problems)
    assert skippable_ids(cells) == ["demo-plot"]


def test_the_name_a_skipped_cell_would_have_defined_is_found_in_any_output():
    error = v4.new_output("error", ename="NameError", evalue="name 'saved' is not defined")
    verdict = v4.new_output(
        "error",
        ename="AssertionError",
        evalue="the answer raised NameError: name 'plot' is not defined",
    )
    other = v4.new_output("stream", name="stdout", text="name 'torch' is not defined")
    cells = [v4.new_code_cell(outputs=[error, other]), v4.new_code_cell(outputs=[verdict])]
    assert skipped_names_read(cells, {"saved", "plot"}) == ["saved", "plot"]
    assert skipped_names_read(cells, {"unrelated"}) == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_mark_in_the_sources_is_safe(built_course, assignment):
    source = nbformat.read(built_course.source_notebook(assignment), as_version=4)
    assert unsafe_marks(source.cells) == []


def test_the_course_marks_its_heaviest_demonstrations(built_course):
    marked = {
        assignment: skippable_ids(
            nbformat.read(built_course.student_notebook(assignment), as_version=4).cells
        )
        for assignment in ASSIGNMENTS
    }
    assert "demo-saved-memory" in marked["06b_debugging_clinic"]
    assert "demo-graph-growth-plot" in marked["03b_data_vs_detach"]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_grading_skips_the_marked_demonstrations(built_course, graded, assignment):
    release = nbformat.read(built_course.student_notebook(assignment), as_version=4)
    marked = skippable_ids(release.cells)
    for student in ("perfect", "blank"):
        path = built_course.autograded_notebook(student, assignment)
        notebook = nbformat.read(path, as_version=4)
        assert notebook.metadata["autograder"]["skipped"] == {"cells": marked}
        for cell in notebook.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") in marked:
                assert "execution" not in cell.metadata  # never sent to the kernel
                assert "not run when grading" in cell.outputs[0]["text"]


@pytest.mark.slow
def test_a_student_cell_that_reads_a_skipped_definition_gets_the_notebook_run_whole(
    built_course, graded
):
    # Its last answer first calls count_nodes, which the skipped timing demonstration
    # defines: graded with that demonstration skipped, it raised and lost q4's points
    # (tests/test_pipeline.py checks its expected score, the points of a whole run).
    assignment, student = "04b_assembling_tensors", "reuses_a_skipped_demo_helper"
    path = built_course.autograded_notebook(student, assignment)
    notebook = nbformat.read(path, as_version=4)
    assert notebook.metadata["autograder"]["skipped"] == {
        "cells": [],
        "ran_whole_for": ["count_nodes"],
    }
    assert expected_scores(assignment)[student]["q4"] == "3"
