"""Tensor-aware test helpers for the exercises, with failure messages that name the pitfall.

The exercise tests call these instead of bare ``assert`` so that a failing learner reads
*why* (which pitfall, what to look at) and not only *that* something differs.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import torch
from torch import nn

from autograd_pitfalls.pitfalls import explain
from autograd_pitfalls.standin import StandInTensor

__all__ = [
    "assert_grad_close",
    "assert_is_leaf",
    "assert_version",
    "compare",
    "devices",
    "show_warnings_on_stdout",
]


def devices() -> list[torch.device]:
    """Returns every device the exercise tests should run on.

    Returns:
        ``[cpu]``, followed by ``cuda`` when a CUDA device is available.
    """
    found = [torch.device("cpu")]
    if torch.cuda.is_available():
        found.append(torch.device("cuda"))
    return found


def _exact_tensor(tensor: torch.Tensor, name: str) -> None:
    # A subclass can answer is_leaf, grad_fn or a comparison as it likes: the exercises ask
    # for plain tensors (or a Parameter), so only those classes are checked at all.
    if type(tensor) not in (torch.Tensor, nn.Parameter, StandInTensor):
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
