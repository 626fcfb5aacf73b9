"""Assembling tensors: ``torch.tensor([...])`` of tensors (AGP120), writes into a leaf (AGP121)."""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import Analyzer, CallSite
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.values import NO, YES, Value

__all__ = ["Assembly"]

TENSOR_OF_TENSORS = Rule(
    "AGP120",
    "graph-cut-assembly",
    "`torch.tensor([...])` of tensors copies their values and cuts the graph: "
    "use `torch.stack([...])`.",
    "`torch.tensor`/`torch.Tensor`/`torch.as_tensor` of tensors that may require grad "
    "(a list literal, a list built elsewhere, a comprehension, or one such tensor)",
)
LEAF_WRITE = Rule(
    "AGP121",
    "leaf-inplace",
    "An in-place write (`x[i] = ...`, `x += ...`, `x.add_()`) into a leaf that requires grad "
    "raises while autograd records: build the values first (`torch.stack`, `torch.cat`), "
    "or write under `torch.no_grad()`.",
    "an in-place write into a leaf made to require grad, outside `no_grad`",
)

_CONSTRUCTORS = (
    "torch.tensor",
    "torch.Tensor",
    "torch.as_tensor",
    "torch.asarray",
    "torch.FloatTensor",
    "torch.DoubleTensor",
)


def _may_need_grad(value: Value) -> bool:
    return value.kind == "tensor" and value.grad != NO


class Assembly:
    """Finds tensors assembled in ways that cut the graph, and writes into leaves."""

    RULES = (TENSOR_OF_TENSORS, LEAF_WRITE)
    CALLS = _CONSTRUCTORS

    def on_call(self, an: Analyzer, site: CallSite, result: Value) -> None:
        node = site.node
        if not node.args or isinstance(node.args[0], ast.Starred) or not site.args:
            return
        first, pieces = node.args[0], site.args[0]
        if isinstance(first, ast.List | ast.Tuple):
            tensors = [_may_need_grad(item) for item in pieces.items or ()]
            if any(tensors):
                an.report(TENSOR_OF_TENSORS, node, edits=self._stacked(an, site, all(tensors)))
            return
        if pieces.kind in ("list", "tuple"):
            # Built elsewhere (a comprehension, appends, a name): only pieces known to
            # require grad, as a Parameter or what is computed from one (on public code,
            # lists of scheduler constants were the false alarms of "may require grad").
            element = pieces.element()
            if element.kind == "tensor" and element.grad == YES:
                an.report(TENSOR_OF_TENSORS, node)
        elif (
            pieces.kind == "tensor"
            and pieces.grad == YES
            and site.qual != "torch.as_tensor"
            and not any(keyword.arg == "requires_grad" for keyword in node.keywords)  # AGP160's
        ):
            an.report(TENSOR_OF_TENSORS, node)  # torch.tensor(t): a copy, cut from t's graph

    def _stacked(self, an: Analyzer, site: CallSite, all_tensors: bool) -> tuple:
        """``torch.stack([...])`` in place of ``torch.tensor([...])``, where values stay equal.

        Only for ``torch.tensor`` (which keeps the elements' dtype, as stack does) with one
        argument whose every element is a tensor: ``torch.Tensor`` casts to float32 and a
        ``dtype=``/``device=`` argument would need a conversion of its own.
        """
        node = site.node
        func = node.func
        if not all_tensors or len(node.args) != 1 or node.keywords or site.aliased:
            return ()
        if site.qual != "torch.tensor" or not isinstance(func, ast.Attribute):
            return ()
        if func.attr != "tensor" or any(isinstance(e, ast.Starred) for e in node.args[0].elts):  # type: ignore[attr-defined]
            return ()
        end = (func.end_lineno, func.end_col_offset)
        return ((end[0], end[1] - len("tensor"), *end, "stack"),)

    def on_write(self, an: Analyzer, value: Value, node: ast.AST) -> None:
        if value.leaf and value.grad == YES and not an.no_grad:
            an.report(LEAF_WRITE, node)
