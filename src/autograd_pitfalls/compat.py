"""Every private API of torch this package relies on, in one place.

The helpers need things torch does not promise to keep: a dispatch mode sees each aten
op with its schema (``track_inplace`` finds in-place writes), the graph walk reads what
each backward node saved through its ``_raw_saved_<name>`` / ``_saved_<name>``
accessors, and the GPU stand-in is a backend set up through private functions. They are
reached here only, and ``tests/test_compat.py`` checks each one on the installed torch,
so that an upgrade that moves or renames one fails there, loudly, rather than somewhere
in a notebook. (``Tensor._version``, the version counter, is what notebook 02 teaches:
it is used as the course uses it.)
The grader's guard (``autograder/kernel/guard.py``) reads and pops the active torch modes
through the functions at the end.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch._ops import OpOverload
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

__all__ = [
    "CHECKED_SAVED_PREFIX",
    "RAW_SAVED_PREFIX",
    "DispatchMode",
    "OpOverload",
    "TorchDispatchMode",
    "allow_foreach_optimizers",
    "apply_inplace_view",
    "disable_torch_function",
    "disable_torch_function_subclass",
    "gpu_standin_device",
    "in_backward",
    "leave_inference_mode",
    "op_arguments",
    "op_name",
    "pop_torch_modes",
    "register_gpu_standin_kernel",
    "torch_mode_stacks",
    "tree_leaves",
    "tree_map",
    "wrapper_tensor",
]

# A backward node exposes each tensor it saved twice: ``_raw_saved_<x>`` (a SavedTensor
# whose .data is the tensor, unchecked) and ``_saved_<x>`` (unpacked with backward()'s
# version check).
RAW_SAVED_PREFIX = "_raw_saved_"
CHECKED_SAVED_PREFIX = "_saved_"


# Where torch._disable_dynamo keeps the wrapper it makes on first call, on the function.
DYNAMO_DISABLED_ATTRIBUTE = "__dynamo_disable"


class DispatchMode(TorchDispatchMode):
    """A dispatch mode whose first op does not import ``torch._dynamo`` when nothing has.

    TorchDispatchMode wraps a subclass's ``__torch_dispatch__`` in ``torch._disable_dynamo``,
    whose first call imports ``torch._dynamo`` (1.2-2.5 s, with sympy) to make the wrapper
    that ``torch.compile`` skips, and keeps it on the function under
    :data:`DYNAMO_DISABLED_ATTRIBUTE`. Eager code, the course's, never meets
    ``torch.compile``: while ``torch._dynamo`` is not imported, the function itself is kept
    there, so nothing is imported and a learner's first ``track_inplace()`` is instant;
    once something has imported it (an optimiser does), torch's own wrapper is made.
    """

    def __enter__(self) -> DispatchMode:
        wrapper = type(self).__dict__.get("__torch_dispatch__")
        raw = getattr(wrapper, "__wrapped__", None)
        if raw is not None:
            kept = getattr(raw, DYNAMO_DISABLED_ATTRIBUTE, None)
            if "torch._dynamo" not in sys.modules and kept is None:
                setattr(raw, DYNAMO_DISABLED_ATTRIBUTE, raw)
            elif "torch._dynamo" in sys.modules and kept is raw:
                delattr(raw, DYNAMO_DISABLED_ATTRIBUTE)
        return super().__enter__()


def op_name(func: OpOverload) -> str:
    """Returns an aten op's name without namespace and overload, for example ``add_``."""
    return func._opname


def in_backward() -> bool:
    """Whether this thread is running a backward pass (``backward()``, ``autograd.grad``)."""
    return torch._C._current_graph_task_id() != -1


def op_arguments(func: OpOverload) -> list[Any]:
    """Returns the arguments of an aten op's schema (``name``, ``alias_info``, ...)."""
    return list(func._schema.arguments)


# What the grader's guard reads in each student's kernel (autograder/kernel/guard.py): the
# active torch modes and the kernels registered from Python (tests/test_kernel_guard.py).
def torch_mode_stacks() -> tuple[list[Any], list[Any]]:
    """Returns the active torch function modes and dispatch modes of this thread."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    functions = [
        torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())
    ]
    return functions, list(_get_current_dispatch_mode_stack())


def pop_torch_modes() -> list[str]:
    """Pops every torch function and dispatch mode of this thread; returns their classes."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode

    popped = []
    while torch._C._len_torch_function_stack():
        popped.append(type(torch._C._pop_torch_function_stack()).__name__)
    while _get_current_dispatch_mode_stack():
        popped.append(type(_pop_mode()).__name__)
    return popped


