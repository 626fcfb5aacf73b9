"""What holds one number: a loss or a full reduction (a 0-dim tensor since PyTorch 0.4)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import is_loss_name, terminal_name

__all__ = ["item_call", "zero_dim_like"]

# Methods that reduce a whole tensor to one value when called without a dim.
_FULL_REDUCTIONS = frozenset(
    ["sum", "mean", "max", "min", "prod", "norm", "std", "var", "dist", "dot"]
)


def zero_dim_like(visitor, node: cst.BaseExpression) -> bool:
    """True for a loss (by name or by a loss function's call) or a reduction without dim.

    Args:
        visitor: The rule's visitor (resolves names).
        node: The expression indexed with ``[0]``.
    """
    name = terminal_name(node)
    if name is not None:
        return is_loss_name(name)
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _FULL_REDUCTIONS:
        return not node.args  # x.sum(), not x.sum(1) or x.max(dim=0)
    callee = terminal_name(func) or ""
    loss_function = any(
        q.startswith("torch.nn.functional.") and q.endswith("loss")
        for q in visitor.qualified_names(func)
    )
    return loss_function or callee in {"criterion", "loss_fn", "loss_function"}


def item_call(node: cst.BaseExpression) -> cst.Call:
    """``node.item()``, with parentheses around ``node`` where precedence needs them."""
    if not isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Subscript):
        node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("item")))
