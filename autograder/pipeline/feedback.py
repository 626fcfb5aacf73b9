"""Keep hidden tests hidden in the feedback students receive.

nbgrader's feedback shows each test cell as it ran: with its hidden tests, and with
tracebacks that quote the failing hidden line. Here the hidden region is cut from the
source (nbgrader's own ClearHiddenTests, on test cells only) and a failing test's
traceback is reduced to its message, which the course's helpers write to name the pitfall.
"""

from __future__ import annotations

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor
from traitlets.config import Config


class ClearHiddenTestsInTests(ClearHiddenTests):
    """nbgrader's ClearHiddenTests, on locked and graded cells only.

    nbgrader's version looks for the hidden-test markers in every cell, and fails the
    whole feedback when a student's own cell mentions only the opening one.
    """

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict, cell_index: int
    ) -> tuple[NotebookNode, dict]:
        """Cuts the hidden tests of a test cell; a student's cell passes unchanged."""
        if not (utils.is_grade(cell) or utils.is_locked(cell)):
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)


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


def feedback_config() -> Config:
    """Returns the nbgrader settings that make generate_feedback hide hidden tests."""
    config = Config()
    config.GenerateFeedback.preprocessors = [
        GetGrades,
        ClearHiddenTestsInTests,
        ShortenTestTracebacks,
        CSSHTMLHeaderPreprocessor,
    ]
    return config
