"""What CUDA does when one aten op gets tensors on two devices: the GPU stand-in's rules.

The stand-in (:mod:`autograd_pitfalls.standin`) calls :func:`check_devices` before it runs
an op on its CPU values, and raises what CUDA raises, in CUDA's words (with the stand-in's
device name). Each rule names the PyTorch source it follows; ``tests/test_gpu_standin.py``
holds one row per case, with what CUDA does.

- Copies (``copy_``, ``.to()``) take any two devices.
- Indexing: indices may be CPU tensors of any size (CUDA moves them); a value written by
  ``index_put_`` moves to self's device only when it is 0-dim, and with ``accumulate`` a
  CUDA self checks the value's device itself (``_index_put_impl_``).
- ``fill_``, ``masked_fill``: the value may be a 0-dim tensor of the other device (its
  ``.item()`` is read); the mask must be on self's device (``masked_fill__cuda``).
- Elementwise ops (TensorIterator): the outputs come first, then the inputs; the common
  device is the first one that is not the CPU; one 0-dim CPU *input* may join a CUDA kernel
  (``allow_cpu_scalars``), a second one raises "Trying to pass too many CPU scalars", and a
  CPU output, 0-dim or not, raises (``total = torch.tensor(0.); total += gpu_loss``).
- Every other op checks that all its tensors are on one device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from autograd_pitfalls.compat import op_arguments, tree_leaves

__all__ = ["check_devices"]

IsGpu = Callable[[Any], bool]

# Ops that take tensors from two devices on CUDA too: copies between devices.
COPIES = frozenset({"copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "lift_fresh"})
# Indexing ops: their indices may be CPU tensors of any size (CUDA moves them).
INDEXING = frozenset({"index", "_unsafe_index", "index_put", "index_put_", "_index_put_impl_"})
FILLS = frozenset({"fill_", "fill"})
MASKED_FILLS = frozenset({"masked_fill", "masked_fill_"})
# Ops tagged pointwise that take no CPU tensor on CUDA, not even a 0-dim one: clamp's tensor
# bounds keep the generated device check (no NoCheck in native_functions.yaml), addcdiv's
# TensorIterator does not allow_cpu_scalars (aten/src/ATen/native/PointwiseOps.cpp).
NO_CPU_SCALAR = frozenset(
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
# torch.where moves 0-dim operands of another device itself (TensorCompare.cpp
# where_self_out), so up to three join; TensorIterator allows one elsewhere.
CPU_SCALARS_ALLOWED = {"where": 3}


def same_device_error(gpu: torch.device, other: torch.device | str = "cpu") -> RuntimeError:
    """TensorIterator's message (compute_types): the common device first, then the other."""
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{gpu} and {other}!"
    )


def check_devices(func: Any, args: tuple, kwargs: dict, is_gpu: IsGpu, gpu: torch.device) -> None:
    """Raises what CUDA raises for the tensors of one aten op, or returns.

    Args:
        func: The aten op (an OpOverload).
        args: Its positional arguments, as ``__torch_dispatch__`` got them.
        kwargs: Its keyword arguments.
        is_gpu: Whether a tensor is on the GPU (the stand-in's tensor class).
        gpu: The GPU's device, for the messages.
    """
    name = func.overloadpacket.__name__
    if name in COPIES:
        return
    if name in INDEXING:
        _check_indexing(name, args, kwargs, is_gpu, gpu)
        return
    if name in MASKED_FILLS:
        _check_masked_fill(args, is_gpu, gpu)
        return
    if name in FILLS and isinstance(args[1], torch.Tensor):
        return  # fill_ reads a 0-dim value of another device with .item() (Fill.cpp)
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if all(is_gpu(t) for t in tensors) or not any(is_gpu(t) for t in tensors):
        return
    if torch.Tag.pointwise in func.tags and name not in NO_CPU_SCALAR:
        _check_tensor_iterator(func, args, kwargs, is_gpu, gpu, CPU_SCALARS_ALLOWED.get(name, 1))
        return
    raise same_device_error(gpu)


def _device_of(tensor: torch.Tensor, is_gpu: IsGpu, gpu: torch.device) -> torch.device:
    return gpu if is_gpu(tensor) else torch.device("cpu")


