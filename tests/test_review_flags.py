"""Review flags: answer code that reaches for grading machinery is listed, honest code is not."""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.pipeline.review import cell_flags, review_flags


@pytest.mark.parametrize(
    ("code", "what"),
    [
        ("import sys\nx = sys._getframe(1).f_locals", "frame inspection"),
        ("import inspect\nf = inspect.currentframe().f_back", "frame inspection"),
        ("try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame", "traceback"),
        ("get_ipython().showtraceback = lambda *a, **k: None", "IPython"),
        ("ip = get_ipython()\nip.set_custom_exc((Exception,), lambda *a: None)", "IPython"),
        ("k = get_ipython().kernel\nk.control_handlers.clear()", "kernel"),
        ("import gc\ngc.get_objects()", "gc"),
        ("import ctypes", "ctypes"),
        ("import sys\nsys.modules['torch'].allclose = None", "sys.modules"),
        ("import builtins\nbuiltins.isinstance = lambda *a: True", "builtins"),
        ("__builtins__['len'] = None", "builtins"),
        ("code = 'x' + '=1'\nexec(code)", "code built at run time"),
        ("eval(input_text)", "code built at run time"),
        ("__import__(name)", "code built at run time"),
        ("%time x = sys._getframe()", "frame inspection"),
        ("from IPython import get_ipython", "IPython"),
        ("setattr(torch, 'allclose', None)", "a write into torch"),
        ("lib = torch.library.Library('aten', 'IMPL')", "dispatcher"),
        (
            "class T(torch.Tensor):\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
            "        return True",
            "intercepts torch",
        ),
    ],
)
def test_reaching_code_is_flagged_with_its_line(code: str, what: str):
    flags = cell_flags(code, cell=3)
    assert flags, code
    assert any(what in flag.what for flag in flags), flags
    assert all(flag.cell == 3 and flag.line >= 1 for flag in flags)


@pytest.mark.parametrize(
    "code",
    [
        "def f(x):\n    return (x * 2).sum()",
        "from tqdm.auto import tqdm\nfor i in tqdm(range(3)):\n    pass",
        "import logging\nlogging.getLogger(__name__).info('step')",
        "exec('x = 1')",  # a literal is no built code
        "import torch\nw = torch.zeros(3, requires_grad=True)\nloss = (w * 2).sum()",
        "from concurrent.futures import ThreadPoolExecutor",
        "this is not python (",
    ],
)
def test_honest_code_is_not_flagged(code: str):
    assert cell_flags(code, cell=1) == []


def test_the_course_cells_are_not_flagged_whatever_their_metadata():
    course_cell = "import gc  # the course's own setup"
    notebook = new_notebook(
        cells=[new_code_cell(course_cell), new_code_cell("import ctypes", metadata={})]
    )
    notebook.cells[1].metadata["nbgrader"] = {"locked": True}  # a student's claim
    flags = review_flags(notebook, {course_cell})
    assert [(flag.cell, flag.line) for flag in flags] == [(2, 1)]
    assert str(flags[0]) == "cell 2, line 1: ctypes (import ctypes)"


def test_a_status_message_is_one_line_without_host_paths(tmp_path):
    from autograder.course import REPO, Course
    from autograder.submission import one_line

    course = Course.at(tmp_path)
    traceback = (
        "Traceback (most recent call last):\n"
        f'  File "{REPO}/autograder/pipeline/autograde.py", line 3, in run\n'
        f"RuntimeError: kernel died; see {course.root}/autograded/x\n"
    )
    line = one_line(traceback, course)
    assert "\n" not in line and str(REPO) not in line and str(tmp_path) not in line
    assert "<grader>/autograder/pipeline/autograde.py" in line and "<course>/autograded" in line
    assert len(one_line("x" * 2000)) == 500
