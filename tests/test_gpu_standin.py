"""What CUDA does with tensors on two devices, row by row, and whether the GPU stand-in agrees.

The hidden tests run a learner's function on the stand-in (``autograd_pitfalls.standin``): a
device named ``gpu`` whose tensors hold real CPU values and raise where CUDA raises. This
table is the stand-in's specification. Each row is one small function of one input, what
CUDA does with it (``Works``: the result's device and values; ``Raises``: the error and a
stable part of CUDA's message) and ``source``: where in PyTorch that behaviour comes from (a
source file and function, or a documentation page). The Python and YAML files named
(``torch/...py``, ``torchgen/...``, ``native_functions.yaml``) and the headers
(``aten/src/ATen/...h``, installed as ``torch/include/ATen/...h``) are the installed torch's
own and can be read in ``.venv``; ``.cpp`` and ``.cu`` files are in PyTorch's repository.

A row runs its function on a stand-in copy of the input (``to_gpu``), or under ``on_gpu``
where the function names ``"cuda"`` or builds a tensor from Python data, and checks the
stand-in does what CUDA does: the same error, or a result on the same device whose values
(and shape and dtype) are those of the same computation on the CPU.

Three kinds of row are marked:

- ``known_difference``: the stand-in differs from CUDA on purpose or by nature (its device
  is called ``gpu``, not ``cuda``; there is no CUDA behind ``torch.cuda``). The row says
  what CUDA does and asserts what the stand-in does. Notebooks and hidden tests must not
  rely on such a row's behaviour: code that reads it behaves differently on a real GPU.
- ``note``: the stand-in reaches CUDA's outcome another way (it raises later, or where the
  engine would not let it); the note says how.
- ``bug``: the stand-in disagrees with CUDA and should not. The row asserts what CUDA does
  and is expected to fail (``xfail(strict=True)``) until the stand-in is fixed; the fix
  makes it pass, strict xfail then fails the run, and the ``bug`` is deleted.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 (torch's documentation spells it so)

from autograd_pitfalls.compat import TorchDispatchMode, tree_leaves
from autograd_pitfalls.standin import GPU, IS_STANDIN, on_gpu, to_gpu, to_host

CPU = torch.device("cpu")

# Sources cited often.
TENSOR_ITERATOR = (
    "aten/src/ATen/TensorIterator.cpp TensorIteratorBase::compute_types: a 0-dim CPU input "
    "joins a CUDA kernel only if the op allows CPU scalars (allow_cpu_scalars: binary, "
    "comparison ops), at most one; any other tensor on another device raises 'Expected all "
    "tensors to be on the same device'"
)
DEVICE_CHECK = (
    "torchgen/dest/register_dispatch_key.py gen_device_check: an op without "
    "'device_check: NoCheck' in native_functions.yaml checks every tensor argument is on "
    "one device before its CUDA kernel (c10::impl::check_and_update_common_device, "
    "'Expected all tensors to be on the same device')"
)
INDEX_PUT = (
    "aten/src/ATen/native/TensorAdvancedIndexing.cpp _index_put_impl_: a value with "
    "numel() == 1 and dim() == 0 on another device is moved to self's device; any other "
    "value goes into make_index_put_iterator, a TensorIterator that checks devices"
)
SETITEM = (
    "torch/csrc/autograd/python_variable_indexing.cpp THPVariable_setitem: leading size-1 "
    "dims of the value are stripped (slicePrefix1sSize), then index_put_; " + INDEX_PUT
)
FACTORY_DOCS = (
    "torch/_torch_docs.py factory_common_args (docs of torch.zeros, ones, full, ...): "
    "device 'Default: if None, uses the current device for the default tensor type' (CPU)"
)
LIKE_DOCS = "torch/_torch_docs.py factory_like_common_args: device defaults to input's device"
NEW_DOCS = "torch/_tensor_docs.py Tensor.new_*: 'same torch.dtype and torch.device as this tensor'"
ENGINE_VALIDATE = (
    "torch/csrc/autograd/engine.cpp validate_outputs (for the root gradients too, in "
    "Engine::execute): 'if (grad.dim() == 0) grad = grad.to(metadata.device())', else 'invalid "
    "gradient at index i - expected device cuda:0 but got cpu' (skipped for tensor subclasses, "
    "pytorch/pytorch#65016)"
)
MATMUL_1D = (
    "aten/src/ATen/native/LinearAlgebra.cpp _matmul_impl: dim_tensor1 == 1 && dim_tensor2 == 2 "
    "-> tensor1.unsqueeze(0).mm(tensor2).squeeze_(0)"
)
TENSOR_FROM_A_LIST = (
    "torch/csrc/utils/tensor_new.cpp internal_new_from_data: a sequence is built with "
    "at::empty on the CPU, each element stored by recursive_store/store_scalar (a 0-dim tensor "
    "read as a number), under ExcludeDispatchKeyGuard(Python); then .to(device), the CPU "
    "without device="
)
VERSION_DOCS = (
    "docs notes/autograd.html 'In-place correctness checks' (a version counter per tensor, "
    "bumped by each in-place op); torch/csrc/autograd/VariableTypeUtils.h increment_version, "
    "the same for every backend"
)

# --- the table's vocabulary -------------------------------------------------------------

SAME = "the same computation on the CPU input"
ANY = "any values: only shape and dtype are compared (random or uninitialised)"


@dataclass(frozen=True)
class Works:
    """It runs. ``device``: where the result's tensors are ("gpu": the input's device, CUDA's
    ``cuda:0``; "cpu"; None: the result holds no tensor). ``value``: the expected result,
    by default the same computation on the CPU input (``SAME``), or ``ANY``."""

    device: Literal["gpu", "cpu"] | None = "gpu"
    value: Any = SAME


@dataclass(frozen=True)
class Raises:
    """It raises ``error`` with a message matching ``match`` (a stable part of it)."""

    error: type[BaseException]
    match: str


SAME_DEVICE = Raises(RuntimeError, "same device")
TOO_MANY_CPU_SCALARS = Raises(RuntimeError, "Trying to pass too many CPU scalars")


@dataclass(frozen=True)
class Case:
    """One row: ``function(input)`` and what CUDA does with it, and where that is written.

    ``make_input`` builds the CPU input afresh for each run. ``via``: ``to_gpu`` calls the
    function on a stand-in copy of the input; ``on_gpu`` calls it through ``on_gpu``, in
    which ``"cuda"`` names the stand-in (every row whose function names ``"cuda"`` or builds
    a tensor from Python data with ``device=``). ``reference``: the same computation for
    the CPU, where ``function`` names ``"cuda"``. ``known_difference`` with ``standin``:
    what the stand-in does instead, asserted. ``bug``: the stand-in disagrees; xfail.
    ``note``: how the stand-in gets there, where it takes another way than CUDA to the same
    outcome.
    """

    id: str
    function: Callable[[Any], Any]
    cuda: Works | Raises
    source: str
    make_input: Callable[[], Any] = lambda: torch.arange(4.0)
    via: Literal["to_gpu", "on_gpu"] = "to_gpu"
    reference: Callable[[Any], Any] | None = None
    known_difference: str = ""
    standin: Works | Raises | None = None
    bug: str = ""
    note: str = ""


# --- inputs -----------------------------------------------------------------------------


def matrix() -> torch.Tensor:
    return torch.arange(6.0).reshape(2, 3)


def square() -> torch.Tensor:
    return torch.arange(9.0).reshape(3, 3)


def leaf() -> torch.Tensor:
    return torch.tensor([0.0, 1.0, 2.0], requires_grad=True)


def parameter() -> nn.Parameter:
    return nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))


def logits() -> torch.Tensor:
    return torch.tensor([[2.0, 0.5, -1.0], [0.1, 1.2, 0.3]])


def labels() -> torch.Tensor:
    return torch.tensor([3, 1, 3, 0, 1, 3])


def embedding() -> nn.Embedding:
    torch.manual_seed(0)
    return nn.Embedding(5, 3)


def capped_embedding() -> nn.Embedding:
    torch.manual_seed(0)
    return nn.Embedding(5, 3, max_norm=1.0)


class Scaler(nn.Module):
    """A parameter, a buffer and a plain tensor attribute (neither: ``.to()`` leaves it)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([1.0, 2.0]))
        self.register_buffer("offset", torch.tensor([0.5, -0.5]))
        self.plain = torch.tensor([10.0, 20.0])


