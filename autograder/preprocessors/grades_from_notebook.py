"""Feedback scored from the graded notebook itself, for a student nothing but autograde scored.

nbgrader's feedback reads each test cell's score and each answer's comment from the
gradebook (its ``GetGrades`` step), so a worker that renders feedback had to record the
student in a scratch gradebook first: a second run of nbgrader's autograde for every
student, besides the recording in the course (issue 42). What that recording stores is a
function of the graded notebook alone: ``SaveAutoGrades`` scores each test cell with
``nbgrader.utils.determine_grade`` and comments "No response." on an answer left as
released, with no late penalty in a course that has no deadline. :class:`GradesFromNotebook`
computes the same from the notebook, and gives the exporter what ``GetGrades`` gives it.

A student with more in the course's gradebook (a late penalty, a score or comment given
by hand) has their feedback rendered from it in the recording process
(:meth:`autograder.pipeline.record.Recorder.write_feedback`); a notebook with a cell left
to grade by hand has no score to read here, and :func:`scored_by_autograde_alone` says so.
"""

from __future__ import annotations

import logging

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor

NO_RESPONSE = "No response."  # what SaveAutoGrades records for an answer left as released

_log = logging.getLogger(__name__)


def scored_by_autograde_alone(nb: NotebookNode) -> bool:
    """Whether autograde gives every score of ``nb``: no answer or task is graded by hand."""
    return not any(utils.is_task(cell) for cell in nb.cells) and all(
        utils.determine_grade(cell, _log)[0] is not None
        for cell in nb.cells
        if utils.is_grade(cell)
    )


class GradesFromNotebook(NbGraderPreprocessor):
    """Puts scores and comments in a graded notebook as ``GetGrades`` would read them back.

    For each test cell, the score autograde gives it and its points; for each answer cell,
    the automatic comment; in the resources, the notebook's score, its points and a late
    penalty of 0.
    """

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        """Scores ``nb`` from its own outputs; returns it and the resources the exporter reads."""
        score = max_score = 0.0
        for cell in nb.cells:
            if utils.is_solution(cell) or utils.is_task(cell):
                unchanged = cell.metadata.nbgrader.get("checksum") == utils.compute_checksum(cell)
                answered = not unchanged or utils.is_task(cell)
                cell.metadata.nbgrader["comment"] = None if answered else NO_RESPONSE
            if utils.is_grade(cell):
                points, available = utils.determine_grade(cell, self.log)
                if points is None:
                    raise ValueError(
                        f"cell {cell.metadata.nbgrader['grade_id']} is graded by hand: its "
                        "feedback is rendered from the gradebook"
                    )
                # Floats, as the gradebook gives them back (determine_grade gives an int 0).
                cell.metadata.nbgrader["score"] = float(points)
                cell.metadata.nbgrader["points"] = float(available)
                score += float(points)
                max_score += float(available)
        resources["nbgrader"]["score"] = score
        resources["nbgrader"]["max_score"] = max_score
        resources["nbgrader"]["late_penalty"] = 0
        return nb, resources
