"""``%load_ext autograd_pitfalls.lint``: check each cell before it runs, after the earlier ones.

The earlier ones include the cells run before the extension was loaded.

A ``pre_run_cell`` callback lints the cell's source and prints the findings, so they appear
above the cell's own output. The session's cells are read as one program (a
:class:`~autograd_pitfalls.lint.engine.CellSession`): what an earlier cell imported or
defined is known in the next, and a write in one cell into a tensor another cell saved is
found at the backward() of a third. It never stops the cell: a cell that is not Python (a
cell magic, a syntax error that Python will report itself) or any failure of the linter
prints nothing and lets the cell run.
"""

from __future__ import annotations

from autograd_pitfalls.lint.base import Finding
from autograd_pitfalls.lint.engine import CellSession, LintSyntaxError, lint_source
from autograd_pitfalls.lint.sources import cell_as_python

__all__ = ["check_cell", "lint_cell", "load_ipython_extension", "unload_ipython_extension"]

_HEADER = "autograd-pitfalls lint:"
_session: CellSession | None = None


def lint_cell(
    source: str, session: CellSession | None = None, label: str = "cell"
) -> list[Finding]:
    """The findings in one cell's source (IPython syntax allowed), or [] if it cannot parse.

    Args:
        source: The cell's source.
        session: The cells run before it (None: the cell alone).
        label: The cell's name in findings about other cells.
    """
    try:
        python = cell_as_python(source)
        if session is None:
            return lint_source(python, path="cell")
        return session.lint(python, label)
    except (SyntaxError, LintSyntaxError):
        return []


def _location(finding: Finding, label: str) -> str:
    where = f"line {finding.line}, col {finding.column}"
    return where if finding.cell in (None, label) else f"cell {finding.cell}, {where}"


def check_cell(info) -> None:
    """The ``pre_run_cell`` callback: prints the cell's findings, never raises."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        count = getattr(shell, "execution_count", None)
        label = f"[{count}]" if count is not None else "cell"
        findings = lint_cell(info.raw_cell or "", _session, label)
    except Exception:  # the linter must never be why a learner's cell does not run
        return
    if findings:
        print(_HEADER)
        for finding in findings:
            print(
                f"  {_location(finding, label)}: {finding.code} "
                f"{finding.text} [{finding.pitfall}, taught in {finding.notebook}]"
            )


def _cells_run_so_far(ipython) -> list[tuple[int, str]]:
    """The session's cells up to the one loading the extension: (execution count, source).

    IPython stores a cell's source in its history before running it, so the cell that
    says ``%load_ext`` is the last one: what it imports counts for the next cell too.
    """
    try:
        history = ipython.history_manager.input_hist_raw  # [0] is "": counts start at 1
    except AttributeError:  # a shell without a history (not IPython's own)
        return []
    return [(count, source) for count, source in enumerate(history) if source]


def load_ipython_extension(ipython) -> None:
    """Registers :func:`check_cell` (once, however often the extension is loaded).

    The cells the session ran before are read first (their findings are not printed:
    they ran already), so that a later cell is checked with their imports and names.
    """
    global _session
    if check_cell not in ipython.events.callbacks["pre_run_cell"]:
        _session = CellSession()
        for count, source in _cells_run_so_far(ipython):
            lint_cell(source, _session, f"[{count}]")
        ipython.events.register("pre_run_cell", check_cell)


def unload_ipython_extension(ipython) -> None:
    """Stops checking cells (and forgets them)."""
    global _session
    if check_cell in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.unregister("pre_run_cell", check_cell)
    _session = None
