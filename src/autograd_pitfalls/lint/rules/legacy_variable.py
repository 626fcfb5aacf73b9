"""The pre-0.4 ``Variable`` (AGP110), its ``volatile=`` flag (AGP111), ``x.volatile`` (AGP112).

``Variable`` is found however it is named: imported under another name, bound to another
name (``V = Variable``), or wrapped in a lambda (``Variable = lambda *a, **k:
autograd.Variable(*a, **k).cuda()``). A function that hands one of its keywords on as
``volatile=`` (``def to_var(x, volatile=False)``) makes ``volatile=True`` at its calls a
finding too.
"""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import VOLATILE_WRAPPER, Analyzer, CallSite
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.rules.common import NodeEdit, may_be_tensor, replace
from autograd_pitfalls.lint.torch_model import names
from autograd_pitfalls.lint.values import Value

__all__ = ["LegacyVariable"]

VARIABLE = Rule(
    "AGP110",
    "legacy-variable",
    "`Variable(t)` is `t.detach()` since PyTorch 0.4: use the tensor itself.",
    "`Variable(...)`, however it is imported or aliased",
)
VOLATILE = Rule(
    "AGP111",
    "autograd-on-in-evaluation",
    "`volatile=True` has no effect since PyTorch 0.4, so autograd still records: "
    "run the evaluation under `with torch.no_grad():`.",
    "`volatile=` given to `Variable` (or to a function that hands it on)",
)
VOLATILE_READ = Rule(
    "AGP112",
    "autograd-on-in-evaluation",
    "`.volatile` was removed in PyTorch 0.4 (it reads False and setting it does nothing): "
    "use `with torch.no_grad():`, and `torch.is_grad_enabled()` to ask.",
    "`x.volatile` read or set",
)

VARIABLE_NAMES = ("torch.autograd.Variable", "torch.autograd.variable.Variable")
VOLATILE_NOTE = "# volatile=True had no effect since PyTorch 0.4: run this under torch.no_grad()"
_MOVES = frozenset({"cuda", "cpu", "to", "float", "double", "long", "view"})
_FRESH = names(
    "tensor Tensor FloatTensor DoubleTensor LongTensor IntTensor ByteTensor BoolTensor "
    "HalfTensor from_numpy randn rand zeros ones empty full arange linspace eye randint "
    "randperm"
)
_SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)


class LegacyVariable:
    """Finds ``Variable(...)`` calls, their ``volatile=``, and ``.volatile``."""

    RULES = (VARIABLE, VOLATILE, VOLATILE_READ)
    CALLS = (*VARIABLE_NAMES, VOLATILE_WRAPPER)
    ATTRIBUTES = ("volatile",)

    def on_call(self, an: Analyzer, site: CallSite, result: Value) -> None:
        node = site.node
        if site.qual == VOLATILE_WRAPPER:  # to_var(x, volatile=True)
            keyword = site.func.info.volatile_keyword  # type: ignore[union-attr]
            for given in node.keywords:
                if given.arg == keyword and not _is_false(given.value):
                    an.report(VOLATILE, given)
            return
        volatile = next((k for k in node.keywords if k.arg == "volatile"), None)
        if volatile is not None and not _is_false(volatile.value):
            edits = () if site.aliased else _without_volatile(an, node, volatile)
            an.report(VOLATILE, volatile, edits=edits)
            an.report(VARIABLE, node)  # fixed on the next pass, once volatile= is gone
            return
        edits = () if site.aliased or volatile is not None else _unwrapped(an, node)
        an.report(VARIABLE, node, edits=edits)

    def on_attribute(
        self, an: Analyzer, node: ast.Attribute, receiver: Value, use: int, parent: ast.AST
    ) -> None:
        if may_be_tensor(receiver, node.value):
            an.report(VOLATILE_READ, node)


def _is_false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, None, 0)


def _unwrapped(an: Analyzer, node: ast.Call) -> tuple[NodeEdit, ...]:
    """``Variable(x)`` as ``x`` where x cannot require grad, else ``x.detach()``.

    ``Variable(x)`` returns ``x.detach()``: a new tensor on x's memory that does not
    require grad. Writing just ``x`` is the same only when x does not require grad,
    which a factory call without ``requires_grad=True`` guarantees.
    """
    if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
        return ()  # Variable(x, requires_grad=True): no one-line equivalent kept exact
    value = node.args[0]
    text = an.segment(value)
    if _is_fresh_tensor(an, value):
        return (replace(node, text),)
    if not isinstance(value, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
        text = f"({text})"
    return (replace(node, f"{text}.detach()"),)


def _is_fresh_tensor(an: Analyzer, node: ast.AST) -> bool:
    """A tensor just made by a torch factory (maybe moved or cast): it cannot require grad."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MOVES
    ):
        node = node.func.value
    if not isinstance(node, ast.Call) or any(k.arg == "requires_grad" for k in node.keywords):
        return False
    qual = an._callee_qual(node.func) or ""
    return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _FRESH


def _without_volatile(an: Analyzer, call: ast.Call, volatile: ast.keyword) -> tuple:
    """The call without ``volatile=``, and a note at the end of its statement's line."""
    statement = an.statement
    if not isinstance(statement, _SIMPLE_STATEMENTS) or statement.end_lineno is None:
        return ()
    rest = an.line(statement.end_lineno)[_char_col(an, statement) :]
    if rest.strip():
        return ()  # a comment (or another statement) already there: left for a person
    arguments = [*call.args, *call.keywords]
    arguments.sort(key=lambda a: (a.lineno, a.col_offset))
    index = arguments.index(volatile)
    if index > 0:  # `, volatile=True`: from the end of the argument before
        before = arguments[index - 1]
        start = (before.end_lineno, before.end_col_offset)
        end = (volatile.end_lineno, volatile.end_col_offset)
    elif len(arguments) > 1:  # `volatile=True, `: up to the argument after
        after = arguments[1]
        start = (volatile.lineno, volatile.col_offset)
        end = (after.lineno, after.col_offset)
    else:
        start = (volatile.lineno, volatile.col_offset)
        end = (volatile.end_lineno, volatile.end_col_offset)
    line_end = len(an.line(statement.end_lineno).rstrip("\r\n").encode())
    return (
        (*start, *end, ""),
        (statement.end_lineno, line_end, statement.end_lineno, line_end, f"  {VOLATILE_NOTE}"),
    )


def _char_col(an: Analyzer, statement: ast.stmt) -> int:
    line = an.line(statement.end_lineno)  # type: ignore[arg-type]
    return len(line.encode()[: statement.end_col_offset].decode(errors="replace"))
