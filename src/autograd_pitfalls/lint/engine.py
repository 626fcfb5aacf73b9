"""Run the rules over source code, a notebook or a session's cells, and apply their fixes.

One parse with Python's ``ast`` and one pass of the analysis (``analyzer.py``) per unit,
every selected rule family watching it. A fix is a list of text edits recorded with a
finding; fixes that do not overlap are applied together, and the code is checked again
until no fix is left (a fix inside another one lands on the next pass).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from autograd_pitfalls.lint.analyzer import Analyzer, ProgramState, RawFinding, SourceText
from autograd_pitfalls.lint.base import Edit, Finding
from autograd_pitfalls.lint.registry import families_for, resolve_codes
from autograd_pitfalls.lint.sources import Cell, CodeUnit

__all__ = [
    "CellSession",
    "LintSyntaxError",
    "apply_edits",
    "fix_source",
    "fix_unit",
    "lint_source",
    "lint_unit",
    "parse",
]

_MAX_FIX_PASSES = 5  # nested fixes need one pass per level; real code has two at most


class LintSyntaxError(SyntaxError):
    """Code that Python cannot parse (raised with the file and line it stopped at)."""


def parse(code: str, path: str = "<cell>") -> ast.Module:
    """Parses ``code`` with Python's own parser.

    Raises:
        LintSyntaxError: If ``code`` is not valid Python.
    """
    try:
        return ast.parse(code, filename=path)
    except RecursionError:
        raise LintSyntaxError(f"{path}:1:1: cannot parse: expressions nested too deeply") from None
    except SyntaxError as error:
        raise LintSyntaxError(
            f"{path}:{error.lineno or 1}:{error.offset or 1}: cannot parse: {error.msg}"
        ) from None
    except ValueError as error:  # null bytes
        raise LintSyntaxError(f"{path}:1:1: cannot parse: {error}") from None


# The analysis recurses once or twice per level of an expression: a sum of a few hundred
# terms is deeper than Python's default limit of 1,000 frames. Python-to-Python calls use no
# C stack since 3.11, so a higher limit is safe; deeper code still gets a clear error.
_RECURSION_LIMIT = 20_000


@contextmanager
def _deep_code(path: str) -> Iterator[None]:
    """Raises the recursion limit while reading; past it, a clear error rather than a crash."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        yield
    except RecursionError:
        raise LintSyntaxError(f"{path}:1:1: cannot check: expressions nested too deeply") from None
    finally:
        sys.setrecursionlimit(limit)


def _run(analyzer: Analyzer, tree: ast.Module, unit: str | None, source: SourceText, path: str):
    """Reads one unit's top level."""
    with _deep_code(path):
        analyzer.run_cell(tree, unit, source)


def _finish(analyzer: Analyzer, path: str) -> list[RawFinding]:
    """Reads the functions and ends the program."""
    with _deep_code(path):
        return analyzer.finish()


def _findings(
    raw: list[RawFinding],
    codes: set[str],
    path: str,
    sources: dict[str | None, SourceText],
    cell: str | None = None,
) -> list[Finding]:
    """The analysis's findings of the selected rules, placed by line and column."""
    order = {unit: index for index, unit in enumerate(sources)}
    placed = []
    for finding in raw:
        rule = finding.rule
        if rule.code not in codes:
            continue
        source = sources[finding.unit]
        node = finding.node
        line = node.lineno  # type: ignore[attr-defined]
        edits = tuple(
            Edit(source.offset(l1, c1), source.offset(l2, c2), text)
            for l1, c1, l2, c2, text in finding.edits
        )
        placed.append(
            (
                order[finding.unit],
                Finding(
                    path=path,
                    line=line,
                    column=source.column(line, node.col_offset) + 1,  # type: ignore[attr-defined]
                    code=rule.code,
                    message=rule.message,
                    pitfall=rule.pitfall,
                    notebook=rule.notebook,
                    cell=finding.unit if finding.unit is not None else cell,
                    fixable=bool(edits),
                    detail=finding.detail,
                    edits=edits,
                ),
            )
        )
    placed.sort(key=lambda pair: (pair[0], pair[1].line, pair[1].column, pair[1].code))
    return [finding for _, finding in placed]


def lint_source(
    code: str,
    path: str = "<cell>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    cell: str | None = None,
) -> list[Finding]:
    """Checks Python source for the course's pitfalls.

    Args:
        code: Python source (a file's text, or a notebook cell without magics).
        path: The name findings report.
        select: Codes or prefixes to run (``["AGP1"]``, ``["ALL"]``); default: the rules
            that are on by default.
        ignore: Codes or prefixes not to run.
        cell: The notebook cell's id, when ``code`` is one cell.

    Returns:
        The findings, sorted by line and column.

    Raises:
        LintSyntaxError: If ``code`` is not valid Python.
        UnknownCodeError: If a selected or ignored code names no rule.
    """
    codes = resolve_codes(select, ignore)
    tree = parse(code, path)
    source = SourceText(code)
    analyzer = Analyzer(families_for(codes))
    _run(analyzer, tree, None, source, path)
    return _findings(_finish(analyzer, path), codes, path, {None: source}, cell)


def lint_tree(tree: ast.Module, code: str, path: str, codes: set[str]) -> list[Finding]:
    """Checks an already parsed module (flake8 hands its own tree over).

    Raises:
        LintSyntaxError: If the code is nested too deeply to be read.
    """
    source = SourceText(code)
    analyzer = Analyzer(families_for(codes))
    _run(analyzer, tree, None, source, path)
    return _findings(_finish(analyzer, path), codes, path, {None: source})


