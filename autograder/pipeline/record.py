"""The one writer: the gradebook, ``autograded/`` and ``feedback/``, from the workers' results.

Workers grade in scratch courses of their own and send back each student's graded
notebook (:class:`~autograder.pipeline.payloads.GradedNotebook`). Only the process that
started the run writes the course: :class:`Recorder` records each result as nbgrader's
``autograde`` with only its gradebook steps would
(:func:`~autograder.pipeline.autograde.split_autograde_steps`), in one gradebook session for
the run (:mod:`autograder.pipeline.save_grades`); where the course's settings ask for more
than that module does, through nbgrader's converter itself, the worker's notebook in place
of the submitted one (:class:`~autograder.preprocessors.graded.UseGradedNotebook`). Then
nbgrader's ``generate_feedback``. So SQLite, with one writer, serves a class of any size,
and the gradebook can be a server that instructors share (``--db-url``).

Recording is idempotent per student: recording the same result twice (a batch graded
again after its worker died) leaves the same grades, once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from traitlets.config import Config

from autograder.atomic import replace_file
from autograder.course import Course
from autograder.kernel.fs import remove_tree
from autograder.pipeline.autograde import grading_config, split_autograde_steps
from autograder.pipeline.payloads import GradedNotebook
from autograder.pipeline.save_grades import GradebookRecording, recordable
from autograder.preprocessors.graded import UseGradedNotebook
from autograder.sandbox.limits import Limits
from autograder.submission import ERROR, OK, Submission, one_line

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

_log = logging.getLogger(__name__)
# Where nbgrader renders a student's feedback before it is put in place (course folder).
FEEDBACK_STAGING = ".feedback-staging"


def _last_lines(text: str, count: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-count:])


def _joined(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def record_config(
    course: Course, limits: Limits, folder: Path, scores_from_notebook: bool = False
) -> Config:
    """Returns the settings of an autograde that records workers' notebooks in ``course``.

    Args:
        course: The real course (its gradebook URL, its folders).
        limits: The run's limits (the same settings as the workers', for the steps that
            read them).
        folder: Where the workers' notebooks are laid out for
            :class:`~autograder.preprocessors.graded.UseGradedNotebook`.
        scores_from_notebook: Render feedback scored from the notebook in ``autograded/``
            rather than from the gradebook (see :func:`feedback_config`).
    """
    config = grading_config(course, limits)
    _, recording = split_autograde_steps(config)
    config.Autograde.sanitize_preprocessors = [UseGradedNotebook]
    config.Autograde.autograde_preprocessors = recording
    config.UseGradedNotebook.folder = str(folder)
    # nbgrader renders feedback here; the files are then put in feedback/ one by one,
    # each whole (autograder.atomic), so that a reader never sees a half-written page.
    config.CourseDirectory.feedback_directory = FEEDBACK_STAGING
    if scores_from_notebook:
        from autograder.pipeline.feedback import feedback_config  # nbconvert: when used

        config.merge(feedback_config(scores_from_notebook=True))
    return config


class Recorder:
    """Writes workers' results into the course: gradebook, ``autograded/``, ``feedback/``.

    Args:
        course: The course being graded.
        assignment: The assignment id.
        limits: The run's limits.
        scores_from_notebook: Render feedback scored from each notebook in ``autograded/``
            rather than from the gradebook: what a grading worker does, in a scratch course
            whose gradebook records no student.
    """

    def __init__(
        self,
        course: Course,
        assignment: str,
        limits: Limits | None = None,
        scores_from_notebook: bool = False,
    ) -> None:
        self.course = course
        self.assignment = assignment
        self.folder = Path(tempfile.mkdtemp(prefix="autograder-results-"))
        config = record_config(course, limits or Limits(), self.folder, scores_from_notebook)
        self.api = course.api(config)
        self._gradebook: Gradebook | None = None
        self._recording: GradebookRecording | None = None

    def close(self) -> None:
        """Closes the gradebook session, and removes the folder the results passed through."""
        try:
            if self._gradebook is not None:
                self._gradebook.close()
        finally:
            remove_tree(self.folder)

    def _direct(self) -> GradebookRecording | None:
        """The run's recording in one gradebook session; None where the converter must do it.

        Opened at the first student, in the thread that records (not the one that made
        this recorder: see ``parallel._LazyRecorder``).
        """
        if self._gradebook is None:
            from nbgrader.api import Gradebook
            from nbgrader.converters import Autograde

            coursedir = self.api.coursedir
            self._gradebook = Gradebook(coursedir.db_url, coursedir.course_id)
            converter = Autograde(coursedir=coursedir, parent=self.api)
            converter.create_student = True  # as the API's autograde(create=True) sets it
            found = self._gradebook.find_assignment(self.assignment).notebooks
            if recordable(converter, [notebook.name for notebook in found], self.assignment):
                self._recording = GradebookRecording(converter, self._gradebook, self.assignment)
        return self._recording

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def record(self, result: GradedNotebook) -> Submission:
        """Writes one student's grades and graded notebook; returns their submission.

        A student the worker could not grade keeps the worker's status and message, and
        loses an earlier graded notebook, as with nbgrader's own failed autograde.
        """
        submission = dataclasses.replace(result.submission, graded=False)
        student = submission.student_id
        if result.notebook is None:
            remove_tree(self.course.root / "autograded" / student / self.assignment)
            if submission.status == OK:  # a worker that says nothing went wrong, and sent nothing
                submission = dataclasses.replace(
                    submission, status=ERROR, message=_joined(submission.message, "not graded")
                )
            return submission
        problem = self.save_grades(student, result.notebook)
        if problem:
            return dataclasses.replace(
                submission, status=ERROR, message=_joined(submission.message, problem)
            )
        return dataclasses.replace(submission, graded=True)

    def save_grades(self, student: str, notebook: bytes) -> str:
        """Records a graded notebook: scores, ``autograded/``; returns why it failed, or "".

        Args:
            student: The student id.
            notebook: Their graded notebook, as a worker returned it.
        """
        try:
            direct = self._direct()
            if direct is not None:
                direct.record(student, notebook)
                return ""
        except Exception as error:  # this student only; the traceback in the log
            _log.debug("recording %s failed", student, exc_info=True)
            return "recording grades failed: " + one_line(f"{type(error).__name__}: {error}")
        staged = self.folder / student / f"{self.assignment}.ipynb"
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.write_bytes(notebook)
        try:
            done = self.api.autograde(self.assignment, student, force=True, create=True)
        finally:
            remove_tree(staged.parent)
        if not done["success"]:
            return "recording grades failed: " + _last_lines(done.get("error") or done["log"])
        return ""

    def write_feedback(self, submission: Submission, result: GradedNotebook) -> Submission:
        """Writes the feedback a worker rendered for a student just recorded.

        The worker scored it from the graded notebook, as autograde alone scores it;
        where the real gradebook holds more for this student (a late
        penalty, a score or comment an instructor gave in formgrader), or the worker sent
        none, the feedback is rendered here instead.
        """
        if not submission.graded:
            return submission
        if result.feedback_problem:
            message = _joined(submission.message, result.feedback_problem)
            return dataclasses.replace(submission, message=message)
        if result.feedback is None or self._graded_by_hand(submission.student_id):
            return self.feedback(submission)
        self.put_feedback(submission.student_id, result.feedback)
        return submission

    def put_feedback(self, student: str, files: dict[str, bytes]) -> None:
        """Puts a student's feedback files in ``feedback/``, each whole, then drops older ones.

        Args:
            student: The student id.
            files: The files of their feedback folder, by relative path.

        Raises:
            WriteError: If one cannot be written; the files already there are kept.
        """
        folder = self.course.feedback / student / self.assignment
        written = set()
        for relative, content in files.items():
            target = folder / relative
            if folder not in target.resolve().parents:
                continue  # a path a worker should never send
            written.add(replace_file(target, content))
        for path in sorted(folder.rglob("*"), reverse=True) if folder.is_dir() else []:
            if path.is_file() and path not in written:
                path.unlink()  # a file of an earlier feedback the new one does not have
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()

    def render_feedback(self, student: str) -> tuple[dict[str, bytes] | None, str]:
        """Renders a graded student's feedback (hidden tests removed); returns its files.

        nbgrader writes them in a staging folder of the course, emptied afterwards.

        Returns:
            ``(files, "")``, files by path relative to the student's feedback folder, or
            ``(None, why)`` when nbgrader failed.
        """
        staging = self.course.root / FEEDBACK_STAGING / student
        try:
            result = self.api.generate_feedback(self.assignment, student, force=True)
            if not result["success"]:
                return None, "feedback failed: " + _last_lines(result.get("error") or result["log"])
            folder = staging / self.assignment
            files = {
                str(path.relative_to(folder)): path.read_bytes()
                for path in sorted(folder.rglob("*"))
                if path.is_file() and not path.is_symlink()
            }
            return files, ""
        finally:
            remove_tree(staging)
            with contextlib.suppress(OSError):
                staging.parent.rmdir()  # when no other student's is there

    def _graded_by_hand(self, student: str) -> bool:
        """Whether the gradebook has more for ``student`` than autograde wrote."""
        with self.course.gradebook_db() as gradebook:
            for notebook in gradebook.find_submission(self.assignment, student).notebooks:
                if notebook.late_submission_penalty:
                    return True
                if any(grade.manual_score is not None for grade in notebook.grades):
                    return True
                if any(comment.manual_comment for comment in notebook.comments):
                    return True
        return False

    def feedback(self, submission: Submission) -> Submission:
        """Renders and writes one graded student's feedback HTML (hidden tests removed)."""
        if not submission.graded:
            return submission
        files, problem = self.render_feedback(submission.student_id)
        if files is None:
            return dataclasses.replace(submission, message=_joined(submission.message, problem))
        self.put_feedback(submission.student_id, files)
        return submission
