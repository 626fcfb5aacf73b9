"""``loss[0]`` on what is a 0-dim loss since PyTorch 0.4 (AGP104)."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import Analyzer
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.rules.common import index_is_zero, zero_dim_like
from autograd_pitfalls.lint.values import Value

__all__ = ["ZeroDimIndex"]

LOSS_INDEX_0 = Rule(
    "AGP104",
    "zero-dim-indexed",
    "`[0]` on a 0-dim loss raises IndexError since PyTorch 0.4: use `.item()`.",
    "`loss[0]` on a loss",
    on_by_default=False,
    why_off="A name that reads as a loss may hold several (fsdp_loss = torch.zeros(2)); "
    "on the first corpus 2 of its first 6 findings were real (docs/linter.md).",
)


class ZeroDimIndex:
    """Finds ``loss[0]`` (``loss.data[0]`` is AGP103's)."""

    RULES = (LOSS_INDEX_0,)

    def on_subscript(self, an: Analyzer, node: ast.Subscript, base: Value, store: bool) -> None:
        if store or not index_is_zero(node):
            return
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr == "data":
            return
        if base.kind in ("tensor", "unknown") and zero_dim_like(base, value):
            an.report(LOSS_INDEX_0, node)