def _lint_cells(
    path: str, cells: tuple[Cell, ...], codes: set[str]
) -> tuple[list[Finding], list[str]]:
    analyzer = Analyzer(families_for(codes))
    sources: dict[str | None, SourceText] = {}
    errors = []
    for cell in cells:
        try:
            tree = parse(cell.python, path)
        except LintSyntaxError as error:
            errors.append(f"{error} (cell {cell.id})")
            continue
        source = SourceText(cell.python)
        sources[cell.id] = source
        try:
            _run(analyzer, tree, cell.id, source, path)
        except LintSyntaxError as error:
            errors.append(f"{error} (cell {cell.id})")
    try:
        raw = _finish(analyzer, path)
    except LintSyntaxError as error:
        return [], [*errors, str(error)]
    return _findings(raw, codes, path, sources), errors


def lint_unit(
    unit: CodeUnit, select: Iterable[str] | None = None, ignore: Iterable[str] = ()
) -> tuple[list[Finding], list[str]]:
    """Checks a file or a whole notebook; returns the findings and the parse errors.

    A notebook's code cells are read in order as one program. A cell that does not
    parse is named in the errors and skipped; the cells after it are still read.
    """
    codes = resolve_codes(select, ignore)
    if not unit.is_notebook:
        try:
            return lint_source(unit.code, unit.path, select, ignore), []
        except LintSyntaxError as error:
            return [], [str(error)]
    return _lint_cells(unit.path, unit.cells, codes)


def apply_edits(text: str, fixes: Iterable[tuple[Edit, ...]]) -> str:
    """Applies each fix (a group of edits) that overlaps no fix applied before it.

    The fixes with the smallest edits go first: a fix inside another one is applied now,
    and the outer one on the next pass, built from the inner one's result.
    """
    accepted: list[Edit] = []
    ordered = sorted(fixes, key=lambda edits: max(edit.end - edit.start for edit in edits))
    for edits in ordered:
        if any(
            (edit.start < other.end and other.start < edit.end)
            or (edit.start == edit.end == other.start == other.end)
            for edit in edits
            for other in accepted
        ):
            continue  # lands on the next pass, on the text this pass leaves
        accepted.extend(edits)
    for edit in sorted(accepted, key=lambda edit: (edit.start, edit.end), reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


def fix_source(
    code: str,
    path: str = "<cell>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
) -> tuple[str, list[Finding]]:
    """Applies every safe fix of the selected rules.

    Args:
        code: Python source.
        path: The name findings report.
        select: As for :func:`lint_source`.
        ignore: As for :func:`lint_source`.

    Returns:
        The fixed source, and the findings still in it (those no fix covers).

    Raises:
        LintSyntaxError: If ``code`` is not valid Python.
    """
    findings = lint_source(code, path, select, ignore)
    for _ in range(_MAX_FIX_PASSES):
        fixes = [finding.edits for finding in findings if finding.edits]
        if not fixes:
            break
        fixed = apply_edits(code, fixes)
        if fixed == code:
            break
        code = fixed
        findings = lint_source(code, path, select, ignore)
    return code, findings


def fix_unit(
    unit: CodeUnit, select: Iterable[str] | None = None, ignore: Iterable[str] = ()
) -> tuple[dict[int, str], list[Finding], list[str]]:
    """Applies the safe fixes to a notebook's plain-Python cells, read as one program.

    Cells with magics are checked, never rewritten.

    Returns:
        The new source of each cell that changed (by the cell's index in the notebook),
        the findings left, and the cells that did not parse.
    """
    codes = resolve_codes(select, ignore)
    cells = list(unit.cells)
    changed: dict[int, str] = {}
    findings, errors = _lint_cells(unit.path, tuple(cells), codes)
    for _ in range(_MAX_FIX_PASSES):
        by_cell: dict[str, list[tuple[Edit, ...]]] = {}
        for finding in findings:
            if finding.edits and finding.cell is not None:
                by_cell.setdefault(finding.cell, []).append(finding.edits)
        progress = False
        for position, cell in enumerate(cells):
            if cell.id not in by_cell or not cell.plain:
                continue
            fixed = apply_edits(cell.source, by_cell[cell.id])
            if fixed != cell.source:
                cells[position] = Cell(cell.id, fixed, fixed, cell.index)
                changed[cell.index] = fixed
                progress = True
        if not progress:
            break
        findings, errors = _lint_cells(unit.path, tuple(cells), codes)
    return changed, findings, errors


class CellSession:
    """An IPython session's cells, read in order as one program (the extension's state).

    Args:
        select: As for :func:`lint_source`.
        ignore: As for :func:`lint_source`.
    """

    def __init__(self, select: Iterable[str] | None = None, ignore: Iterable[str] = ()) -> None:
        self.codes = resolve_codes(select, ignore)
        self.state = ProgramState()
        self.sources: dict[str | None, SourceText] = {}

    def lint(self, code: str, label: str) -> list[Finding]:
        """Checks one cell, after the earlier ones; returns the findings it brings.

        Args:
            code: The cell's Python (IPython syntax already turned into Python).
            label: The cell's name in findings (``"[3]"``: its execution count).

        Raises:
            LintSyntaxError: If the cell is not valid Python (the state is unchanged).
        """
        tree = parse(code, label)
        source = SourceText(code)
        self.sources[label] = source
        analyzer = Analyzer(families_for(self.codes), self.state)
        _run(analyzer, tree, label, source, label)
        return _findings(_finish(analyzer, label), self.codes, label, self.sources)
