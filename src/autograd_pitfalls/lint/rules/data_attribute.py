"""``.data``: reads (AGP101), writes (AGP102), and ``.data[0]`` on one number (AGP103)."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import (
    AUG_STORE,
    METHOD,
    STORE,
    SUBSCRIPT_LOAD,
    SUBSCRIPT_STORE,
    Analyzer,
)
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.rules.common import (
    index_is_zero,
    item_text,
    may_be_tensor,
    replace,
    zero_dim_like,
)
from autograd_pitfalls.lint.torch_model import is_inplace_method
from autograd_pitfalls.lint.values import Value

__all__ = ["DataAttribute"]

DATA_READ = Rule(
    "AGP101",
    "data-not-detach",
    "`.data` reads a tensor behind autograd's back: use `.detach()`.",
    "a `.data` read on what may be a tensor",
)
DATA_WRITE = Rule(
    "AGP102",
    "hidden-write",
    "A write through `.data` is hidden from autograd's version counter and can give a "
    "silently wrong gradient: write under `with torch.no_grad():` instead.",
    "a write through `.data` (`x.data = `, `x.data[i] = `, `x.data.add_()`)",
)
DATA_INDEX_0 = Rule(
    "AGP103",
    "zero-dim-indexed",
    "`.data[0]` on a 0-dim tensor raises IndexError since PyTorch 0.4: use `.item()`.",
    "`x.data[0]` on a 0-dim tensor (a loss, a full reduction)",
)


class DataAttribute:
    """Finds every ``.data`` on what may be a tensor, and says how it is used."""

    RULES = (DATA_READ, DATA_WRITE, DATA_INDEX_0)
    ATTRIBUTES = ("data",)

    def on_attribute(
        self, an: Analyzer, node: ast.Attribute, receiver: Value, use: int, parent: ast.AST
    ) -> None:
        if not may_be_tensor(receiver, node.value):
            return
        if use == SUBSCRIPT_LOAD and index_is_zero(parent) and zero_dim_like(receiver, node.value):
            an.report(DATA_INDEX_0, parent, edits=(replace(parent, item_text(an, node.value)),))
            return
        written = use in (STORE, SUBSCRIPT_STORE, AUG_STORE) or (
            use == METHOD
            and isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Attribute)
            and is_inplace_method(parent.func.attr)
        )
        an.report(DATA_WRITE if written else DATA_READ, node)
