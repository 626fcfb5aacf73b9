"""Parameters that stop being leaves: rebinding (AGP130), wrap-then-move (AGP131)."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import Analyzer, CallSite, dotted
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.values import YES, Value

__all__ = ["Parameters"]

REBOUND = Rule(
    "AGP130",
    "not-a-leaf",
    "This rebinds a Parameter's name to an expression computed from it: the name now holds "
    "a non-leaf whose `.grad` stays None; update it in place under `torch.no_grad()` or "
    "give the result its own name.",
    "a name (or `self.<attr>`) that holds a leaf requiring grad, here and now, rebound to "
    "an expression of itself that requires grad",
)
MOVED_AFTER_WRAP = Rule(
    "AGP131",
    "not-a-leaf",
    "Moving or casting a leaf after making it (`nn.Parameter(x).to(...)`) returns a copy "
    "that is not a leaf: move `x` first, then wrap it or set `requires_grad`.",
    "`nn.Parameter(x).to(...)`/`.cuda()`/`.double()` (and leaf factories)",
)

_MOVES = ("to", "cuda", "cpu", "double", "float", "half", "bfloat16", "type", "long", "int")


class Parameters:
    """Follows the names that hold leaves requiring grad, in the order the code runs."""

    RULES = (REBOUND, MOVED_AFTER_WRAP)
    METHODS = _MOVES

    def on_call(self, an: Analyzer, site: CallSite, result: Value) -> None:
        receiver_node = site.node.func.value  # type: ignore[attr-defined]
        receiver = site.receiver
        if (
            isinstance(receiver_node, ast.Call)
            and receiver is not None
            and receiver.leaf
            and receiver.grad == YES
            and not (
                isinstance(receiver_node.func, ast.Attribute)
                and receiver_node.func.attr == "requires_grad_"
            )
        ):
            an.report(MOVED_AFTER_WRAP, site.node)

    def on_assign(self, an: Analyzer, node, targets, value: Value, names_read: set[str]) -> None:
        if len(targets) != 1 or an.no_grad or value.leaf or value.grad != YES:
            return
        target = targets[0]
        name = dotted(target)
        if name is None or name.count(".") > 1:
            return
        if isinstance(target, ast.Name):
            if name not in names_read:
                return
            old = an.lookup(name)
        elif name.startswith("self.") and an.cls is not None:
            old = an.cls.attributes.get(target.attr)  # type: ignore[attr-defined]
            if old is None or not _reads(node.value, name):
                return
        else:
            return
        if old.kind == "tensor" and old.leaf and old.grad == YES:
            an.report(REBOUND, node)


def _reads(expression: ast.AST, name: str) -> bool:
    """True when ``expression`` reads ``name`` (``self.eta``)."""
    return any(
        isinstance(child, ast.Attribute) and dotted(child) == name for child in ast.walk(expression)
    )
