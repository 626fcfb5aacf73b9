"""The feedback students receive: nbgrader's, with the hidden tests kept hidden.

nbgrader's feedback shows each test cell as it ran: with its hidden tests, and with
tracebacks that quote the failing hidden line. Here the hidden region is cut from the
source (:mod:`autograder.preprocessors.hide_tests`) and a failing test's traceback is
reduced to its message (:mod:`autograder.preprocessors.shorten_tracebacks`).
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades
from traitlets.config import Config

from autograder.compat import html_export_without_reparsing
from autograder.preprocessors.hide_tests import ClearHiddenTestsInTests
from autograder.preprocessors.shorten_tracebacks import ShortenTestTracebacks


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, without its second parse of the whole page.

    The page is the same document (see :func:`autograder.compat.html_export_without_reparsing`),
    made in about half the time: rendering feedback was a third of grading a student.
    """

    def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
        """Exports ``nb`` to HTML as :class:`HTMLExporter` does (same arguments, result)."""
        with html_export_without_reparsing():
            return super().from_notebook_node(nb, resources, **kw)


def feedback_config() -> Config:
    """Returns the nbgrader settings that make generate_feedback hide hidden tests."""
    config = Config()
    config.GenerateFeedback.exporter_class = FeedbackExporter
    config.GenerateFeedback.preprocessors = [
        GetGrades,
        ClearHiddenTestsInTests,
        ShortenTestTracebacks,
        CSSHTMLHeaderPreprocessor,
    ]
    return config
