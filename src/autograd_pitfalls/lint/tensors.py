"""Does an expression hold a tensor? A cautious, local answer shared by the rules.

"Tensor-like" means: made by a ``torch.*`` function, by a tensor method (``x.sum()``), by
arithmetic on such a value, or a name that its own function only ever assigns such values.
A name the function got from elsewhere (a parameter, a loop target) is unknown, so not
tensor-like: the rules that use this prefer a missed finding to a false one.
"""

from __future__ import annotations

import libcst as cst

__all__ = ["TENSOR_METHODS", "is_tensor_like", "makes_leaf_requiring_grad"]

# Methods that return a tensor when called on one (and that plain Python objects lack).
TENSOR_METHODS = frozenset(
    [
        "sum",
        "mean",
        "norm",
        "exp",
        "log",
        "sqrt",
        "abs",
        "pow",
        "matmul",
        "mm",
        "bmm",
        "dot",
        "squeeze",
        "unsqueeze",
        "view",
        "reshape",
        "clone",
        "detach",
        "max",
        "min",
        "std",
        "var",
        "prod",
        "sigmoid",
        "tanh",
        "relu",
        "softmax",
        "log_softmax",
        "cpu",
        "cuda",
        "to",
        "float",
        "double",
        "half",
        "t",
        "transpose",
        "permute",
        "expand",
        "repeat",
        "flatten",
        "neg",
    ]
)
# torch functions that return something other than a tensor.
_NOT_TENSOR_PREFIXES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.nn.",
    "torch.optim.",
    "torch.utils.",
    "torch.is_",
    "torch.get_",
    "torch.set_",
    "torch.manual_seed",
    "torch.numel",
    "torch.device",
    "torch.dtype",
    "torch.Size",
    "torch.no_grad",
    "torch.load",
    "torch.save",
    "torch.autograd.",
    "torch.jit.",
    "torch.compile",
)
# Factories whose ``requires_grad=True`` makes a leaf.
_FACTORIES = frozenset(
    [
        "tensor",
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
        "randn_like",
        "rand_like",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
    ]
)


def is_tensor_like(visitor, node: cst.BaseExpression, depth: int = 0) -> bool:
    """True when ``node`` surely evaluates to a tensor (see the module's docstring).

    Args:
        visitor: The :class:`~autograd_pitfalls.lint.base.PitfallVisitor` asking (it
            resolves names and reads the function's bindings).
        node: The expression.
        depth: Recursion guard through names bound to names.
    """
    if depth > 4:
        return False
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_METHODS:
            return not _is_python_container(func.value)
        if isinstance(func, cst.Attribute) and not _is_dotted(func.value):
            return False  # `f(x).item()`: a method this module does not know to give a tensor
        names = visitor.qualified_names(func)
        return any(
            name.startswith("torch.") and not name.startswith(_NOT_TENSOR_PREFIXES)
            for name in names
        )
    if isinstance(node, cst.BinaryOperation):
        return is_tensor_like(visitor, node.left, depth + 1) or is_tensor_like(
            visitor, node.right, depth + 1
        )
    if isinstance(node, cst.UnaryOperation):
        return is_tensor_like(visitor, node.expression, depth + 1)
    if isinstance(node, cst.Subscript):
        return is_tensor_like(visitor, node.value, depth + 1)
    if isinstance(node, cst.Name):
        values = visitor.bindings_for(node).values.get(node.value, [])
        return bool(values) and all(
            value is not None and is_tensor_like(visitor, value, depth + 1) for value in values
        )
    return False


def _is_dotted(node: cst.BaseExpression) -> bool:
    """``a`` or ``a.b.c``: a name that may resolve to an import (``torch.nn.functional``)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _is_python_container(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.List | cst.Tuple | cst.Dict | cst.SimpleString | cst.Integer)


def makes_leaf_requiring_grad(visitor, node: cst.BaseExpression) -> bool:
    """True for a call that makes a leaf requiring grad.

    That is ``torch.zeros(..., requires_grad=True)`` (any factory), ``nn.Parameter(x)`` or
    ``x.requires_grad_()``; anything computed from such a leaf is not a leaf.
    """
    if not isinstance(node, cst.Call):
        return False
    if visitor.refers_to(node, "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return True
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "requires_grad_":
        return not any(
            arg.value is not None and isinstance(arg.value, cst.Name) and arg.value.value == "False"
            for arg in node.args
        )
    factory = any(
        name.startswith("torch.") and name.rsplit(".", 1)[-1] in _FACTORIES
        for name in visitor.qualified_names(node.func)
    )
    return factory and any(
        arg.keyword is not None
        and arg.keyword.value == "requires_grad"
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "True"
        for arg in node.args
    )
