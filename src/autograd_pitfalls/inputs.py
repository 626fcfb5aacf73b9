"""Whether an answer left the tensors it was handed as they were.

A function that writes into its caller's tensors (``x -= x.mean(0)``, ``span -= low`` on a
tensor that ``.to()`` returned unchanged) gives the right result and breaks its caller,
who still uses them: the values changed, and any graph that saved them now fails or lies.
A probe records what it hands the answer with :class:`KeptInputs`, calls the answer, and
sends :meth:`KeptInputs.changes` (plain words) to the judge, which fails the check with
:func:`assert_inputs_left_alone` when the list is not empty.

For a module, its parameters and buffers are what it holds; for a list, tuple or dict,
each tensor in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from autograd_pitfalls import compat
from autograd_pitfalls.pitfalls import explain

__all__ = ["KeptInputs", "assert_inputs_left_alone"]


@dataclass(frozen=True)
class _Kept:
    """One tensor as it was handed over: the object, and a copy of what it held."""

    path: str
    tensor: torch.Tensor
    values: torch.Tensor
    version: int | None
    requires_grad: bool


def _version(tensor: torch.Tensor) -> int | None:
    try:
        return tensor._version
    except RuntimeError:  # an inference tensor has no version counter
        return None


def _copy(tensor: torch.Tensor) -> torch.Tensor:
    with compat.disable_torch_function():
        return torch.Tensor.detach(tensor).to("cpu", copy=True)


def _same_values(before: torch.Tensor, now: torch.Tensor) -> bool:
    if before.shape != now.shape or before.dtype != now.dtype:
        return False
    if before.is_floating_point() or before.is_complex():
        return bool(((before == now) | (before.isnan() & now.isnan())).all())
    return torch.equal(before, now)


def _tensors(value: Any, path: str) -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, nn.Module):
        held = [*value.named_parameters(), *value.named_buffers()]
        return [(f"{path}.{name}", tensor) for name, tensor in held]
    if isinstance(value, list | tuple):
        return [found for i, item in enumerate(value) for found in _tensors(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [found for k, item in value.items() for found in _tensors(item, f"{path}[{k!r}]")]
    return []


class KeptInputs:
    """What an answer is handed, recorded before the call, to compare with afterwards.

    Args:
        **named: The arguments, by the names the exercise gives them (``x=x, w=w``):
            tensors, modules, and lists, tuples and dicts of them.
    """

    def __init__(self, **named: Any) -> None:
        self._kept = [
            _Kept(path, tensor, _copy(tensor), _version(tensor), tensor.requires_grad)
            for name, value in named.items()
            for path, tensor in _tensors(value, name)
        ]
        # A module's tensors by name: one replaced by another object is a change too.
        self._modules = [
            (name, value, {path: id(tensor) for path, tensor in _tensors(value, name)})
            for name, value in named.items()
            if isinstance(value, nn.Module)
        ]

    def changes(self) -> list[str]:
        """What differs now from when they were recorded, one line per tensor, in order.

        A tensor differs when its values, shape or dtype changed, when it was written in
        place (its version moved, even back to the same values), or when its
        ``requires_grad`` changed; a module's parameter or buffer, also when another object
        took its place. A ``.grad`` is not looked at.
        """
        found = []
        for kept in self._kept:
            tensor = kept.tensor
            what = []
            if not _same_values(kept.values, _copy(tensor)):
                what.append("its values changed")
            elif (version := _version(tensor)) != kept.version:
                what.append(f"it was written in place (version {kept.version} -> {version})")
            if tensor.requires_grad != kept.requires_grad:
                what.append(f"requires_grad became {tensor.requires_grad}")
            if what:
                found.append(f"{kept.path}: {', '.join(what)}")
        for name, module, held in self._modules:
            now = {path: id(tensor) for path, tensor in _tensors(module, name)}
            for path in sorted(held.keys() | now.keys()):
                if held.get(path) != now.get(path):
                    found.append(f"{path}: replaced by another tensor")
        return found


def assert_inputs_left_alone(changes: list[str], name: str) -> None:
    """Fails, naming each tensor, when an answer changed what it was handed.

    Args:
        changes: What :meth:`KeptInputs.changes` found (a probe's observation).
        name: How the message calls the answer, for example ``"loss_and_centred(x, w)"``.

    Raises:
        AssertionError: With the pitfall named, when ``changes`` is not empty.
    """
    if changes:
        raise AssertionError(
            f"{name} changed what it was handed: {'; '.join(changes)}. " + explain("changed-input")
        )
