"""The pre-0.4 ``Variable`` wrapper (AGP110) and its ``volatile=`` flag (AGP111)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule, get_arg

__all__ = ["LegacyVariableVisitor"]

VARIABLE = Rule(
    "AGP110",
    "legacy-variable",
    "`Variable(t)` is `t.detach()` since PyTorch 0.4: use the tensor itself.",
)
VOLATILE = Rule(
    "AGP111",
    "autograd-on-in-evaluation",
    "`volatile=True` has no effect since PyTorch 0.4, so autograd still records: "
    "run the evaluation under `with torch.no_grad():`.",
)

VARIABLE_NAMES = ("torch.autograd.Variable", "torch.autograd.variable.Variable")
VOLATILE_NOTE = "# volatile=True had no effect since PyTorch 0.4: run this under torch.no_grad()"


class LegacyVariableVisitor(PitfallVisitor):
    """Finds ``Variable(...)`` calls, resolved through imports and aliases."""

    RULES = (VARIABLE, VOLATILE)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.refers_to(node, *VARIABLE_NAMES):
            return
        volatile = get_arg(node, "volatile")
        if volatile is not None:
            statement = next(
                (a for a in self.ancestors(node) if isinstance(a, cst.SimpleStatementLine)), None
            )
            fixed = self._statement_without(statement, node, volatile)
            self.report(volatile, VOLATILE, replacement=fixed, replaces=statement)
            self.report(node, VARIABLE)  # fixed on the next pass, once volatile= is gone
            return
        self.report(node, VARIABLE, replacement=self._unwrapped(node))

    def _unwrapped(self, node: cst.Call) -> cst.BaseExpression | None:
        """``Variable(x)`` as ``x`` where x cannot require grad, else ``x.detach()``.

        ``Variable(x)`` returns ``x.detach()``: a new tensor on x's memory that does not
        require grad. Writing just ``x`` is the same only when x does not require grad,
        which a factory call without ``requires_grad=True`` guarantees.
        """
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return None  # Variable(x, requires_grad=True): no one-line equivalent kept exact
        value = node.args[0].value
        if _is_fresh_tensor(self, value):
            return value
        if not isinstance(value, cst.Name | cst.Attribute | cst.Call | cst.Subscript):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))

    def _statement_without(
        self, statement: cst.SimpleStatementLine | None, call: cst.Call, volatile: cst.Arg
    ) -> cst.CSTNode | None:
        """``statement`` (which holds ``call``) without ``volatile=``, with a note at its end."""
        if statement is None or statement.trailing_whitespace.comment is not None:
            return None
        args = [arg for arg in call.args if arg is not volatile]
        if args:  # the last argument must not keep a trailing comma that volatile= needed
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new_call = call.with_changes(args=args)
        return statement.deep_replace(call, new_call).with_changes(
            trailing_whitespace=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(VOLATILE_NOTE)
            )
        )


_FRESH = frozenset(
    [
        "tensor",
        "Tensor",
        "FloatTensor",
        "DoubleTensor",
        "LongTensor",
        "IntTensor",
        "ByteTensor",
        "BoolTensor",
        "HalfTensor",
        "from_numpy",
        "randn",
        "rand",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "linspace",
        "eye",
        "randint",
        "randperm",
    ]
)


def _is_fresh_tensor(visitor, node: cst.BaseExpression) -> bool:
    """A tensor just made by a torch factory (maybe moved or cast): it cannot require grad."""
    while (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in {"cuda", "cpu", "to", "float", "double", "long", "view"}
    ):
        node = node.func.value
    if not isinstance(node, cst.Call) or get_arg(node, "requires_grad") is not None:
        return False
    return any(
        q.startswith("torch.") and q.rsplit(".", 1)[-1] in _FRESH
        for q in visitor.qualified_names(node.func)
    )
