"""Parameters that stop being leaves: rebinding (AGP130), wrap-then-move (AGP131)."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from autograd_pitfalls.lint.base import PitfallVisitor, Rule, dotted_name
from autograd_pitfalls.lint.tensors import makes_leaf_requiring_grad

__all__ = ["ParameterVisitor"]

REBOUND = Rule(
    "AGP130",
    "not-a-leaf",
    "This rebinds a Parameter's name to an expression computed from it: the name now holds "
    "a non-leaf whose `.grad` stays None; update it in place under `torch.no_grad()` or "
    "give the result its own name.",
)
MOVED_AFTER_WRAP = Rule(
    "AGP131",
    "not-a-leaf",
    "Moving or casting a leaf after making it (`nn.Parameter(x).to(...)`) returns a copy "
    "that is not a leaf: move `x` first, then wrap it or set `requires_grad`.",
)

_MOVES = frozenset(
    ["to", "cuda", "cpu", "double", "float", "half", "bfloat16", "type", "long", "int"]
)
_PARAMETER = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")


class ParameterVisitor(PitfallVisitor):
    """Tracks names and ``self`` attributes bound to Parameters or other grad leaves."""

    RULES = (REBOUND, MOVED_AFTER_WRAP)

    def __init__(self) -> None:
        super().__init__()
        self._class_parameters: list[set[str]] = []  # per enclosing class: `self.w` names

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        parameters = set()
        for assign in m.findall(node, m.Assign()):
            assign = cst.ensure_type(assign, cst.Assign)
            if self.refers_to(assign.value, *_PARAMETER):
                for target in assign.targets:
                    name = dotted_name(target.target)
                    if name is not None and name.startswith("self."):
                        parameters.add(name)
        self._class_parameters.append(parameters)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._class_parameters.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _MOVES
            and makes_leaf_requiring_grad(self, func.value)
            and not _is_requires_grad_call(func.value)
        ):
            self.report(node, MOVED_AFTER_WRAP)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or self.refers_to(node.value, *_PARAMETER):
            return
        target = node.targets[0].target
        name = dotted_name(target)
        if name is None or not _uses(node.value, name):
            return
        if makes_leaf_requiring_grad(self, node.value):  # w = w.detach().requires_grad_()
            return
        if self._holds_parameter(target, name, node.value) and not self.under_no_grad(node):
            self.report(node, REBOUND)

    def _holds_parameter(
        self, target: cst.BaseExpression, name: str, rebound_to: cst.BaseExpression
    ) -> bool:
        if isinstance(target, cst.Name):
            values = self.bindings_for(target).values.get(name, [])
            return any(
                value is not None
                and value is not rebound_to
                and makes_leaf_requiring_grad(self, value)
                for value in values
            )
        return bool(self._class_parameters) and name in self._class_parameters[-1]


def _is_requires_grad_call(node: cst.BaseExpression) -> bool:
    """``x.to(d).requires_grad_()`` is the right order; only its inner part is checked."""
    return m.matches(node, m.Call(func=m.Attribute(attr=m.Name("requires_grad_"))))


def _uses(expression: cst.BaseExpression, name: str) -> bool:
    """True when ``expression`` reads ``name`` (``eta`` or ``self.eta``) outside a call's callee."""
    for candidate in m.findall(expression, m.Name() | m.Attribute()):
        if dotted_name(candidate) == name:
            return True
    return False
