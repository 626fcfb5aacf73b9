"""A GPU stand-in on the CPU: tensors that hold real values and follow CUDA's device rules.

The course grades on machines without a GPU, yet an answer must be right on one: a tensor
built with ``torch.zeros(n)`` instead of ``torch.zeros(n, device=x.device)`` works on the
CPU and breaks on a GPU. The ``meta`` device showed that difference but had no values, so
it failed correct answers that read values (``.item()``, ``unique``, a boolean mask).

This stand-in is a device of its own, ``gpu`` (torch's spare ``PrivateUse1`` backend,
renamed), whose tensors keep their values in an ordinary CPU tensor. Every op on them runs
on those values and is checked first against what CUDA accepts:

- a stand-in tensor and a CPU tensor of more than one value in one op raise, as on CUDA
  and in CUDA's words, except where CUDA moves them: copies (``copy_``, ``.to()``),
  indices of an indexing op, and one 0-dim CPU tensor as an input of an elementwise op, as
  the value of ``fill_``/``masked_fill`` or of an indexed write (the rules, with their
  sources in PyTorch: :mod:`autograd_pitfalls.cuda_rules`);
- a factory without ``device=`` lands on the CPU; ``device=x.device`` lands on ``gpu``;
- ``.cpu()``, ``.tolist()``, ``.item()``, ``float()`` return host values (so
  ``torch.tensor([a, b])`` of 0-dim GPU tensors is a CPU tensor); ``.numpy()`` raises;
- views changed in place (``unsqueeze_``, ``t_``; ``v @ M`` squeezes its result so) keep
  the wrapper's shape with its values';
- a backward pass checks the device of the gradients it starts from, as CUDA's engine does
  for its own tensors, and an error raised inside one is raised when it returns, not in
  the engine, where it would abort the process (:mod:`autograd_pitfalls.standin_autograd`);
- optimisers take their foreach path, as for CUDA parameters.

While :func:`on_gpu` runs a function, ``"cuda"`` as a device, ``.cuda()`` and ``is_cuda``
mean the stand-in too, so code written for CUDA runs as it would there. What it does not
copy from CUDA (``x.device.type`` is ``"gpu"``, not ``"cuda"``; no streams, no
asynchrony) is listed with the cases in ``tests/test_gpu_standin.py``.

On a machine with a GPU the course uses that GPU instead: ``GPU`` is ``cuda:0``,
:func:`to_gpu` and :func:`on_gpu` move to it, and the stand-in is not set up at all. It
cannot be: once a process registers a backend of its own (PrivateUse1), torch takes it for
the process's one accelerator, and every backward pass over CUDA tensors fails inside
torch's autograd engine (``opt_ready_stream && opt_parent_stream INTERNAL ASSERT FAILED``;
pytorch/pytorch#161129, seen on an H100 with torch 2.11). To use the stand-in on such a
machine, hide the GPU: ``CUDA_VISIBLE_DEVICES=``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from autograd_pitfalls import compat, standin_autograd
from autograd_pitfalls.compat import tree_leaves, tree_map
from autograd_pitfalls.cuda_rules import check_devices
from autograd_pitfalls.pitfalls import explain

__all__ = ["GPU", "IS_STANDIN", "StandInTensor", "gpu_standin", "on_gpu", "to_gpu", "to_host"]


def _course_gpu() -> torch.device:
    """The machine's first CUDA device if it has one, else the stand-in's ``gpu:0``.

    ``torch.cuda.device_count()`` asks NVML and does not initialise CUDA, so a process that
    imports this module (the grader's zygote) can still fork kernels that use the GPU.
    """
    if torch.cuda.device_count() > 0:
        return torch.device("cuda", 0)
    return compat.gpu_standin_device()


GPU = _course_gpu()
# Whether GPU is the stand-in (no GPU here) or the machine's own CUDA device.
IS_STANDIN = GPU.type != "cuda"
# How a failure message names the GPU its inputs were on.
_WHICH_GPU = f"here a stand-in for one, device '{GPU.type}'" if IS_STANDIN else f"device {GPU}"
CPU = torch.device("cpu")


class StandInTensor(torch.Tensor):
    """A tensor on the stand-in device ``gpu`` whose values live in a CPU tensor.

    Autograd sees it as any tensor (leaf, ``grad_fn``, ``_version``, views); each op runs
    through :meth:`__torch_dispatch__` on the CPU values.
    """

    values: torch.Tensor

    @staticmethod
    def __new__(cls, values: torch.Tensor) -> StandInTensor:
        """Makes the tensor torch sees: ``values``' shape, strides and dtype, on ``gpu``."""
        return compat.wrapper_tensor(cls, values, GPU)

    def __init__(self, values: torch.Tensor) -> None:
        self.values = values

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _TO_PYTHON:
            # Read on the CPU values, not dispatched: torch.tensor([a, b]) of 0-dim GPU
            # tensors reads each with float() below the Python dispatch key, where a
            # backend written in Python fails (INTERNAL ASSERT in python_dispatch.cpp).
            with compat.disable_torch_function():
                return func(args[0].values, *args[1:], **kwargs)
        if func is torch.Tensor.numpy or func is torch.Tensor.__array__:
            # CUDA's words, with this device's name.
            raise TypeError(
                f"can't convert {GPU} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        if func in _HOOKS and len(args) > 1:
            args = (args[0], standin_autograd.deferring(args[1]), *args[2:])
        if compat.in_backward():  # a hook or a custom Function's backward, in the engine
            with compat.disable_torch_function_subclass():
                return func(*args, **kwargs)
        standin_autograd.raise_deferred()  # kept from a backward pass that did not say
        if func in standin_autograd.BACKWARD_ENTRIES:
            args, kwargs = standin_autograd.checked_root_gradients(func, args, kwargs, _is_gpu, GPU)
        try:
            with compat.disable_torch_function_subclass():
                result = func(*args, **kwargs)
        finally:
            if func in standin_autograd.BACKWARD_ENTRIES:
                standin_autograd.raise_deferred()
        if getattr(func, "__self__", None) is torch.Tensor.grad and result is not None:
            standin_autograd.check_accumulated(args[0], result, _is_gpu, GPU)
        return result

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        # torch's printing reads values with .tolist() where subclasses cannot: print the
        # CPU values, then say where they are, as a CUDA tensor's repr does.
        with compat.disable_torch_function():
            text = repr(self.values.detach())
        notes = [f"device='{GPU}'"]
        if self.grad_fn is not None:
            notes.append(f"grad_fn=<{type(self.grad_fn).__name__}>")
        elif self.requires_grad:
            notes.append("requires_grad=True")
        return f"{text[:-1]}, {', '.join(notes)})"

    def __format__(self, format_spec: str) -> str:
        # As a CUDA tensor: a 0-dim one formats as its value (f"{loss:.3f}").
        if self.dim() == 0:
            return self.item().__format__(format_spec)
        return super().__format__(format_spec)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


def _values(value: Any) -> Any:
    return value.values if isinstance(value, StandInTensor) else value


def _is_gpu(value: Any) -> bool:
    return isinstance(value, StandInTensor)


# Tensor methods that give Python values: computed on the CPU values.
_TO_PYTHON = frozenset(
    {
        torch.Tensor.tolist,
        torch.Tensor.item,
        torch.Tensor.__float__,
        torch.Tensor.__int__,
        torch.Tensor.__index__,
        torch.Tensor.__bool__,
        torch.Tensor.__complex__,
    }
)
# Tensor methods that register a hook the engine calls in a backward pass.
_HOOKS = frozenset({torch.Tensor.register_hook, torch.Tensor.register_post_accumulate_grad_hook})


def _run(func: Any, args: tuple, kwargs: dict) -> Any:
    """Runs one aten op on the stand-in: checks devices, computes on the CPU, rewraps.

    Inside a backward pass an error is kept for later instead of raised (see
    :mod:`autograd_pitfalls.standin_autograd`: raised there, it would abort the process),
    and the op computes on the values as they are.
    """
    try:
        check_devices(func, args, kwargs, _is_gpu, GPU)
    except RuntimeError as error:
        if not compat.in_backward():
            raise
        standin_autograd.defer(error)
    device = kwargs.get("device")
    # An op given a device other than the stand-in's (x.to("cpu"), zeros_like(x,
    # device="cpu")) leaves its result there, as on CUDA.
    to_host = device is not None and device.type != GPU.type
    if device is not None and device.type == GPU.type:
        kwargs = {**kwargs, "device": CPU}
    # An in-place op returns its input, a CPU tensor too: give back the caller's tensor.
    inputs = {id(_values(t)): t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
    result = func(*tree_map(_values, args), **tree_map(_values, kwargs))
    if to_host:
        return result
    if torch.Tag.inplace_view in func.tags and func.overloadpacket.__name__ not in _RESIZING:
        # squeeze_, unsqueeze_, t_, transpose_, as_strided_ (matmul of a 1-D tensor squeezes
        # its result in place): the wrapper's shape follows its values'.
        compat.apply_inplace_view(func, args, kwargs)
    for tensor in inputs.values():
        if isinstance(tensor, StandInTensor) and not _fits(tensor):
            # A wrapper's size is set when it is made: an op that resizes one in place
            # (resize_, an out= of another size) would leave the two apart, so the stand-in
            # refuses it, saying why.
            raise NotImplementedError(
                f"the GPU stand-in cannot resize a tensor in place ({func}): use the "
                "out-of-place form (x = torch.cat([x, y]), not torch.cat([x, y], out=x))"
            )

    def wrap(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        # An in-place op returns its input: give back the caller's tensor, not a new one.
        same = inputs.get(id(value))
        return StandInTensor(value) if same is None else same

    return tree_map(wrap, result)


# Ops tagged inplace_view that resize (or re-home) a tensor: a wrapper cannot follow them.
_RESIZING = frozenset({"resize_", "resize_as_", "set_"})


def _fits(tensor: StandInTensor) -> bool:
    """Whether a wrapper's shape and strides are still those of its values."""
    values = tensor.values
    return tensor.shape == values.shape and tensor.stride() == values.stride()


def _factory_kernel(func: Any, *args: Any, **kwargs: Any) -> Any:
    # Ops that reach the stand-in's backend without a stand-in tensor: factories given
    # device=GPU (torch.zeros(n, device=x.device)).
    return _run(func, args, kwargs)


# Factories that torch builds as empty((0,)) and then an out= op that resizes it: a wrapper
# cannot follow that resize (its shape would stay (0,)), so they get a kernel of their own.
_RESIZING_FACTORIES = (
    "arange",
    "arange.start",
    "arange.start_step",
    "range",
    "range.step",
    "eye",
    "eye.m",
)
# Holds the kernels below: torch keeps a kernel only while its Library lives.
_factories = torch.library.Library("aten", "IMPL")
# Where GPU is the machine's own CUDA device, no kernel is registered for the stand-in's
# backend (see the module's docstring).
if IS_STANDIN:
    compat.register_gpu_standin_kernel(_factory_kernel)
    # As on CUDA, an optimiser's default is the foreach path for the stand-in's parameters.
    compat.allow_foreach_optimizers(StandInTensor)
    for _name in _RESIZING_FACTORIES:
        _packet, _, _overload = _name.partition(".")
        _factories.impl(
            _name,
            functools.partial(
                _factory_kernel,
                getattr(getattr(torch.ops.aten, _packet), _overload or "default"),
            ),
            "PrivateUse1",
        )

_CUDA_NAME = re.compile(r"cuda(:\d+)?")
# Functions that build a tensor from Python data: torch cannot hand those to a device
# written in Python, so they build on the CPU and move.
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray}


def _as_standin_device(value: Any) -> Any:
    if isinstance(value, str) and _CUDA_NAME.fullmatch(value):
        return GPU
    if isinstance(value, torch.device) and value.type == "cuda":
        return GPU
    return value


class _CudaMeansStandIn(TorchFunctionMode):
    """While a function runs on the stand-in: ``cuda`` names the stand-in device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = {key: _as_standin_device(value) for key, value in (kwargs or {}).items()}
        if func is torch.Tensor.cuda:
            return args[0].to(GPU)
        if func is torch.Tensor.to or func is torch.Tensor.new_tensor:
            args = tuple(_as_standin_device(arg) for arg in args)
        if getattr(func, "__name__", "") == "__get__" and getattr(func, "__self__", None) is (
            torch.Tensor.is_cuda
        ):
            return args[0].device in (GPU,) or torch.Tensor.is_cuda.__get__(args[0])
        if func in _FROM_DATA or func is torch.Tensor.new_tensor:
            target = kwargs.get("device")
            if func is torch.Tensor.new_tensor and target is None:
                target = args[0].device
            if target is not None and torch.device(target).type == GPU.type:
                return func(*args, **{**kwargs, "device": CPU}).to(GPU)
        return func(*args, **kwargs)


def gpu_standin() -> contextlib.AbstractContextManager:
    """Returns a context in which code written for CUDA runs on the stand-in.

    Inside it, ``"cuda"`` as a device, ``.cuda()`` and ``is_cuda`` mean the stand-in, and
    ``torch.tensor(data, device=GPU)`` works (torch cannot build a tensor from Python data
    on a device written in Python: it is built on the CPU and moved). :func:`on_gpu` runs
    its function in it; a test that hands ``GPU`` to an answer as a device uses it too.
    Where ``GPU`` is the machine's own CUDA device, the context changes nothing.
    """
    return _CudaMeansStandIn() if IS_STANDIN else contextlib.nullcontext()


def to_gpu(value: Any) -> Any:
    """Returns a copy of ``value`` with every tensor on the stand-in ``gpu`` device.

    Args:
        value: A tensor, ``nn.Parameter`` or ``nn.Module``, or a list, tuple or dict of
            them; anything else is returned as it is.

    Returns:
        The same structure on ``gpu``, values kept: Parameters stay Parameters, leaves that
        require grad stay such leaves, modules are deep-copied and moved with ``.to()``
        (a plain tensor attribute stays where it was, as on CUDA).
    """
    if isinstance(value, nn.Parameter):
        return nn.Parameter(value.detach().to(GPU), requires_grad=value.requires_grad)
    if isinstance(value, torch.Tensor):
        moved = value.detach().to(GPU)
        return moved.requires_grad_() if value.requires_grad and value.is_leaf else moved
    if isinstance(value, nn.Module):
        return copy.deepcopy(value).to(GPU)
    if isinstance(value, list | tuple):
        return type(value)(to_gpu(item) for item in value)
    if isinstance(value, dict):
        return {key: to_gpu(item) for key, item in value.items()}
    return value


def to_host(value: Any) -> Any:
    """Returns ``value`` with every stand-in tensor replaced by a plain CPU copy (detached)."""
    if isinstance(value, torch.Tensor):
        with compat.disable_torch_function():
            return value.detach().to(CPU) if value.device == GPU else value
    if isinstance(value, list | tuple):
        return type(value)(to_host(item) for item in value)
    if isinstance(value, dict):
        return {key: to_host(item) for key, item in value.items()}
    return value


# What CUDA's errors about tensors on two devices say (cuda_rules, standin_autograd).
_DEVICE_ERROR_WORDS = ("device", "CPU scalars")


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


def on_gpu(function: Callable[..., Any], *args: Any, name: str | None = None, **kwargs: Any) -> Any:
    """Calls ``function`` with its tensor arguments on the GPU stand-in; checks the result.

    On the CPU, ``torch.zeros(n)`` and ``torch.zeros(n, device=x.device)`` give the same
    tensor; on a GPU the first lands on the CPU and breaks. On the stand-in it breaks too,
    as it would on CUDA, and the values are real, so an answer that reads them runs.

    Args:
        function: The learner's function.
        *args: Its positional arguments, moved with :func:`to_gpu`.
        name: How the failure message calls the call; defaults to the function's name.
        **kwargs: Its keyword arguments, moved with :func:`to_gpu`.

    Returns:
        What ``function`` returned, still on the stand-in (:func:`to_host` brings it back).

    Raises:
        AssertionError: With the pitfall named, if the call fails because tensors were on
            two devices, or if a returned tensor is not on the stand-in.
    """
    label = name or f"{getattr(function, '__name__', 'the function')}(...)"
    moved_args, moved_kwargs = to_gpu(args), to_gpu(kwargs)
    try:
        with gpu_standin():
            result = function(*moved_args, **moved_kwargs)
        standin_autograd.raise_deferred()  # from a backward pass the answer started
    except (RuntimeError, TypeError) as error:
        text = str(error).strip()
        if not any(word in text for word in _DEVICE_ERROR_WORDS):
            raise
        raise AssertionError(
            f"{label} failed when its inputs were on a GPU ({_WHICH_GPU}): "
            f"{type(error).__name__}: {text.splitlines()[0]}\n" + explain("wrong-device")
        ) from None
    for path, tensor in _tensors_in(result, "result"):
        if tensor.device != GPU:
            raise AssertionError(
                f"{label}: {path} is on {tensor.device}, but the inputs were on a GPU "
                f"({_WHICH_GPU}). " + explain("wrong-device")
            )
    return result
