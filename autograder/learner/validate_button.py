"""The lab's Validate button, giving the grader's verdict: per exercise, points and why.

nbgrader's Validate button runs the notebook's visible tests and lists each failing test
cell's whole source and traceback (about 9,700 characters for an untouched notebook),
each under "The following cell failed:", never saying which exercises pass. This server
extension serves the same two URLs as nbgrader's ``validate_assignment`` extension (which
``make lab`` turns off in its place) and answers the button with ``make check``'s verdict:
``python -m autograder check --json`` run on the notebook, in a process of its own (it
grades as the grader does, hidden checks included: :mod:`autograder.learner.verdict`),
without holding up the server meanwhile.

The dialog itself is nbgrader's lab extension, unchanged: it shows each entry of the
answer's ``failed`` list as its plain-text ``source`` and its ``error`` as HTML. So the
verdict is one entry: the summary line as its source, and the exercises as its HTML, with
a style of its own (scoped to the dialog, gone when it closes) that hides nbgrader's
"The following cell failed:" line and wraps long messages instead of cutting them off.
A notebook whose exercises all pass gets nbgrader's own "Success!" dialog.

What this reaches inside nbgrader is named in :data:`NBGRADER_HANDLERS` and used in this
module only; ``tests/test_lab_validate.py`` checks that it still exists.
"""

from __future__ import annotations

import asyncio
import html
import json
import sys
from pathlib import Path
from typing import Any

from jupyter_server.utils import url_path_join
from nbgrader.server_extensions.validate_assignment import handlers as NBGRADER_HANDLERS  # noqa: N812
from tornado import web

from autograd_pitfalls.messages import ENGLISH, translate
from autograder.course import REPO
from autograder.learner.summary import exercise_summary

# The dialog's style: nbgrader's lab extension puts the verdict's HTML in a <pre> inside
# #validation-message, after a <p> "The following cell failed:" of its own.
DIALOG_STYLE = """
#validation-message > div:not(.jp-RenderedText) { display: none; }
#validation-message pre { white-space: pre-wrap; overflow-wrap: break-word; }
#validation-message > .jp-RenderedText:nth-child(2) pre {
  font-family: var(--jp-ui-font-family); font-size: var(--jp-ui-font-size2); font-weight: bold;
}
#validation-message .ap-verdict { white-space: normal; font-family: var(--jp-ui-font-family); }
#validation-message .ap-verdict > p:first-child { margin-top: 0; }
#validation-message .ap-verdict li { margin: 0.4em 0; }
#validation-message .ap-verdict .ap-why { display: block; font-family: var(--jp-code-font-family);
  white-space: pre-wrap; overflow-wrap: break-word; margin: 0.2em 0 0 1em; }
"""


# The dialog's sentences as templates of the message catalog (autograder/i18n/messages.py).
MESSAGES = (
    "not answered yet",
    "visible tests fail",
    "visible tests pass",
    "Visible tests only: the hidden checks do not run here.",
    "Graded as the grader grades it: visible tests and hidden checks.",
    "Points:",
    "The grader's status: {0}: {1}",
    "{0}: this locked cell was edited; the grader uses the course's version instead.",
)


def _exercise_state(exercise: dict[str, Any]) -> str:
    if exercise["visible"] == "not answered":
        return "not answered yet"
    if exercise["visible"] == "fail":
        return "visible tests fail"
    if exercise["hidden"] == "not run":
        return "visible tests pass"
    return f"visible tests pass; hidden checks {exercise['hidden']}"


def dialog_answer(verdict: dict[str, Any]) -> dict[str, Any]:
    """Returns the ``value`` of nbgrader's answer for the dialog, from a ``check --json`` verdict.

    Args:
        verdict: A notebook's verdict, as ``python -m autograder check --json`` prints it.

    Returns:
        ``{}`` when every exercise passes (nbgrader's "Success!" dialog), else
        ``{"failed": [entry]}`` with the summary as the entry's source and the exercises
        as its HTML.
    """
    language = verdict.get("language", ENGLISH)

    def said(text: str) -> str:
        return translate(text, language)

    exercises = verdict["exercises"]
    passed = [e["exercise"] for e in exercises if e["score"] >= e["max_score"]]
    failing = [e["exercise"] for e in exercises if e["score"] < e["max_score"]]
    changed = verdict.get("changed", [])
    if not failing and verdict["status"] == "ok" and not changed:
        return {}
    if verdict["message"] == "visible tests only":
        how = said("Visible tests only: the hidden checks do not run here.")
    else:
        how = said("Graded as the grader grades it: visible tests and hidden checks.")
    points = f"{verdict['score']:g}/{verdict['max_score']:g}"
    parts = [f"<style>{DIALOG_STYLE}</style>", '<div class="ap-verdict">']
    parts.append(f"<p>{html.escape(how)} {html.escape(said('Points:'))} <b>{points}</b>.</p>")
    if verdict["status"] != "ok":
        note = said(f"The grader's status: {verdict['status']}: {verdict['message']}")
        parts.append(f"<p>{html.escape(note)}</p>")
    parts += [
        "<p>"
        + html.escape(
            said(
                f"{grade_id}: this locked cell was edited; the grader uses the "
                "course's version instead."
            )
        )
        + "</p>"
        for grade_id in changed
    ]
    parts.append("<ul>")
    for exercise in exercises:
        mark = "✓" if exercise["score"] >= exercise["max_score"] else "✗"
        scored = said(f"{exercise['score']:g}/{exercise['max_score']:g} points")
        line = (
            f"{mark} <b>{html.escape(exercise['exercise'])}</b> "
            f"{html.escape(scored)}: "
            f"{html.escape(said(_exercise_state(exercise)))}"
        )
        whys = "".join(
            f'<span class="ap-why">{html.escape(message)}</span>'
            for message in exercise["messages"]
            if exercise["score"] < exercise["max_score"]
        )
        parts.append(f"<li>{line}{whys}</li>")
    parts.append("</ul></div>")
    text = [f"{e['exercise']}: {said(_exercise_state(e))}" for e in exercises]
    return {
        "failed": [
            {
                "source": exercise_summary(passed, failing, language),
                "error": "".join(parts),
                "raw_error": "\n".join(text),
            }
        ]
    }


async def run_check(notebook: Path) -> dict[str, Any]:
    """Runs ``python -m autograder check --json`` on one notebook; returns nbgrader's answer.

    Returns:
        ``{"success": True, "value": ...}`` with :func:`dialog_answer`'s value, or
        ``{"success": False, "value": text}`` saying why the check could not run.
    """
    command = [sys.executable, "-m", "autograder", "check", "--json", "--exit-zero", str(notebook)]
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    try:
        [verdict] = json.loads(out)
    except ValueError:
        reason = err.decode(errors="replace").strip() or f"exit status {process.returncode}"
        return {"success": False, "value": f"The check could not run:\n{reason[-4000:]}"}
    return {"success": True, "value": dialog_answer(verdict)}


class VerdictValidateHandler(NBGRADER_HANDLERS.ValidateAssignmentHandler):
    """nbgrader's validate URL, answered with the grader's verdict (:func:`run_check`)."""

    @web.authenticated
    async def post(self) -> None:
        """Checks the notebook at the posted ``path`` (inside the server's root folder)."""
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path", "")
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        self.finish(json.dumps(await run_check(target)))


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
            VerdictValidateHandler
            if handler is NBGRADER_HANDLERS.ValidateAssignmentHandler
            else handler,
        )
        for pattern, handler in NBGRADER_HANDLERS.default_handlers
    ]
    webapp.add_handlers(".*$", handlers)
