"""Watch one tensor's writes: which ones autograd saw, with grad mode on or off.

A version counter counts writes, not which write: a write autograd saw followed by a
``.data`` write still reads "version 1". ``WatchWrites`` tells them apart by copying the
tensor's values after every torch call that moved its counter: if the tensor ends with
other values, the last write was hidden. Notebook 02 uses it to show what an optimiser's
``step()`` does to a parameter, and its tests use it to check how an answer initialises
one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["CountedWrite", "WatchWrites"]


@dataclass(frozen=True)
class CountedWrite:
    """A torch call that moved the watched tensor's version counter.

    Attributes:
        op: The call's name, for example ``"add_"`` or ``"__setitem__"``.
        grad_enabled: Whether grad mode was on when it ran (``torch.is_grad_enabled()``):
            False under ``torch.no_grad()`` and inside an optimiser's ``step()``.
    """

    op: str
    grad_enabled: bool


class WatchWrites(TorchFunctionMode):
    """Records the writes to ``tensor`` that its version counter saw, inside a ``with`` block.

    After each torch call that moved the counter it notes the call (``writes``) and copies
    the values (``seen``); ``last_write_seen()`` then says whether the tensor still holds
    what autograd last saw. Device mixes are not its business: on the course's GPU stand-in
    (``autograd_pitfalls.standin``) they raise where CUDA raises.

    Writes through ``.data`` or numpy move no counter, so they appear in none of the lists.

    Attributes:
        tensor: The watched tensor.
        version: Its version counter after the last call.
        writes: Each call that moved the counter, with grad mode at that moment.
        seen: The values after the last counted write, or None before any.

    Example:
        >>> w = torch.nn.Parameter(torch.ones(2))
        >>> with WatchWrites(w) as watch, torch.no_grad():
        ...     w.mul_(3)
        >>> watch.writes
        [CountedWrite(op='mul_', grad_enabled=False)]
    """

    def __init__(self, tensor: torch.Tensor) -> None:
        """Starts watching ``tensor`` from its current version.

        Args:
            tensor: The tensor whose writes to record, on any device.
        """
        super().__init__()
        self.tensor, self.version = tensor, tensor._version
        self.writes: list[CountedWrite] = []
        self.seen: torch.Tensor | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        grad_enabled = torch.is_grad_enabled()  # as the caller set it, before the call
        result = func(*args, **kwargs)
        if self.tensor._version != self.version:
            self.version = self.tensor._version
            self.writes.append(CountedWrite(name, grad_enabled))
            self.seen = self.tensor.detach().clone()
        return result

    def last_write_seen(self) -> bool:
        """Whether the tensor holds the values of the last write autograd saw.

        Returns:
            False when no write was counted, or when the values changed since the last
            counted one (a hidden write). On ``meta`` there are no values to compare: True
            as soon as one write was counted.
        """
        if self.seen is None:
            return False
        if self.tensor.device.type == "meta":
            return True
        return torch.equal(self.seen, self.tensor.detach())
