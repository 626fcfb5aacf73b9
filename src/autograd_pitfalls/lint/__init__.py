"""Static checks for the course's pitfalls in a learner's own code.

``python -m autograd_pitfalls.lint PATH...`` on the command line, the ``AGP`` codes in
flake8, ``%load_ext autograd_pitfalls.lint`` in Jupyter, and :func:`lint_source` in a cell:
one set of LibCST rules behind all four (see ``registry.RULES``).
"""

from autograd_pitfalls.lint.base import Finding, Rule
from autograd_pitfalls.lint.engine import LintSyntaxError, fix_source, lint_source
from autograd_pitfalls.lint.ipython_extension import (
    lint_cell,
    load_ipython_extension,
    unload_ipython_extension,
)
from autograd_pitfalls.lint.registry import RULES

__all__ = [
    "RULES",
    "Finding",
    "LintSyntaxError",
    "Rule",
    "fix_source",
    "lint_cell",
    "lint_source",
    "load_ipython_extension",
    "unload_ipython_extension",
]
