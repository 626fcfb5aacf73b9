"""Every rule family, every rule, and which of them a ``--select``/``--ignore`` picks."""

from __future__ import annotations

from collections.abc import Iterable

from autograd_pitfalls.lint.base import PitfallVisitor, Rule
from autograd_pitfalls.lint.rules.assembly import AssemblyVisitor
from autograd_pitfalls.lint.rules.data_attribute import DataAttributeVisitor
from autograd_pitfalls.lint.rules.embedding_max_norm import EmbeddingMaxNormVisitor
from autograd_pitfalls.lint.rules.graph_kept_alive import GraphKeptAliveVisitor
from autograd_pitfalls.lint.rules.legacy_variable import LegacyVariableVisitor
from autograd_pitfalls.lint.rules.numpy_grad import NumpyGradVisitor
from autograd_pitfalls.lint.rules.parameters import ParameterVisitor
from autograd_pitfalls.lint.rules.wrong_fix import WrongFixVisitor
from autograd_pitfalls.lint.rules.zero_dim_index import ZeroDimIndexVisitor

__all__ = ["RULES", "VISITORS", "UnknownCodeError", "default_codes", "resolve_codes"]

VISITORS: tuple[type[PitfallVisitor], ...] = (
    DataAttributeVisitor,
    ZeroDimIndexVisitor,
    LegacyVariableVisitor,
    AssemblyVisitor,
    ParameterVisitor,
    GraphKeptAliveVisitor,
    EmbeddingMaxNormVisitor,
    WrongFixVisitor,
    NumpyGradVisitor,
)

RULES: dict[str, Rule] = {
    rule.code: rule
    for visitor in VISITORS
    for rule in sorted(visitor.RULES, key=lambda rule: rule.code)
}
RULES = dict(sorted(RULES.items()))


class UnknownCodeError(ValueError):
    """A ``--select``/``--ignore`` code that names no rule."""


def default_codes() -> set[str]:
    """The codes of the rules that run when nothing is selected."""
    return {code for code, rule in RULES.items() if rule.on_by_default}


def _expand(codes: Iterable[str]) -> set[str]:
    """Codes and prefixes (``AGP1``, ``AGP10``) and ``ALL`` to the codes they name."""
    expanded: set[str] = set()
    for code in codes:
        code = code.strip().upper()
        if not code:
            continue
        matching = set(RULES) if code == "ALL" else {c for c in RULES if c.startswith(code)}
        if not matching:
            raise UnknownCodeError(f"unknown rule code {code!r}; the codes are {', '.join(RULES)}")
        expanded |= matching
    return expanded


def resolve_codes(select: Iterable[str] | None = None, ignore: Iterable[str] = ()) -> set[str]:
    """The codes to run: the selected ones (default: those on by default) less the ignored.

    Raises:
        UnknownCodeError: If a code or prefix names no rule.
    """
    chosen = default_codes() if select is None else _expand(select)
    return chosen - _expand(ignore)


def visitors_for(codes: set[str]) -> list[PitfallVisitor]:
    """A fresh visitor for every family with at least one of ``codes``."""
    return [cls() for cls in VISITORS if any(rule.code in codes for rule in cls.RULES)]
