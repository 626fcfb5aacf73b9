"""Autograde and write feedback for one student at a time, with kernels from a zygote.

:class:`Grader` is one grading process: nbgrader's API with this course's hardened
steps (:class:`~autograder.preprocessors.restore.RestoreFromSource` before nbgrader's
OverwriteCells, :class:`~autograder.preprocessors.execute.SandboxedExecute` instead of
Execute), and a :class:`~autograder.sandbox.zygote.Zygote` that every kernel is forked
from. A student whose grading fails gets a status and a message; the rest of the class is
graded.
:mod:`autograder.pipeline.parallel` runs several graders side by side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
from jupyter_client.provisioning import KernelProvisionerFactory
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    IgnorePattern,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets.config import Config

from autograder.course import Course
from autograder.kernel.fs import remove_tree
from autograder.preprocessors.execute import SandboxedExecute
from autograder.preprocessors.restore import RestoreFromSource
from autograder.sandbox import provisioner, zygote
from autograder.sandbox.bwrap import Sandbox
from autograder.sandbox.limits import Limits
from autograder.submission import ERROR, OK, Submission, one_line, outcome

_log = logging.getLogger(__name__)
# SQLite waits this long for another grading process's write instead of failing.
GRADEBOOK_TIMEOUT = 120


def grading_config(course: Course, limits: Limits) -> Config:
    """Returns the nbgrader settings of a hardened autograde (merged over the course's).

    Args:
        course: The course: its released notebooks are the reference for the tests.
        limits: Time, memory and output limits.
    """
    config = Config()
    config.Autograde.sanitize_preprocessors = [
        ClearOutput,
        RestoreFromSource,
        DeduplicateIds,
        OverwriteKernelspec,
        OverwriteCells,
        CheckCellMetadata,
    ]
    config.Autograde.autograde_preprocessors = [
        SandboxedExecute,
        IgnorePattern,
        ClearMetadataPreprocessor,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]
    config.RestoreFromSource.release_directory = str(course.release)
    config.AsyncKernelManager.client_class = "autograder.sandbox.provisioner.ReadyClient"
    config.Execute.timeout = limits.cell_timeout
    config.SandboxedExecute.notebook_timeout = limits.notebook_timeout
    # One output limit: SandboxedExecute's, applied while the cell runs (nbgrader's
    # LimitOutput, which cuts afterwards, is left out: a flood never reaches it).
    config.SandboxedExecute.max_output_chars = limits.output_chars
    config.SandboxedExecute.judge_secret = course.grading_secret()
    config.CourseDirectory.db_url = course.gradebook_url(timeout=GRADEBOOK_TIMEOUT)
    return config


@contextlib.contextmanager
def forked_kernels(kernels: zygote.Zygote) -> Iterator[None]:
    """Makes jupyter_client start kernels as forks of ``kernels`` within this block."""
    factory = KernelProvisionerFactory.instance()
    previous = factory.default_provisioner_name
    factory.default_provisioner_name = provisioner.NAME
    try:
        with zygote.using(kernels):
            yield
    finally:
        factory.default_provisioner_name = previous


def _last_lines(text: str, count: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-count:])


class Grader:
    """Grades students of one assignment one at a time, in this process.

    Args:
        course: The course, with the assignment released (in the gradebook).
        assignment: The assignment id.
        limits: Limits on each student's kernel.
        sandbox: How kernels are isolated.
        kernels: The zygote to fork kernels from, possibly still starting; :meth:`start`
            makes one when None.
    """

    def __init__(
        self,
        course: Course,
        assignment: str,
        limits: Limits,
        sandbox: Sandbox,
        kernels: zygote.Zygote | None = None,
    ) -> None:
        self.course = course
        self.assignment = assignment
        self.limits = limits
        self.sandbox = sandbox
        self.api = course.api(grading_config(course, limits))
        self._stack = contextlib.ExitStack()
        self.zygote = kernels

    def start(self) -> None:
        """Waits for the zygote (started here when none was given) to be ready."""
        if self.zygote is None:
            run_dir = Path(tempfile.mkdtemp(prefix="autograder-"))
            self._stack.callback(remove_tree, run_dir)
            self.zygote = zygote.Zygote(self.sandbox, run_dir, self.limits)
            self.zygote.launch()
            self._stack.callback(self.zygote.close)
        self.zygote.wait_ready()
        self._stack.enter_context(forked_kernels(self.zygote))

    def close(self) -> None:
        """Stops the zygote if this grader started it."""
        self._stack.close()

    def __enter__(self) -> Grader:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def autograde(self, submission: Submission) -> Submission:
        """Autogrades one collected student; returns the submission with its outcome."""
        if submission.status != OK:
            return submission
        submission = dataclasses.replace(submission, graded=False)
        student = submission.student_id
        if self.zygote is not None and not self.zygote.alive():
            self.zygote.restart()  # an earlier student's code took it down
        graded = self.api.autograde(self.assignment, student, force=True, create=True)
        if not graded["success"]:
            # The whole log goes to the grader's log; the CSV gets its last line.
            log = graded.get("error") or graded["log"] or ""
            _log.error("autograde of %s failed:\n%s", student, log)
            message = "autograde failed: " + one_line(_last_lines(log, 1), self.course)
            return dataclasses.replace(submission, status=ERROR, message=message)
        notebook = self.course.autograded_notebook(student, self.assignment)
        status, message = outcome(nbformat.read(notebook, as_version=4))
        joined = "; ".join(part for part in (submission.message, message) if part)
        return dataclasses.replace(submission, status=status, message=joined, graded=True)

    def feedback(self, submission: Submission) -> Submission:
        """Writes one graded student's feedback HTML (hidden tests removed)."""
        if not submission.graded:
            return submission
        result = self.api.generate_feedback(self.assignment, submission.student_id, force=True)
        if result["success"]:
            return submission
        problem = "feedback failed: " + _last_lines(result.get("error") or result["log"])
        message = "; ".join(part for part in (submission.message, problem) if part)
        return dataclasses.replace(submission, message=message)
