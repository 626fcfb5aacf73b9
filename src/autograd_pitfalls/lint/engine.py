"""Run the rules over source code, and apply their fixes (the codemods).

One parse, one metadata pass, every selected family visiting in a single batched walk
(TorchFix's ``visit_batched``). A fix is a replacement node recorded with a finding; fixes
are applied by node identity, innermost first, and the code is checked again until no fix
is left (a fix inside another one lands on the next pass).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import libcst as cst

from autograd_pitfalls.lint.base import Finding, Violation
from autograd_pitfalls.lint.registry import resolve_codes, visitors_for
from autograd_pitfalls.lint.sources import CodeUnit

__all__ = ["LintSyntaxError", "fix_source", "lint_source", "lint_unit", "violations_in"]

_MAX_FIX_PASSES = 5  # nested fixes need one pass per level; real code has two at most


class LintSyntaxError(SyntaxError):
    """Code that LibCST cannot parse (raised with the file and line it stopped at)."""


def parse(code: str, path: str = "<cell>") -> cst.Module:
    """Parses ``code`` with LibCST.

    Raises:
        LintSyntaxError: If ``code`` is not valid Python.
    """
    try:
        return cst.parse_module(code)
    except cst.ParserSyntaxError as error:
        raise LintSyntaxError(
            f"{path}:{error.raw_line}:{error.raw_column + 1}: cannot parse: {error.message}"
        ) from None


def violations_in(module: cst.Module, codes: set[str]) -> list[Violation]:
    """Every violation of the rules in ``codes``, sorted by position."""
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    visitors = visitors_for(codes)
    wrapper.visit_batched(visitors)
    found = [v for visitor in visitors for v in visitor.violations if v.rule.code in codes]
    return sorted(found, key=lambda v: (v.line, v.column, v.rule.code))


def _findings(violations: list[Violation], path: str, cell: str | None) -> list[Finding]:
    return [
        Finding(
            path=path,
            line=v.line,
            column=v.column,
            code=v.rule.code,
            message=v.rule.message,
            pitfall=v.rule.pitfall,
            notebook=v.rule.notebook,
            cell=cell,
            fixable=v.replacement is not None,
        )
        for v in violations
    ]


def lint_source(
    code: str,
    path: str = "<cell>",
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    cell: str | None = None,
) -> list[Finding]:
    """Checks Python source for the course's pitfalls.

    Args:
        code: Python source (a file's text or a notebook cell without magics).
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
    return _findings(violations_in(parse(code, path), codes), path, cell)


def lint_unit(
    unit: CodeUnit, select: Iterable[str] | None = None, ignore: Iterable[str] = ()
) -> tuple[list[Finding], list[str]]:
    """Checks a file or a whole notebook; returns the findings and the parse errors.

    A notebook whose cells do not parse as one module (a cell with a syntax error) is
    checked cell by cell, and each cell that does not parse is named in the errors.
    """
    if not unit.cells:
        try:
            return lint_source(unit.code, unit.path, select, ignore, unit.cell), []
        except LintSyntaxError as error:
            return [], [str(error)]
    try:
        findings = lint_source(unit.code, unit.path, select, ignore)
    except LintSyntaxError:
        findings, errors = [], []
        for cell in unit.split():
            try:
                findings += lint_source(cell.code, cell.path, select, ignore, cell.cell)
            except LintSyntaxError as error:
                errors.append(f"{error} (cell {cell.cell})")
        return findings, errors
    placed = []
    for finding in findings:
        cell, line = unit.cell_at(finding.line)
        placed.append(replace(finding, cell=cell, line=line))
    return placed, []


class _ReplaceByIdentity(cst.CSTTransformer):
    """Puts each replacement where its original node was (TorchFix's deep_multi_replace).

    A node whose children changed in this pass keeps them and waits for the next pass:
    its own replacement was built from the old children.
    """

    def __init__(self, replacements: dict[int, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements
        self.applied = 0

    def on_leave(self, original_node, updated_node):
        replacement = self.replacements.get(id(original_node))
        if replacement is None or not updated_node.deep_equals(original_node):
            return updated_node
        self.applied += 1
        return replacement


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
    codes = resolve_codes(select, ignore)
    module = parse(code, path)
    for _ in range(_MAX_FIX_PASSES):
        violations = violations_in(module, codes)
        replacements = {
            id(v.replaces or v.node): v.replacement for v in violations if v.replacement
        }
        if not replacements:
            break
        transformer = _ReplaceByIdentity(replacements)
        module = module.visit(transformer)
        if transformer.applied == 0:
            break
    return module.code, _findings(violations_in(module, codes), path, None)
