"""In feedback, a failing test's traceback becomes its message: no hidden line quoted.

A traceback quotes the line of the hidden test that failed; the message, which the
course's helpers write to name the pitfall, is what a student needs.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor


class ShortenTestTracebacks(NbGraderPreprocessor):
    """Replaces the traceback of every error in a graded test cell by ``Name: message``."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict, index: int
    ) -> tuple[NotebookNode, dict]:
        """Shortens the error outputs of graded code cells; other cells pass unchanged."""
        if cell.cell_type == "code" and utils.is_grade(cell):
            for output in cell.outputs:
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
