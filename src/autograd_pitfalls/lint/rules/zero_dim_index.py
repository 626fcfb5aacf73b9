"""``loss[0]`` on what is a 0-dim loss since PyTorch 0.4 (AGP104)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule
from autograd_pitfalls.lint.scalars import zero_dim_like

__all__ = ["ZeroDimIndexVisitor"]

# torch factories: a name bound to one holds a tensor with the dimensions it was given.
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "randn", "rand", "tensor", "Tensor"})

LOSS_INDEX_0 = Rule(
    "AGP104",
    "zero-dim-indexed",
    "`[0]` on a 0-dim loss raises IndexError since PyTorch 0.4: use `.item()`.",
    on_by_default=False,
    why_off="A name that reads as a loss may hold several (fsdp_loss = torch.zeros(2)); "
    "on the corpus 2 of its first 6 findings were real (docs/linter.md).",
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
        parent = self.parent(node)
        if isinstance(parent, cst.AssignTarget | cst.AugAssign) and parent.target is node:
            return  # loss[0] = ... or loss[0] += ...: a container, written
        if isinstance(value, cst.Name) and any(
            self._made_by_factory(bound) for bound in self._values_of(value) if bound is not None
        ):
            return  # `losses = torch.zeros(2)`: made here as a tensor with a dimension
        if zero_dim_like(self, value):
            self.report(node, LOSS_INDEX_0)

    def _made_by_factory(self, node: cst.BaseExpression) -> bool:
        """``torch.zeros(2)`` (maybe moved: ``.to(rank)``), a tensor with dimensions."""
        while (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in {"to", "cuda", "cpu", "float", "double", "long"}
        ):
            node = node.func.value
        return (
            isinstance(node, cst.Call)
            and bool(node.args)
            and any(
                q.startswith("torch.") and q.rsplit(".", 1)[-1] in _FACTORIES
                for q in self.qualified_names(node.func)
            )
        )

    def _values_of(self, name: cst.Name) -> list[cst.BaseExpression | None]:
        return self.bindings_for(name).values.get(name.value, [])
