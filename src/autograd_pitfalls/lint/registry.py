"""Every rule family, every rule, and which of them a ``--select``/``--ignore`` picks."""

from __future__ import annotations

from collections.abc import Iterable

from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.rules.assembly import Assembly
from autograd_pitfalls.lint.rules.data_attribute import DataAttribute
from autograd_pitfalls.lint.rules.embedding_max_norm import EmbeddingMaxNorm
from autograd_pitfalls.lint.rules.graph_kept_alive import GraphKeptAlive
from autograd_pitfalls.lint.rules.legacy_variable import LegacyVariable
from autograd_pitfalls.lint.rules.numpy_grad import NumpyGrad
from autograd_pitfalls.lint.rules.parameters import Parameters
from autograd_pitfalls.lint.rules.saved_tensor import SavedTensorWrite
from autograd_pitfalls.lint.rules.training_loop import TrainingLoop
from autograd_pitfalls.lint.rules.wrong_fix import WrongFix
from autograd_pitfalls.lint.rules.zero_dim_index import ZeroDimIndex

__all__ = [
    "FAMILIES",
    "RULES",
    "UnknownCodeError",
    "default_codes",
    "families_for",
    "resolve_codes",
]

FAMILIES = (
    DataAttribute,
    ZeroDimIndex,
    LegacyVariable,
    Assembly,
    SavedTensorWrite,
    Parameters,
    GraphKeptAlive,
    EmbeddingMaxNorm,
    WrongFix,
    NumpyGrad,
    TrainingLoop,
)

RULES: dict[str, Rule] = dict(
    sorted({rule.code: rule for family in FAMILIES for rule in family.RULES}.items())
)


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


def families_for(codes: set[str]) -> list:
    """A fresh instance of every family with at least one of ``codes``."""
    return [family() for family in FAMILIES if any(rule.code in codes for rule in family.RULES)]
