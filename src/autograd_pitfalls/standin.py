"""A GPU stand-in on the CPU: tensors that hold real values and follow CUDA's device rules.

The course grades on machines without a GPU, yet an answer must be right on one: a tensor
built with ``torch.zeros(n)`` instead of ``torch.zeros(n, device=x.device)`` works on the
CPU and breaks on a GPU. The ``meta`` device showed that difference but had no values, so
it failed correct answers that read values (``.item()``, ``unique``, a boolean mask).

This stand-in is a device of its own, ``gpu`` (torch's spare ``PrivateUse1`` backend,
renamed), whose tensors keep their values in an ordinary CPU tensor. Every op on them runs
on those values and is checked first against what CUDA accepts:

- a stand-in tensor and a CPU tensor of more than one value in one op raise, as on CUDA
  (``Expected all tensors to be on the same device``), except where CUDA moves them:
  copies (``copy_``, ``.to()``), indices of an indexing op, and a 0-dim CPU tensor as an
  operand of an elementwise op, as the value of ``fill_``/``masked_fill`` or of an
  indexed write;
- a factory without ``device=`` lands on the CPU; ``device=x.device`` lands on ``gpu``;
- ``.cpu()``, ``.tolist()`` and ``.item()`` return host values; ``.numpy()`` raises as on
  CUDA.

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

from autograd_pitfalls import compat
from autograd_pitfalls.compat import tree_leaves, tree_map
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

# Ops that take tensors from two devices on CUDA too: copies between devices.
_COPIES = frozenset({"copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "lift_fresh"})
# Indexing ops: their indices may be CPU tensors of any size (CUDA moves them).
_INDEXING = frozenset({"index", "_unsafe_index", "index_put", "index_put_", "_index_put_impl_"})
# Ops that are not tagged pointwise but take a 0-dim CPU tensor as their value on CUDA.
_TAKE_CPU_SCALAR = frozenset({"fill_", "fill", "masked_fill", "masked_fill_"})
# Ops tagged pointwise that take no CPU tensor on CUDA, not even a 0-dim one: clamp's tensor
# bounds keep the generated device check (no NoCheck in native_functions.yaml), addcdiv's
# TensorIterator does not allow_cpu_scalars.
_NO_CPU_SCALAR = frozenset(
    {
        "clamp",
        "clamp_",
        "clamp_min",
        "clamp_min_",
        "clamp_max",
        "clamp_max_",
        "addcdiv",
        "addcdiv_",
    }
)


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
        if func is torch.Tensor.tolist:
            return args[0].values.tolist()
        if func is torch.Tensor.numpy or func is torch.Tensor.__array__:
            # CUDA's words, with this device's name.
            raise TypeError(
                f"can't convert {GPU} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        with compat.disable_torch_function_subclass():
            return func(*args, **kwargs)

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


def _same_device_error() -> RuntimeError:
    # CUDA's message (c10 TensorIterator / checkSameDevice), with this device's name.
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{GPU} and cpu!"
    )


def _check_devices(func: Any, args: tuple, kwargs: dict) -> None:
    """Raises where CUDA raises for the tensors of one op (see the module's docstring)."""
    name = func.overloadpacket.__name__
    if name in _COPIES:
        return
    if name in _INDEXING:
        self, indices = args[0], args[1]
        on_gpu = isinstance(self, StandInTensor)
        if not on_gpu and any(isinstance(i, StandInTensor) for i in indices if i is not None):
            raise RuntimeError(
                "indices should be either on cpu or on the same device as the indexed tensor (cpu)"
            )
        values = [t for t in tree_leaves(args[2:]) if isinstance(t, torch.Tensor)]
        if _masked_fill_shortcut(self, indices, values, args[3:]):
            return
        # _index_put_impl_ moves a 0-dim value of the other device to self's, either way.
        if any(isinstance(t, StandInTensor) != on_gpu and t.dim() for t in values):
            raise _same_device_error()
        return
    if name in _TAKE_CPU_SCALAR:
        value = args[1] if name.startswith("fill") else args[2]
        if isinstance(value, torch.Tensor) and value.dim():
            return  # CUDA first says the value must be 0-dim; the CPU kernel says it too
        if name.startswith("fill") and isinstance(value, torch.Tensor):
            return  # fill_ reads a value of another device with .item(), either way
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    on_cpu = [t for t in tensors if not isinstance(t, StandInTensor)]
    if not on_cpu or len(on_cpu) == len(tensors):
        return
    pointwise = torch.Tag.pointwise in func.tags and name not in _NO_CPU_SCALAR
    # TensorIterator lets one CPU scalar into a CUDA kernel; where() moves its own.
    most = 3 if name == "where" else 1
    takes_scalars = pointwise or name in _TAKE_CPU_SCALAR
    if takes_scalars and len(on_cpu) <= most and all(t.dim() == 0 for t in on_cpu):
        return
    raise _same_device_error()


def _masked_fill_shortcut(self: Any, indices: Any, values: list, rest: tuple) -> bool:
    """canDispatchToMaskedFill: one CPU value of one element and one mask on self's device."""
    masks = [i for i in indices if i is not None]
    return (
        not (rest and rest[0])  # accumulate
        and len(values) == 1
        and not isinstance(values[0], StandInTensor)
        and values[0].numel() == 1
        and len(masks) == 1
        and masks[0].dtype in (torch.bool, torch.uint8)
        and isinstance(masks[0], StandInTensor) == isinstance(self, StandInTensor)
    )


def _run(func: Any, args: tuple, kwargs: dict) -> Any:
    """Runs one aten op on the stand-in: checks devices, computes on the CPU, rewraps."""
    _check_devices(func, args, kwargs)
    device = kwargs.get("device")
    # An op given a device other than the stand-in's (x.to("cpu"), zeros_like(x,
    # device="cpu")) leaves its result there, as on CUDA.
    to_host = device is not None and device.type != GPU.type
    if device is not None and device.type == GPU.type:
        kwargs = {**kwargs, "device": CPU}
    # An in-place op returns its input, a CPU tensor too: give back the caller's tensor.
    inputs = {id(_values(t)): t for t in tree_leaves(args) if isinstance(t, torch.Tensor)}
    result = func(*tree_map(_values, args), **tree_map(_values, kwargs))
    if to_host:
        return result

    def wrap(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        # An in-place op returns its input: give back the caller's tensor, not a new one.
        same = inputs.get(id(value))
        if same is None:
            return StandInTensor(value)
        if isinstance(same, StandInTensor) and (
            same.shape != value.shape or same.stride() != value.stride()
        ):
            # A wrapper's shape is fixed when it is made: an op that changes it in place
            # would leave the two apart, so the stand-in refuses it, saying why.
            raise NotImplementedError(
                f"the GPU stand-in cannot change a tensor's shape in place ({func}): use the "
                "out-of-place form (x = x.unsqueeze(0), not x.unsqueeze_(0))"
            )
        return same

    return tree_map(wrap, result)


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
    except (RuntimeError, TypeError) as error:
        text = str(error).strip()
        if "device" not in text:
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
