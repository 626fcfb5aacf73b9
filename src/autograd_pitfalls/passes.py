"""Count the forward passes an answer computes with a weight, whatever object computes them.

A counter on a module's ``forward`` counts calls of that module only: an answer that runs
its second forward pass on ``copy.deepcopy(layer)``, or spells the layer out by hand, is
not counted. :class:`CountForwardProducts` counts by what is computed instead: every matrix
product that has the weight's values as an operand (the weight or its transpose, as
``nn.Linear`` uses it), outside ``backward()`` (whose products are gradients, not passes).
A layer that multiplies by its weight once per pass (``nn.Linear``, ``x @ weight``) then
counts one per forward pass, on any copy of the layer.
"""

from __future__ import annotations

from typing import Any

import torch

from autograd_pitfalls.compat import DispatchMode, in_backward, op_name, tree_leaves

__all__ = ["CountForwardProducts"]

# The aten matrix products that matmul, linear and @ come down to.
_PRODUCTS = frozenset({"mm", "addmm", "bmm", "baddbmm", "mv", "addmv", "dot"})


class CountForwardProducts(DispatchMode):
    """Counts, inside a ``with`` block, the forward matrix products with ``weight``'s values.

    Attributes:
        count: How many were computed so far.

    Example:
        >>> layer = torch.nn.Linear(3, 2)
        >>> with CountForwardProducts(layer.weight) as passes:
        ...     layer(torch.ones(1, 3)).sum().backward()
        ...     copy.deepcopy(layer)(torch.ones(1, 3))  # doctest: +SKIP
        >>> passes.count
        2
    """

    def __init__(self, weight: torch.Tensor) -> None:
        """Remembers ``weight``'s values as they are now.

        Args:
            weight: The weight whose products to count (2-dimensional).
        """
        super().__init__()
        self.values = weight.detach().clone()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None) -> Any:
        kwargs = kwargs or {}
        if op_name(func) in _PRODUCTS and not in_backward():
            operands = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            if any(self._holds_weight(operand) for operand in operands):
                self.count += 1
        return func(*args, **kwargs)

    def _holds_weight(self, operand: torch.Tensor) -> bool:
        if operand.device != self.values.device or operand.dtype != self.values.dtype:
            return False
        return any(
            operand.shape == values.shape and torch.equal(operand, values)
            for values in (self.values, self.values.T)
        )
