"""Static checks for the course's pitfalls in a learner's own code.

``python -m autograd_pitfalls.lint PATH...`` on the command line, the ``AGP`` codes in
flake8, ``%load_ext autograd_pitfalls.lint`` in Jupyter, and :func:`lint_source` in a cell:
one set of rules over Python's ``ast`` behind all four (see ``registry.RULES``). It never
imports torch: it reads code, it does not run it.
"""

from autograd_pitfalls.lint.base import Finding, Rule
from autograd_pitfalls.lint.engine import CellSession, LintSyntaxError, fix_source, lint_source
from autograd_pitfalls.lint.ipython_extension import (
    lint_cell,
    load_ipython_extension,
    unload_ipython_extension,
)
from autograd_pitfalls.lint.registry import RULES

__all__ = [
    "RULES",
    "CellSession",
    "Finding",
    "LintSyntaxError",
    "Rule",
    "fix_source",
    "lint_cell",
    "lint_source",
    "load_ipython_extension",
    "unload_ipython_extension",
]
