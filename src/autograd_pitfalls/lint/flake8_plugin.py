"""The flake8 plugin: the same rules, registered as flake8's ``AGP`` extension.

flake8 loads it from the ``flake8.extension`` entry point in pyproject.toml. Rules that are
off by default are added to flake8's default ignore list, so ``--select``/``--extend-select``
turn them on as for any flake8 code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from autograd_pitfalls.lint.engine import LintSyntaxError, lint_source
from autograd_pitfalls.lint.registry import RULES

__all__ = ["PitfallChecker"]


class PitfallChecker:
    """A flake8 checker over the linter's rules (flake8 passes tree, lines and filename)."""

    name = "autograd-pitfalls"
    version = "0.1.0"

    def __init__(self, tree: ast.AST, lines: list[str], filename: str = "<stdin>") -> None:
        self.lines = lines
        self.filename = filename

    @staticmethod
    def add_options(option_manager) -> None:
        """Keeps the rules that are off by default off unless selected."""
        option_manager.extend_default_ignore(
            [code for code, rule in RULES.items() if not rule.on_by_default]
        )

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yields ``(line, column from 0, "CODE message", type)`` per finding."""
        source = "".join(self.lines)
        if "torch" not in source:  # as TorchFix: no torch, nothing to parse
            return
        try:
            findings = lint_source(source, self.filename, select=["ALL"])
        except LintSyntaxError:
            return  # flake8 reports syntax errors itself (E999)
        for finding in findings:
            where = f"[{finding.pitfall}, taught in {finding.notebook}]"
            message = f"{finding.code} {finding.message} {where}"
            yield finding.line, finding.column - 1, message, type(self)
