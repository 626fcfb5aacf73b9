"""The lab's Validate button with a summary first and one short reason per failing exercise.

nbgrader's Validate dialog lists each failing test cell's whole source and traceback
(about 9,700 characters for an untouched notebook) and never says which exercises pass.
This server extension serves the same two URLs as nbgrader's ``validate_assignment``
extension (which ``make lab`` turns off in its place), runs nbgrader's own validation,
and rewrites only the ``failed`` list of its result: a summary entry first, then per
failing exercise its name, what its tests check and the last lines of its error. The
dialog itself is nbgrader's lab extension, unchanged.

Everything this reaches inside nbgrader is named in :data:`NBGRADER_HANDLERS` and used in
this module only; ``tests/test_lab_validate.py`` checks that it still exists.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
from jupyter_server.utils import url_path_join
from nbconvert.filters import ansi2html, strip_ansi
from nbgrader import utils
from nbgrader.server_extensions.validate_assignment import handlers as NBGRADER_HANDLERS  # noqa: N812

from autograder.course import exercise_name
from autograder.learner.summary import exercise_summary
from autograder.learner.validate import CourseValidator

# An error's own line in a traceback: "NotImplementedError: ...", "AssertionError".
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b")
MAX_REASON_LINES = 6


def short_reason(raw_error: str) -> str:
    """Returns the end of a failing cell's error: from the error's own line, a few lines.

    Args:
        raw_error: nbgrader's ``raw_error`` (traceback lines and stderr, with ANSI colours).
    """
    lines = [line.rstrip() for line in strip_ansi(raw_error).strip().splitlines()]
    starts = [index for index, line in enumerate(lines) if _ERROR_LINE.match(line)]
    tail = lines[starts[-1] :] if starts else lines[-MAX_REASON_LINES:]
    if len(tail) > MAX_REASON_LINES:
        tail = [*tail[: MAX_REASON_LINES - 1], "..."]
    return "\n".join(tail) or "the test cell did not pass"


def _what_it_checks(source: str) -> str:
    # A test cell opens with a docstring saying what it checks (solutions/README.md).
    first = source.strip().splitlines()[0] if source.strip() else ""
    return first.strip('"').strip()


def summarize(notebook: nbformat.NotebookNode, failed: list[dict[str, str]]) -> list[dict]:
    """Rewrites nbgrader's ``failed`` list: a summary entry, then one short entry each.

    Args:
        notebook: The validated notebook (as saved, before it ran).
        failed: nbgrader's entries, each with the failing cell's ``source``, ``error``
            (HTML) and ``raw_error``.

    Returns:
        The new list, in the same format; an entry whose cell is not a graded test cell
        of ``notebook`` is kept as nbgrader wrote it.
    """
    tests = {
        cell.source.strip(): exercise_name(cell.metadata.nbgrader["grade_id"])
        for cell in notebook.cells
        if cell.cell_type == "code" and utils.is_grade(cell)
    }
    by_source = {entry["source"]: entry for entry in failed}
    failing = [name for source, name in tests.items() if source in by_source]
    passed = [name for source, name in tests.items() if source not in by_source]
    entries: list[dict[str, Any]] = [
        {
            "source": exercise_summary(passed, failing),
            "error": "Below: what each failing exercise's tests check, and why it fails.",
            "raw_error": "",
        }
    ]
    for entry in failed:
        name = tests.get(entry["source"])
        if name is None:
            entries.append(entry)
            continue
        reason = short_reason(entry.get("raw_error", ""))
        entries.append(
            {
                "source": f"{name}: {_what_it_checks(entry['source'])}",
                "error": ansi2html(reason),
                "raw_error": reason,
            }
        )
    return entries


@contextlib.contextmanager
def course_validator() -> Iterator[None]:
    """Within this block, nbgrader's handler validates with :class:`CourseValidator`.

    The handler makes its validator from the name ``Validator`` of its module; the server
    calls it on its one event-loop thread, so nothing else sees the swap.
    """
    nbgraders = NBGRADER_HANDLERS.Validator
    NBGRADER_HANDLERS.Validator = CourseValidator
    try:
        yield
    finally:
        NBGRADER_HANDLERS.Validator = nbgraders


class SummaryValidateHandler(NBGRADER_HANDLERS.ValidateAssignmentHandler):
    """nbgrader's validate handler, with the course's validator; failures summarized.

    See :class:`CourseValidator` and :func:`summarize`.
    """

    def validate_notebook(self, path: str) -> dict[str, Any]:
        """Validates as nbgrader does, then summarizes the failing exercises.

        Args:
            path: The notebook, relative to the server's root folder.

        Returns:
            nbgrader's ``{"success": ..., "value": ...}`` with ``value["failed"]`` rewritten.
        """
        with course_validator():
            output = super().validate_notebook(path)
        value = output.get("value")
        if output.get("success") and isinstance(value, dict) and value.get("failed"):
            # nbgrader checked already that the path stays inside the root folder.
            notebook = nbformat.read(Path(self.root_dir) / path, as_version=4)
            value["failed"] = summarize(notebook, value["failed"])
        return output


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "autograder.learner.validate_button"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Serves nbgrader's validate URLs, the validation itself by our handler."""
    webapp = serverapp.web_app
    base_url = webapp.settings["base_url"]
    webapp.settings["root_dir"] = serverapp.root_dir  # nbgrader's handler reads it there
    handlers = [
        (
            url_path_join(base_url, pattern),
            SummaryValidateHandler
            if handler is NBGRADER_HANDLERS.ValidateAssignmentHandler
            else handler,
        )
        for pattern, handler in NBGRADER_HANDLERS.default_handlers
    ]
    webapp.add_handlers(".*$", handlers)
