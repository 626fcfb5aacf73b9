"""What a function's own code binds its names to, read once per function.

Several rules ask "what was this name assigned?" (a tensor, a Parameter, a Python number).
They answer from the assignments in the same function (or at module level): no type
inference across calls, which keeps the rules predictable and their findings explainable.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst
import libcst.matchers as m

__all__ = ["Bindings", "collect_bindings"]


class Bindings:
    """The values assigned to each plain name in one function body, in source order.

    Attributes:
        values: ``name -> [value, ...]`` for ``name = value`` (tuple targets give no value:
            the name is still listed, bound to None, so a rule knows it is not a constant).
        loop_targets: Names bound by a ``for`` loop (``for x, y in loader``).
        parameters: The function's own parameter names.
        attribute_reads: Names read with an attribute (``total_loss.item()``).
        backwarded: Names on which ``.backward()`` (or ``torch.autograd.grad``) is called.
        returned: Names read in a ``return`` statement.
        calls_backward: True when the function calls ``backward()`` on anything.
    """

    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression | None]] = defaultdict(list)
        self.loop_targets: set[str] = set()
        self.parameters: set[str] = set()
        self.attribute_reads: set[str] = set()
        self.backwarded: set[str] = set()
        self.returned: set[str] = set()
        self.calls_backward = False


class _Collector(cst.CSTVisitor):
    """Walks one scope's body without entering nested functions or classes."""

    def __init__(self, bindings: Bindings, root: cst.CSTNode) -> None:
        self.bindings = bindings
        self.root = root

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.root:
            for param in node.params.params + node.params.kwonly_params:
                self.bindings.parameters.add(param.name.value)
            return True
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return node is self.root

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        for name in m.findall(node.target, m.Name()):
            self.bindings.loop_targets.add(cst.ensure_type(name, cst.Name).value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name):
            self.bindings.attribute_reads.add(node.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if m.matches(func, m.Attribute(attr=m.Name("backward"))):
            self.bindings.calls_backward = True
        if m.matches(func, m.Attribute(value=m.Name(), attr=m.Name("backward"))):
            self.bindings.backwarded.add(cst.ensure_type(func, cst.Attribute).value.value)
        for arg in node.args:  # torch.autograd.backward(loss), torch.autograd.grad(loss, ...)
            if isinstance(arg.value, cst.Name) and m.matches(
                func, m.Attribute(attr=m.Name("backward") | m.Name("grad"))
            ):
                self.bindings.backwarded.add(arg.value.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            for name in m.findall(node.value, m.Name()):
                self.bindings.returned.add(cst.ensure_type(name, cst.Name).value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.bindings.values[target.value].append(value)
        elif isinstance(target, cst.Tuple | cst.List):
            for name in m.findall(target, m.Name()):
                self.bindings.values[cst.ensure_type(name, cst.Name).value].append(None)


def collect_bindings(scope: cst.CSTNode) -> Bindings:
    """Reads the bindings of a function (or a module, or a class body)."""
    bindings = Bindings()
    scope.visit(_Collector(bindings, scope))
    return bindings
