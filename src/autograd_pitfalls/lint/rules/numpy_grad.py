"""``.numpy()`` on a tensor that may require grad (AGP170, off by default)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule

__all__ = ["NumpyGradVisitor"]

NUMPY_OF_GRAD_TENSOR = Rule(
    "AGP170",
    "numpy-needs-detach",
    "`.numpy()` raises on a tensor that requires grad: call `.detach()` first.",
    on_by_default=False,
    why_off="Whether a tensor requires grad is known only at run time: this rule guesses "
    "from the code around the call (a model's output, no `.detach()`, no `no_grad`).",
)

# In a chain before `.numpy()`, any of these means the value cannot require grad.
_SAFE_LINKS = frozenset({"detach", "data", "grad", "item", "cpu_numpy", "numpy"})


class NumpyGradVisitor(PitfallVisitor):
    """Finds ``x.numpy()`` where ``x`` comes from a call and nothing detached it."""

    RULES = (NUMPY_OF_GRAD_TENSOR,)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "numpy" or node.args:
            return
        root = func.value
        while True:  # walk x.cpu().float() down to x, stopping at anything that detaches
            if isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
                if root.func.attr.value in _SAFE_LINKS:
                    return
                root = root.func.value
            elif isinstance(root, cst.Attribute):
                if root.attr.value in _SAFE_LINKS:
                    return
                root = root.value
            else:
                break
        if not isinstance(root, cst.Name) or self.under_no_grad(node):
            return
        values = self.bindings_for(node).values.get(root.value, [])
        if values and all(
            _model_output(value) and not self.under_no_grad(value) for value in values
        ):
            self.report(node, NUMPY_OF_GRAD_TENSOR)


def _model_output(value: cst.BaseExpression | None) -> bool:
    """A call of a model or layer: ``model(x)``, ``self.net(x)``, ``net.forward(x)``."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Name):
        return func.value in {"model", "net", "network", "encoder", "decoder", "generator"}
    if isinstance(func, cst.Attribute):
        return func.attr.value == "forward" or (
            isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and not func.attr.value.startswith("_")
        )
    return False
