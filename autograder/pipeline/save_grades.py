"""Record a graded notebook in the gradebook as nbgrader's autograde does, in one session.

The recording process used to run nbgrader's whole ``autograde`` converter for each
student, with only its gradebook steps (SaveAutoGrades, AssignLatePenalties,
CheckCellMetadata): two passes of nbconvert's exporter over the notebook (each a deep
copy, a schema check and a write) and seven gradebook connections, each one inspecting
the schema. That was 75 ms of the recording process's core per student, taken from the
grading workers on a machine they share. :class:`GradebookRecording` does the same with
one gradebook session for the run and the notebook read and written once, through
nbgrader's public API (``Gradebook``, ``nbgrader.utils``, the late-penalty plugin, the
metadata validator).

What it writes is what the converter writes (``tests/test_save_grades.py`` records the
same class both ways and compares every row of the gradebook and every file of
``autograded/``). A course whose nbgrader settings ask for more than this module
reproduces (a pre- or post-convert hook, an assignment of several notebooks) is recorded
by the converter: :func:`recordable` says which.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.api import Gradebook, SubmittedAssignment
from nbgrader.converters import Autograde
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.preprocessors import AssignLatePenalties

from autograder.kernel.fs import remove_tree


def recordable(converter: Autograde, notebooks: list[str], assignment: str) -> bool:
    """Whether :class:`GradebookRecording` records ``assignment`` as ``converter`` would.

    Args:
        converter: nbgrader's autograde converter, with the course's settings.
        notebooks: The names of the assignment's notebooks in the gradebook.
        assignment: The assignment id.
    """
    hooks = converter.pre_convert_hook or converter.post_convert_hook
    return not hooks and notebooks == [assignment]


class GradebookRecording:
    """Records graded notebooks of one assignment in the gradebook, one session for all.

    Args:
        converter: nbgrader's autograde converter, with the course's settings (folders,
            permissions, files not to overwrite, the late-penalty plugin); only its
            settings are read.
        gradebook: The course's gradebook, open for the run (the caller closes it).
        assignment: The assignment id; its one notebook has the same name.
    """

    def __init__(self, converter: Autograde, gradebook: Gradebook, assignment: str) -> None:
        self.converter = converter
        self.coursedir = converter.coursedir
        self.gradebook = gradebook
        self.assignment = assignment
        # The plugin nbgrader's AssignLatePenalties would use, made as it makes it.
        self._late = AssignLatePenalties(parent=converter)
        self._late.init_plugin()

    def _folder(self, root: str, student: str) -> Path:
        return Path(self.coursedir.format_path(root, student, self.assignment))

    def record(self, student: str, notebook: bytes) -> None:
        """Writes one student's graded notebook: gradebook, ``autograded/``, permissions.

        As ``nbgrader autograde --force --create`` with the gradebook steps only: the
        student's autograded folder is made anew from their submitted files and the
        assignment's source files, their student and submission records are updated (the
        submission's timestamp from ``timestamp.txt``), each graded cell's score and each
        answer's comment saved, and the late penalty assigned.

        Raises:
            Exception: What nbgrader's API raises (an unknown assignment, a corrupt
                notebook, a database error); the caller says it in the student's message.
        """
        submitted = self._folder(self.coursedir.submitted_directory, student)
        destination = self._folder(self.coursedir.autograded_directory, student)
        remove_tree(destination)  # --force: the folder is made anew
        try:
            graded = nbformat.reads(notebook, as_version=4)
            self._copy_files(submitted, destination)
            self._save(student, graded, submitted)
            MetadataValidator().validate_nb(graded)
            destination.mkdir(parents=True, exist_ok=True)
            nbformat.write(graded, destination / f"{self.assignment}.ipynb")
        except BaseException:
            # As nbgrader's converter leaves a failed student; and no transaction left
            # open, which would keep another writer of the gradebook waiting.
            self.gradebook.db.rollback()
            remove_tree(destination)
            raise
        self.converter.set_permissions(self.assignment, student)

    def _copy_files(self, submitted: Path, destination: Path) -> None:
        """The student's other files, then the assignment's own over them (nbgrader's order)."""
        coursedir = self.coursedir
        ignore = [*coursedir.ignore, "*.ipynb"]
        source = Path(coursedir.format_path(coursedir.source_directory, ".", self.assignment))
        not_overwritten = self.converter.exclude_overwriting.get(self.assignment, [])
        kept = {source / name for name in not_overwritten}
        theirs = utils.find_all_files(str(submitted), ignore)
        ours = [f for f in utils.find_all_files(str(source), ignore) if Path(f) not in kept]
        for root, files in ((submitted, theirs), (source, ours)):
            for filename in files:
                target = destination / os.path.relpath(filename, root)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.unlink(missing_ok=True)
                shutil.copy(filename, target)

    def _save(self, student: str, graded: nbformat.NotebookNode, submitted: Path) -> None:
        """The student, their submission, their scores and comments, their late penalty."""
        gradebook, assignment = self.gradebook, self.assignment
        if self.converter.create_student:
            gradebook.update_or_create_student(student)
        else:
            gradebook.find_student(student)
        gradebook.find_assignment(assignment)
        timestamp = self.coursedir.get_existing_timestamp(str(submitted))
        stamped = {"timestamp": timestamp} if timestamp else {}
        submission = gradebook.update_or_create_submission(assignment, student, **stamped)
        gradebook.find_notebook(assignment, assignment)
        for cell in graded.cells:
            self._save_cell(student, cell)
        gradebook.db.commit()
        self._assign_late_penalty(student, submission)

    def _save_cell(self, student: str, cell: nbformat.NotebookNode) -> None:
        """Saves one cell's score or comment, as SaveAutoGrades does (the caller commits)."""
        # The cell, its notebook (named as the assignment), the assignment, the student.
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        names = (grade_id, self.assignment, self.assignment, student)
        if utils.is_grade(cell):
            grade = self.gradebook.find_grade(*names)
            grade.auto_score, _ = utils.determine_grade(cell, self.converter.log)
            # A score a grader gave by hand, or none from the tests: a person looks again.
            grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        if utils.is_solution(cell) or utils.is_task(cell):
            comment = self.gradebook.find_comment(*names)
            untouched = cell.metadata.nbgrader.get("checksum") == utils.compute_checksum(cell)
            comment.auto_comment = "No response." if untouched and not utils.is_task(cell) else None

    def _assign_late_penalty(self, student: str, submission: SubmittedAssignment) -> None:
        """Assigns the plugin's late penalty within [0, score], as AssignLatePenalties does."""
        names = (self.assignment, self.assignment, student)
        notebook = self.gradebook.find_submission_notebook(*names)
        notebook.late_submission_penalty = None
        late = submission.total_seconds_late
        if late > 0:
            penalty = self._late.plugin_inst.late_submission_penalty(student, notebook.score, late)
            if penalty is not None:
                notebook.late_submission_penalty = min(max(penalty, 0), notebook.score)
        self.gradebook.db.commit()
