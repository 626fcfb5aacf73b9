"""``total_loss += loss`` in a loop: every step's graph stays alive (AGP140)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule, is_loss_name, terminal_name
from autograd_pitfalls.lint.scalars import item_call
from autograd_pitfalls.lint.tensors import is_tensor_like

__all__ = ["GraphKeptAliveVisitor"]

ACCUMULATED_LOSS = Rule(
    "AGP140",
    "graph-kept-alive",
    "Adding the loss tensor to a running total keeps every step's graph alive: "
    "add `loss.item()` (or `loss.detach()`).",
)

# Names of callables that compute a loss tensor in training loops.
_LOSS_FUNCTIONS = frozenset({"loss_fn", "loss_func", "loss_function", "lossfn", "loss"})

# Ways a loss value turns into a plain number or a graph-free tensor before it is added.
_DETACHING = frozenset({"item", "detach", "tolist", "numpy", "data"})


class GraphKeptAliveVisitor(PitfallVisitor):
    """Finds a loss tensor added to a running total inside a loop."""

    RULES = (ACCUMULATED_LOSS,)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, cst.AddAssign) or not isinstance(node.target, cst.Name):
            return
        value = node.value
        if not isinstance(value, cst.Name) or not is_loss_name(value.value):
            return
        if not self.in_loop(node):
            return
        bindings = self.bindings_for(node)
        total = node.target.value
        if total in bindings.backwarded or value.value == total:
            return  # a loss summed on purpose, for one backward()
        if total in bindings.returned and not bindings.calls_backward:
            return  # summed for the caller, who may call backward() on it
        assigned = bindings.values.get(value.value, [])
        if not assigned or not all(self._computes_loss(v) for v in assigned):
            return  # unknown (a helper's result may be a number), or a number already
        self.report(node, ACCUMULATED_LOSS, replacement=self._fixed(node, bindings))

    def _fixed(self, node: cst.AugAssign, bindings) -> cst.AugAssign:
        """``total += loss.item()`` where the total is only ever a number, else ``.detach()``.

        ``.item()`` turns the total into a Python float, so it is used only where the
        function starts the total at a number literal and never calls a method on it.
        """
        total = node.target.value
        starts = bindings.values.get(total, [])
        numeric = bool(starts) and all(
            isinstance(v, cst.Integer | cst.Float) for v in starts if v is not node.value
        )
        if numeric and total not in bindings.attribute_reads:
            return node.with_changes(value=item_call(node.value))
        detached = cst.Call(func=cst.Attribute(value=node.value, attr=cst.Name("detach")))
        return node.with_changes(value=detached)

    def _computes_loss(self, value: cst.BaseExpression | None) -> bool:
        """True for a loss tensor: a criterion's or loss function's call, or tensor arithmetic.

        A call of anything else (``loss = train(...)``) may return a number, as old
        training loops did with ``loss.data[0]``, so it does not count.
        """
        if value is None or _is_number(value):
            return False
        if is_tensor_like(self, value):
            return True
        if not isinstance(value, cst.Call):
            return False
        callee = (terminal_name(value.func) or "").lower()
        functional = any(
            q.startswith("torch.nn.functional.") for q in self.qualified_names(value.func)
        )
        return functional or "criterion" in callee or callee in _LOSS_FUNCTIONS


def _is_number(value: cst.BaseExpression) -> bool:
    """True for a literal, ``float(...)``, ``x.item()``, ``x.data[0]`` or similar."""
    if isinstance(value, cst.Integer | cst.Float):
        return True
    if isinstance(value, cst.Call):
        if isinstance(value.func, cst.Name):  # builtins: float(loss), sum(numbers)
            return value.func.value in {"float", "int", "sum", "len", "round"}
        return terminal_name(value.func) in _DETACHING
    if isinstance(value, cst.Subscript | cst.Attribute):
        return "data" in cst.Module([]).code_for_node(value) or terminal_name(value) in _DETACHING
    return False
