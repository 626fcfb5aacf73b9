"""Feedback pages made with remembered templates and highlighting are nbconvert's pages."""

from __future__ import annotations

from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from nbformat import v4

from autograder.pipeline import feedback
from autograder.pipeline.feedback import FeedbackExporter


def _notebook(answer: str, language: str = "ipython3") -> object:
    notebook = v4.new_notebook(
        cells=[
            v4.new_markdown_cell("# Exercise\nWrite `f`."),
            v4.new_code_cell("import torch\nx = torch.ones(3, requires_grad=True)"),
            v4.new_code_cell(answer),
            # A cell in another language: its highlighting depends on its metadata.
            v4.new_code_cell("echo hi", metadata={"magics_language": "bash"}),
        ]
    )
    # As in a graded notebook: every cell's timestamps differ from every other student's.
    for cell in notebook.cells:
        cell.metadata["execution"] = {"iopub.execute_input": f"{answer}-{len(cell.source)}"}
    notebook.metadata["language_info"] = {"name": "python", "pygments_lexer": language}
    return notebook


def _document(html: str) -> str:
    return BeautifulSoup(html, features="html.parser").decode()


def test_a_page_made_after_others_is_the_page_nbconvert_makes():
    # The first students fill the caches; the later pages must not differ from nbconvert's.
    feedback._highlighted.cache_clear()
    for answer, language in [
        ("def f(x):\n    return x * 2", "ipython3"),
        ("def f(x):\n    return x.detach()", "ipython3"),
        ("def f(x):\n    return x * 2", "python"),
    ]:
        notebook = _notebook(answer, language)
        ours, _ = FeedbackExporter().from_notebook_node(notebook)
        theirs, _ = HTMLExporter().from_notebook_node(notebook)
        assert _document(ours) == _document(theirs)
    # The second student's locked cells (import, bash), the same as the first's but for
    # their timestamps, were remembered; the third is highlighted by another lexer.
    assert feedback._highlighted.cache_info().hits == 2
    assert feedback.COMPILED_TEMPLATES._code  # later exporters loaded compiled templates


def test_a_highlighter_given_in_the_configuration_is_kept():
    def plain(source, language=None, metadata=None):
        return f"<pre>{source}</pre>"

    exporter = FeedbackExporter(filters={"highlight_code": plain})
    html, _ = exporter.from_notebook_node(_notebook("def f(x):\n    return x * 2"))
    assert "<pre>def f(x):" in html
