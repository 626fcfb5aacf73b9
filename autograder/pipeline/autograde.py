"""Autograde one student at a time, with kernels from a zygote, without the gradebook.

:class:`Grader` is what one grading worker runs: nbgrader's autograde steps with this
course's hardened ones (:class:`~autograder.preprocessors.restore.RestoreFromSource` before
nbgrader's OverwriteCells, :class:`~autograder.preprocessors.execute.SandboxedExecute`
instead of Execute), run on the notebook in memory (:mod:`autograder.pipeline.steps`), and
a :class:`~autograder.sandbox.zygote.Zygote` that every kernel is forked from. Its steps
read the assignment from a scratch course of its own, made from an
:class:`~autograder.pipeline.reference.AssignmentReference` (no course folder, and a
private gradebook that is thrown away). It returns the graded notebook and the rendered
feedback as bytes; the process that started the run records them
(:mod:`autograder.pipeline.record`), running only nbgrader's gradebook steps
(:func:`split_autograde_steps`) on the real gradebook. A student whose grading fails gets
a status and a message; the rest of the class is graded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

from jupyter_client.provisioning import KernelProvisionerFactory
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbformat import NotebookNode
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

from autograder import interrupts
from autograder.course import Course
from autograder.kernel.fs import remove_tree
from autograder.pipeline.payloads import GradedNotebook, StudentNotebook
from autograder.pipeline.reference import AssignmentReference, scratch_course
from autograder.pipeline.steps import AutogradeSteps, notebook_bytes, notebook_resources
from autograder.preprocessors.execute import SandboxedExecute
from autograder.preprocessors.grades_from_notebook import scored_by_autograde_alone
from autograder.preprocessors.restore import RestoreFromSource
from autograder.sandbox import provisioner, zygote
from autograder.sandbox.bwrap import Sandbox
from autograder.sandbox.limits import Limits
from autograder.submission import ERROR, OK, Submission, one_line, outcome

_log = logging.getLogger(__name__)
# SQLite waits this long for another process's write (formgrader, say) instead of failing.
GRADEBOOK_TIMEOUT = 120
# The first of nbgrader's autograde steps that writes the gradebook: it and the steps
# after it run where the gradebook is (the process that started the run), those before
# it on the workers.
FIRST_GRADEBOOK_STEP = SaveAutoGrades
# A student's rendered feedback travels back up to this size (it holds their outputs,
# each cell's cut to the output limit); larger, the recording process renders it.
MAX_FEEDBACK_BYTES = 100 * 2**20


def grading_config(course: Course, limits: Limits, secret: str = "") -> Config:
    """Returns the nbgrader settings of a hardened autograde (merged over the course's).

    Args:
        course: The course: its released notebooks are the reference for the tests.
        limits: Time, memory and output limits.
        secret: The course's grading secret, which seeds each student's hidden cases
            (:mod:`autograder.pipeline.judge`); a worker's scratch course has none of its own.
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
    config.SandboxedExecute.judge_secret = secret
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


def split_autograde_steps(config: Config) -> tuple[list, list]:
    """Splits ``config``'s autograde steps into the workers' and the gradebook's.

    Args:
        config: Settings from :func:`grading_config`.

    Returns:
        ``(execute, record)``: the steps before :data:`FIRST_GRADEBOOK_STEP` (they run the
        notebook and change it: workers run them) and the rest (they write the gradebook,
        in order: the recording process runs them).
    """
    steps = list(config.Autograde.autograde_preprocessors)
    cut = steps.index(FIRST_GRADEBOOK_STEP)
    return steps[:cut], steps[cut:]


class Grader:
    """Grades students of one assignment one at a time, in this process, in a scratch course.

    Args:
        reference: The assignment, as the process that started the run read it.
        limits: Limits on each student's kernel.
        sandbox: How kernels are isolated.
        kernels: The zygote to fork kernels from, possibly still starting (it stays the
            caller's to close); :meth:`start` makes one when None.
        folder: Where to lay out the scratch course (a new temporary folder when None).
    """

    def __init__(
        self,
        reference: AssignmentReference,
        limits: Limits,
        sandbox: Sandbox,
        kernels: zygote.Zygote | None = None,
        folder: Path | None = None,
    ) -> None:
        self.reference = reference
        self.assignment = reference.assignment
        self.limits = limits
        self.sandbox = sandbox
        self.zygote = kernels
        self._stack = contextlib.ExitStack()
        self._folder = folder
        self.course: Course | None = None
        self.steps: AutogradeSteps | None = None
        self._recorder = None  # the scratch course's, made for the first feedback

    def start(self) -> None:
        """Lays out the scratch course, and waits for the zygote (started here if none)."""
        folder = self._folder
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="autograder-course-"))
            self._stack.callback(remove_tree, folder)
        self.course = scratch_course(self.reference, folder)
        secret = self.reference.grading_secret
        config = self.course.settings(grading_config(self.course, self.limits, secret))
        execute, _ = split_autograde_steps(config)
        self.steps = AutogradeSteps(config, execute)
        if self.zygote is None:
            run_dir = Path(tempfile.mkdtemp(prefix="autograder-"))
            self._stack.callback(remove_tree, run_dir)
            self.zygote = zygote.Zygote(self.sandbox, run_dir, self.limits)
            self.zygote.launch()
            self._stack.callback(self.zygote.close)
        self.zygote.wait_ready()
        # What the course's notebooks import, imported once before any kernel is forked.
        self.zygote.preload_modules(self.reference.imports)
        self._stack.enter_context(forked_kernels(self.zygote))

    def close(self) -> None:
        """Removes the scratch course, and stops the zygote if this grader started it."""
        self._stack.close()

    def __enter__(self) -> Grader:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def grade(self, student: StudentNotebook, feedback: bool = False) -> GradedNotebook:
        """Autogrades one student; returns their graded notebook and outcome.

        Args:
            student: The student and their notebook.
            feedback: Also render their feedback (the HTML, hidden tests removed).
        """
        submission = dataclasses.replace(student.submission, graded=False)
        if submission.status != OK:
            return GradedNotebook(submission, None, self.sandbox.describe())
        assert self.course is not None and self.steps is not None, "start() first"
        if self.zygote is not None and not self.zygote.alive():
            self.zygote.restart()  # an earlier student's code took it down
        resources = notebook_resources(
            self.assignment,
            submission.student_id,
            self.assignment,
            self.course.gradebook_url(timeout=GRADEBOOK_TIMEOUT),
            # The kernel starts with the assignment's data files, as nbgrader's autograded
            # folder holds them (the source notebooks there are not copied).
            self.course.source / self.assignment,
        )
        try:
            graded = self.steps.run(student.notebook, resources)
        except Exception as error:  # the student gets the cause; the log, the traceback
            if interrupts.stopping():  # its kernel was killed: the run will say so
                _log.debug("autograde of %s stopped", submission.student_id, exc_info=True)
            else:
                _log.exception("autograde of %s failed", submission.student_id)
            cause = one_line(f"autograde failed: {type(error).__name__}: {error}", self.course)
            failed = dataclasses.replace(submission, status=ERROR, message=cause)
            return GradedNotebook(failed, None, self.sandbox.describe())
        content = notebook_bytes(graded)
        status, message = outcome(graded)
        joined = "; ".join(part for part in (submission.message, message) if part)
        done = dataclasses.replace(submission, status=status, message=joined, graded=True)
        rendered, problem = self._feedback(done, content, graded) if feedback else (None, "")
        return GradedNotebook(done, content, self.sandbox.describe(), rendered, problem)

    def _feedback(
        self, submission: Submission, content: bytes, graded: NotebookNode
    ) -> tuple[dict[str, bytes] | None, str]:
        """Renders a graded student's feedback; returns its files, or why it failed.

        Scored from the graded notebook itself (``GradesFromNotebook``), as the recording
        process will record it in the course's gradebook, and rendered in the scratch
        course, which keeps nothing of the student afterwards. A notebook with a cell to
        grade by hand has no score to read here: the recording process renders its
        feedback from the course's gradebook.
        """
        if not scored_by_autograde_alone(graded):
            return None, ""
        student_id = submission.student_id
        if self._recorder is None:
            from autograder.pipeline.record import Recorder  # it imports this module

            self._recorder = Recorder(
                self.course, self.assignment, self.limits, scores_from_notebook=True
            )
            self._stack.callback(self._recorder.close)
        try:
            # nbgrader renders feedback from the notebook it finds in autograded/.
            autograded = self.course.autograded_notebook(student_id, self.assignment)
            autograded.parent.mkdir(parents=True)
            autograded.write_bytes(content)
            files, problem = self._recorder.render_feedback(student_id)
            if files is None or sum(map(len, files.values())) > MAX_FEEDBACK_BYTES:
                return None, problem  # too large to send: the recording process renders it
            return files, ""
        finally:
            # The scratch course keeps no student: each is graded once and sent back.
            remove_tree(self.course.root / "autograded" / student_id)
            remove_tree(self.course.feedback / student_id)
