"""An ``nn.Embedding(max_norm=...)`` whose ``.weight`` is read elsewhere (AGP150)."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import ATTRIBUTE, METHOD, STORE, Analyzer
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.torch_model import names
from autograd_pitfalls.lint.values import RENORM, Value

__all__ = ["EmbeddingMaxNorm"]

WEIGHT_OF_RENORMED = Rule(
    "AGP150",
    "embedding-renorm-in-forward",
    "This embedding has `max_norm`, so every lookup rescales its weight in place: a use of "
    "`.weight` saved for backward before a lookup goes stale; use `.weight.clone()` there.",
    "`.weight` of an `nn.Embedding(max_norm=...)` used in a computation",
)

# `.weight.<x>` that reads no values a backward() saves: copies, metadata, its gradient.
_NOT_A_USE = names(
    """clone detach _version grad shape dtype device data requires_grad is_leaf grad_fn size
    dim numel new_zeros new_ones new_empty new_full copy_ requires_grad_ tolist"""
)


class EmbeddingMaxNorm:
    """Flags reads of the ``.weight`` of embeddings made with max_norm."""

    RULES = (WEIGHT_OF_RENORMED,)
    ATTRIBUTES = ("weight",)

    def on_attribute(
        self, an: Analyzer, node: ast.Attribute, receiver: Value, use: int, parent: ast.AST
    ) -> None:
        if receiver.kind != "module" or not receiver.flags & RENORM:
            return
        if use == STORE or an.no_grad or an.display:
            return  # a write, a read no backward() sees, or printed/asserted/stored by name
        if use == ATTRIBUTE and isinstance(parent, ast.Attribute) and parent.attr in _NOT_A_USE:
            return  # metadata, or a copy (the fix)
        if use == METHOD and isinstance(parent, ast.Call):
            method = parent.func.attr if isinstance(parent.func, ast.Attribute) else ""
            if method in _NOT_A_USE:
                return
        an.report(WEIGHT_OF_RENORMED, node)
