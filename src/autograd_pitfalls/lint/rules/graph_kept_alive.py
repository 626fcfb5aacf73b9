"""A loss kept past its step: added into a running total (AGP140), appended (AGP141).

Both keep every step's graph alive (and, where no backward() freed them, the saved
activations). The total or list must outlive one iteration of the loop (made before it),
and must not be what a backward() later runs on (a loss summed on purpose).
"""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import Analyzer, CallSite, Scope
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.rules.common import is_loss_value, item_text, replace
from autograd_pitfalls.lint.values import Value

__all__ = ["GraphKeptAlive"]

ACCUMULATED_LOSS = Rule(
    "AGP140",
    "graph-kept-alive",
    "Adding the loss tensor to a running total keeps every step's graph alive: "
    "add `loss.item()` (or `loss.detach()`).",
    "`total += loss` (or `total = total + loss`) in a loop, the loss a tensor that may "
    "hold its graph, the total made before the loop",
)
APPENDED_LOSS = Rule(
    "AGP141",
    "graph-kept-alive",
    "Appending the loss tensor to a list keeps every step's graph alive: append "
    "`loss.item()` (or `loss.detach()`).",
    "`history.append(loss)` in a loop, the list made before it and never backpropagated",
)


class GraphKeptAlive:
    """Collects losses kept in a loop; reports them at the end of the function."""

    RULES = (ACCUMULATED_LOSS, APPENDED_LOSS)
    METHODS = ("append",)

    def on_aug_assign(self, an: Analyzer, node: ast.AugAssign, old: Value, value: Value) -> None:
        target = node.target
        if isinstance(node.op, ast.Add) and isinstance(target, ast.Name):
            self._accumulated(an, node, target.id, node.value, old, value)

    def on_assign(self, an: Analyzer, node, targets, value: Value, names_read: set[str]) -> None:
        added = node.value
        if (
            len(targets) == 1
            and isinstance(targets[0], ast.Name)
            and isinstance(added, ast.BinOp)
            and isinstance(added.op, ast.Add)
            and isinstance(added.left, ast.Name)
            and added.left.id == targets[0].id
        ):
            old = an.lookup(targets[0].id)
            self._accumulated(an, node, targets[0].id, added.right, old, value)

    def _accumulated(self, an: Analyzer, node, total: str, added: ast.AST, old, value) -> None:
        loop = an.loop
        if loop is None or total in loop.assigned or an.no_grad:
            return
        if isinstance(added, ast.Name) and added.id == total:
            return
        if old.kind not in ("number", "tensor", "unknown"):
            return
        if is_loss_value(value, added) and (value.loss or _is_loss_operand(an, added)):
            an.scope.notes.setdefault("AGP140", []).append((node, total, added, old))

    def on_call(self, an: Analyzer, site: CallSite, result: Value) -> None:
        node = site.node
        receiver = node.func.value  # type: ignore[attr-defined]
        loop = an.loop
        if loop is None or an.no_grad or not isinstance(receiver, ast.Name) or not node.args:
            return
        if site.receiver is None or site.receiver.kind != "list" or receiver.id in loop.assigned:
            return
        if is_loss_value(site.args[0], node.args[0]):
            an.scope.notes.setdefault("AGP141", []).append((node, receiver.id))

    def on_scope_end(self, an: Analyzer, scope: Scope) -> None:
        for node, total, added, old in scope.notes.get("AGP140", ()):
            if _kept_on_purpose(scope, total):
                continue
            method = (
                "item" if old.kind == "number" and total not in scope.attribute_reads else "detach"
            )
            an.report(ACCUMULATED_LOSS, node, edits=(replace(added, item_text(an, added, method)),))
        for node, name in scope.notes.get("AGP141", ()):
            if not _kept_on_purpose(scope, name):
                an.report(APPENDED_LOSS, node)


def _is_loss_operand(an: Analyzer, added: ast.AST) -> bool:
    """The added value is a loss by its own name (``loss``), or a loss call's result."""
    from autograd_pitfalls.lint.analyzer import terminal_name
    from autograd_pitfalls.lint.base import is_loss_name

    if isinstance(added, ast.Call):
        return True  # its value is a loss (checked by the caller): F.nll_loss(...)
    name = terminal_name(added)
    return name is not None and is_loss_name(name)


def _kept_on_purpose(scope: Scope, name: str) -> bool:
    """Summed for one backward() here, or returned to a caller who may call it."""
    if scope.flows_to_backward(name):
        return True
    return name in scope.returned and not scope.calls_backward
