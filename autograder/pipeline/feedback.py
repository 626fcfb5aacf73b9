"""The feedback students receive: nbgrader's, with the hidden tests kept hidden.

nbgrader's feedback shows each test cell as it ran: with its hidden tests, and with
tracebacks that quote the failing hidden line. Here the hidden region is cut from the
source (:mod:`autograder.preprocessors.hide_tests`), a failing test's traceback is
reduced to its message (:mod:`autograder.preprocessors.shorten_tracebacks`), and every
output names cells instead of the kernel's temporary files, hides the grading machine's
paths and wraps long lines (:mod:`autograder.preprocessors.readable_outputs`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from jinja2 import BytecodeCache
from jinja2.bccache import Bucket
from nbconvert.exporters import HTMLExporter
from nbconvert.filters import Highlight2HTML
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades
from traitlets.config import Config

from autograder.compat import html_export_without_reparsing
from autograder.preprocessors.grades_from_notebook import GradesFromNotebook
from autograder.preprocessors.hide_tests import ClearHiddenTestsInTests
from autograder.preprocessors.readable_outputs import ReadableOutputs
from autograder.preprocessors.shorten_tracebacks import ShortenTestTracebacks


class _CompiledTemplates(BytecodeCache):
    """Jinja's compiled templates, kept in memory for every exporter of this process.

    nbgrader makes a new exporter, hence a new Jinja environment, for every student:
    without a shared cache each one parses and compiles the same dozen templates again.
    Jinja checks each entry against its template's source, so an edited template is
    compiled afresh.
    """

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


COMPILED_TEMPLATES = _CompiledTemplates()


# The only key of a cell's metadata that nbconvert's highlighting reads (a cell such as
# ``%%bash`` is highlighted in its magic's language); the rest (nbclient's timestamps, the
# grader's seconds) differs in every graded cell and must not split the cache.
_METADATA_READ_BY_HIGHLIGHT = "magics_language"


@functools.lru_cache(maxsize=8192)
def _highlighted(
    lexer: str | None, options: str, source: str, language: str | None, magics_language: str
) -> str:
    highlight = Highlight2HTML(pygments_lexer=lexer, extra_formatter_options=json.loads(options))
    metadata = {_METADATA_READ_BY_HIGHLIGHT: magics_language} if magics_language else None
    return highlight(source, language, metadata)


def _highlighting_once(highlight: Highlight2HTML) -> Callable[..., str]:
    """``highlight``, remembering what it made for each distinct cell in this process.

    Every student's feedback shows the same locked cells, highlighted again for each
    student before (about a third of a page's rendering time under a profiler).
    """

    def remembered(source: str, language: str | None = None, metadata: Any = None) -> str:
        return _highlighted(
            highlight.pygments_lexer,
            json.dumps(highlight.extra_formatter_options, sort_keys=True),
            source,
            language,
            (metadata or {}).get(_METADATA_READ_BY_HIGHLIGHT) or "",
        )

    return remembered


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, made faster for a class of the same notebook.

    The page is the document nbconvert makes (see
    :func:`autograder.compat.html_export_without_reparsing`), without its second parse
    of the whole page, with templates compiled once per process and each distinct code
    cell highlighted once (docs/benchmarks.md).
    """

    def _create_environment(self) -> Any:
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED_TEMPLATES
        return environment

    def register_filter(self, name: str, jinja_filter: Any) -> Any:
        """Registers a filter as nbconvert does; its own code highlighter remembers."""
        if name == "highlight_code" and type(jinja_filter) is Highlight2HTML:
            jinja_filter = _highlighting_once(jinja_filter)
        return super().register_filter(name, jinja_filter)

    def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
        """Exports ``nb`` to HTML as :class:`HTMLExporter` does (same arguments, result)."""
        with html_export_without_reparsing():
            return super().from_notebook_node(nb, resources, **kw)


def feedback_config(scores_from_notebook: bool = False) -> Config:
    """Returns the nbgrader settings that make generate_feedback hide hidden tests.

    Args:
        scores_from_notebook: Score the feedback from the graded notebook itself
            (:class:`~autograder.preprocessors.grades_from_notebook.GradesFromNotebook`)
            instead of the gradebook: for a student that autograde alone scored, rendered
            where the gradebook does not hold them (a grading worker).
    """
    config = Config()
    config.GenerateFeedback.exporter_class = FeedbackExporter
    config.GenerateFeedback.preprocessors = [
        GradesFromNotebook if scores_from_notebook else GetGrades,
        ClearHiddenTestsInTests,
        ShortenTestTracebacks,
        CSSHTMLHeaderPreprocessor,
        ReadableOutputs,
    ]
    return config
