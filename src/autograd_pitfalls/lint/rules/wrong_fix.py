"""The wrong fix for "element 0 of tensors does not require grad" (AGP160)."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import Analyzer, CallSite, terminal_name
from autograd_pitfalls.lint.base import Rule, is_loss_name
from autograd_pitfalls.lint.values import Value

__all__ = ["WrongFix"]

LOSS_REQUIRES_GRAD = Rule(
    "AGP160",
    "grad-never-reached",
    "Setting `requires_grad` on a loss makes it a new leaf, so no gradient reaches the "
    "parameters: find where the graph was cut (`.data`, `.item()`, `torch.tensor`, no_grad).",
    "`loss.requires_grad_()`, `loss.requires_grad = True`, "
    "`torch.tensor(loss, requires_grad=True)`",
)


class WrongFix:
    """Finds ``requires_grad`` switched on for a loss."""

    RULES = (LOSS_REQUIRES_GRAD,)
    METHODS = ("requires_grad_",)
    CALLS = ("torch.tensor", "torch.autograd.Variable", "torch.autograd.variable.Variable")

    def on_call(self, an: Analyzer, site: CallSite, result: Value) -> None:
        node = site.node
        if site.method == "requires_grad_":
            receiver = node.func.value  # type: ignore[attr-defined]
            if _is_loss(receiver, site.receiver) and not _passes_false(node):
                an.report(LOSS_REQUIRES_GRAD, node)
            return
        if node.args and site.args and _is_loss(node.args[0], site.args[0]):
            flag = next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
            if isinstance(flag, ast.Constant) and flag.value is True:
                an.report(LOSS_REQUIRES_GRAD, node)

    def on_assign(self, an: Analyzer, node, targets, value: Value, names_read: set[str]) -> None:
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "requires_grad"
                and isinstance(node.value, ast.Constant)
                and node.value.value is True
                and _is_loss(target.value, None)
            ):
                an.report(LOSS_REQUIRES_GRAD, node)


def _is_loss(node: ast.AST, value: Value | None) -> bool:
    name = terminal_name(node)
    if name == "self":
        return False
    return (name is not None and is_loss_name(name)) or (value is not None and value.loss)


def _passes_false(node: ast.Call) -> bool:
    return (
        bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in (False, 0)
    )