# --- functions too long for a lambda ----------------------------------------------------


def cpu_mask(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor([True, False, True, False])


def write(index: Any, value: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """``y = x.clone(); y[index()] = value(); return y`` (index and value built per call)."""

    def function(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[index(x)] = value(x)
        return y

    return function


def index_put(
    indices: Callable, value: Callable, accumulate: bool = False
) -> Callable[[torch.Tensor], torch.Tensor]:
    def function(x: torch.Tensor) -> torch.Tensor:
        return x.clone().index_put_(indices(x), value(x), accumulate=accumulate)

    return function


def cpu_buffer_written_at_a_tensor_index(x: torch.Tensor) -> torch.Tensor:
    history = torch.zeros(3)
    history[torch.tensor([1])] = x.sum()  # a 0-dim value from the GPU
    return history


def cpu_buffer_written_at_an_int(x: torch.Tensor) -> torch.Tensor:
    history = torch.zeros(3)
    history[1] = x.sum()
    return history


def cpu_buffer_filled(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(3).fill_(x.sum())


def copied_into_cpu(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros(4).copy_(x)


def versions(x: torch.Tensor) -> list[int]:
    seen = [x._version]
    x.add_(1)
    seen.append(x._version)
    x[0] = 5.0
    seen.append(x._version)
    x[torch.tensor([1, 2])] = torch.tensor(0.0)
    seen.append(x._version)
    x.copy_(torch.ones(4))
    seen.append(x._version)
    return seen


def detached_write(x: torch.Tensor) -> tuple:
    d = x.detach()
    d.mul_(2)
    return x._version, d._version, x


def view_write(x: torch.Tensor) -> tuple:
    x[:2].add_(10)
    return x._version, x


def grad_of_a_cpu_leaf(x: torch.Tensor) -> torch.Tensor:
    w = torch.ones(4, requires_grad=True)  # a CPU leaf, moved into the graph
    (w.to(x.device) * x).sum().backward()
    return w.grad


def grad_of_a_cpu_leaf_moved_with_cuda(x: torch.Tensor) -> tuple:
    w = torch.ones(4, requires_grad=True)
    (w.cuda() * x).sum().backward()
    return w.grad.device.type, w.grad.tolist()  # no tensor: on_gpu wants tensors on the GPU


def grad_of_the_leaf(x: torch.Tensor) -> torch.Tensor:
    (x * x).sum().backward()
    return x.grad


def grad_through_cpu_indices(x: torch.Tensor) -> torch.Tensor:
    x[torch.tensor([0, 2, 2])].sum().backward()
    return x.grad


def sgd_by_hand(w: torch.Tensor) -> tuple:
    (w * w).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w[0] = torch.tensor(9.0)  # a 0-dim CPU value, written under no_grad
    return w.is_leaf, w.requires_grad, w.detach()


def leaf_written_without_no_grad(w: torch.Tensor) -> torch.Tensor:
    return w.add_(1)


def backward_in_anomaly_mode(x: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            (x.exp() * 2).sum().backward()
    return x.grad


def nan_backward_in_anomaly_mode(x: torch.Tensor) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode prints the forward trace as a warning
        with torch.autograd.detect_anomaly():
            (x.sqrt() * 0).sum().backward()  # d sqrt at 0 is inf, times 0: nan


def optimised(make: Callable, foreach: bool | None = None) -> Callable:
    def steps(p: nn.Parameter) -> tuple:
        opt = make([p], foreach=foreach)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        state = opt.state[p]
        return (p.detach(), *(state[k] for k in sorted(state) if k != "step"))

    return steps


def sgd(params: list, foreach: bool | None) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=foreach)


def adam(params: list, foreach: bool | None) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=0.1, foreach=foreach)


def adam_step_counter(p: nn.Parameter) -> torch.Tensor:
    opt = torch.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    return opt.state[p]["step"]


def adam_takes_the_foreach_path(p: nn.Parameter) -> bool:
    """Whether Adam's default (no foreach=) steps with torch._foreach_* kernels."""
    seen: list[str] = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    opt = torch.optim.Adam([p], lr=0.1)
    (p * p).sum().backward()
    with Ops():
        opt.step()
    return any(name.startswith("_foreach_") for name in seen)


def vector_times_matrix_gradient(m: torch.Tensor) -> tuple:
    v = m[0].detach().clone().requires_grad_()
    w = m.detach().clone().requires_grad_()
    (v @ w.T).sum().backward()
    return v.grad, w.grad


def tensor_of_a_tensor(x: torch.Tensor) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "To copy construct from a tensor, ..."
        return torch.tensor(x)


def backward_with_gradient(
    make_gradient: Callable, through: Callable = lambda x: x * 2
) -> Callable:
    """``through(x).backward(gradient=make_gradient())``; returns ``x.grad``."""

    def function(x: torch.Tensor) -> torch.Tensor:
        through(x).backward(gradient=make_gradient())
        return x.grad

    return function


def grad_with_outputs(make_gradient: Callable) -> Callable:
    def function(x: torch.Tensor) -> tuple:
        return torch.autograd.grad(x * 2, x, grad_outputs=make_gradient())

    return function


def autograd_backward_with_cpu_gradients(x: torch.Tensor) -> torch.Tensor:
    torch.autograd.backward([x.exp()], [torch.ones(3)])
    return x.grad


def backward_twice_with_cpu_gradient(x: torch.Tensor) -> list[str]:
    """The same wrong backward twice: each call raises (on the stand-in it once aborted)."""
    said = []
    for _ in range(2):
        try:
            x.exp().backward(gradient=torch.ones(3))
        except RuntimeError as error:
            said.append(str(error).split(" - ")[0])
    return said


def hook_that_raises(x: torch.Tensor) -> torch.Tensor:
    y = x.exp()
    y.register_hook(lambda grad: 1 / 0)  # a hook with a bug
    y.sum().backward()
    return x.grad


class _ReturnsACpuGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return torch.full((3,), 2.0)  # on the CPU, whatever the input's device


def custom_function_returning_a_cpu_gradient(x: torch.Tensor) -> torch.Tensor:
    _ReturnsACpuGradient.apply(x).sum().backward()
    return x.grad


def loss_summed_into_a_cpu_scalar(x: torch.Tensor) -> torch.Tensor:
    total = torch.tensor(0.0)
    total += x.sum()
    return total


def cpu_scalar_out(x: torch.Tensor) -> torch.Tensor:
    return torch.add(x.sum(), 1.0, out=torch.tensor(0.0))


def concatenated_into_an_empty_out(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(0, device=x.device)
    torch.cat([x, x], out=out)
    return out


def renormalised_embedding(e: nn.Embedding) -> tuple:
    out = e(torch.tensor([0, 2], device=e.weight.device))
    return out, e.weight.detach()


def model_moved_with_cuda_string(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(0)
    return nn.Linear(4, 2).to("cuda")(x)


def model_on_cpu(x: torch.Tensor) -> torch.Tensor:
    torch.manual_seed(0)
    return nn.Linear(4, 2)(x)


def model_built_on_cuda(x: torch.Tensor) -> torch.Tensor:
    model = nn.Linear(4, 2, device="cuda")
    nn.init.constant_(model.weight, 0.5)  # CUDA draws other initial weights than the CPU
    nn.init.zeros_(model.bias)
    return model(x)


def model_built_on_cpu(x: torch.Tensor) -> torch.Tensor:
    model = nn.Linear(4, 2)
    nn.init.constant_(model.weight, 0.5)
    nn.init.zeros_(model.bias)
    return model(x)


def branch_on_a_value(x: torch.Tensor) -> str:
    return "big" if (x > 2).any() else "small"


def module_moved_keeps_its_parameter(x: torch.Tensor) -> bool:
    layer = nn.Linear(2, 2)
    weight = layer.weight
    layer.to(x.device)
    return layer.weight is weight and layer.weight.device == x.device


def same_draw_as_the_cpu(x: torch.Tensor) -> bool:
    torch.manual_seed(0)
    here = torch.randn(3, device=x.device)
    torch.manual_seed(0)
    return torch.equal(here.cpu(), torch.randn(3))


# --- the table --------------------------------------------------------------------------

CASES = [
    # Factories: without device= they build on the CPU, with device=x.device next to x.
    Case("zeros-without-device", lambda x: torch.zeros(4), Works("cpu"), FACTORY_DOCS),
    Case("cpu-zeros-added", lambda x: x + torch.zeros(4), SAME_DEVICE, TENSOR_ITERATOR),
    Case("zeros-device", lambda x: torch.zeros(2, 3, device=x.device), Works(), FACTORY_DOCS),
    Case("ones-device", lambda x: torch.ones(2, device=x.device) + x[:2], Works(), FACTORY_DOCS),
    Case("full-device", lambda x: torch.full((2,), 7.0, device=x.device), Works(), FACTORY_DOCS),
    Case(
        "arange-device",
        lambda x: torch.arange(4, device=x.device),
        Works(),
        FACTORY_DOCS,
    ),
    Case(
        "arange-device-used", lambda x: x[torch.arange(2, device=x.device)], Works(), FACTORY_DOCS
    ),
    Case(
        "randn-device", lambda x: torch.randn(2, 3, device=x.device), Works(value=ANY), FACTORY_DOCS
    ),
    Case(
        "empty-device", lambda x: torch.empty(2, 3, device=x.device), Works(value=ANY), FACTORY_DOCS
    ),
    Case(
        "eye-device-matmul",
        lambda x: torch.eye(3, device=x.device) @ x,
        Works(),
        FACTORY_DOCS,
        square,
    ),
    Case(
        "tensor-device",
        lambda x: torch.tensor([1.0, 2.0, 3.0, 4.0], device=x.device) * x,
        Works(),
        "torch/_torch_docs.py tensor: device 'the device of the constructed tensor'",
        via="on_gpu",
    ),
    Case(
        "tensor-without-device-added",
        lambda x: x + torch.tensor([1.0, 2.0, 3.0, 4.0]),
        SAME_DEVICE,
        TENSOR_ITERATOR,
    ),
    Case(
        "tensor-device-outside-on_gpu",
        lambda x: torch.tensor([1.0, 2.0], device=x.device),
        Works(),
        "docs torch.tensor (device=)",
        known_difference="torch cannot build a tensor from Python data on a backend written "
        "in Python: outside on_gpu, torch.tensor(data, device=gpu) fails inside torch; "
        "on_gpu builds it on the CPU and moves it.",
        standin=Raises(RuntimeError, "INTERNAL ASSERT FAILED"),
    ),
    Case(
        "as_tensor-list-device",
        lambda x: torch.as_tensor([1.0, 2.0], device=x.device),
        Works(),
        "docs torch.as_tensor (device=)",
        via="on_gpu",
    ),
    Case(
        "as_tensor-numpy-device",
        lambda x: torch.as_tensor(np.ones(4, dtype=np.float32), device=x.device) + x,
        Works(),
        "docs torch.as_tensor: a NumPy array is copied to device",
        via="on_gpu",
    ),
    Case(
        "tensor-of-0dim-gpu-tensors",
        lambda x: torch.tensor([x.sum(), x.max(), x.min()]),
        Works("cpu"),
        TENSOR_FROM_A_LIST,
    ),
    Case(
        "tensor-of-0dim-gpu-integers",
        lambda x: torch.tensor([x.long().sum(), x.long().argmax()]),
        Works("cpu"),
        TENSOR_FROM_A_LIST,
    ),
    Case(
        "tensor-of-0dim-gpu-tensors-on-the-device",
        lambda x: torch.tensor([x.sum(), x.max()], device=x.device),
        Works(),
        TENSOR_FROM_A_LIST + " (then .to(device))",
        via="on_gpu",
    ),
    Case(
        "tensor-of-a-gpu-tensor",
        tensor_of_a_tensor,
        Works(),
        "torch/csrc/utils/tensor_new.cpp internal_new_from_data: a tensor as data is "
        "var.to(device_opt or var.device()) (a copy, with a warning)",
    ),
    Case(
        "as_tensor-of-a-tensor-is-it",
        lambda x: torch.as_tensor(x) is x,
        Works(None),
        "torch/_torch_docs.py as_tensor: 'If data is already a tensor with the requested dtype "
        "and device then data itself is returned'",
    ),
    Case(
        "as_tensor-to-cpu",
        lambda x: torch.as_tensor(x, device="cpu"),
        Works("cpu"),
        "torch/_torch_docs.py as_tensor: another device copies, as data.to(device=device)",
    ),
    # *_like and new_*: the input's device.
    Case("zeros_like", lambda x: torch.zeros_like(x), Works(), LIKE_DOCS),
    Case("full_like", lambda x: torch.full_like(x, 3.0), Works(), LIKE_DOCS),
    Case("rand_like", lambda x: torch.rand_like(x), Works(value=ANY), LIKE_DOCS),
    Case(
        "zeros_like-device-cpu",
        lambda x: torch.zeros_like(x, device="cpu"),
        Works("cpu"),
        LIKE_DOCS + "; device= given: there",
    ),
    Case("new_zeros", lambda x: x.new_zeros(3), Works(), NEW_DOCS),
    Case("new_ones", lambda x: x.new_ones(3), Works(), NEW_DOCS),
    Case("new_full", lambda x: x.new_full((3,), 2.0), Works(), NEW_DOCS),
    Case("new_empty", lambda x: x.new_empty(3), Works(value=ANY), NEW_DOCS),
    Case("new_tensor", lambda x: x.new_tensor([1.0, 2.0]), Works(), NEW_DOCS, via="on_gpu"),
    # Indexing reads: index tensors may be on the CPU (moved to self's device).
    Case(
        "read-cpu-index",
        lambda x: x[torch.tensor([0, 2])],
        Works(),
        "aten/src/ATen/native/TensorAdvancedIndexingUtils.h make_info: expandTensors(self, "
        "orig, ensure_same_device=true) (IndexingUtils.h): an index on another device is "
        "moved to self's (.to(self.device()))",
    ),
    Case(
        "read-cpu-mask",
        lambda x: x[cpu_mask(x)],
        Works(),
        "aten/src/ATen/native/IndexingUtils.h expandTensors: a mask becomes nonzero() indices, "
        "moved to self's device",
    ),
    Case(
        "read-two-cpu-indices",
        lambda x: x[torch.tensor([0, 1]), torch.tensor([2, 0])],
        Works(),
        "aten/src/ATen/native/IndexingUtils.h expandTensors (each index moved)",
        matrix,
    ),
    Case(
        "read-0dim-cpu-index",
        lambda x: x[torch.tensor(1)],
        Works(),
        "aten/src/ATen/TensorIndexing.h handleDimInMultiDimIndexing: a 0-dim integer tensor "
        "index is applySelect(tensor.item())",
    ),
    Case(
        "cpu-tensor-read-at-gpu-index",
        lambda x: torch.arange(10.0)[x.long()],
        Raises(RuntimeError, "indices should be either on cpu or on the same device"),
        "aten/src/ATen/native/TensorAdvancedIndexing.cpp check_indices_on_cpu_or_selfdevice",
    ),
    Case(
        "index_select-cpu-index",
        lambda x: x.index_select(0, torch.tensor([0, 2])),
        SAME_DEVICE,
        "native_functions.yaml index_select has no NoCheck: " + DEVICE_CHECK,
    ),
    Case(
        "gather-cpu-index",
        lambda x: x.gather(0, torch.tensor([0, 2])),
        SAME_DEVICE,
        "native_functions.yaml gather has no NoCheck: " + DEVICE_CHECK,
    ),
    # Indexing writes: a 0-dim value moves to self's device; a 1-dim one does not.
    Case(
        "write-cpu-index-1dim-values",
        write(lambda x: torch.tensor([0, 2]), lambda x: torch.tensor([7.0, 8.0])),
        SAME_DEVICE,
        SETITEM,
    ),
    Case(
        "write-cpu-index-0dim-value",
        write(lambda x: torch.tensor([0, 2]), lambda x: torch.tensor(7.0)),
        Works(),
        SETITEM,
    ),
    Case(
        "write-cpu-index-one-element-value",
        write(lambda x: torch.tensor([0, 2]), lambda x: torch.tensor([7.0])),
        Works(),
        SETITEM + " (a [1] value is viewed as 0-dim)",
    ),
    Case(
        "write-cpu-index-python-number",
        write(lambda x: torch.tensor([0, 2]), lambda x: 7.0),
        Works(),
        "python_variable_indexing.cpp THPVariable_setitem: for a CUDA self a Python number "
        "becomes a CPU 0-dim tensor (valueToTensor(..., kCPU)); " + INDEX_PUT,
    ),
    Case(
        "write-cpu-mask-0dim-value",
        write(cpu_mask, lambda x: torch.tensor(7.0)),
        Works(),
        INDEX_PUT,
    ),
    Case(
        "write-gpu-mask-1dim-values",
        write(lambda x: x > 1, lambda x: torch.tensor([7.0, 8.0])),
        SAME_DEVICE,
        INDEX_PUT + " (canDispatchToMaskedFill needs numel() == 1)",
    ),
    Case(
        "write-slice-1dim-cpu-values",
        write(lambda x: slice(0, 2), lambda x: torch.tensor([7.0, 8.0])),
        Works(),
        "aten/src/ATen/TensorIndexing.h copy_to: a basic index (slice, int) writes with "
        "dst.copy_(src), which copies across devices",
    ),
    Case(
        "write-int-0dim-cpu-value",
        write(lambda x: 1, lambda x: torch.tensor(7.0)),
        Works(),
        "aten/src/ATen/TensorIndexing.h copy_to (dst.copy_(src))",
    ),
    Case(
        "cpu-buffer-written-at-int",
        cpu_buffer_written_at_an_int,
        Works("cpu"),
        "aten/src/ATen/TensorIndexing.h copy_to (dst.copy_(src), any direction)",
    ),
    Case(
        "cpu-buffer-written-at-tensor-index",
        cpu_buffer_written_at_a_tensor_index,
        Works("cpu"),
        INDEX_PUT + " (either direction: a 0-dim GPU value into a CPU tensor too)",
    ),
    Case(
        "index_put-cpu-index-0dim-value",
        index_put(lambda x: (torch.tensor([0, 2]),), lambda x: torch.tensor(7.0)),
        Works(),
        INDEX_PUT,
    ),
    Case(
        "index_put-cpu-index-1dim-values",
        index_put(lambda x: (torch.tensor([0, 2]),), lambda x: torch.tensor([7.0, 8.0])),
        SAME_DEVICE,
        INDEX_PUT,
    ),
    Case(
        "index_put-accumulate-0dim-value",
        index_put(lambda x: (torch.tensor([0, 0]),), lambda x: torch.tensor(1.0), True),
        Works(),
        INDEX_PUT + " (moved before the accumulate branch's device check)",
    ),
    Case(
        "index_put-accumulate-1dim-cpu-values",
        index_put(lambda x: (torch.tensor([0, 2]),), lambda x: torch.tensor([1.0, 2.0]), True),
        Raises(RuntimeError, "but got device cpu for value tensor"),
        INDEX_PUT + "; with accumulate (or deterministic algorithms) a CUDA self goes to "
        "index_put_with_sort_stub, which checks first: 'expected device cuda:0 but got device "
        "cpu for value tensor'",
    ),
    Case(
        "index_put-accumulate-1dim-cpu-values-into-cpu",
        lambda x: torch.zeros(4).index_put_((torch.tensor([0, 2]),), x[:2], accumulate=True),
        SAME_DEVICE,
        INDEX_PUT + " (a CPU self: the TensorIterator's check)",
    ),
    Case(
        "index_put-gpu-mask-one-element-value",
        index_put(lambda x: (x > 1,), lambda x: torch.tensor([7.0])),
        Works(),
        "aten/src/ATen/native/TensorAdvancedIndexingUtils.h canDispatchToMaskedFill: a CPU "
        "value with numel() == 1 and one bool mask on self's device: masked_fill_(mask, "
        "value.item()), whatever the value's dim",
    ),
    # masked_fill, fill_.
    Case(
        "masked_fill-0dim-cpu-value",
        lambda x: x.masked_fill(x > 1, torch.tensor(0.0)),
        Works(),
        "aten/src/ATen/native/cuda/Indexing.cu masked_fill__cuda(self, mask, Tensor value): "
        "value must be 0-dim, then masked_fill__cuda(self, mask, value.item())",
    ),
    Case(
        "masked_fill-cpu-mask",
        lambda x: x.masked_fill(cpu_mask(x), 0.0),
        Raises(RuntimeError, "expected self and mask to be on the same device"),
        "aten/src/ATen/native/cuda/Indexing.cu masked_fill__cuda: 'expected self and mask to "
        "be on the same device'",
    ),
    Case(
        "masked_fill-1dim-cpu-value",
        lambda x: x.masked_fill(x > 1, torch.tensor([0.0])),
        Raises(RuntimeError, "0-dimensional value tensor"),
        "aten/src/ATen/native/cuda/Indexing.cu masked_fill__cuda(Tensor value): checks "
        "value.dim() == 0 first ('masked_fill_ only supports a 0-dimensional value tensor')",
    ),
    Case(
        "fill_-0dim-cpu-value",
        lambda x: x.clone().fill_(torch.tensor(3.0)),
        Works(),
        "aten/src/ATen/native/Fill.cpp fill_(self, Tensor value): value 0-dim; on another "
        "device fill_out(self, value.item())",
    ),
    Case(
        "cpu-fill_-0dim-gpu-value",
        cpu_buffer_filled,
        Works("cpu"),
        "aten/src/ATen/native/Fill.cpp fill_: self.device() != value.device() -> "
        "value.item(), either direction",
    ),
    # copy_ and moves.
    Case(
        "copy_-cpu-into-gpu",
        lambda x: x.clone().copy_(torch.tensor([5.0, 6.0, 7.0, 8.0])),
        Works(),
        "native_functions.yaml copy_: device_check NoCheck; aten/src/ATen/native/Copy.cpp "
        "copy_impl copies across devices",
    ),
    Case("copy_-gpu-into-cpu", copied_into_cpu, Works("cpu"), "aten/src/ATen/native/Copy.cpp"),
    Case("cpu", lambda x: x.cpu(), Works("cpu"), "docs Tensor.cpu: a copy in CPU memory"),
    Case("to-cpu", lambda x: x.to("cpu"), Works("cpu"), "docs Tensor.to"),
    # torch.where: 0-dim operands of another device are moved.
    Case(
        "where-0dim-cpu-other",
        lambda x: torch.where(x > 1, x, torch.tensor(0.0)),
        Works(),
        "aten/src/ATen/native/TensorCompare.cpp where_self_out: 'allow CPU scalars on non-cpu "
        "device': a 0-dim condition, self or other is .to(device)",
    ),
    Case(
        "where-two-0dim-cpu-values",
        lambda x: torch.where(x > 1, torch.tensor(1.0), torch.tensor(0.0)),
        Works(),
        "aten/src/ATen/native/TensorCompare.cpp where_self_out (each moved)",
    ),
    Case(
        "where-0dim-cpu-condition",
        lambda x: torch.where(torch.tensor(True), x, -x),
        Works(),
        "aten/src/ATen/native/TensorCompare.cpp where_self_out (condition moved too)",
    ),
    Case(
        "where-1dim-cpu-other",
        lambda x: torch.where(x > 1, x, torch.zeros(4)),
        SAME_DEVICE,
        "aten/src/ATen/native/TensorCompare.cpp where_self_out: 'if there's still a device "
        "mismatch, let tensoriterator error out'",
    ),
    Case(
        "where-1dim-cpu-condition",
        lambda x: torch.where(cpu_mask(x), x, -x),
        SAME_DEVICE,
        "aten/src/ATen/native/TensorCompare.cpp where_self_out",
    ),
    Case("where-python-number", lambda x: torch.where(x > 1, x, 0.0), Works(), "docs torch.where"),
    # Elementwise ops: one 0-dim CPU operand joins; anything else raises.
    Case("mul-0dim-cpu", lambda x: x * torch.tensor(2.0), Works(), TENSOR_ITERATOR),
    Case("0dim-cpu-minus", lambda x: torch.tensor(2.0) - x, Works(), TENSOR_ITERATOR),
    Case("compare-0dim-cpu", lambda x: x > torch.tensor(1.0), Works(), TENSOR_ITERATOR),
    Case(
        "0dim-cpu-plus-0dim-gpu",
        lambda x: torch.tensor(1.0) + x.sum(),
        Works(),
        TENSOR_ITERATOR + " (the common device is the first non-CPU one)",
    ),
    Case("add-1dim-cpu", lambda x: x + torch.ones(4), SAME_DEVICE, TENSOR_ITERATOR),
    Case(
        "add-one-element-1dim-cpu",
        lambda x: x + torch.tensor([2.0]),
        SAME_DEVICE,
        TENSOR_ITERATOR + " (dim() == 0 is required, not numel() == 1)",
    ),
    Case(
        "0dim-gpu-plus-1dim-cpu",
        lambda x: x.sum() + torch.ones(3),
        SAME_DEVICE,
        TENSOR_ITERATOR + " (a 0-dim CUDA tensor is not moved)",
    ),
    Case(
        "clamp-0dim-cpu-bound",
        lambda x: x.clamp(min=torch.tensor(1.0)),
        SAME_DEVICE,
        "native_functions.yaml clamp.Tensor has no NoCheck: "
        + DEVICE_CHECK
        + "; seen as 'wrapper_CUDA_clamp_Tensor' in github.com/Ending2015a/hash-grid-encoding"
        "/issues/3",
    ),
    Case(
        "addcdiv-0dim-cpu",
        lambda x: torch.addcdiv(x, x, torch.tensor(2.0)),
        SAME_DEVICE,
        "aten/src/ATen/native/PointwiseOps.cpp TORCH_META_FUNC(addcdiv): build_ternary_op, "
        "whose TensorIteratorConfig does not allow_cpu_scalars; " + TENSOR_ITERATOR,
    ),
    Case(
        "addcmul-two-0dim-cpu",
        lambda x: torch.addcmul(x, torch.tensor(2.0), torch.tensor(3.0)),
        TOO_MANY_CPU_SCALARS,
        "aten/src/ATen/native/PointwiseOps.cpp TORCH_META_FUNC(addcmul): TensorIteratorConfig()"
        ".allow_cpu_scalars(true); " + TENSOR_ITERATOR + ": max_cpu_scalars_on_non_cpu is 1",
    ),
    Case(
        "mul-two-0dim-cpu-into-gpu-out",
        lambda x: torch.mul(torch.tensor(2.0), torch.tensor(3.0), out=x.new_zeros(())),
        TOO_MANY_CPU_SCALARS,
        TENSOR_ITERATOR + " (the out= tensor gives the common device; a binary op allows one "
        "CPU scalar input)",
    ),
    # The result of an in-place or out= op is an output: a CPU one never joins a GPU kernel.
    Case(
        "loss-summed-into-a-cpu-0dim-tensor",
        loss_summed_into_a_cpu_scalar,
        SAME_DEVICE,
        "aten/src/ATen/TensorIterator.cpp TensorIteratorBase::compute_types: the CPU-scalar "
        "exception needs '!op.is_output'; total += loss writes total (add_: self is the "
        "output), so 'Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!'",
    ),
    Case(
        "out-is-a-cpu-0dim-tensor",
        cpu_scalar_out,
        SAME_DEVICE,
        "aten/src/ATen/TensorIterator.cpp compute_types ('!op.is_output')",
    ),
    # Python numbers, and reading values back on the host.
    Case("python-numbers", lambda x: x * 2 + 1, Works(), "docs Tensor ops with Python scalars"),
    Case("mean-by-len", lambda x: x.sum() / len(x), Works(), "docs Tensor ops with Python scalars"),
    Case(
        "item",
        lambda x: x.sum().item(),
        Works(None),
        "native_functions.yaml _local_scalar_dense: CUDA: _local_scalar_dense_cuda",
    ),
    Case("float", lambda x: float(x.max()), Works(None), "docs Tensor.item (float() calls it)"),
    Case(
        "tolist",
        lambda x: x.tolist(),
        Works(None),
        "torch/csrc/utils/tensor_list.cpp tensor_to_list: a non-CPU tensor is copied to the CPU",
    ),
    Case(
        "format",
        lambda x: f"{x.sum():.2f}",
        Works(None),
        "torch/_tensor.py Tensor.__format__: a 0-dim tensor formats as its .item()",
    ),
    Case(
        "numpy",
        lambda x: x.numpy(),
        Raises(TypeError, "numpy"),
        "torch/csrc/utils/tensor_numpy.cpp tensor_to_numpy: TypeError \"can't convert cuda:0 "
        'device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."',
    ),
    Case(
        "np-asarray",
        lambda x: np.asarray(x),
        Raises(TypeError, "numpy"),
        "torch/_tensor.py Tensor.__array__ returns self.numpy(); then as 'numpy'",
    ),
    Case(
        "numpy-after-cpu",
        lambda x: x.detach().cpu().numpy(),
        Works(None),
        "torch/csrc/utils/tensor_numpy.cpp tensor_to_numpy (a CPU tensor)",
    ),
    Case(
        "numpy-round-trip",
        lambda x: torch.from_numpy(x.cpu().numpy() * 2).to(x.device),
        Works(),
        "docs torch.from_numpy (a CPU tensor), then Tensor.to",
    ),
    # Parameters, buffers and plain attributes.
    Case(
        "parameter-wrapped-then-moved",
        lambda x: (lambda p: (isinstance(p, nn.Parameter), p.is_leaf, p.requires_grad))(
            nn.Parameter(torch.ones(3)).to(x.device)
        ),
        Works(None, (False, False, True)),
        "torch/nn/parameter.py Parameter.__torch_function__ = _disabled_torch_function_impl "
        "(op results are plain Tensors); derivatives.yaml _to_copy: the copy has a grad_fn",
    ),
    Case(
        "parameter-moved-then-wrapped",
        lambda x: (lambda p: (isinstance(p, nn.Parameter), p.is_leaf, p.device == x.device))(
            nn.Parameter(torch.ones(3, device=x.device))
        ),
        Works(None, (True, True, True)),
        "torch/nn/parameter.py Parameter.__new__",
    ),
    Case(
        "parameter-type",
        lambda x: type(nn.Parameter(torch.ones(3, device=x.device))) is nn.Parameter,
        Works(None, True),
        "torch/nn/parameter.py Parameter.__new__: a plain Tensor's data is _make_subclass'ed "
        "into a Parameter",
        known_difference="a stand-in tensor is a Tensor subclass, so nn.Parameter keeps its "
        "class and marks it (_is_param): isinstance(p, nn.Parameter) is True, type(p) is not "
        "Parameter. (torch.optim's default path does not depend on it: see "
        "adam-default-takes-foreach.)",
        standin=Works(None, False),
    ),
    Case(
        "module-to-moves-parameters",
        lambda m: (isinstance(m.scale, nn.Parameter), m.scale.is_leaf, m.scale.device.index),
        Works(None, (True, True, 0)),
        "torch/nn/modules/module.py Module._apply: parameters are replaced by Parameters of "
        "the moved data (leaves)",
        Scaler,
    ),
    Case(
        "module-to-moves-buffers",
        lambda m: m.scale * m.offset,
        Works(),
        "torch/nn/modules/module.py Module._apply: 'for key, buf in self._buffers.items()'",
        Scaler,
    ),
    Case(
        "module-to-leaves-plain-attributes",
        lambda m: m.plain,
        Works("cpu"),
        "torch/nn/modules/module.py Module._apply moves _parameters and _buffers only",
        Scaler,
    ),
    Case(
        "module-plain-attribute-mixed",
        lambda m: m.scale * m.plain,
        SAME_DEVICE,
        "torch/nn/modules/module.py Module._apply; " + TENSOR_ITERATOR,
        Scaler,
    ),
    # Embeddings and losses: index and target tensors must be on the device.
    Case(
        "F.embedding-cpu-indices",
        lambda e: F.embedding(torch.tensor([0, 2]), e.weight),
        SAME_DEVICE,
        "aten/src/ATen/native/Embedding.cpp embedding_symint: weight.index_select(0, indices); "
        "index_select has no NoCheck: " + DEVICE_CHECK,
        embedding,
    ),
    Case(
        "nn.Embedding-cpu-indices",
        lambda e: e(torch.tensor([0, 2])),
        SAME_DEVICE,
        "torch/nn/modules/sparse.py Embedding.forward -> F.embedding -> index_select",
        embedding,
    ),
    Case(
        "nn.Embedding-device-indices",
        lambda e: e(torch.tensor([0, 2], device=e.weight.device)),
        Works(),
        "aten/src/ATen/native/Embedding.cpp embedding_symint",
        embedding,
        via="on_gpu",
    ),
    Case(
        "nn.Embedding-max_norm-renormalises-on-device",
        renormalised_embedding,
        Works(),
        "torch/nn/functional.py embedding: _no_grad_embedding_renorm_ -> "
        "torch.embedding_renorm_; native_functions.yaml embedding_renorm_: CUDA: "
        "embedding_renorm_cuda_ (in place, on the weight's device)",
        capped_embedding,
        via="on_gpu",
    ),
    Case(
        "nn.Embedding-max_norm-cpu-indices",
        lambda e: e(torch.tensor([0, 2])),
        SAME_DEVICE,
        "native_functions.yaml embedding_renorm_ has no NoCheck: " + DEVICE_CHECK,
        capped_embedding,
    ),
    Case(
        "cross_entropy-cpu-targets",
        lambda z: F.cross_entropy(z, torch.tensor([0, 1])),
        SAME_DEVICE,
        "torch/nn/functional.py cross_entropy -> nll_loss_forward; native_functions.yaml "
        "nll_loss_forward has no NoCheck: " + DEVICE_CHECK,
        logits,
    ),
    Case(
        "cross_entropy-device-targets",
        lambda z: F.cross_entropy(z, torch.tensor([0, 1], device=z.device)),
        Works(),
        "native_functions.yaml nll_loss_forward.output: CUDA: nll_loss_forward_out_cuda",
        logits,
        via="on_gpu",
    ),
    # Joining and multiplying tensors of two devices.
    Case("cat-mixed", lambda x: torch.cat([x, torch.zeros(2)]), SAME_DEVICE, DEVICE_CHECK),
    Case("stack-mixed", lambda x: torch.stack([x, torch.zeros(4)]), SAME_DEVICE, DEVICE_CHECK),
    Case("cat-on-device", lambda x: torch.cat([x, x.new_zeros(2)]), Works(), "docs torch.cat"),
    Case(
        "matmul-cpu-right",
        lambda x: x @ torch.ones(3, 2),
        SAME_DEVICE,
        "native_functions.yaml mm has no NoCheck: " + DEVICE_CHECK,
        matrix,
    ),
    Case(
        "matmul-cpu-left",
        lambda x: torch.ones(2, 2) @ x,
        SAME_DEVICE,
        "native_functions.yaml mm has no NoCheck: " + DEVICE_CHECK,
        matrix,
    ),
    Case(
        "vector-times-matrix",
        lambda m: m[0] @ m.T,
        Works(),
        MATMUL_1D,
        matrix,
    ),
    Case(
        "torch.matmul-vector-matrix",
        lambda m: torch.matmul(m[0], m.T),
        Works(),
        MATMUL_1D,
        matrix,
    ),
    Case(
        "linear-vector-without-bias",
        lambda m: F.linear(m[0], m),
        Works(),
        "torch/nn/functional.py linear -> aten linear: without bias, input.matmul(weight.t()); "
        + MATMUL_1D,
        matrix,
    ),
    Case(
        "vector-times-matrix-backward",
        vector_times_matrix_gradient,
        Works(),
        MATMUL_1D + "; derivatives.yaml squeeze_ (a view changed in place keeps its graph)",
        matrix,
    ),
    Case(
        "unsqueeze_-in-place",
        lambda x: x.clone().unsqueeze_(0),
        Works(),
        "docs Tensor.unsqueeze_ (in-place version of unsqueeze); native_functions.yaml "
        "unsqueeze_: tags inplace_view",
        note="the wrapper's shape follows its values' (compat.apply_inplace_view, as "
        "torch/utils/_python_dispatch.py return_and_correct_aliasing does)",
    ),
    Case("t_-in-place", lambda m: m.clone().t_(), Works(), "docs Tensor.t_", matrix),
    Case(
        "linear-cpu-weight",
        lambda x: F.linear(x, torch.ones(2, 3)),
        SAME_DEVICE,
        "native_functions.yaml addmm/mm have no NoCheck: " + DEVICE_CHECK,
        matrix,
    ),
    # Data-dependent ops: the values are read, and the results stay on the device.
    Case(
        "unique", lambda x: torch.unique(x), Works(), "native_functions.yaml _unique2: CUDA", labels
    ),
    Case(
        "unique-counts",
        lambda x: torch.unique(x, return_counts=True),
        Works(),
        "native_functions.yaml _unique2: CUDA: _unique2_cuda",
        labels,
    ),
    Case("nonzero", lambda x: x.nonzero(), Works(), "native_functions.yaml nonzero: CUDA"),
    Case(
        "mask-read",
        lambda x: x[x > 1],
        Works(),
        "aten/src/ATen/native/IndexingUtils.h expandTensors: the mask becomes nonzero() indices",
    ),
    Case("masked_select", lambda x: torch.masked_select(x, x > 1), Works(), "docs masked_select"),
    Case(
        "masked_select-cpu-mask",
        lambda x: torch.masked_select(x, cpu_mask(x)),
        SAME_DEVICE,
        "native_functions.yaml masked_select has no NoCheck: " + DEVICE_CHECK,
    ),
    Case("branch-on-value", branch_on_a_value, Works(None), "docs Tensor.__bool__ (item())"),
    Case("argmax-int", lambda x: int(x.argmax()), Works(None), "docs Tensor.item"),
    Case("one_hot", lambda x: F.one_hot(x), Works(), "docs F.one_hot (classes read)", labels),
    Case(
        "bincount", lambda x: torch.bincount(x), Works(), "native_functions.yaml bincount", labels
    ),
    # Autograd across devices.
    Case(
        "backward-to-a-cpu-leaf",
        grad_of_a_cpu_leaf,
        Works("cpu"),
        "torchgen/packaged/autograd/derivatives.yaml _to_copy: self: _to_copy_backward(grad, "
        "self.options()) - the gradient goes back to the leaf's device",
    ),
    Case(
        "backward-to-a-cpu-leaf-moved-with-cuda",
        grad_of_a_cpu_leaf_moved_with_cuda,
        Works(None, ("cpu", [0.0, 1.0, 2.0, 3.0])),
        "derivatives.yaml _to_copy (Tensor.cuda() is a _to_copy)",
        via="on_gpu",
    ),
    Case("backward-to-a-gpu-leaf", grad_of_the_leaf, Works(), "docs Tensor.backward", leaf),
    Case(
        "backward-through-cpu-indices",
        grad_through_cpu_indices,
        Works(),
        "aten/src/ATen/native/cuda/Indexing.cu computeLinearIndex: 'This allows us to support "
        "ie indexing a cuda tensor with a cpu tensor' (index backward, accumulate=True)",
        leaf,
    ),
    Case("version-counts", versions, Works(None), VERSION_DOCS),
    Case(
        "detach-shares-version-and-values",
        detached_write,
        Works(),
        "torch/_tensor.py Tensor.detach docs: 'Returned Tensor shares the same storage ... "
        "In-place modifications on either of them will be seen'; " + VERSION_DOCS,
    ),
    Case("view-shares-version-and-values", view_write, Works(), VERSION_DOCS),
    Case(
        "no_grad-writes-keep-the-leaf",
        sgd_by_hand,
        Works(),
        "docs torch.no_grad; " + INDEX_PUT,
        leaf,
    ),
    Case(
        "leaf-written-without-no_grad",
        leaf_written_without_no_grad,
        Raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place"),
        "torch/csrc/autograd/VariableTypeUtils.h check_inplace",
        leaf,
    ),
    Case(
        "anomaly-mode-backward",
        backward_in_anomaly_mode,
        Works(),
        "docs torch.autograd.detect_anomaly",
        leaf,
    ),
    Case(
        "anomaly-mode-nan",
        nan_backward_in_anomaly_mode,
        Raises(RuntimeError, "returned nan values in its 0th output"),
        "torch/csrc/autograd/engine.cpp (anomaly mode checks each backward output for nan: "
        "\"Function 'SqrtBackward0' returned nan values in its 0th output.\")",
        leaf,
    ),
    # Gradients handed to backward: a 0-dim one moves to its output's device, others raise.
    Case(
        "backward-cpu-gradient",
        backward_with_gradient(lambda: torch.ones(3)),
        Raises(RuntimeError, "invalid gradient at index 0 - expected device"),
        ENGINE_VALIDATE,
        leaf,
    ),
    Case(
        "backward-cpu-gradient-through-exp",
        backward_with_gradient(lambda: torch.ones(3), torch.exp),
        Raises(RuntimeError, "invalid gradient at index 0 - expected device"),
        ENGINE_VALIDATE,
        leaf,
        note="the engine skips this check for tensor subclasses: the stand-in makes it before "
        "the engine starts (standin_autograd.checked_root_gradients); it used to abort the "
        "process here",
    ),
    Case(
        "backward-cpu-gradient-twice",
        backward_twice_with_cpu_gradient,
        Works(None, ["invalid gradient at index 0", "invalid gradient at index 0"]),
        ENGINE_VALIDATE,
        leaf,
    ),
    Case(
        "grad-cpu-grad_outputs",
        grad_with_outputs(lambda: torch.ones(3)),
        Raises(RuntimeError, "invalid gradient at index 0 - expected device"),
        ENGINE_VALIDATE + "; torch.autograd.grad runs the same engine",
        leaf,
    ),
    Case(
        "autograd.backward-cpu-grad_tensors",
        autograd_backward_with_cpu_gradients,
        Raises(RuntimeError, "invalid gradient at index 0 - expected device"),
        ENGINE_VALIDATE,
        leaf,
    ),
    Case(
        "backward-0dim-cpu-gradient",
        backward_with_gradient(lambda: torch.tensor(2.0), lambda x: (x * 2).sum()),
        Works(),
        ENGINE_VALIDATE + " ('if (grad.dim() == 0) grad = grad.to(metadata.device())')",
        leaf,
    ),
    Case(
        "grad-0dim-cpu-grad_outputs",
        grad_with_outputs(lambda: torch.tensor(2.0)),
        Raises(RuntimeError, "Mismatch in shape"),
        "torch/autograd/__init__.py _make_grads: the shape is checked first ('Mismatch in "
        "shape: grad_output[0] has a shape of torch.Size([]) and output[0] has a shape of "
        "torch.Size([3])')",
        leaf,
    ),
    Case(
        "hook-raises-in-backward",
        hook_that_raises,
        Raises(ZeroDivisionError, "division by zero"),
        "docs Tensor.register_hook; torch/csrc/autograd/python_hook.cpp: the hook's error "
        "is raised by backward()",
        leaf,
        note="an error raised inside the engine on the stand-in's device would abort the "
        "process (the device guard, written in Python, is called while the error is pending): "
        "the stand-in keeps it and raises it when backward() returns",
    ),
    Case(
        "custom-function-returns-a-cpu-gradient",
        custom_function_returning_a_cpu_gradient,
        Raises(RuntimeError, "invalid gradient at index 0 - expected device"),
        ENGINE_VALIDATE + " ('Function _ReturnsACpuGradientBackward returned an invalid "
        "gradient at index 0 - expected device cuda:0 but got cpu')",
        leaf,
        note="the engine skips the check for subclasses and puts the CPU gradient in x.grad; "
        "the stand-in raises when x.grad is read (standin_autograd.check_accumulated)",
    ),
    # Optimisers step stand-in parameters as CUDA ones.
    Case(
        "sgd-momentum",
        optimised(sgd),
        Works(),
        "torch/optim/sgd.py (momentum_buffer made from the grad: on the device)",
        parameter,
    ),
    Case("adam", optimised(adam), Works(), "torch/optim/adam.py", parameter),
    Case(
        "adam-default-takes-foreach",
        adam_takes_the_foreach_path,
        Works(None, True),
        "torch/optim/optimizer.py _default_to_fused_or_foreach: foreach when every param has "
        "type(p) in _foreach_supported_types and its device type in "
        "torch/utils/_foreach_utils.py _get_foreach_kernels_supported_devices ('cuda', ...)",
        parameter,
    ),
    Case(
        "adam-foreach",
        optimised(adam, foreach=True),
        Works(),
        "torch/optim/adam.py _multi_tensor_adam: CUDA's default (foreach)",
        parameter,
    ),
    Case(
        "adam-step-counter-on-cpu",
        adam_step_counter,
        Works("cpu"),
        "torch/optim/adam.py Adam._init_group: state['step'] = torch.tensor(0.0, "
        "device='cpu') unless capturable or fused",
        parameter,
    ),
    # Code written for CUDA, run under on_gpu: "cuda" means the stand-in.
    Case(
        "cuda-method",
        lambda x: x + torch.ones(4).cuda(),
        Works(),
        "docs Tensor.cuda",
        via="on_gpu",
        reference=lambda x: x + torch.ones(4),
    ),
    Case(
        "device-cuda-string",
        lambda x: x + torch.zeros(4, device="cuda"),
        Works(),
        FACTORY_DOCS,
        via="on_gpu",
        reference=lambda x: x + torch.zeros(4),
    ),
    Case(
        "device-cuda-0-object",
        lambda x: x + torch.zeros(4, device=torch.device("cuda", 0)),
        Works(),
        FACTORY_DOCS,
        via="on_gpu",
        reference=lambda x: x + torch.zeros(4),
    ),
    Case(
        "to-cuda",
        lambda x: torch.ones(4).to("cuda") * x,
        Works(),
        "docs Tensor.to",
        via="on_gpu",
        reference=lambda x: torch.ones(4) * x,
    ),
    Case(
        "tensor-device-cuda",
        lambda x: torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda") * x,
        Works(),
        "docs torch.tensor",
        via="on_gpu",
        reference=lambda x: torch.tensor([1.0, 2.0, 3.0, 4.0]) * x,
    ),
    Case(
        "model-to-cuda",
        model_moved_with_cuda_string,
        Works(),
        "torch/nn/modules/module.py Module.to",
        via="on_gpu",
        reference=model_on_cpu,
    ),
    Case(
        "model-built-on-cuda",
        model_built_on_cuda,
        Works(),
        "torch/nn/modules/linear.py Linear(device=): factory_kwargs",
        via="on_gpu",
        reference=model_built_on_cpu,
    ),
    Case(
        "is_cuda",
        lambda x: x.is_cuda,
        Works(None, True),
        "docs Tensor.is_cuda",
        via="on_gpu",
    ),
    # What the stand-in does not copy from CUDA.
    Case(
        "out-of-another-size",
        concatenated_into_an_empty_out,
        Works(),
        "aten/src/ATen/native/Resize.cpp resize_output: an out= tensor of another shape is "
        "resized (silently when it has no elements)",
        known_difference="a stand-in tensor's size is set when it is made: an op that resizes "
        "one in place (resize_, an out= of another size) raises, saying so, instead of "
        "leaving a wrong shape. (Views changed in place, unsqueeze_ or t_, are followed: see "
        "unsqueeze_-in-place.)",
        standin=Raises(NotImplementedError, "cannot resize a tensor in place"),
    ),
    Case(
        "is_cuda-outside-on_gpu",
        lambda x: x.is_cuda,
        Works(None, True),
        "docs Tensor.is_cuda",
        known_difference="outside on_gpu, is_cuda is False: the device is 'gpu'.",
        standin=Works(None, False),
    ),
    Case(
        "device-type",
        lambda x: x.device.type,
        Works(None, "cuda"),
        "docs torch.device (type 'cuda')",
        via="on_gpu",
        known_difference="the stand-in's device is 'gpu' (PrivateUse1 renamed), also under "
        "on_gpu: code that compares x.device.type or str(x.device) with 'cuda' differs.",
        standin=Works(None, "gpu"),
    ),
    Case(
        "cuda-is-available",
        lambda x: torch.cuda.is_available(),
        Works(None, True),
        "docs torch.cuda.is_available",
        via="on_gpu",
        known_difference="there is no CUDA behind torch.cuda: torch.cuda.is_available() is "
        "False under on_gpu, so 'cuda if torch.cuda.is_available() else cpu' picks the CPU.",
        standin=Works(None, False),
    ),
    Case(
        "module-to-keeps-its-parameters",
        module_moved_keeps_its_parameter,
        Works(None, True),
        "torch/nn/modules/module.py Module._apply: compute_should_use_set_data: where "
        "torch._has_compatible_shallow_copy_type(param, param_applied) (a CPU and a CUDA "
        "dense tensor: yes), param.data = param_applied keeps the Parameter object; seen on "
        "an H100",
        known_difference="a stand-in tensor is a Python subclass, which param.data = cannot "
        "take: Module._apply wraps each moved tensor in a new Parameter, and an optimiser made "
        "before the move holds the old one, on the CPU. On CUDA the module keeps its "
        "Parameter objects, and such an optimiser holds the moved ones.",
        standin=Works(None, False),
    ),
    Case(
        "seeded-draw-differs-from-cpu",
        same_draw_as_the_cpu,
        Works(None, False),
        "docs notes/randomness.html ('results may not be reproducible between CPU and GPU "
        "executions, even when using identical seeds'); torch/include/ATen/cuda/"
        "CUDAGeneratorImpl.h (Philox) vs ATen/CPUGeneratorImpl.h (mt19937)",
        known_difference="the stand-in draws from the CPU generator: a seeded randn on 'gpu' "
        "equals the CPU's. A test must not expect GPU draws to equal CPU draws.",
        standin=Works(None, True),
    ),
]


def _row(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=f"stand-in bug: {case.bug}")] if case.bug else []
    return pytest.param(case, id=case.id, marks=marks)


def _run(case: Case, value: Any) -> Any:
    if case.via == "on_gpu":
        return on_gpu(case.function, value, name=case.id)
    return case.function(to_gpu(value))


def _on(device: str | None, gpu: torch.device = GPU) -> torch.device | None:
    return {"gpu": gpu, "cpu": CPU, None: None}[device]


def _assert_devices(result: Any, device: str | None, gpu: torch.device = GPU) -> None:
    tensors = [leaf for leaf in tree_leaves(result) if isinstance(leaf, torch.Tensor)]
    if device is None:
        assert not tensors, f"expected no tensor in the result, got {result!r}"
        return
    assert tensors, f"expected a tensor on {device}, got {result!r}"
    assert {t.device for t in tensors} == {_on(device, gpu)}


def _on_host(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU copy of a stand-in, CUDA or CPU tensor."""
    return to_host(tensor) if tensor.device == GPU else tensor.detach().cpu()


def _assert_same(got: Any, want: Any, *, values: bool = True) -> None:
    """``got`` (maybe on the stand-in or CUDA) equals ``want`` (CPU): shape, dtype, values."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"expected a tensor, got {got!r}"
        assert (tuple(got.shape), got.dtype) == (tuple(want.shape), want.dtype)
        if values:
            torch.testing.assert_close(_on_host(got), want.detach(), equal_nan=True)
    elif isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want)
    elif isinstance(want, list | tuple):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want, strict=True):
            _assert_same(g, w, values=values)
    elif isinstance(want, float):
        assert got == pytest.approx(want)
    else:
        assert got == want


def _assert_outcome(
    case: Case, outcome: Works | Raises, run: Callable[[], Any], gpu: torch.device
) -> None:
    """``run()`` does what ``outcome`` says: raises so, or returns that on those devices."""
    if isinstance(outcome, Raises):
        with pytest.raises(outcome.error, match=outcome.match):
            run()
        return
    result = run()
    _assert_devices(result, outcome.device, gpu)
    if outcome.value is SAME or outcome.value is ANY:
        want = (case.reference or case.function)(case.make_input())
        _assert_same(result, want, values=outcome.value is SAME)
    else:
        _assert_same(result, outcome.value)


@pytest.mark.skipif(
    not IS_STANDIN,
    reason="this machine has a GPU, which the course uses instead of the stand-in "
    "(CUDA_VISIBLE_DEVICES= hides it)",
)
@pytest.mark.parametrize("case", [_row(case) for case in CASES])
def test_the_standin_does_what_cuda_does(case: Case):
    outcome = case.standin if case.known_difference else case.cuda
    _assert_outcome(case, outcome, lambda: _run(case, case.make_input()), GPU)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_cuda_does_what_the_table_says(case: Case):
    """The table's ``cuda`` column, checked on a real GPU: the stand-in's specification is
    only as good as what it says CUDA does. Every row, ``bug`` and ``known_difference``
    rows too, since their ``cuda`` column is CUDA's behaviour. On a machine with a GPU the
    course's ``GPU`` is that GPU, so ``to_gpu`` moves the input to CUDA."""
    assert torch.device("cuda", 0) == GPU
    _assert_outcome(case, case.cuda, lambda: case.function(to_gpu(case.make_input())), GPU)


def test_the_table_is_complete_and_honest():
    ids = [case.id for case in CASES]
    assert len(ids) >= 45
    assert len(set(ids)) == len(ids), "row ids must be unique"
    for case in CASES:
        assert case.source, case.id
        # A known difference says what the stand-in does instead; a bug asserts CUDA's.
        assert bool(case.known_difference) == (case.standin is not None), case.id
        assert not (case.known_difference and case.bug), case.id
        # on_gpu turns a device error into its own AssertionError: raising rows use to_gpu.
        assert not (case.via == "on_gpu" and isinstance(case.cuda, Raises)), case.id


def test_the_course_uses_the_machines_gpu_where_it_has_one(monkeypatch):
    from autograd_pitfalls import standin

    # Setting the stand-in up for real would break CUDA's backward for the rest of this
    # process on a machine with a GPU: the test sees only which way the choice goes.
    monkeypatch.setattr(standin.compat, "gpu_standin_device", lambda: "the stand-in")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert standin._course_gpu() == torch.device("cuda", 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert standin._course_gpu() == "the stand-in"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_backward_pass_on_cuda_works_once_the_course_is_imported():
    # With the stand-in's backend registered, torch would take it for the process's one
    # accelerator and this backward would fail inside the engine (pytorch/pytorch#161129).
    assert not IS_STANDIN and torch.device("cuda", 0) == GPU
    leaf = torch.ones(3, device="cuda", requires_grad=True)
    (leaf * 2).sum().backward()
    assert leaf.grad.tolist() == [2.0, 2.0, 2.0]
