"""The GPU stand-in around a backward pass: the engine's device check, and errors kept.

Two things that torch's autograd engine does for CUDA tensors it skips, or cannot do, for a
tensor subclass on a backend written in Python (the stand-in, :mod:`autograd_pitfalls.
standin`), and which the stand-in does here instead:

- **The device of a gradient handed to backward.** ``loss.backward(gradient=g)`` and
  ``torch.autograd.grad(..., grad_outputs=g)``: the engine moves a 0-dim ``g`` to the
  output's device and refuses any other ``g`` on another device ("invalid gradient at
  index 0 - expected device cuda:0 but got cpu"; torch/csrc/autograd/engine.cpp
  validate_outputs). It skips that check for tensor subclasses (the "quick hack" for
  pytorch/pytorch#65016), so :func:`checked_root_gradients` makes it.
- **An error raised inside a backward pass.** A Python exception raised by an op (or a
  tensor hook) while the engine runs a node on the stand-in's device leaves Python's error
  indicator set while the engine's stream guard, on its way out, calls the stand-in's device
  guard, which is Python too: the process aborts (``terminate called without an active
  exception``; torch/csrc/acc/Module.cpp PythonDeviceGuard::exchangeStream is noexcept).
  So such an error is kept (:func:`defer`) instead of raised there, the op computes anyway,
  and :func:`raise_deferred` raises it once the backward pass has returned: the caller sees
  the error CUDA raises, and the kernel lives.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

import torch

__all__ = [
    "BACKWARD_ENTRIES",
    "check_accumulated",
    "checked_root_gradients",
    "defer",
    "deferring",
    "raise_deferred",
]

# The functions that start a backward pass and reach a subclass's __torch_function__, with
# the names of their outputs and their gradients.
BACKWARD_ENTRIES: dict[Callable, tuple[str, str]] = {
    torch.Tensor.backward: ("self", "gradient"),
    torch.autograd.backward: ("tensors", "grad_tensors"),
    torch.autograd.grad: ("outputs", "grad_outputs"),
}

_lock = threading.Lock()
# Errors raised inside a backward pass on the stand-in, oldest first: the engine may run a
# node in a thread of its own, so this is shared, not thread-local.
_deferred: list[BaseException] = []


def defer(error: BaseException) -> None:
    """Keeps ``error``, raised inside a backward pass, for :func:`raise_deferred`."""
    with _lock:
        _deferred.append(error)


def raise_deferred() -> None:
    """Raises the first error kept since the last call, if any (and forgets the others)."""
    with _lock:
        kept = _deferred[:1]
        _deferred.clear()
    if kept:
        raise kept[0].with_traceback(None)


def deferring(hook: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a tensor hook so that an error it raises is kept, not raised in the engine."""

    @functools.wraps(hook)
    def kept_if_raised(*args: Any, **kwargs: Any) -> Any:
        try:
            return hook(*args, **kwargs)
        except Exception as error:
            defer(error)
            return None  # the gradient goes on unchanged; the error is raised afterwards

    return kept_if_raised


def check_accumulated(
    leaf: torch.Tensor, grad: torch.Tensor, is_gpu: Callable[[Any], bool], gpu: torch.device
) -> None:
    """Raises where a leaf's ``.grad`` is on another device than the leaf.

    The engine checks each gradient a node returns (a hand-written ``autograd.Function``'s
    backward too: "Function MyFunctionBackward returned an invalid gradient at index 0 -
    expected device cuda:0 but got cpu") but skips the check for tensor subclasses, so a
    gradient of the wrong device can reach a stand-in leaf. The stand-in cannot see it
    there; it raises when ``.grad`` is read, with the engine's words.
    """
    if is_gpu(leaf) != is_gpu(grad):
        got = gpu if is_gpu(grad) else "cpu"
        expected = gpu if is_gpu(leaf) else "cpu"
        raise RuntimeError(
            f"a backward function returned an invalid gradient at index 0 - expected device "
            f"{expected} but got {got}"
        )


def _as_tuple(value: Any) -> tuple:
    if value is None or isinstance(value, torch.Tensor):
        return (value,)
    return tuple(value)


def checked_root_gradients(
    func: Callable, args: tuple, kwargs: dict, is_gpu: Callable[[Any], bool], gpu: torch.device
) -> tuple[tuple, dict]:
    """Checks the gradients a backward pass starts from as the engine does for CUDA tensors.

    Args:
        func: One of :data:`BACKWARD_ENTRIES`.
        args: Its positional arguments.
        kwargs: Its keyword arguments.
        is_gpu: Whether a tensor is on the GPU.
        gpu: The GPU's device.

    Returns:
        The arguments to call ``func`` with: a 0-dim gradient of the other device moved to
        its output's, as the engine moves it.

    Raises:
        RuntimeError: "invalid gradient at index i - expected device ... but got ..." for
            a gradient of more than one dimension on another device than its output.
    """
    outputs_name, grads_name = BACKWARD_ENTRIES[func]
    bound = inspect.signature(func).bind(*args, **kwargs)
    grads = bound.arguments.get(grads_name)
    if grads is None or bound.arguments.get("is_grads_batched"):
        return args, kwargs
    outputs = _as_tuple(bound.arguments[outputs_name])
    grads = _as_tuple(grads)
    moved = list(grads)
    for index, (output, grad) in enumerate(zip(outputs, grads, strict=False)):
        if not isinstance(output, torch.Tensor) or not isinstance(grad, torch.Tensor):
            continue
        if is_gpu(output) == is_gpu(grad) or grad.shape != output.shape:
            continue  # same device, or torch's own shape check speaks first (_make_grads)
        device = gpu if is_gpu(output) else torch.device("cpu")
        if grad.dim() == 0:
            moved[index] = grad.to(device)
            continue
        raise RuntimeError(
            f"invalid gradient at index {index} - expected device {device} but got "
            f"{gpu if is_gpu(grad) else 'cpu'}"
        )
    given = bound.arguments[grads_name]
    bound.arguments[grads_name] = moved[0] if isinstance(given, torch.Tensor) else moved
    return bound.args, bound.kwargs