# The GPU stand-in (autograd_pitfalls/standin.py) is torch's spare backend, PrivateUse1,
# renamed and given the device guard and hooks that torch expects of a backend written in
# C++. torch offers this for backends written in Python (test_privateuseone_python_backend
# in PyTorch), through private functions.
GPU_STANDIN_NAME = "gpu"
_standin_kernels: list[Any] = []


def gpu_standin_device() -> torch.device:
    """Sets up the stand-in backend once per process; returns its device, ``gpu:0``.

    Raises:
        RuntimeError: If something else renamed PrivateUse1 already.
    """
    from torch.utils import backend_registration as registration

    name = torch._C._get_privateuse1_backend_name()
    if name != GPU_STANDIN_NAME:
        if name != "privateuseone":
            raise RuntimeError(f"torch's PrivateUse1 backend is taken (named {name!r}).")
        torch.utils.rename_privateuse1_backend(GPU_STANDIN_NAME)
        # Not registration.generate_methods_for_privateuse1_backend(): it would add
        # Tensor.gpu() and friends, which the course does not want learners to meet.
        torch._register_device_module(GPU_STANDIN_NAME, registration._DummyBackendModule())
        torch._C._acc.register_python_privateuseone_hook(registration._DummyPrivateUse1Hook())
        torch._C._acc.register_python_privateuseone_device_guard(registration._DummyDeviceGuard())
    return torch.device(GPU_STANDIN_NAME, 0)


def register_gpu_standin_kernel(kernel: Any) -> None:
    """Makes ``kernel(op, *args, **kwargs)`` run every op that reaches the stand-in's backend.

    Only ops without a stand-in tensor get there (factories given its device); the others
    go to the tensor subclass's ``__torch_dispatch__`` first.
    """
    if _standin_kernels:
        return
    library = torch.library.Library("_", "IMPL")
    library.fallback(kernel, dispatch_key="PrivateUse1")
    _standin_kernels.append(library)


def wrapper_tensor(cls: type, values: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Makes an instance of the tensor subclass ``cls`` with ``values``' metadata on ``device``.

    The tensor has no storage of its own: ``cls.__torch_dispatch__`` computes every op
    (torch's way of writing a tensor type in Python, ``_make_wrapper_subclass``).
    """
    return torch.Tensor._make_wrapper_subclass(
        cls,
        values.shape,
        strides=values.stride(),
        storage_offset=values.storage_offset(),
        dtype=values.dtype,
        layout=values.layout,
        device=device,
        requires_grad=False,
    )


def apply_inplace_view(func: OpOverload, args: tuple, kwargs: dict) -> None:
    """Runs an ``inplace_view`` op (``squeeze_``, ``t_``) on a wrapper tensor's metadata only.

    A wrapper tensor (:func:`wrapper_tensor`) has no storage: its shape and strides change
    only when this is called, as torch does for its own wrapper subclasses
    (torch/utils/_python_dispatch.py return_and_correct_aliasing: the op again, with no
    dispatch and the meta kernels).
    """
    from torch.utils._mode_utils import no_dispatch

    with no_dispatch():
        meta_in_tls = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)
        try:
            func(*args, **kwargs)
        finally:
            torch._C._set_meta_in_tls_dispatch_include(meta_in_tls)


def allow_foreach_optimizers(cls: type) -> None:
    """Lets torch.optim take its foreach path for parameters of the tensor class ``cls``.

    Its default (torch/optim/optimizer.py _default_to_fused_or_foreach) wants
    ``type(p) in _foreach_supported_types`` and a device that has foreach kernels; the
    stand-in's device is one (torch/utils/_foreach_utils.py: the PrivateUse1 backend's name),
    its tensor class is not in the list.
    """
    from torch.optim import optimizer

    if cls not in optimizer._foreach_supported_types:
        optimizer._foreach_supported_types.append(cls)


# Guards that turn inference mode off, kept alive (see leave_inference_mode).
_inference_off: list[Any] = []


def leave_inference_mode() -> None:
    """Turns inference mode off in this thread, however it was turned on.

    A ``torch.inference_mode()`` entered and never exited cannot be exited from outside:
    a guard that turns it off (``torch._C._InferenceMode(False)``, what
    ``torch.inference_mode(False)`` enters) is entered on top and kept.
    """
    guard = torch._C._InferenceMode(False)
    guard.__enter__()
    _inference_off.append(guard)


def disable_torch_function() -> Any:
    """A context in which no ``__torch_function__`` (subclass or mode) is called."""
    return torch._C.DisableTorchFunction()


def disable_torch_function_subclass() -> Any:
    """A context in which tensor subclasses' ``__torch_function__`` is not called."""
    return torch._C.DisableTorchFunctionSubclass()
