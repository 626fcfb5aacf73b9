"""Tensor-aware test helpers for the exercises, with failure messages that name the pitfall.

The exercise tests call these instead of bare ``assert`` so that a failing learner reads
*why* (which pitfall, what to look at) and not only *that* something differs.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from autograd_pitfalls.compat import DispatchMode, tree_leaves
from autograd_pitfalls.pitfalls import explain

__all__ = [
    "assert_grad_close",
    "assert_is_leaf",
    "assert_version",
    "compare",
    "devices",
    "on_meta",
    "show_warnings_on_stdout",
    "to_meta",
]

META = torch.device("meta")


def devices() -> list[torch.device]:
    """Returns every device the exercise tests should run on.

    Returns:
        ``[cpu]``, followed by ``cuda`` when a CUDA device is available.
    """
    found = [torch.device("cpu")]
    if torch.cuda.is_available():
        found.append(torch.device("cuda"))
    return found


def to_meta(value: Any) -> Any:
    """Returns a copy of ``value`` with every tensor on the ``meta`` device.

    Meta tensors have a shape, a dtype and autograd, but no data. A function that follows
    its input's device runs on them; one that builds a tensor on the CPU whatever the
    input's device fails or returns a CPU tensor. So a CPU-only machine can catch the device
    bug a GPU would show.

    Args:
        value: A tensor, ``nn.Parameter`` or ``nn.Module``, or a list, tuple or dict of
            them; anything else is returned as it is.

    Returns:
        The same structure on ``meta``: Parameters stay Parameters, leaves that require grad
        stay such leaves, modules are deep-copied (``to_empty``: their values are lost).
    """
    if isinstance(value, nn.Parameter):
        return nn.Parameter(value.detach().to(META), requires_grad=value.requires_grad)
    if isinstance(value, torch.Tensor):
        moved = value.detach().to(META)
        return moved.requires_grad_() if value.requires_grad and value.is_leaf else moved
    if isinstance(value, nn.Module):
        return copy.deepcopy(value).to_empty(device=META)
    if isinstance(value, list | tuple):
        return type(value)(to_meta(item) for item in value)
    if isinstance(value, dict):
        return {key: to_meta(item) for key, item in value.items()}
    return value


def _tensors_in(value: Any, path: str) -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, nn.Module):
        return [(f"{path}.{name}", t) for name, t in value.state_dict(keep_vars=True).items()]
    if isinstance(value, list | tuple):
        return [
            found for i, item in enumerate(value) for found in _tensors_in(item, f"{path}[{i}]")
        ]
    if isinstance(value, dict):
        return [found for k, item in value.items() for found in _tensors_in(item, f"{path}[{k!r}]")]
    return []


# Ops that accept a CPU operand next to a GPU tensor on a GPU too: copies, and indexing
# with CPU indices. Any other op given a CPU tensor of more than one value raises there.
_CROSS_DEVICE_OPS = frozenset(
    {"copy_", "_to_copy", "index", "index_put", "index_put_", "_index_put_impl_", "lift_fresh"}
)


class _CpuOperands(DispatchMode):
    """Records the ops that mix a meta tensor with a CPU tensor holding more than one value.

    On meta some of them run (``meta_tensor += cpu_tensor``); on a GPU they all raise
    (only 0-dim CPU tensors may be mixed with CUDA tensors).
    """

    def __init__(self) -> None:
        super().__init__()
        self.mixed: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket.__name__ not in _CROSS_DEVICE_OPS:
            tensors = [
                leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)
            ]
            on_meta = any(tensor.device == META for tensor in tensors)
            if on_meta and any(tensor.device.type == "cpu" and tensor.dim() for tensor in tensors):
                self.mixed.append(func.overloadpacket.__name__)
        return func(*args, **kwargs)


@contextlib.contextmanager
def _anomaly_without_nan_checks():
    # detect_anomaly() checks every gradient for NaN with .item(), which meta tensors
    # cannot answer: an answer left in anomaly mode must not fail for that.
    set_anomaly_enabled = torch.set_anomaly_enabled
    enabled, check_nan = torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()
    torch.set_anomaly_enabled = lambda mode, check_nan=True: set_anomaly_enabled(mode, False)
    try:
        yield
    finally:
        torch.set_anomaly_enabled = set_anomaly_enabled
        set_anomaly_enabled(enabled, check_nan)


def on_meta(
    function: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any
) -> Any:
    """Calls ``function`` with its tensor arguments on the ``meta`` device; checks the result.

    The grader runs on the CPU, where ``torch.zeros(n)`` and ``torch.zeros(n, device=x.device)``
    give the same tensor. On a GPU the first lands on the CPU and breaks. Meta tensors show
    that difference on any machine: every tensor the function returns must be on ``meta``.
    Meta tensors have no values, so check values separately, on :func:`devices`.

    Args:
        function: The learner's function.
        *args: Its positional arguments, moved with :func:`to_meta`.
        name: How the failure message calls the call; defaults to the function's name.
        **kwargs: Its keyword arguments, moved with :func:`to_meta`.

    Returns:
        What ``function`` returned on the meta inputs.

    Raises:
        AssertionError: With the pitfall named, if the call fails because a tensor was on
            another device (or needed data: ``.item()``, ``.tolist()``), if an op mixed a
            meta tensor with a CPU tensor of more than one value (meta lets ``+=`` do that,
            a GPU does not), or if a returned tensor is not on ``meta``. Anomaly mode's
            NaN checks are off meanwhile: they read values, which meta tensors do not have.
    """
    label = name or f"{getattr(function, '__name__', 'the function')}(...)"
    operands = _CpuOperands()
    try:
        with _anomaly_without_nan_checks(), operands:
            result = function(*to_meta(args), **to_meta(kwargs))
    except (RuntimeError, NotImplementedError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise AssertionError(
            f"{label} failed when its inputs were on another device (here 'meta', tensors "
            f"without data; on a GPU it would be 'cuda'): {type(error).__name__}: "
            f"{first_line}\n" + explain("wrong-device")
        ) from None
    if operands.mixed:
        raise AssertionError(
            f"{label} gave {operands.mixed[0]} a CPU tensor next to tensors on another device "
            "(here 'meta'; on a GPU this raises). " + explain("wrong-device")
        )
    for path, tensor in _tensors_in(result, "result"):
        if tensor.device != META:
            raise AssertionError(
                f"{label}: {path} is on {tensor.device}, but the inputs were on meta "
                "(a stand-in for a GPU). " + explain("wrong-device")
            )
    return result


def _exact_tensor(tensor: torch.Tensor, name: str) -> None:
    # A subclass can answer is_leaf, grad_fn or a comparison as it likes: the exercises ask
    # for plain tensors (or a Parameter), so only those classes are checked at all.
    if type(tensor) not in (torch.Tensor, nn.Parameter):
        raise AssertionError(
            f"{name} should be a torch.Tensor (or an nn.Parameter), "
            f"not the subclass {type(tensor).__name__}."
        )


def assert_is_leaf(tensor: Any, name: str, *, requires_grad: bool = True) -> None:
    """Asserts that ``tensor`` is a leaf, so that ``backward()`` fills its ``.grad``.

    Args:
        tensor: The object to check.
        name: How the failure message calls it, for example ``"eta"``.
        requires_grad: Also require ``tensor.requires_grad`` (the default).

    Raises:
        AssertionError: With the pitfall named, if ``tensor`` is not a tensor (a
            ``torch.Tensor`` or ``nn.Parameter``, not a subclass), not a leaf, or does not
            require grad.
    """
    if not isinstance(tensor, torch.Tensor):
        raise AssertionError(f"{name} should be a tensor, got {type(tensor).__name__}.")
    _exact_tensor(tensor, name)
    if not tensor.is_leaf:
        raise AssertionError(
            f"{name} is not a leaf: it has grad_fn=<{type(tensor.grad_fn).__name__}>. "
            + explain("not-a-leaf")
        )
    if requires_grad and not tensor.requires_grad:
        raise AssertionError(f"{name} does not require grad. " + explain("no-requires-grad"))


def compare(name: str, actual: torch.Tensor, expected: torch.Tensor) -> str:
    """Compares two tensors and says how: exact, approximately equal, and the max difference.

    Like nn-zero-to-hero's ``cmp()``: shows why ``==`` can fail where ``allclose`` passes.

    Args:
        name: A label for the line, for example ``"w.grad"``.
        actual: The tensor to judge.
        expected: The reference tensor (moved to ``actual``'s device to compare).

    Returns:
        One line, for example ``"w.grad | exact: False | approximate: True | max diff: 2.4e-08"``.
    """
    expected = expected.to(actual.device, actual.dtype)
    exact = bool(torch.equal(actual, expected))
    approximate = bool(torch.allclose(actual, expected))
    max_diff = (actual - expected).abs().max().item() if actual.numel() else 0.0
    return (
        f"{name:<12} | exact: {exact!s:<5} | approximate: {approximate!s:<5} "
        f"| max diff: {max_diff:.3g}"
    )


def assert_grad_close(
    actual: torch.Tensor | None,
    expected: torch.Tensor,
    *,
    name: str = "grad",
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> None:
    """Asserts that a gradient exists and is close to the expected one.

    Args:
        actual: The gradient to check, usually ``x.grad`` (may be None).
        expected: The gradient derived by hand or from a correct graph.
        name: How the failure message calls it, for example ``"w.grad"``.
        rtol: Relative tolerance, as in :func:`torch.allclose`.
        atol: Absolute tolerance, as in :func:`torch.allclose`.

    Raises:
        AssertionError: With the pitfall named, if ``actual`` is None, not a
            ``torch.Tensor`` or ``nn.Parameter`` (a subclass is refused), has another shape
            or device, or differs by more than the tolerances.
    """
    if actual is None:
        raise AssertionError(f"{name} is None. " + explain("grad-never-reached"))
    if not isinstance(actual, torch.Tensor):
        raise AssertionError(f"{name} should be a tensor, got {type(actual).__name__}.")
    _exact_tensor(actual, name)
    if actual.shape != expected.shape:
        raise AssertionError(
            f"{name} has shape {tuple(actual.shape)}, expected {tuple(expected.shape)}."
        )
    if actual.device.type != expected.device.type:
        raise AssertionError(f"{name} is on {actual.device}, expected it on {expected.device}.")
    reference = expected.to(actual.dtype)
    if not torch.allclose(actual, reference, rtol=rtol, atol=atol):
        raise AssertionError(
            f"{name} is wrong: expected {reference.detach().cpu().tolist()}, "
            f"got {actual.detach().cpu().tolist()}.\n"
            f"{compare(name, actual.detach(), reference.detach())}\n" + explain("wrong-gradient")
        )


def assert_version(tensor: torch.Tensor, at_least: int, name: str) -> None:
    """Asserts that autograd saw at least ``at_least`` in-place writes to ``tensor``.

    Writes through ``.data`` leave ``_version`` unchanged; this is how a test tells a write
    made under ``torch.no_grad()`` from one hidden from autograd.

    Args:
        tensor: The tensor that should have been modified in place.
        at_least: The smallest acceptable ``tensor._version``.
        name: How the failure message calls it.

    Raises:
        AssertionError: With the pitfall named, if ``tensor._version < at_least``.
    """
    if tensor._version < at_least:
        raise AssertionError(
            f"{name}._version is {tensor._version}, expected at least {at_least}: "
            "autograd did not see the write. " + explain("hidden-write")
        )


def show_warnings_on_stdout() -> None:
    """Makes Python (and PyTorch) warnings print to standard output instead of stderr.

    nbgrader scores a test cell 0 as soon as it writes to stderr, so a warning that PyTorch
    prints while a correct answer runs would cost points. The grader's kernels call this at
    start-up (see ``nbgrader_config.py``); warnings stay visible in the output.
    """

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stdout.write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show
