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

__all__ = ["OFF_BY_DEFAULT", "PitfallChecker", "may_report"]

PREFIX = "AGP"
# The rules off by default (their Rule says so; a test keeps this list equal to theirs):
# written out here so that loading the plugin imports no rule.
OFF_BY_DEFAULT = ("AGP104", "AGP171")


def _listed(options, *names: str) -> list[str]:
    return [code for name in names for code in (getattr(options, name, None) or [])]


def may_report(options) -> bool:
    """False when flake8's options surely leave every AGP code unreported.

    That is flake8's documented precedence: an explicit ``--select`` none of whose
    entries matches an AGP code, or an ``--ignore`` that matches them all (``AGP``,
    ``A``) with a longer prefix than any ``--select`` entry that matches one.
    """

    def matches(entry: str) -> bool:  # `A`, `AGP`, `AGP1` and `AGP104` all match AGP codes
        return entry.startswith(PREFIX) or PREFIX.startswith(entry)

    selected = [entry for entry in _listed(options, "select", "extend_select") if matches(entry)]
    if getattr(options, "select", None) is not None and not selected:
        return False
    ignored = [
        entry for entry in _listed(options, "ignore", "extend_ignore") if PREFIX.startswith(entry)
    ]
    if not ignored:
        return True
    return bool(selected) and max(map(len, selected)) > max(map(len, ignored))


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
        option_manager.extend_default_ignore(list(OFF_BY_DEFAULT))

    @classmethod
    def parse_options(cls, options) -> None:
        """Notes whether any AGP code can be reported with these options."""
        cls.active = may_report(options)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yields ``(line, column from 0, "CODE message", type)`` per finding."""
        if not self.active:
            return
        source = "".join(self.lines)
        if "torch" not in source:  # as TorchFix: no torch, nothing to check
            return
        from autograd_pitfalls.lint.engine import LintSyntaxError, lint_tree
        from autograd_pitfalls.lint.registry import RULES

        try:
            findings = lint_tree(self.tree, source, self.filename, set(RULES))  # type: ignore[arg-type]
        except LintSyntaxError:
            return  # nested too deeply to read: nothing to say, flake8's own checks go on
        for finding in findings:
            where = f"[{finding.pitfall}, taught in {finding.notebook}]"
            message = f"{finding.code} {finding.text} {where}"
            yield finding.line, finding.column - 1, message, type(self)
