"""In feedback, outputs read as on the student's own screen: cells named, no host paths.

A warning or a traceback names the file Python ran a cell from, which ipykernel makes up
in the kernel's temporary folder (``/tmp/ipykernel_41/3979972613.py:8: UserWarning...``),
and library files by the grading machine's paths. In feedback those become the cell's name
(``q2-answer, line 8``, ``cell 14, line 3``) and placeholders (``<python>/...``, see
:func:`autograder.submission.hide_paths`). Long lines wrap instead of running off the page:
nbconvert's page shows each output in a ``<pre>`` that does not wrap, so a failing test's
message was cut off at the right edge.
"""

from __future__ import annotations

import re

from ipykernel.compiler import get_file_name
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.submission import hide_paths

# The file name ipykernel gives a cell's code: <tmp>/ipykernel_<pid>/<murmur2 hash>.py.
_CELL_FILE = re.compile(r"""[^\s"'(]*ipykernel_\d+[/\\](\d+)\.py(?::(\d+))?""")
WRAP_CSS = """
div.output_area pre, div.output_subarea pre {
  white-space: pre-wrap;
  overflow-wrap: break-word;
}
"""


def cell_names(notebook: NotebookNode) -> dict[str, str]:
    """The name each code cell's file gets in the kernel, mapped to how feedback names it."""
    names = {}
    for index, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code":
            continue
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        label = grade_id if grade_id and not grade_id.startswith("cell-") else f"cell {index}"
        names[re.sub(r"\D", "", get_file_name(cell.source).rsplit("/", 1)[-1])] = label
    return names


def readable(text: str, names: dict[str, str]) -> str:
    """``text`` with kernel cell files named after their cells and host paths hidden."""

    def name(found: re.Match) -> str:
        label = names.get(found.group(1), "a cell")
        return f"{label}, line {found.group(2)}" if found.group(2) else label

    return hide_paths(_CELL_FILE.sub(name, text))


class ReadableOutputs(NbGraderPreprocessor):
    """Names kernel cell files and hides host paths in every output; wraps long lines.

    Runs after nbconvert's ``CSSHTMLHeaderPreprocessor``, which sets the page's styles.
    """

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        """Rewrites the outputs' text; adds the wrapping rule to the page's styles."""
        names = cell_names(nb)
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                if "text" in output:
                    output.text = readable(output.text, names)
                if "evalue" in output:
                    output.evalue = readable(output.evalue, names)
                if "traceback" in output:
                    output.traceback = [readable(line, names) for line in output.traceback]
                data = output.get("data", {})
                if isinstance(data.get("text/plain"), str):
                    data["text/plain"] = readable(data["text/plain"], names)
        resources.setdefault("inlining", {}).setdefault("css", []).append(WRAP_CSS)
        return nb, resources
