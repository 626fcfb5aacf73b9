"""The feedback students receive: nbgrader's, with the hidden tests kept hidden.

nbgrader's feedback shows each test cell as it ran: with its hidden tests, and with
tracebacks that quote the failing hidden line. Here the hidden region is cut from the
source (:mod:`autograder.preprocessors.hide_tests`) and a failing test's traceback is
reduced to its message (:mod:`autograder.preprocessors.shorten_tracebacks`).
"""

from __future__ import annotations

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades
from traitlets.config import Config

from autograder.preprocessors.hide_tests import ClearHiddenTestsInTests
from autograder.preprocessors.shorten_tracebacks import ShortenTestTracebacks


def feedback_config() -> Config:
    """Returns the nbgrader settings that make generate_feedback hide hidden tests."""
    config = Config()
    config.GenerateFeedback.preprocessors = [
        GetGrades,
        ClearHiddenTestsInTests,
        ShortenTestTracebacks,
        CSSHTMLHeaderPreprocessor,
    ]
    return config
