"""The status of one student's submission, and where the grading steps record it.

Each step that finds something wrong with a submission (the restore of its tests, the
sandboxed execution) records it in the graded notebook's metadata under ``autograder``;
:func:`outcome` turns that into one status and one message for the CSV and the report.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder.atomic import replace_file
from autograder.course import Course

if TYPE_CHECKING:
    from nbformat import NotebookNode

OK = "ok"
TIMEOUT = "timeout"
MEMORY = "memory"
TAMPERED = "tampered"
ERROR = "error"
INTERRUPTED = "interrupted"
UNREADABLE = "unreadable"
MISSING = "missing"
# Every status, most serious first: the one a student gets when several apply.
STATUSES = (TAMPERED, TIMEOUT, MEMORY, ERROR, INTERRUPTED, UNREADABLE, MISSING, OK)
KEY = "autograder"
NOTES = "notes"


@dataclass(frozen=True)
class Submission:
    """One student's entry in a submissions folder.

    Attributes:
        student_id: The student, from the entry's name.
        status: ``ok``, ``missing`` or ``unreadable`` after collecting; grading may change
            ``ok`` into ``timeout``, ``memory``, ``tampered`` or ``error``, and a run
            stopped before the student was done into ``interrupted``.
        message: What was wrong, or what was done (for example a renamed file).
        graded: Whether autograde recorded grades for it (possibly partial: a kernel that
            died or ran out of time still leaves the grades of the tests before).
        note: What collecting said of the entry (a renamed file, say), kept apart from
            what grading says, so that grading the student again starts from it.
        digest: The SHA-256 of the notebook that was graded ("" before grading).
        reference: The fingerprint of the tests and limits it was graded with
            (:func:`~autograder.pipeline.parallel.grading_fingerprint`): a run that finds
            the same notebook graded with the same ones leaves it be.
    """

    student_id: str
    status: str
    message: str = ""
    graded: bool = False
    note: str = ""
    digest: str = ""
    reference: str = ""

    def graded_as_it_is(self, digest: str, reference: str) -> bool:
        """Whether this notebook (``digest``) was graded with these tests and limits already.

        Args:
            digest: The SHA-256 of the student's collected notebook now.
            reference: The fingerprint of the tests and limits now.
        """
        return self.graded and self.digest == digest and self.reference == reference


def hide_paths(text: str, course: Course | None = None) -> str:
    """Returns ``text`` without the grading machine's paths.

    Paths of the course, the grader, the Python environment and the temporary folders
    become ``<course>``, ``<grader>``, ``<python>`` and ``<tmp>``.

    Args:
        text: A message or an output, possibly a traceback.
        course: The graded course, whose folder is hidden too.
    """
    from autograder.course import REPO

    replacements = [
        (str(course.root) if course else "", "<course>"),
        (str(REPO), "<grader>"),
        (sys.prefix, "<python>"),
        (sys.base_prefix, "<python>"),
        (tempfile.gettempdir(), "<tmp>"),
    ]
    for path, placeholder in sorted(replacements, key=lambda pair: -len(pair[0])):
        if path and path != "/":
            text = text.replace(path, placeholder)
    return text


def one_line(message: str, course: Course | None = None, limit: int = 500) -> str:
    """Returns ``message`` as a CSV cell wants it: one line, no path of the grading machine.

    Paths become placeholders (:func:`hide_paths`); line breaks become ``" | "``; the
    result is cut at ``limit`` characters.

    Args:
        message: A status message, possibly a traceback.
        course: The graded course, whose folder is hidden too.
        limit: The most characters kept.
    """
    message = hide_paths(message, course)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = re.sub(r"\s+", " ", " | ".join(lines))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reset(notebook: NotebookNode) -> None:
    """Removes what a submission claims about itself under the grader's key."""
    notebook.metadata.pop(KEY, None)


def record(notebook: NotebookNode, kind: str, *messages: str) -> None:
    """Records ``messages`` of ``kind`` (a status, or ``notes``) in ``notebook``."""
    entries = notebook.metadata.setdefault(KEY, {}).setdefault(kind, [])
    entries.extend(message for message in messages if message not in entries)


def outcome(notebook: NotebookNode) -> tuple[str, str]:
    """Returns the status and message recorded in a graded notebook.

    Args:
        notebook: The autograded notebook.

    Returns:
        ``(status, message)``: the most serious status recorded, ``ok`` when none, and
        every recorded message (notes included), joined with ``"; "``.
    """
    recorded = notebook.metadata.get(KEY, {})
    status = next((kind for kind in STATUSES if recorded.get(kind)), OK)
    kinds = [kind for kind in STATUSES if kind != OK] + [NOTES]
    messages = [message for kind in kinds for message in recorded.get(kind, [])]
    return status, "; ".join(messages)


def status_file(course: Course, assignment: str) -> Path:
    """The status file of ``assignment`` in ``course``."""
    return course.exports / f"{assignment}_status.json"


def save_status(
    course: Course, assignment: str, submissions: list[Submission], **details: Any
) -> Path:
    """Writes every student's status, with ``details`` merged over the file's earlier ones.

    Args:
        course: The course.
        assignment: The assignment id.
        submissions: Every student, with status and message.
        details: How the class was graded, for example ``sandbox`` and ``limits``.

    Returns:
        The written file.

    Raises:
        WriteError: If it cannot be written; the previous file is kept.
    """
    path = status_file(course, assignment)
    previous = json.loads(path.read_text()) if path.is_file() else {}
    data = {
        "assignment": assignment,
        "grading": {**previous.get("grading", {}), **details},
        "students": {
            submission.student_id: {
                "status": submission.status,
                "message": submission.message,
                "graded": submission.graded,
                "note": submission.note,
                "digest": submission.digest,
                "reference": submission.reference,
            }
            for submission in sorted(submissions, key=lambda s: s.student_id)
        },
    }
    # Whole or not at all: a reader (the next command) never finds half a file.
    return replace_file(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def load_status(course: Course, assignment: str) -> tuple[list[Submission], dict[str, Any]]:
    """Returns every student's submission and how the class was graded.

    Without a status file (submissions put in ``submitted/`` by hand, nbgrader's way),
    every student folder holding the assignment counts as collected.

    Args:
        course: The course.
        assignment: The assignment id.
    """
    path = status_file(course, assignment)
    if path.is_file():
        data = json.loads(path.read_text())
        submissions = [
            Submission(
                student,
                entry["status"],
                entry.get("message", ""),
                entry.get("graded", False),
                entry.get("note", ""),
                entry.get("digest", ""),
                entry.get("reference", ""),
            )
            for student, entry in sorted(data.get("students", {}).items())
        ]
        return submissions, data.get("grading", {})
    submitted = course.submitted
    students = sorted(
        folder.name
        for folder in (submitted.iterdir() if submitted.is_dir() else [])
        if course.submitted_folder(folder.name, assignment).is_dir()
    )
    return [Submission(student, OK) for student in students], {}
