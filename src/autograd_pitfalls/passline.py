"""A short pass line under a graded test cell that ran without error, in IPython.

A passing test cell prints nothing by itself: the only sign of success would be the
absence of red. This prints ``✓ Tests passed.`` under it instead. It is display only:
the grade stays nbgrader's (a test cell that raises scores 0, whatever it printed), and the
line goes to stdout, since nbgrader scores 0 a test cell that writes to stderr.
"""

from __future__ import annotations

import sys
from typing import Any

# Every graded test cell of the course opens with a docstring saying what it checks
# (solutions/README.md); the kernel never sees nbgrader's metadata, only the source.
TEST_CELL_OPENING = '"""Checks '
PASS_LINE = "✓ Tests passed."
# Under the course's grader the hidden checks are judged outside the kernel, after the
# cell: the cell itself only knows that its visible tests passed.
GRADER_PASS_LINE = "✓ Visible tests passed; the grader judges the hidden tests."
JUDGED_ELSEWHERE = ".judged_by_grader("


def is_test_cell(source: str) -> bool:
    """Whether ``source`` is a graded test cell of this course (it opens with its docstring).

    Args:
        source: A cell's source.
    """
    return source.lstrip().startswith(TEST_CELL_OPENING)


def _after_cell(result: Any) -> None:
    source = getattr(result.info, "raw_cell", None) or ""
    if result.success and is_test_cell(source):
        print(GRADER_PASS_LINE if JUDGED_ELSEWHERE in source else PASS_LINE)


def install() -> bool:
    """Registers the pass line in the running IPython, once; does nothing elsewhere.

    Returns:
        True when an IPython shell is running (the hook is registered), False otherwise.
    """
    if "IPython" not in sys.modules:  # no shell runs without it; importing it costs 0.2 s
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python without IPython: nothing to hook into
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if _after_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _after_cell)
    return True
