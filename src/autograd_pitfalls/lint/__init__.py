"""Static checks for the course's pitfalls in a learner's own code.

``python -m autograd_pitfalls.lint PATH...`` on the command line, the ``AGP`` codes in
flake8, ``%load_ext autograd_pitfalls.lint`` in Jupyter, and :func:`lint_source` in a cell:
one set of rules over Python's ``ast`` behind all four (see ``registry.RULES``). It never
imports torch: it reads code, it does not run it.

The names below are imported on first use (PEP 562): flake8 imports this package for its
plugin in every run of the environment, and a run that selects no AGP code must not pay
for the rules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy import below provides, for type checkers and editors
    from autograd_pitfalls.lint.base import Finding, Rule
    from autograd_pitfalls.lint.engine import (
        CellSession,
        LintSyntaxError,
        fix_source,
        lint_source,
    )
    from autograd_pitfalls.lint.ipython_extension import (
        lint_cell,
        load_ipython_extension,
        unload_ipython_extension,
    )
    from autograd_pitfalls.lint.registry import RULES

_MODULES = {
    "RULES": "registry",
    "CellSession": "engine",
    "Finding": "base",
    "LintSyntaxError": "engine",
    "Rule": "base",
    "fix_source": "engine",
    "lint_cell": "ipython_extension",
    "lint_source": "engine",
    "load_ipython_extension": "ipython_extension",
    "unload_ipython_extension": "ipython_extension",
}

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


def __getattr__(name: str) -> Any:
    """The public names, each imported from its module on first use."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted(set(globals()) | set(__all__))
