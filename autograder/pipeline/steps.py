"""nbgrader's autograde steps run on one notebook in memory, as its converter runs them.

nbgrader's ``Autograde`` converter takes a notebook through two passes of nbconvert's
exporter: it reads the submitted file, deep-copies the notebook, runs the sanitize steps,
writes the result into ``autograded/``, reads it back, deep-copies it again, runs the
execution steps and writes it once more, around gradebook rows for the student and the
submission. A worker receives the notebook as bytes and sends the graded one back as
bytes; the gradebook is written elsewhere (:mod:`autograder.pipeline.record`). For it that
plumbing cost about 0.17 s of a core per student (02, 28 students, ``--jobs 1``): a tenth
of the grader's whole CPU per student.

:class:`AutogradeSteps` runs the same preprocessor classes, built from the same settings
(a fresh instance of each per notebook, as the converter builds them), in the same order,
with the resources the converter gives them, and checks the notebook against its schema
where the converter does with ``optimistic_validation`` (after each pass). The execution
pass runs with ``NBGRADER_EXECUTION=autograde``, as nbgrader's does.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from traitlets.config import Config


def notebook_resources(
    assignment: str, student: str, notebook: str, db_url: str, folder: Path
) -> ResourcesDict:
    """Returns the resources nbgrader's converter hands every step for one notebook.

    Args:
        assignment: The assignment id.
        student: The student id.
        notebook: The notebook's name (without ``.ipynb``).
        db_url: The gradebook the steps read the assignment's cells from.
        folder: The folder the notebook's kernel starts in: its files are copied into the
            kernel's working copy (:mod:`autograder.sandbox.provisioner`).
    """
    resources = ResourcesDict()
    resources["unique_key"] = notebook
    resources["output_files_dir"] = f"{notebook}_files"
    resources["nbgrader"] = {
        "student": student,
        "assignment": assignment,
        "notebook": notebook,
        "db_url": db_url,
    }
    resources["metadata"] = ResourcesDict(name=notebook, path=str(folder))
    resources["output_extension"] = ".ipynb"
    return resources


class AutogradeSteps:
    """nbgrader's autograde steps, configured once, run on each notebook in memory.

    Args:
        config: The settings nbgrader's ``Autograde`` would run with (its
            ``sanitize_preprocessors`` and ``autograde_preprocessors`` among them).
        execute: The execution steps: those of ``autograde_preprocessors`` before the
            gradebook's (:func:`autograder.pipeline.autograde.split_autograde_steps`).
    """

    def __init__(self, config: Config, execute: list) -> None:
        self.config = config
        self.sanitize = list(config.Autograde.sanitize_preprocessors)
        self.execute = list(execute)

    def _run(self, steps: list, nb: NotebookNode, resources: ResourcesDict) -> NotebookNode:
        for step in steps:
            # A fresh instance per notebook, as nbgrader's converter makes one per run:
            # no state of one student's run (a kernel client, ids seen) reaches the next.
            nb, resources = step(config=self.config)(nb, resources)
        # Where nbconvert checks with optimistic_validation: after a pass's last step.
        nbformat.validate(nb, relax_add_props=True)
        return nb

    def run(self, content: bytes, resources: ResourcesDict) -> NotebookNode:
        """Sanitizes and executes one submitted notebook; returns the graded notebook.

        Args:
            content: The submitted notebook's bytes.
            resources: From :func:`notebook_resources`.

        Raises:
            nbformat.ValidationError: If the notebook is not a valid notebook after a pass.
            Exception: Whatever a step raises (nbgrader would fail the student on it too).
        """
        nb = nbformat.reads(content.decode("utf-8"), as_version=4)
        nb = self._run(self.sanitize, nb, resources)
        with utils.setenv(NBGRADER_EXECUTION="autograde"):
            return self._run(self.execute, nb, resources)


def notebook_bytes(nb: NotebookNode) -> bytes:
    """Returns ``nb`` as nbconvert's notebook exporter writes it (ending with a newline)."""
    text = nbformat.writes(nb)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")
