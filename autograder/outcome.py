"""The status of one student's submission, and where the grading steps record it.

Each step that finds something wrong with a submission (the restore of its tests, the
sandboxed execution) records it in the graded notebook's metadata under ``autograder``;
:func:`outcome` turns that into one status and one message for the CSV and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

OK = "ok"
TIMEOUT = "timeout"
MEMORY = "memory"
TAMPERED = "tampered"
ERROR = "error"
UNREADABLE = "unreadable"
MISSING = "missing"
# Every status, most serious first: the one a student gets when several apply.
STATUSES = (TAMPERED, TIMEOUT, MEMORY, ERROR, UNREADABLE, MISSING, OK)
KEY = "autograder"
NOTES = "notes"


@dataclass(frozen=True)
class Submission:
    """One student's entry in a submissions folder.

    Attributes:
        student_id: The student, from the entry's name.
        status: ``ok``, ``missing`` or ``unreadable`` after collecting; grading may change
            ``ok`` into ``timeout``, ``memory``, ``tampered`` or ``error``.
        message: What was wrong, or what was done (for example a renamed file).
        graded: Whether autograde recorded grades for it (possibly partial: a kernel that
            died or ran out of time still leaves the grades of the tests before).
    """

    student_id: str
    status: str
    message: str = ""
    graded: bool = False


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
