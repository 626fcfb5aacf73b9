"""A test fails by raising, not by printing: a test cell's stderr is shown as stdout.

nbgrader scores 0 a test cell that wrote to stderr (``nbgrader.utils.determine_grade``),
and its Validate button and ``nbgrader validate`` list such a cell as failed. A correct
answer that logs with ``logging``, shows a progress bar (tqdm writes to stderr) or warns
would lose its exercise. The grader, ``make check`` and the lab's Validate button all
apply this rule: the text is kept, on stdout; errors and the judges' verdicts decide.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor


def stderr_is_not_failure(cell: NotebookNode) -> None:
    """Moves what a graded test cell wrote to stderr onto stdout; other cells are left."""
    if cell.cell_type != "code" or not utils.is_grade(cell):
        return
    for output in cell.outputs:
        if output.output_type == "stream" and output.get("name") == "stderr":
            output.name = "stdout"


class StderrIsNotFailure(NbGraderPreprocessor):
    """Applies :func:`stderr_is_not_failure` to every cell (after execution)."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict, index: int
    ) -> tuple[NotebookNode, dict]:
        """Moves a graded test cell's stderr onto stdout."""
        stderr_is_not_failure(cell)
        return cell, resources
