"""Feedback outputs name cells instead of the kernel's temporary files, and hide host paths."""

from __future__ import annotations

import sys

from ipykernel.compiler import get_file_name
from nbformat import v4

from autograder.preprocessors.readable_outputs import WRAP_CSS, ReadableOutputs


def test_a_warning_names_the_cell_it_came_from_and_no_host_path():
    answer = "def f(x):\n    return x.grad"
    answer_cell = v4.new_code_cell(answer)
    answer_cell.metadata["nbgrader"] = {"grade_id": "q2-answer"}
    plain = v4.new_code_cell("f(1)")
    hashed = get_file_name(answer).replace("/tmp/", "/tmp/elsewhere/")  # another kernel's folder
    warning = f"{hashed}:2: UserWarning: The .grad attribute ... accessed.\n  return x.grad\n"
    library = f"File {sys.prefix}/lib/python3.11/site-packages/torch/_tensor.py:42, in grad"
    plain.outputs = [
        v4.new_output("stream", name="stdout", text=warning),
        v4.new_output("error", ename="E", evalue=library, traceback=[library, warning]),
        v4.new_output("stream", name="stdout", text="/tmp/ipykernel_7/123.py:5: oops"),
    ]
    notebook = v4.new_notebook(cells=[v4.new_markdown_cell("# x"), answer_cell, plain])

    notebook, resources = ReadableOutputs().preprocess(notebook, {"inlining": {"css": ["x"]}})

    stream, error, unknown = notebook.cells[2].outputs
    assert stream.text.startswith("q2-answer, line 2: UserWarning")
    assert error.evalue == "File <python>/lib/python3.11/site-packages/torch/_tensor.py:42, in grad"
    assert error.traceback[1].startswith("q2-answer, line 2:")
    assert unknown.text == "a cell, line 5: oops"
    assert resources["inlining"]["css"] == ["x", WRAP_CSS]
