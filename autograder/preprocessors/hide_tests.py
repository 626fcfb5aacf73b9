"""Keep hidden tests hidden in feedback: nbgrader's ClearHiddenTests, on test cells only.

nbgrader's feedback shows each test cell as it ran, with its hidden tests. Its own
ClearHiddenTests cuts the hidden region from the source, but it looks for the markers
in every cell.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests


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
