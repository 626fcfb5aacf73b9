"""The one base of every error the grader reports to its user as a single line.

The command line catches :class:`AutograderError` once (in :func:`autograder.cli.main`)
and prints ``error: <message>``; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class AutograderError(Exception):
    """A problem with the input or the machine, said in one line, with no traceback."""


class SubmissionsNotFoundError(AutograderError, FileNotFoundError):
    """The submissions folder given to ``collect`` or ``grade`` does not exist."""


class ReportError(AutograderError):
    """The class report cannot be written (the assignment was not graded here)."""


class SandboxError(AutograderError):
    """The sandbox cannot give this run what it needs (for example uids of its own)."""
