"""What definitions and ``with`` statements declare: grad mode, Variable wrappers, models.

``with torch.no_grad():``, ``@torch.no_grad()`` and ``torch.set_grad_enabled(False)`` turn
grad mode off; a lambda or a short function that returns ``Variable(...)`` is an alias of
it (or hands its ``volatile=`` on); a class built on an ``nn`` class is a model; a function
annotated ``-> list[Tensor]`` returns tensors.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from autograd_pitfalls.lint.program import keyword, literal, terminal_name
from autograd_pitfalls.lint.values import ClassInfo, Value

if TYPE_CHECKING:
    from autograd_pitfalls.lint.analyzer import Analyzer

__all__ = [
    "NO_GRAD",
    "VARIABLE",
    "forwarded_call",
    "forwarded_to_variable",
    "grad_context",
    "is_grad_switch",
    "is_module_class",
    "is_static",
    "returns_tensor_list",
    "wrapped_variable",
]

VARIABLE = ("torch.autograd.Variable", "torch.autograd.variable.Variable")
NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.inference_mode",
    }
)


def is_grad_switch(an: Analyzer, call: ast.Call) -> bool:
    """``torch.set_grad_enabled(False)`` as a statement (grad mode off from here on)."""
    return an._callee_qual(call.func) == "torch.set_grad_enabled" and bool(call.args)


def grad_context(an: Analyzer, node: ast.AST) -> int | None:
    """1 for a context that turns grad mode off, 0 for one that turns it on, else None."""
    if not isinstance(node, ast.Call):
        return 1 if an._callee_qual(node) in NO_GRAD else None
    qual = an._callee_qual(node.func)
    if qual in NO_GRAD:
        if qual.endswith("inference_mode") and node.args and literal(node.args[0]) is False:
            return 0
        return 1
    if qual == "torch.enable_grad":
        return 0
    if qual == "torch.set_grad_enabled" and node.args:
        flag = literal(node.args[0])
        return 1 if flag is False else (0 if flag is True else None)
    return None


def is_module_class(value: Value) -> bool:
    """A base class that makes a model: an ``nn`` class, or a model class of the code."""
    if value.kind == "ref":
        return (value.qual or "").startswith("torch.nn.")
    return value.kind == "class" and isinstance(value.info, ClassInfo) and value.info.is_module


def is_static(node: ast.AST) -> bool:
    """A ``@staticmethod`` or ``@classmethod``: its first parameter is not ``self``."""
    return any(
        isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod")
        for decorator in getattr(node, "decorator_list", ())
    )


def returns_tensor_list(annotation: ast.AST | None) -> bool:
    """``-> list[Tensor]`` (or tuple, Sequence; any spelling of Tensor)."""
    if not isinstance(annotation, ast.Subscript):
        return False
    container = terminal_name(annotation.value) or ""
    if container.lower() not in ("list", "tuple", "sequence"):
        return False
    return any(
        isinstance(child, ast.Name | ast.Attribute) and terminal_name(child) == "Tensor"
        for child in ast.walk(annotation.slice)
    )


def forwarded_call(node: ast.AST) -> ast.Call | None:
    """The call a wrapper's result comes from: ``V(x).cuda()``, ``a if c else V(x)``."""
    while True:
        if isinstance(node, ast.IfExp):
            node = node.body if isinstance(node.body, ast.Call) else node.orelse
            continue
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            node = func.value  # `.cuda()`, `.to(device)` after the wrapped call
            continue
        return node


def forwarded_to_variable(an: Analyzer, node: ast.FunctionDef) -> bool:
    """A function whose every return gives ``Variable(...)`` (maybe moved): an alias."""
    returns = [s for s in node.body if isinstance(s, ast.Return) and s.value is not None]
    return bool(returns) and all(
        (call := forwarded_call(r.value)) is not None  # type: ignore[arg-type]
        and an._callee_qual(call.func) in VARIABLE
        for r in returns
    )


def wrapped_variable(an: Analyzer, node: ast.FunctionDef) -> str | None:
    """For ``def to_var(x, volatile=False): return Variable(x, volatile=volatile)``, the keyword.

    Only short functions are read (a wrapper is a few lines); the keyword is the
    function's parameter that it hands on as ``volatile=``.
    """
    if len(node.body) > 6:
        return None
    parameters = {argument.arg for argument in node.args.args + node.args.kwonlyargs}
    for statement in node.body:
        inner = statement.body + statement.orelse if isinstance(statement, ast.If) else [statement]
        candidates = [
            each.value
            for each in inner
            if isinstance(each, ast.Return | ast.Assign) and each.value is not None
        ]
        for candidate in candidates:
            call = forwarded_call(candidate)
            if call is None or an._callee_qual(call.func) not in VARIABLE:
                continue
            volatile = keyword(call, "volatile")
            if isinstance(volatile, ast.Name) and volatile.id in parameters:
                return volatile.id
    return None
