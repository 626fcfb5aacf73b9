"""Assembling tensors: ``torch.tensor([...])`` of tensors (AGP120), index writes (AGP121)."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from autograd_pitfalls.lint.base import PitfallVisitor, Rule
from autograd_pitfalls.lint.tensors import is_tensor_like, makes_leaf_requiring_grad

__all__ = ["AssemblyVisitor"]

TENSOR_OF_TENSORS = Rule(
    "AGP120",
    "graph-cut-assembly",
    "`torch.tensor([...])` of tensors copies their values and cuts the graph: "
    "use `torch.stack([...])`.",
)
INDEX_WRITE = Rule(
    "AGP121",
    "leaf-inplace",
    "An index assignment writes in place into a leaf created with `requires_grad=True`: "
    "build the values first (`torch.stack`, `torch.cat`), or write under `torch.no_grad()`.",
)

_CONSTRUCTORS = ("torch.tensor", "torch.Tensor", "torch.as_tensor", "torch.FloatTensor")


class AssemblyVisitor(PitfallVisitor):
    """Finds tensors assembled in ways that cut or break the graph."""

    RULES = (TENSOR_OF_TENSORS, INDEX_WRITE)

    def __init__(self) -> None:
        super().__init__()
        self._module: cst.Module | None = None
        self._tensor_list_functions: set[str] | None = None  # read when first needed

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    @property
    def _returns_tensor_list(self) -> set[str]:
        """The module's functions annotated to return a list or tuple of tensors."""
        if self._tensor_list_functions is None:
            self._tensor_list_functions = self._annotated_functions()
        return self._tensor_list_functions

    def _annotated_functions(self) -> set[str]:
        names: set[str] = set()
        if self._module is None:
            return names
        for function in m.findall(self._module, m.FunctionDef(returns=m.Annotation())):
            function = cst.ensure_type(function, cst.FunctionDef)
            annotation = cst.Module([]).code_for_node(function.returns.annotation)
            if annotation.lower().startswith(("list[", "tuple[", "sequence[")) and (
                "Tensor" in annotation
            ):
                names.add(function.name.value)
        return names

    def visit_Call(self, node: cst.Call) -> None:
        if not self.refers_to(node, *_CONSTRUCTORS) or not node.args:
            return
        first = node.args[0]
        if first.keyword is not None:
            return
        if isinstance(first.value, cst.Name):
            if self._is_list_of_tensors(first.value):
                self.report(node, TENSOR_OF_TENSORS)
            return
        if not isinstance(first.value, cst.List | cst.Tuple):
            return
        elements = [element.value for element in first.value.elements]
        tensors = [is_tensor_like(self, element) for element in elements]
        if not any(tensors):
            return
        self.report(node, TENSOR_OF_TENSORS, replacement=self._stacked(node, all(tensors)))

    def _is_list_of_tensors(self, name: cst.Name) -> bool:
        """A name bound only to ``[tensor, ...]`` or to a local ``-> list[Tensor]`` call."""
        values = self.bindings_for(name).values.get(name.value, [])
        return bool(values) and all(
            (
                isinstance(value, cst.List | cst.Tuple)
                and value.elements
                and all(is_tensor_like(self, e.value) for e in value.elements)
            )
            or (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Name)
                and value.func.value in self._returns_tensor_list
            )
            for value in values
        )

    def _stacked(self, node: cst.Call, all_tensors: bool) -> cst.Call | None:
        """``torch.stack([...])`` in place of ``torch.tensor([...])``, where values stay equal.

        Only for ``torch.tensor`` (which keeps the elements' dtype, as stack does) with one
        argument whose every element is a tensor: ``torch.Tensor`` casts to float32 and a
        ``dtype=``/``device=`` argument would need a conversion of its own.
        """
        if not all_tensors or len(node.args) != 1 or not isinstance(node.func, cst.Attribute):
            return None
        if not self.refers_to(node, "torch.tensor") or node.func.attr.value != "tensor":
            return None
        if any(isinstance(e, cst.StarredElement) for e in node.args[0].value.elements):
            return None
        return node.with_changes(func=node.func.with_changes(attr=cst.Name("stack")))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._check_index_write(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_index_write(node.target)

    def _check_index_write(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Subscript) or not isinstance(target.value, cst.Name):
            return
        values = self.bindings_for(target).values.get(target.value.value, [])
        if not values or not all(
            value is not None and makes_leaf_requiring_grad(self, value) for value in values
        ):
            return
        if not self.under_no_grad(target):
            self.report(target, INDEX_WRITE)
