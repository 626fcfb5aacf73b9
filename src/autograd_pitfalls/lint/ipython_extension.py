"""``%load_ext autograd_pitfalls.lint``: check each cell before it runs.

A ``pre_run_cell`` callback lints the cell's source and prints the findings, so they appear
above the cell's own output. It never stops the cell: a cell that is not Python (a cell
magic, a syntax error that Python will report itself) or any failure of the linter prints
nothing and lets the cell run.
"""

from __future__ import annotations

from autograd_pitfalls.lint.base import Finding
from autograd_pitfalls.lint.engine import lint_source
from autograd_pitfalls.lint.sources import cell_as_python

__all__ = ["check_cell", "lint_cell", "load_ipython_extension", "unload_ipython_extension"]

_HEADER = "autograd-pitfalls lint:"


def lint_cell(source: str) -> list[Finding]:
    """The findings in one cell's source (IPython syntax allowed), or [] if it cannot parse."""
    try:
        return lint_source(cell_as_python(source), path="cell")
    except SyntaxError:
        return []


def check_cell(info) -> None:
    """The ``pre_run_cell`` callback: prints the cell's findings, never raises."""
    try:
        findings = lint_cell(info.raw_cell or "")
    except Exception:  # the linter must never be why a learner's cell does not run
        return
    if findings:
        print(_HEADER)
        for finding in findings:
            print(
                f"  line {finding.line}, col {finding.column}: {finding.code} "
                f"{finding.message} [{finding.pitfall}, taught in {finding.notebook}]"
            )


def load_ipython_extension(ipython) -> None:
    """Registers :func:`check_cell` (once, however often the extension is loaded)."""
    if check_cell not in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.register("pre_run_cell", check_cell)


def unload_ipython_extension(ipython) -> None:
    """Stops checking cells."""
    if check_cell in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.unregister("pre_run_cell", check_cell)
