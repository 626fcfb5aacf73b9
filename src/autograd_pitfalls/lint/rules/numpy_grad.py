"""``.numpy()`` on a tensor that requires grad (AGP170), or on a model's output (AGP171)."""

from __future__ import annotations

from autograd_pitfalls.lint.analyzer import Analyzer, CallSite
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.values import MODEL_OUTPUT, NO, YES, Value

__all__ = ["NumpyGrad"]

NUMPY_OF_GRAD_TENSOR = Rule(
    "AGP170",
    "numpy-needs-detach",
    "`.numpy()` raises on a tensor that requires grad: call `.detach()` first.",
    "`.numpy()` on a Parameter, or on a tensor the code made to require grad",
)
NUMPY_OF_OUTPUT = Rule(
    "AGP171",
    "numpy-needs-detach",
    "`.numpy()` raises on a model's output, which requires grad: call `.detach()` first.",
    "`.numpy()` on a model's output with no `.detach()`",
    on_by_default=False,
    why_off="Whether a model's output requires grad is known only at run time (a model "
    "without parameters, or one frozen): this rule guesses from the callee's name.",
)


class NumpyGrad:
    """Finds ``x.numpy()`` where nothing detached x and x requires grad."""

    RULES = (NUMPY_OF_GRAD_TENSOR, NUMPY_OF_OUTPUT)
    METHODS = ("numpy",)

    def on_call(self, an: Analyzer, site: CallSite, result: Value) -> None:
        receiver = site.receiver
        if receiver is None or site.node.args:
            return
        if any(keyword.arg == "force" for keyword in site.node.keywords):
            return
        if receiver.kind == "tensor" and receiver.grad == YES:
            # Under no_grad too: a Parameter requires grad whatever the grad mode.
            an.report(NUMPY_OF_GRAD_TENSOR, site.node)
        elif receiver.flags & MODEL_OUTPUT and receiver.grad != NO and not an.no_grad:
            an.report(NUMPY_OF_OUTPUT, site.node)
