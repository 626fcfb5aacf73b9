"""What travels between the recording process and the workers: students, results, settings.

Plain data, kept apart from the grading code (:mod:`autograder.pipeline.autograde` and
:mod:`autograder.pipeline.worker`, which import nbgrader and nbconvert): a grading command
builds and sends these before it imports nbgrader, so that the grading service starts on
its students at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from autograder.course import Course
from autograder.pipeline.collect import MAX_NOTEBOOK_BYTES
from autograder.sandbox.limits import Limits
from autograder.submission import Submission


@dataclass(frozen=True)
class StudentNotebook:
    """One student to grade, as a worker receives it: no path, the notebook's bytes.

    Attributes:
        submission: The student and their status after collection (``ok``).
        notebook: Their collected notebook, as collect left it in ``submitted/``.
    """

    submission: Submission
    notebook: bytes


@dataclass(frozen=True)
class GradedNotebook:
    """What a worker returns for one student.

    Attributes:
        submission: The student with the status and message grading gave; ``graded`` says
            whether nbgrader ran the notebook to the end of its steps.
        notebook: The graded notebook (bytes), to record; None when grading failed.
        sandbox: How the worker isolated the student's kernel (one line).
        feedback: The files of the student's feedback folder, by relative path, when it
            was asked for and rendered; scored from the graded notebook itself (what
            autograde alone gives), so the recording process checks that the real
            gradebook holds nothing else.
        feedback_problem: Why the feedback could not be rendered ("" when it was).
    """

    submission: Submission
    notebook: bytes | None
    sandbox: str = ""
    feedback: dict[str, bytes] | None = None
    feedback_problem: str = ""


@dataclass(frozen=True)
class WorkerSettings:
    """How every worker of a run grades.

    Attributes:
        limits: Limits on each student's kernel.
        sandbox: Whether student code must run in bubblewrap (False: ``--no-sandbox``).
        require_sandbox: Refuse to grade where bubblewrap does not work, rather than grade
            with the sandbox off (remote workers: nobody would see it on their machine).
        feedback: Also render each student's feedback.
    """

    limits: Limits
    sandbox: bool = True
    require_sandbox: bool = False
    feedback: bool = False

    def same_zygote(self, other: WorkerSettings) -> bool:
        """Whether a worker set up for ``other`` can grade with these settings as it is."""
        return (self.limits, self.sandbox, self.require_sandbox) == (
            other.limits,
            other.sandbox,
            other.require_sandbox,
        )


def student_notebook(course: Course, assignment: str, submission: Submission) -> StudentNotebook:
    """Returns a collected student's notebook as a worker receives it, its digest recorded.

    Raises:
        OSError: If the notebook cannot be read.
        ValueError: If it is larger than collect lets a notebook be (put there by hand).
    """
    path = course.submitted_folder(submission.student_id, assignment) / f"{assignment}.ipynb"
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(
            f"{path.name} is {size / 2**20:.0f} MB, more than the "
            f"{MAX_NOTEBOOK_BYTES // 2**20} MB a notebook may have"
        )
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    return StudentNotebook(dataclasses.replace(submission, digest=digest), content)
