"""The CUDA agreement check (``tests/support/cuda_agreement.py``) runs what autograde runs.

The check itself needs a GPU (it compares the stand-in's verdicts with CUDA's); what it
runs for each student is checked here, on any machine.
"""

from __future__ import annotations

from nbformat import v4

from tests.support.cuda_agreement import _died_alike, autograded_cells


def _cell(kind: str, source: str, **nbgrader) -> dict:
    cell = v4.new_code_cell(source) if kind == "code" else v4.new_markdown_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = nbgrader
    return cell


def test_the_students_answers_run_with_the_sources_tests_in_the_students_order():
    source = v4.new_notebook(
        cells=[
            _cell("code", "import torch", grade_id="setup", locked=True),
            _cell("code", "def f(): ...  # solution", grade_id="q1", solution=True),
            _cell("code", "assert f() == 1\n# hidden part", grade_id="q1-tests", grade=True),
        ]
    )
    submission = v4.new_notebook(
        cells=[
            _cell("markdown", "notes"),
            # The student moved the test above the answer and edited it, and added a cell.
            _cell("code", "pass  # edited test", grade_id="q1-tests", grade=True),
            _cell("code", "import torch; torch.manual_seed(0)", grade_id="setup", locked=True),
            _cell("code", "def f(): return 1", grade_id="q1", solution=True),
            _cell("code", "print(f())"),
        ]
    )
    assert autograded_cells(source, submission) == [
        ("q1-tests", "assert f() == 1\n# hidden part", True),
        ("setup", "import torch", False),
        ("q1", "def f(): return 1", False),
        (None, "print(f())", False),
    ]


def test_a_process_killed_alike_on_both_devices_is_agreement():
    assert _died_alike("exit -6: aborted", "exit -6: ")
    assert not _died_alike("exit -6: aborted", "exit -11: segfault")
    assert not _died_alike("exit 1: an error in the child", "exit 1: the same")
    assert not _died_alike("exit -6: aborted", {"q1-tests": "pass"})
