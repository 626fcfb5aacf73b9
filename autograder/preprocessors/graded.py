"""Hand nbgrader a notebook a worker already graded, so that only its gradebook steps run here.

Workers run nbgrader's sanitize steps and the execution (see
:mod:`autograder.pipeline.autograde`), in a course of their own. The process that started
the run then runs nbgrader's own ``autograde`` once more for each student, in the real
course, with :class:`UseGradedNotebook` as its only sanitize step and the gradebook steps
(SaveAutoGrades and what follows) as its autograde steps: nbgrader does what it always
does around them (the student and submission records, timestamps and late penalties, the
assignment's files, the autograded folder and its permissions), and nothing runs twice.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode


class UseGradedNotebook(NbGraderPreprocessor):
    """Replaces the submitted notebook with the one a worker graded for the same student.

    The worker's notebook is read from ``<folder>/<student>/<notebook>.ipynb``; the student
    and the notebook come from the resources nbgrader passes every preprocessor.
    """

    folder = Unicode(
        "", help="Where the worker's graded notebooks are, one folder per student."
    ).tag(config=True)

    def graded_path(self, resources: dict) -> Path:
        """Returns where the graded notebook of the student in ``resources`` lies."""
        names = resources["nbgrader"]
        return Path(self.folder) / names["student"] / f"{names['notebook']}.ipynb"

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        """Returns the worker's graded notebook instead of ``nb``."""
        return nbformat.read(self.graded_path(resources), as_version=4), resources
