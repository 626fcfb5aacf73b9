"""The flake8 plugin: the same rules, registered as flake8's ``AGP`` extension.

flake8 loads it from the ``flake8.extension`` entry point in pyproject.toml, in every
flake8 run of the environment, so it must cost nothing when its codes are not asked for:
it imports the rules only when a file is checked, and checks nothing when flake8's
``--select``/``--ignore`` leave no AGP code selected. Rules that are off by default are
added to flake8's default ignore list, so ``--select``/``--extend-select`` turn them on
as for any flake8 code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import ClassVar

__all__ = ["PitfallChecker"]

PREFIX = "AGP"


def _codes() -> dict:
    from autograd_pitfalls.lint.registry import RULES

    return RULES


def _may_be_reported(code: str, options) -> bool:
    """False when flake8's options surely leave ``code`` unreported.

    That is flake8's documented precedence: an explicit ``--select`` that does not match
    it, or an ``--ignore`` that matches it with a longer prefix than any ``--select`` does.
    """
    select = getattr(options, "select", None)
    extend_select = getattr(options, "extend_select", None) or []
    selected = [prefix for prefix in [*(select or []), *extend_select] if code.startswith(prefix)]
    if select is not None and not selected:
        return False
    ignored = [
        prefix
        for prefix in [
            *(getattr(options, "ignore", None) or []),
            *(getattr(options, "extend_ignore", None) or []),
        ]
        if code.startswith(prefix)
    ]
    if ignored and not selected:
        return False
    return not ignored or max(map(len, selected)) > max(map(len, ignored))


class PitfallChecker:
    """A flake8 checker over the linter's rules (flake8 passes tree, lines and filename)."""

    name = "autograd-pitfalls"
    version = "0.1.0"
    active: ClassVar[bool] = True  # False when flake8's options select no AGP code

    def __init__(self, tree: ast.AST, lines: list[str], filename: str = "<stdin>") -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @staticmethod
    def add_options(option_manager) -> None:
        """Keeps the rules that are off by default off unless selected."""
        option_manager.extend_default_ignore(
            [code for code, rule in _codes().items() if not rule.on_by_default]
        )

    @classmethod
    def parse_options(cls, options) -> None:
        """Notes whether any AGP code can be reported with these options."""
        cls.active = any(_may_be_reported(code, options) for code in _codes())

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yields ``(line, column from 0, "CODE message", type)`` per finding."""
        if not self.active:
            return
        source = "".join(self.lines)
        if "torch" not in source:  # as TorchFix: no torch, nothing to check
            return
        from autograd_pitfalls.lint.engine import lint_tree

        rules = _codes()
        for finding in lint_tree(self.tree, source, self.filename, set(rules)):  # type: ignore[arg-type]
            where = f"[{finding.pitfall}, taught in {finding.notebook}]"
            message = f"{finding.code} {finding.text} {where}"
            yield finding.line, finding.column - 1, message, type(self)
