"""The wrong fix for "element 0 of tensors does not require grad" (AGP160)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule, get_arg, is_loss_name, terminal_name

__all__ = ["WrongFixVisitor"]

LOSS_REQUIRES_GRAD = Rule(
    "AGP160",
    "grad-never-reached",
    "Setting `requires_grad` on a loss makes it a new leaf, so no gradient reaches the "
    "parameters: find where the graph was cut (`.data`, `.item()`, `torch.tensor`, no_grad).",
)

_REWRAPPERS = ("torch.tensor", "torch.autograd.Variable", "torch.autograd.variable.Variable")


class WrongFixVisitor(PitfallVisitor):
    """Finds ``requires_grad`` switched on for a loss."""

    RULES = (LOSS_REQUIRES_GRAD,)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            if _is_loss(func.value) and not _passes_false(node):
                self.report(node, LOSS_REQUIRES_GRAD)
            return
        if self.refers_to(node, *_REWRAPPERS) and node.args and _is_loss(node.args[0].value):
            flag = get_arg(node, "requires_grad")
            if flag is not None and _literal_true(flag.value):
                self.report(node, LOSS_REQUIRES_GRAD)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            assign = self.parent(node)
            is_assign = isinstance(assign, cst.Assign)
            if _is_loss(target.value) and is_assign and _literal_true(assign.value):
                self.report(assign, LOSS_REQUIRES_GRAD)


def _is_loss(node: cst.BaseExpression) -> bool:
    name = terminal_name(node)
    return name is not None and name != "self" and is_loss_name(name)


def _literal_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _passes_false(node: cst.Call) -> bool:
    return (
        bool(node.args)
        and isinstance(node.args[0].value, cst.Name)
        and node.args[0].value.value == "False"
    )
