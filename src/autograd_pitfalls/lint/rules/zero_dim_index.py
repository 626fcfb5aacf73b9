"""``loss[0]`` on what is a 0-dim loss since PyTorch 0.4 (AGP104)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule
from autograd_pitfalls.lint.scalars import zero_dim_like

__all__ = ["ZeroDimIndexVisitor"]

LOSS_INDEX_0 = Rule(
    "AGP104",
    "zero-dim-indexed",
    "`[0]` on a 0-dim loss raises IndexError since PyTorch 0.4: use `.item()`.",
)


class ZeroDimIndexVisitor(PitfallVisitor):
    """Finds ``loss[0]`` (``loss.data[0]`` is AGP103's)."""

    RULES = (LOSS_INDEX_0,)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        value = node.value
        if isinstance(value, cst.Attribute) and value.attr.value == "data":
            return
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        index = node.slice[0].slice.value
        if not (isinstance(index, cst.Integer) and index.value == "0"):
            return
        if isinstance(self.parent(node), cst.AssignTarget):
            return  # loss[0] = ...: a container, written
        if zero_dim_like(self, value):
            self.report(node, LOSS_INDEX_0)
