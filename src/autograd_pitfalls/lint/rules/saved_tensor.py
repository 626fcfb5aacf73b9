"""An in-place write into a tensor saved for backward, before the backward() that needs it.

AGP122 follows the program in order (a function, or a notebook's cells): each op that saves
a tensor for backward records the tensor's version then (the table of notebook 02a,
section 5: ``*``, ``@``, ``mm``, ``matmul``, ``dot``, ``linear`` save each factor when the other
requires grad,
``/`` its divisor, ``**``, ``log``, ``sin``, ``cos``, ``abs``, ``clamp``, ``norm``... their
input, ``exp``, ``sigmoid``, ``tanh``, ``relu``, ``softmax``, ``sqrt``... their output); an
in-place write (``x[i] = ...``, ``x += ...``, ``x.mul_()``, through a view too) moves the
version; a ``backward()`` (or ``torch.autograd.grad``) from a value whose graph holds a save
whose version moved is the error ``is at version 1; expected version 0``. The finding is
on the write.
"""

from __future__ import annotations

import ast

from autograd_pitfalls.lint.analyzer import Analyzer
from autograd_pitfalls.lint.base import Rule
from autograd_pitfalls.lint.values import Value, saves_behind

__all__ = ["SavedTensorWrite"]

SAVED_WRITE = Rule(
    "AGP122",
    "stale-saved-tensor",
    "This in-place write changes a tensor an op saved for backward, so the backward() "
    "that needs it raises: write out of place (`x = x * 2`), or into a `clone()`, or after "
    "backward().",
    "an in-place write into a tensor an op saved, before the backward() that needs it",
)


class SavedTensorWrite:
    """Checks at each backward() the saves behind it against the writes since."""

    RULES = (SAVED_WRITE,)

    def on_backward(self, an: Analyzer, value: Value, node: ast.AST) -> None:
        if value.kind != "tensor":
            return
        for save in saves_behind(value):
            storage = save.storage
            if storage.version <= save.version:
                continue
            for version, write, unit in storage.writes:
                if version > save.version:
                    saved_at = an.label(save.node, save.unit, here=unit)
                    needed_at = an.label(node, an.unit, here=unit)
                    detail = f"`{save.op}` saved it at {saved_at}; backward() at {needed_at}"
                    an.report_in(SAVED_WRITE, write, unit, detail)
                    break
