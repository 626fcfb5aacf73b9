"""What several rule families ask: is this a tensor, a loss, one number; how to fix a node."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import terminal_name
from autograd_pitfalls.lint.base import is_loss_name
from autograd_pitfalls.lint.torch_model import names
from autograd_pitfalls.lint.values import MODEL_OUTPUT, NO, PACKED, SHAPED, Value

__all__ = [
    "NodeEdit",
    "index_is_zero",
    "is_loss_value",
    "item_text",
    "may_be_tensor",
    "replace",
    "zero_dim_like",
]

# An edit by position: (line, byte column) of its start and end, and the new text.
NodeEdit = tuple[int, int, int, int, str]

# Objects whose `.data` (or `.volatile`) is not a tensor's: datasets, configs, modules' fields.
NOT_TENSORS = names(
    """self cls args opt opts config cfg conf params hparams batch sample dataset data
    train_data test_data val_data train_set test_set val_set loader dataloader corpus np
    numpy pd df request response json yaml module model field vocab ctypes options flags
    FLAGS"""
)


def may_be_tensor(value: Value, node: ast.AST) -> bool:
    """True unless ``node`` is known not to be a tensor (by its value, or by its name)."""
    if value.kind == "tensor":
        return True
    if value.kind != "unknown" or value.flags & PACKED:
        return False
    if value.flags & MODEL_OUTPUT:
        return True
    name = terminal_name(node)
    if name is None:
        return True
    lowered = name.lower()
    return not (name in NOT_TENSORS or lowered.endswith(("dataset", "_set")) or "packed" in lowered)


def zero_dim_like(value: Value, node: ast.AST) -> bool:
    """Holds one number: a reduced loss, a full reduction, or a name that reads as a loss."""
    if value.zero_dim:
        return True
    if value.kind not in ("tensor", "unknown") or value.flags & SHAPED:
        return False
    if value.loss:  # a loss function's result that is not 0-dim: reduction="none"
        return False
    name = terminal_name(node)
    return name is not None and name != "self" and is_loss_name(name)


def is_loss_value(value: Value, node: ast.AST) -> bool:
    """A loss tensor that may hold its graph: a loss function's result, or a loss by name."""
    if value.kind != "tensor" or value.grad == NO:
        return False
    if value.loss:
        return True
    name = terminal_name(node)
    return name is not None and is_loss_name(name)


def index_is_zero(node: ast.AST) -> bool:
    """``x[0]``."""
    if not isinstance(node, ast.Subscript):
        return False
    index = node.slice
    return isinstance(index, ast.Constant) and index.value == 0 and type(index.value) is int


def replace(node: ast.AST, text: str) -> NodeEdit:
    """An edit that puts ``text`` in place of ``node``."""
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text)  # type: ignore[attr-defined]


def item_text(an, node: ast.AST, method: str = "item") -> str:
    """``node.item()`` (or another method), with parentheses where precedence needs them."""
    text = an.segment(node)
    if not isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
        text = f"({text})"
    return f"{text}.{method}()"