def _operands(func: Any, args: tuple, kwargs: dict) -> tuple[list, list]:
    """TensorIterator's operands: ``(outputs, inputs)``, each in the schema's order.

    The outputs are the arguments the op writes (self of an in-place op, ``out=``); the
    inputs are the other tensor arguments and self of an in-place op, which is read too.
    """
    outputs, inputs = [], []
    for position, argument in enumerate(op_arguments(func)):
        value = args[position] if position < len(args) else kwargs.get(argument.name)
        tensors = [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]
        written = argument.alias_info is not None and argument.alias_info.is_write
        if written:
            outputs += tensors
        if not (written and argument.kwarg_only):  # out= is not read
            inputs += tensors
    return outputs, inputs


def _check_tensor_iterator(
    func: Any, args: tuple, kwargs: dict, is_gpu: IsGpu, gpu: torch.device, allowed: int
) -> None:
    """TensorIteratorBase::compute_types with check_all_same_device and allow_cpu_scalars."""
    outputs, inputs = _operands(func, args, kwargs)
    cpu_scalars = 0
    for tensor in outputs:
        if not is_gpu(tensor):
            raise same_device_error(gpu)  # a CPU output never joins a GPU kernel
    for tensor in inputs:
        if is_gpu(tensor):
            continue
        if tensor.dim() != 0:
            raise same_device_error(gpu)
        cpu_scalars += 1
        if cpu_scalars > allowed:
            raise RuntimeError("Trying to pass too many CPU scalars to non-CPU kernel!")


def _check_masked_fill(args: tuple, is_gpu: IsGpu, gpu: torch.device) -> None:
    """masked_fill__cuda (and the CPU kernel): the value first, then the mask's device."""
    self, mask, value = args[0], args[1], args[2]
    if isinstance(value, torch.Tensor) and value.dim():
        return  # "only supports a 0-dimensional value tensor": the CPU kernel says it too
    if is_gpu(mask) != is_gpu(self):
        raise RuntimeError(
            "expected self and mask to be on the same device, but got mask on "
            f"{_device_of(mask, is_gpu, gpu)} and self on {_device_of(self, is_gpu, gpu)}"
        )


def _check_indexing(name: str, args: tuple, kwargs: dict, is_gpu: IsGpu, gpu: torch.device) -> None:
    """Index reads and writes (TensorAdvancedIndexing.cpp, IndexingUtils.h)."""
    self, indices = args[0], args[1]
    on_gpu = is_gpu(self)
    if not on_gpu and any(is_gpu(i) for i in indices if i is not None):
        raise RuntimeError(
            "indices should be either on cpu or on the same device as the indexed tensor (cpu)"
        )
    values = [t for t in tree_leaves(args[2:3]) if isinstance(t, torch.Tensor)]
    if not values:
        return  # a read
    value = values[0]
    accumulate = bool(args[3] if len(args) > 3 else kwargs.get("accumulate", False))
    if _masked_fill_shortcut(self, indices, value, accumulate, is_gpu):
        return
    # _index_put_impl_ moves a 0-dim value of the other device to self's, either way.
    if is_gpu(value) == on_gpu or value.dim() == 0:
        return
    deterministic = torch.are_deterministic_algorithms_enabled() and value.numel() > 1
    if on_gpu and (accumulate or deterministic):
        # A CUDA self sorts the indices first (index_put_with_sort), checking the value.
        raise RuntimeError(
            f"expected device {gpu} but got device {_device_of(value, is_gpu, gpu)} "
            "for value tensor"
        )
    raise same_device_error(gpu)  # make_index_put_iterator: a TensorIterator


def _masked_fill_shortcut(
    self: Any, indices: Any, value: torch.Tensor, accumulate: bool, is_gpu: IsGpu
) -> bool:
    """canDispatchToMaskedFill: one CPU value of one element and one mask on self's device."""
    masks = [i for i in indices if i is not None]
    return (
        not accumulate
        and not is_gpu(value)
        and value.numel() == 1
        and len(masks) == 1
        and masks[0].dtype in (torch.bool, torch.uint8)
        and is_gpu(masks[0]) == is_gpu(self)
    )
