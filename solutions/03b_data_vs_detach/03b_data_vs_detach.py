# %% [markdown]
# # 03b · `.data` vs `.detach()` vs `no_grad`, and the legacy idioms that still circulate (part 2 of 2)
#
# This continues `03a_data_vs_detach` (sections 1–5: what `.data` and `.detach()` share and the version counter they do not, the writes autograd cannot see, and which tool to use today).
# Sections and exercises keep their numbers, so this part starts at section 6 and Exercise 2.
# The older posts it quotes are the Chinese blog posts and notebooks this course started from.
#
# **What you will learn**
#
# - what the legacy idioms of old repositories do on your PyTorch: `Variable`, `volatile=True`, `loss.data[0]`, `.item()`, `float(loss)`, `.data.cpu().numpy()`;
# - why `total_loss += loss` keeps every step's graph alive, measured and plotted.
#
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.

# %% nbgrader={"grade_id": "setup", "locked": true}
import functools
import itertools
import warnings
import weakref
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.autograd import Variable

from autograd_pitfalls import (
    KeptInputs,
    TensorSeen,
    assert_grad_close,
    assert_inputs_left_alone,
    assert_is_leaf,
    assert_version,
    devices,
    diagnose,
    draw,
    expect_error,
    expect_warning,
    explain,
    on_gpu,
    probe_and_judge,
    reset_torch_settings,
)

print(f"torch {torch.__version__} | numpy {np.__version__}")

# %% [markdown]
# ## 6. Legacy idioms, as you meet them in old repositories
#
# Code written before PyTorch 0.4 still circulates in blog posts and repositories.
# Here is what each of its idioms does on torch 2.13.
#
# ### `Variable`
# `torch.autograd.Variable` used to be a wrapper that added autograd to a tensor.
# Since 0.4 a tensor does that itself, and `Variable` only stays so that old code runs.
# `Variable(t)` returns a plain `torch.Tensor`, a new object on the same memory.
# It is `t.detach()`: no `grad_fn`, no `requires_grad`, the same version counter, also for a `t` with history; for a `t` that does not require grad that is as good as `t` itself.
# `Variable` is still a class of its own: not `torch.Tensor`, not even a subclass of it.
# It only answers `isinstance(t, Variable)` with True for every tensor, so old type checks pass.
# (One older post says that since 0.4 `torch.Tensor` and `Variable` are the same class: they are not, but `Variable(t)` does return a tensor.)
# `Variable(t, requires_grad=True)` is a leaf that requires grad, still on `t`'s memory.

# %%
t = torch.ones(3)
v = Variable(t)
print(
    f"type: {type(v).__name__} | same object: {v is t} "
    f"| same memory: {v.data_ptr() == t.data_ptr()}"
)
print(f"Variable is torch.Tensor: {Variable is torch.Tensor}")
print(f"issubclass(Variable, torch.Tensor): {issubclass(Variable, torch.Tensor)}")
print(f"isinstance(torch.ones(3), Variable): {isinstance(torch.ones(3), Variable)}")
assert type(v) is torch.Tensor and v is not t and v.data_ptr() == t.data_ptr()
assert Variable is not torch.Tensor and not issubclass(Variable, torch.Tensor)
assert isinstance(torch.ones(3), Variable)
leaf = Variable(t, requires_grad=True)
print(
    f"Variable(t, requires_grad=True): is_leaf={leaf.is_leaf}, requires_grad={leaf.requires_grad}"
)
assert leaf.is_leaf and leaf.requires_grad and leaf.data_ptr() == t.data_ptr()
history = torch.ones(3, requires_grad=True) * 2  # a tensor with history
cut = Variable(history)
cut.mul_(1)  # counted on history too, as a write through detach() is
print(f"Variable(history): grad_fn={cut.grad_fn}, requires_grad={cut.requires_grad}, ", end="")
print(f"history._version={history._version}")
assert cut.grad_fn is None and not cut.requires_grad and cut.data_ptr() == history.data_ptr()
assert history._version == cut._version == 1

# %% [markdown]
# `Variable(x, volatile=True)` once meant "build no graph from here".
# Today it warns and does nothing: the graph is built anyway.
# The warning says what to write instead.

# %%
w = torch.ones(3, requires_grad=True)
with expect_warning(UserWarning, match="volatile was removed and now has no effect"):
    x = Variable(torch.ones(3), volatile=True)
y = w * x
print("y.grad_fn:", y.grad_fn, "<- a graph was built")
assert y.grad_fn is not None

# %% [markdown]
# ### `loss.data[0]`, `loss.item()`, `tolist()`, `float(loss)`
# Before 0.4 a loss had shape `(1,)`, and old loops read it with `loss.data[0]`.
# A loss is now 0-dimensional, and indexing it fails; the error says what to use.

# %%
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
loss = (w * w).sum()  # 0-dimensional: shape ()
print("loss.shape:", tuple(loss.shape))
with expect_error(IndexError, match="invalid index of a 0-dim tensor. Use `tensor.item\\(\\)`"):
    loss.data[0]

# %% [markdown]
# `loss.item()` returns one Python number, with no graph and no tensor behind it.
# For a tensor of several elements `.item()` fails; `tolist()` gives Python numbers for all of them.

# %%
value = loss.item()
print(f"loss.item() = {value!r} ({type(value).__name__})")
assert type(value) is float and value == 14.0
with expect_error(RuntimeError, match="a Tensor with 3 elements cannot be converted to Scalar"):
    w.item()
print("w.tolist() =", w.tolist())
assert w.tolist() == [1.0, 2.0, 3.0]

# %% [markdown]
# `float(loss)` gives the same number, but on torch 2.13 it warns when `loss` requires grad.
# PyTorch gives that warning once per process, so a notebook that converted a tensor earlier would show nothing: this cell asks for it every time with `torch.set_warn_always(True)` (as notebook 04a does).
# `.item()`, or `float(loss.detach())`, says that you meant to leave the graph.

# %%
torch.set_warn_always(True)  # this warning, every time: not once per process
try:
    with expect_warning(
        UserWarning, match="Converting a tensor with requires_grad=True to a scalar"
    ):
        value = float(loss)
finally:
    torch.set_warn_always(False)
with warnings.catch_warnings(record=True) as quiet:
    warnings.simplefilter("always")
    detached = float(loss.detach())
print("warnings from float(loss.detach()):", len(quiet))
assert value == 14.0 and detached == 14.0 and not quiet

# %% [markdown]
# ### `.data.cpu().numpy()` vs `.detach().cpu().numpy()`
# Both give the same values and neither builds a graph.
# On the CPU, `.cpu()` returns the tensor itself, so both arrays share the tensor's memory; on a GPU, `.cpu()` copies (this cell checks that too when a GPU is present).
# A write into the array is a numpy write, invisible to autograd (section 4, in `03a_data_vs_detach`), whichever way you got it.
# So prefer `.detach().cpu().numpy()` (or `t.numpy(force=True)`, which does the same) for the reason of section 2 (in `03a_data_vs_detach`), and `.item()` or `.tolist()` when you only log numbers.

# %%
for device in devices():
    w = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    old = w.data.cpu().numpy()
    new = w.detach().cpu().numpy()
    forced = w.numpy(force=True)
    shares = [np.shares_memory(old, new), np.shares_memory(new, forced)]
    on_tensor = new.ctypes.data == w.data_ptr()
    print(
        f"{device}: equal values {np.array_equal(old, new)} | share memory {shares} "
        f"| array on the tensor's memory {on_tensor}"
    )
    assert np.array_equal(old, new) and np.array_equal(new, forced)
    assert on_tensor == (device.type == "cpu")

# %% [markdown]
# ### `p.data = new_values`
# Old code loads or re-initialises a parameter by assigning to its `.data`.
# That swaps in other memory, of any shape, and no counter moves: a `(2, 3)` weight silently becomes a vector of 5.
# Under `torch.no_grad()`, `p.copy_(new_values)` writes into the parameter's own memory, keeps its shape, and is counted.

# %%
p = nn.Parameter(torch.ones(2, 3))
memory = p.data_ptr()
p.data = torch.zeros(5)
print(
    f"after p.data = ...: shape {tuple(p.shape)}, version {p._version}, "
    f"same memory {p.data_ptr() == memory}"
)
assert p.shape == (5,) and p._version == 0 and p.data_ptr() != memory

p = nn.Parameter(torch.ones(2, 3))
memory = p.data_ptr()
with torch.no_grad(), expect_error(RuntimeError, match="must match the size of tensor"):
    p.copy_(torch.zeros(5))
with torch.no_grad():
    p.copy_(torch.zeros(2, 3))
print(
    f"after p.copy_(...): shape {tuple(p.shape)}, version {p._version}, "
    f"same memory {p.data_ptr() == memory}"
)
assert p.shape == (2, 3) and p._version == 1 and p.data_ptr() == memory

# %% [markdown]
# `copy_` refuses no shape it can broadcast: a `(3,)` row or a single number fills the whole `(2, 3)` weight without a word.
# `load_state_dict` is stricter: it refuses the `(3,)` row that `copy_` broadcast, since it compares each tensor's shape with the parameter's (with one exception kept for old checkpoints: a one-element tensor loads into a 0-dim parameter, a `(3,)` one does not).

# %%
with torch.no_grad():
    p.copy_(torch.tensor([1.0, 2.0, 3.0]))  # broadcast to both rows
    row_copied = p.detach().clone()
    p.copy_(torch.tensor(7.0))  # broadcast to every element
print(f"a (3,) row copied into {tuple(p.shape)}: {row_copied.tolist()}; then 7.0: {p.tolist()}")
assert torch.equal(row_copied, torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]))
assert torch.equal(p.detach(), torch.full((2, 3), 7.0))
layer = nn.Linear(3, 2)
with expect_error(RuntimeError, match="size mismatch for weight"):
    layer.load_state_dict({"weight": torch.zeros(3), "bias": torch.zeros(2)})
scalar = nn.Module()
scalar.scale = nn.Parameter(torch.tensor(1.0))  # a 0-dim parameter
scalar.load_state_dict({"scale": torch.tensor([2.0])})  # one element: loaded
print(f"a (1,) tensor into a 0-dim parameter: {scalar.scale.item()}")
assert scalar.scale.shape == () and scalar.scale.item() == 2.0
with expect_error(RuntimeError, match="size mismatch for scale"):
    scalar.load_state_dict({"scale": torch.zeros(3)})

# %% [markdown]
# | old code | today |
# |---|---|
# | `Variable(t)` | `t.detach()` (or just `t` where `t` does not require grad) |
# | `Variable(t, requires_grad=True)` | `t.requires_grad_()` or `torch.tensor(..., requires_grad=True)` |
# | `Variable(x, volatile=True)` | `with torch.no_grad():` (or `torch.inference_mode()`) |
# | `loss.data[0]` | `loss.item()` |
# | `t.data.cpu().numpy()` | `t.detach().cpu().numpy()` |
# | `p.data -= lr * p.grad`, `p.data.normal_()`, `p.data = new_values` | under `torch.no_grad()`: `p -= lr * p.grad`, `p.normal_()`, `p.copy_(new_values)` |

# %% [markdown]
# ### Finding these idioms in your own code
#
# The course's linter finds them, and the other pitfalls of this course, in your own files, folders and notebooks: `python -m autograd_pitfalls.lint train.py` (also `flake8`, under the codes `AGP...`).
# Each finding names the pitfall and the notebook that teaches it.
# Here it reads an old training loop:

# %%
from autograd_pitfalls.lint import lint_source

old_loop = """import torch
from torch.autograd import Variable

x = Variable(torch.ones(3), volatile=True)
total_loss = 0
for step in range(3):
    loss = (x * 2).sum()
    total_loss += loss
print(loss.data[0])
"""
findings = lint_source(old_loop)
for finding in findings:
    print(f"line {finding.line}: {finding.code} {finding.message}")
assert {finding.code for finding in findings} == {"AGP110", "AGP111", "AGP140", "AGP103"}

# %% [markdown]
# In JupyterLab, `%load_ext autograd_pitfalls.lint` checks each cell before it runs and prints what it finds above the cell's output; `%unload_ext` stops it.
# It reads each cell after the cells the session ran before it, as one program: a name one cell imports is known in the next.
# Read alone, the second cell below has no finding (`Variable` could be anything); read after the first, it has one.

# %%
# %load_ext autograd_pitfalls.lint
from torch.autograd import Variable

# %%
legacy = Variable(torch.ones(3))  # Variable comes from the cell above; the finding prints here
print(type(legacy).__name__)
assert not lint_source("legacy = Variable(torch.ones(3))")  # this cell alone: nothing found

# %%
# %unload_ext autograd_pitfalls.lint

# %% [markdown]
# ### Exercise 2 — predictions and a loss from one sigmoid (3 points)
#
# Write `loss_and_predictions(logits, targets)`.
# With `probs = sigmoid(logits)`, return:
# - `loss = mean((probs - targets) ** 2)`, a 0-dimensional tensor with its graph, so that the caller can call `loss.backward()`;
# - `predictions`: `1.0` where `probs > 0.5` and `0.0` elsewhere, same shape, dtype and device as `logits`, carrying no graph (`requires_grad` False).
#
# `targets` has the shape and device of `logits`, and may have the other floating dtype (float32 targets for float64 logits, or the reverse).
#
# By hand, with $n$ elements, $\partial\,\text{loss} / \partial\,\text{logits} = 2\,(p - t)\,p\,(1 - p) / n$.
# For `logits = [2, -1, 0.5]` and `targets = [1, 0, 0]`: `probs ≈ [0.8808, 0.2689, 0.6225]`, `loss ≈ 0.1580`, `logits.grad ≈ [-0.0083, 0.0353, 0.0975]` and `predictions = [1, 0, 1]`.
# The tests run this example with float32 logits and targets, and with float64 logits and float32 targets (the predictions are then float64).
# The tests call `loss.backward()` and compare `logits.grad` with that formula.
# A tempting shortcut is to round `probs` in place to get the predictions: section 3 (in `03a_data_vs_detach`) shows what that does, with and without `.data`.
# Leave `logits` and `targets` as they were.
# The tests also call your function on the course's stand-in for a GPU: tensors on a device named `gpu`, with values, that refuse to be mixed with CPU tensors where CUDA refuses.


# %% nbgrader={"grade_id": "q2-answer", "solution": true}
def loss_and_predictions(
    logits: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns mean((sigmoid(logits) - targets) ** 2) and the 0/1 predictions.

    Args:
        logits: Any shape; usually a leaf that requires grad.
        targets: Same shape as logits, values in [0, 1].

    Returns:
        (loss, predictions): loss is 0-dimensional and differentiable; predictions holds
        1.0 where sigmoid(logits) > 0.5, else 0.0, like logits (shape, dtype, device),
        without a graph.
    """
    ### BEGIN SOLUTION
    probs = logits.sigmoid()
    loss = ((probs - targets) ** 2).mean()
    predictions = (probs.detach() > 0.5).to(logits.dtype)  # a new tensor: probs stays as saved
    return loss, predictions
    ### END SOLUTION


# %% nbgrader={"grade_id": "q2-tests", "grade": true, "locked": true, "points": 3}
"""Checks loss_and_predictions: loss, logits.grad against the hand-derived gradient, predictions.

Visible: the example with float32 logits and targets, then float64 logits and float32 targets;
logits and targets left as they were. Hidden: random logits and targets, shapes and dtypes.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def hand_gradient(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """d mean((sigmoid(l) - t) ** 2) / dl, derived by hand: 2 (p - t) p (1 - p) / n."""
    p = logits.detach().sigmoid()
    return 2 * (p - targets) * p * (1 - p) / p.numel()


def backward_or_explain(loss: torch.Tensor) -> None:
    """Calls loss.backward(); a version error becomes a failure that names the pitfall."""
    try:
        loss.backward()
    except RuntimeError as error:
        if "inplace operation" not in str(error):
            raise
        raise AssertionError(
            f"loss.backward() raised: {error}\n" + explain("stale-saved-tensor")
        ) from None


for device in devices():
    for dtype in (torch.float32, torch.float64):
        logits = torch.tensor([2.0, -1.0, 0.5], device=device, dtype=dtype, requires_grad=True)
        targets = torch.tensor([1.0, 0.0, 0.0], device=device)  # float32
        kept = KeptInputs(logits=logits, targets=targets)
        loss, predictions = loss_and_predictions(logits, targets)
        assert_inputs_left_alone(kept.changes(), "loss_and_predictions(logits, targets)")
        assert loss.shape == (), f"loss should be 0-dimensional, got shape {tuple(loss.shape)}"
        assert abs(loss.item() - 0.15801) < 1e-4, f"loss should be about 0.1580, got {loss.item()}"
        assert loss.requires_grad, "loss should carry its graph, so that loss.backward() works"
        backward_or_explain(loss)
        assert_grad_close(logits.grad, hand_gradient(logits, targets), name="logits.grad")
        assert not predictions.requires_grad, "predictions should carry no graph. " + explain(
            "graph-kept-alive"
        )
        assert predictions.dtype == dtype and predictions.device == logits.device, (
            f"predictions should be {dtype} on {device}, like logits; got "
            f"{predictions.dtype} on {predictions.device}"
        )
        assert torch.equal(
            predictions, torch.tensor([1.0, 0.0, 1.0], device=device, dtype=dtype)
        ), f"predictions should be [1, 0, 1], got {predictions.tolist()}"
gpu_loss, gpu_predictions = on_gpu(
    loss_and_predictions,
    torch.zeros(3, requires_grad=True),
    torch.zeros(3),
    name="loss_and_predictions(...)",
)
assert gpu_loss.requires_grad and not gpu_predictions.requires_grad


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible example in both dtypes, then random logits and targets in several shapes
    and dtypes, targets of the logits' dtype or of the other one."""
    cases = [
        {
            "logits": torch.tensor([2.0, -1.0, 0.5]),
            "targets": torch.tensor([1.0, 0.0, 0.0]),
            "dtype": dtype,
            "targets_dtype": torch.float32,
        }
        for dtype in (torch.float32, torch.float64)
    ]
    for shape, dtype, targets_dtype in [
        ((4, 5), torch.float32, torch.float32),
        ((7,), torch.float64, torch.float64),
        ((2, 3, 2), torch.float32, torch.float32),
        ((2, 3), torch.float64, torch.float64),
        ((3, 4), torch.float32, torch.float64),
        ((6,), torch.float64, torch.float32),
    ]:
        logits = 3 * torch.randn(shape, generator=rng, dtype=torch.float64)
        targets = torch.rand(shape, generator=rng, dtype=torch.float64)
        cases.append(
            {"logits": logits, "targets": targets, "dtype": dtype, "targets_dtype": targets_dtype}
        )
    return cases


def observe(case):
    """Calls loss_and_predictions on every device, then loss.backward(); and once on a GPU stand-in."""
    dtype = case["dtype"]
    seen = {}
    for device in devices():
        logits = case["logits"].to(device, dtype, copy=True).requires_grad_(True)
        targets = case["targets"].to(device, case["targets_dtype"])
        kept = KeptInputs(logits=logits, targets=targets)
        loss, predictions = loss_and_predictions(logits, targets)
        inputs_changed = kept.changes()
        backward_error = None
        try:
            loss.backward()
        except RuntimeError as error:
            backward_error = (str(error).strip().splitlines() or [""])[0][:300]
        seen[device.type] = {
            "loss": loss, "predictions": predictions, "logits": logits, "grad": logits.grad,
            "backward_error": backward_error, "inputs_changed": inputs_changed,
        }  # fmt: skip
    shape = case["logits"].shape
    try:
        gpu_result = on_gpu(
            loss_and_predictions,
            torch.zeros(shape, dtype=dtype, requires_grad=True),
            torch.zeros(shape, dtype=case["targets_dtype"]),
            name="loss_and_predictions(...)",
        )
        seen["gpu"] = {"result": list(gpu_result), "failure": None}
    except AssertionError as error:
        seen["gpu"] = {"result": None, "failure": str(error)}
    return seen


### BEGIN JUDGE
def expected_loss_and_predictions(logits, targets):
    """mean((sigmoid(logits) - targets) ** 2), and 1.0 where sigmoid(logits) > 0.5."""
    probs = logits.sigmoid()
    return ((probs - targets) ** 2).mean(), (probs > 0.5).to(logits.dtype)


def judge(seen, case):
    """Loss, logits.grad by hand, logits untouched, predictions without a graph; on a GPU stand-in."""
    dtype = case["dtype"]
    start, targets = case["logits"].to(dtype), case["targets"].to(case["targets_dtype"])
    expected_loss, expected_predictions = expected_loss_and_predictions(start, targets)
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        loss, predictions, logits, grad = (
            run["loss"],
            run["predictions"],
            run["logits"],
            run["grad"],
        )
        assert_inputs_left_alone(run["inputs_changed"], "loss_and_predictions(logits, targets)")
        assert isinstance(loss, TensorSeen) and loss.shape == (), (
            f"loss should be a 0-dimensional tensor, got {getattr(loss, 'shape', loss)}"
        )
        assert torch.allclose(loss.values.double(), expected_loss.double(), atol=1e-6), (
            f"loss should be mean((sigmoid(logits) - targets) ** 2), about "
            f"{expected_loss.item():.5f}; got {loss.values.item()}"
        )
        assert loss.requires_grad, "loss should carry its graph, so that loss.backward() works"
        error = run["backward_error"]
        if error is not None and "inplace operation" in error:
            raise AssertionError(
                f"loss.backward() raised: {error}\n" + explain("stale-saved-tensor")
            )
        assert error is None, f"loss.backward() raised: {error}"
        if grad is not None:
            assert grad.cls in ("Tensor", "Parameter"), (
                f"logits.grad should be a torch.Tensor, not the subclass {grad.cls}."
            )
            assert grad.is_on(device), f"logits.grad is on {grad.device}, expected {device}."
        assert_grad_close(
            None if grad is None else grad.values,
            hand_gradient(start, targets),
            name="logits.grad",
            atol=1e-6,
        )
        assert torch.equal(logits.values, start), "logits itself should not change"
        assert logits.is_leaf, (
            f"logits is not a leaf: it has grad_fn=<{logits.grad_fn}>. " + explain("not-a-leaf")
        )
        assert isinstance(predictions, TensorSeen), (
            f"predictions should be a tensor, got {getattr(predictions, 'cls', predictions)}"
        )
        assert not predictions.requires_grad and predictions.grad_fn is None, (
            "predictions should carry no graph. " + explain("graph-kept-alive")
        )
        assert predictions.dtype == dtype and predictions.is_on(device), (
            f"predictions should be {dtype} on {device}, like logits; got "
            f"{predictions.dtype} on {predictions.device}"
        )
        assert torch.equal(predictions.values, expected_predictions), (
            "predictions should be 1.0 where sigmoid(logits) > 0.5, else 0.0: expected "
            f"{expected_predictions.tolist()}, got {predictions.values.tolist()}"
        )
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    gpu_loss, gpu_predictions = gpu["result"]
    assert gpu_loss.requires_grad and not gpu_predictions.requires_grad, (
        "on a GPU too, loss should carry its graph and predictions none"
    )
    assert gpu_predictions.dtype == dtype, "predictions should have the dtype of logits"


### END JUDGE
probe_and_judge("q2", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3 — bring a legacy evaluation loop up to date (2 points)
#
# This evaluation loop was written for PyTorch 0.3.
# It is still found in repositories; run the cell to see what it does on yours.


# %%
def evaluate_legacy(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Legacy: the mean over batches of mean((model(x) - y) ** 2), written for PyTorch 0.3."""
    model.eval()
    total_loss = 0
    for x, y in batches:
        x = Variable(x, volatile=True)
        y = Variable(y, volatile=True)
        output = model(x)
        loss = ((output - y) ** 2).mean()
        total_loss += loss.data[0]
    return total_loss / len(batches)


torch.manual_seed(0)
legacy_model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1))
legacy_batches = [(torch.randn(5, 3), torch.randn(5, 1)) for _ in range(2)]
with (
    expect_warning(UserWarning, match="volatile was removed"),
    expect_error(IndexError, match="invalid index of a 0-dim tensor"),
):
    evaluate_legacy(legacy_model, legacy_batches)

# %% [markdown]
# Write `evaluate(model, batches)` in today's PyTorch: the same computation, with every legacy idiom replaced.
# It puts `model` in evaluation mode, as the original does (the tests' models have dropout, some batch normalisation too), runs it once per batch with autograd **off** (the tests check that no graph is recorded while `model` runs), and returns the mean over batches of `mean((model(x) - y) ** 2)` as a Python `float`.
# Batches may differ in size, and models and batches may be float32 or float64.
# The model is the caller's: leave its layers, their settings (a dropout's `p`) and its parameters as you found them; it may stay in evaluation mode, as after the original, or go back to the mode it was in.
# For `nn.Linear(1, 1)` with weight 2 and bias 0, and the one batch `x = [[1], [2]]`, `y = [[1], [1]]`: the outputs are `[2, 4]` and the result is `(1 + 9) / 2 = 5.0`.
# With a dropout after that line, `nn.Sequential(line, nn.Dropout(0.5))`, and two batches of different sizes, `x = [[1], [2]]`, `y = [[0], [1]]` then `x = [[0]]`, `y = [[1]]`: in evaluation mode the dropout passes the outputs `[2, 4]` and `[0]` through, the batches' losses are `(2² + 3²) / 2 = 6.5` and `1`, and the result is `(6.5 + 1) / 2 = 3.75`, the mean over batches (not over the three samples); the tests run it in float32 and float64.
# Section 5 (in `03a_data_vs_detach`) says which switch turns autograd off, and which one does not.
# Leave `batches` as they were.
# The tests also run `evaluate` on the course's stand-in for a GPU (a device named `gpu`, with values, that refuses CPU tensors where CUDA does), with the model and the batches there.


# %% nbgrader={"grade_id": "q3-answer", "solution": true}
def evaluate(model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Returns the mean over batches of mean((model(x) - y) ** 2), without building a graph.

    Args:
        model: The model; put in evaluation mode.
        batches: A list of (x, y) pairs.

    Returns:
        The mean loss, a Python float.
    """
    ### BEGIN SOLUTION
    model.eval()
    total_loss = 0.0
    with torch.no_grad():
        for x, y in batches:
            loss = ((model(x) - y) ** 2).mean()
            total_loss += loss.item()
    return total_loss / len(batches)
    ### END SOLUTION


# %% nbgrader={"grade_id": "q3-tests", "grade": true, "locked": true, "points": 2}
"""Checks evaluate: the value, a Python float, eval mode, autograd off while the model runs.

Visible: the two examples (the second with dropout, batches of two sizes, float32 and float64,
and on a GPU stand-in); the dropout's p, batches and grad mode as they were; one call per batch
with autograd off. Hidden: random models with dropout and batch norm, and batches.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


class WatchedModel(nn.Module):
    """Linear, (batch norm,) dropout, linear; records whether autograd was on at each call."""

    def __init__(self, n_in: int, hidden: int, norm: bool = False) -> None:
        super().__init__()
        middle = [nn.BatchNorm1d(hidden)] if norm else []
        self.layers = nn.Sequential(
            nn.Linear(n_in, hidden), *middle, nn.Dropout(0.5), nn.Linear(hidden, 1)
        )
        self.grad_enabled_at_call: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.grad_enabled_at_call.append(torch.is_grad_enabled())
        return self.layers(x)


def check_no_graph(model: WatchedModel, n_batches: int) -> None:
    """Asserts one call per batch, each with autograd off."""
    calls = model.grad_enabled_at_call
    assert len(calls) == n_batches, f"model ran {len(calls)} times for {n_batches} batches"
    assert not any(calls), "autograd was on while the model ran, so a graph was built. " + explain(
        "autograd-on-in-evaluation"
    )


for device in devices():
    line = nn.Linear(1, 1).to(device)
    with torch.no_grad():
        line.weight.fill_(2.0)
        line.bias.zero_()
    example = [
        (torch.tensor([[1.0], [2.0]], device=device), torch.tensor([[1.0], [1.0]], device=device))
    ]
    result = evaluate(line, example)
    assert type(result) is float, (
        f"evaluate should return a Python float, got {type(result).__name__}"
    )
    assert abs(result - 5.0) < 1e-6, f"evaluate should return 5.0 here, got {result}"

    for dtype in (torch.float32, torch.float64):
        line = nn.Linear(1, 1)
        with torch.no_grad():
            line.weight.fill_(2.0)
            line.bias.zero_()
        with_dropout = nn.Sequential(line, nn.Dropout(0.5)).to(device, dtype).train()
        two_sizes = [
            (torch.tensor([[1.0], [2.0]]), torch.tensor([[0.0], [1.0]])),
            (torch.tensor([[0.0]]), torch.tensor([[1.0]])),
        ]
        two_sizes = [(x.to(device, dtype), y.to(device, dtype)) for x, y in two_sizes]
        kept = KeptInputs(batches=two_sizes)
        result = evaluate(with_dropout, two_sizes)
        assert torch.is_grad_enabled(), (
            "evaluate left autograd off for the whole process (grad mode: on -> off). "
            + explain("global-state-changed")
        )
        assert_inputs_left_alone(kept.changes(), "evaluate(model, batches)")
        assert with_dropout[1].p == 0.5, (
            f"evaluate changed the dropout's p for good (now {with_dropout[1].p}): the model "
            "is the caller's; model.eval() turns dropout off and keeps p"
        )
        assert type(result) is float and abs(result - 3.75) < 1e-6, (
            f"evaluate should return 3.75 here, got {result}: is the model in evaluation mode "
            "(dropout off), and is the result the mean over batches?"
        )

    torch.manual_seed(1)
    model = WatchedModel(3, 8).to(device)
    batches = [
        (torch.randn(4, 3, device=device), torch.randn(4, 1, device=device)) for _ in range(3)
    ]
    result = evaluate(model, batches)
    check_no_graph(model, len(batches))
with_dropout = nn.Sequential(nn.Linear(1, 1), nn.Dropout(0.5))
on_gpu(evaluate, with_dropout, [(torch.ones(2, 1), torch.ones(2, 1))], name="evaluate(...)")


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible examples (the line alone, then with dropout, float32 and float64), then
    random models with dropout (and batch norm), batches of several sizes, float32 and float64."""
    line_batch = (torch.tensor([[1.0], [2.0]]), torch.tensor([[1.0], [1.0]]))
    cases = [
        {
            "n_in": 1, "hidden": None, "norm": False, "dtype": torch.float32, "tolerance": 1e-6,
            "batches": [line_batch],
            "state": {"weight": torch.tensor([[2.0]]), "bias": torch.tensor([0.0])},
        }
    ]  # fmt: skip
    two_sizes = [
        (torch.tensor([[1.0], [2.0]]), torch.tensor([[0.0], [1.0]])),
        (torch.tensor([[0.0]]), torch.tensor([[1.0]])),
    ]
    cases += [
        {
            "n_in": 1, "hidden": "dropout", "norm": False, "dtype": dtype, "tolerance": 1e-6,
            "batches": two_sizes,
            "state": {"0.weight": torch.tensor([[2.0]]), "0.bias": torch.tensor([0.0])},
        }
        for dtype in (torch.float32, torch.float64)
    ]  # fmt: skip
    for n_in, hidden, rows, norm, dtype in [
        (3, 8, (4, 4, 4), False, torch.float32),
        (3, 16, (6, 2, 5, 3), True, torch.float32),
        (6, 16, (6, 9), False, torch.float64),
        (1, 16, (2, 6, 3, 7, 4), True, torch.float64),
    ]:
        last = 3 if norm else 2  # the index of the output layer in model.layers
        state = {
            "layers.0.weight": torch.randn(hidden, n_in, generator=rng) / n_in**0.5,
            "layers.0.bias": torch.randn(hidden, generator=rng) * 0.1,
            f"layers.{last}.weight": torch.randn(1, hidden, generator=rng) / hidden**0.5,
            f"layers.{last}.bias": torch.randn(1, generator=rng) * 0.1,
        }
        if norm:  # running statistics as after some training
            state.update({
                "layers.1.weight": 1 + 0.2 * torch.randn(hidden, generator=rng),
                "layers.1.bias": 0.1 * torch.randn(hidden, generator=rng),
                "layers.1.running_mean": 0.5 * torch.randn(hidden, generator=rng),
                "layers.1.running_var": 0.5 + torch.rand(hidden, generator=rng),
                "layers.1.num_batches_tracked": torch.tensor(100),
            })  # fmt: skip
        batches = [
            (torch.randn(n, n_in, generator=rng), torch.randn(n, 1, generator=rng)) for n in rows
        ]
        cases.append(
            {"n_in": n_in, "hidden": hidden, "norm": norm, "dtype": dtype, "tolerance": 1e-5,
             "batches": batches, "state": state}
        )  # fmt: skip
    return cases


def build_model(case):
    """The case's model and batches, on the CPU, in its dtype: nn.Linear (with a dropout)
    or a WatchedModel."""
    if case["hidden"] is None:
        model = nn.Linear(case["n_in"], 1)
    elif case["hidden"] == "dropout":
        model = nn.Sequential(nn.Linear(case["n_in"], 1), nn.Dropout(0.5))
    else:
        model = WatchedModel(case["n_in"], case["hidden"], norm=case["norm"])
    model.load_state_dict(case["state"])
    batches = [(x.to(case["dtype"]), y.to(case["dtype"])) for x, y in case["batches"]]
    return model.to(case["dtype"]), batches


def observe(case):
    """Calls evaluate on every device, with the model in training mode; sees its calls, and
    the model afterwards: its modes, its dropouts' p and which of its tensors changed."""
    seen = {}
    for device in devices():
        model, batches = build_model(case)
        model.to(device).train()
        batches = [(x.to(device), y.to(device)) for x, y in batches]
        before = {name: t.detach().clone() for name, t in model.state_dict().items()}
        kept = KeptInputs(batches=batches)
        result = evaluate(model, batches)
        after = model.state_dict()
        seen[device.type] = {
            "result_type": type(result).__name__,
            "result": result if type(result) is float else None,
            "grad_enabled_at_call": getattr(model, "grad_enabled_at_call", None),
            "training_after": [module.training for module in model.modules()],
            "dropout_p_after": [m.p for m in model.modules() if isinstance(m, nn.Dropout)],
            "changed": sorted(
                name for name in before.keys() | after.keys()
                if name not in before or name not in after
                or not torch.equal(before[name], after[name])
            ),
            "inputs_changed": kept.changes(),
        }  # fmt: skip
    model, batches = build_model(case)
    try:
        result = on_gpu(evaluate, model.train(), batches, name="evaluate(model, batches)")
        seen["gpu"] = {
            "failure": None, "result_type": type(result).__name__,
            "result": result if type(result) is float else None,
        }  # fmt: skip
    except AssertionError as error:
        seen["gpu"] = {"failure": str(error)}
    return seen


### BEGIN JUDGE
def mean_loss_in_eval_mode(model, batches):
    """The mean over batches of mean((model(x) - y) ** 2), dropout off, autograd off."""
    model.eval()
    with torch.no_grad():
        return sum(((model(x) - y) ** 2).mean().item() for x, y in batches) / len(batches)


def judge(seen, case):
    """One call per batch with autograd off, a Python float, the value in evaluation mode;
    the caller's model as it was, in evaluation mode or back in training mode."""
    expected = mean_loss_in_eval_mode(*build_model(case))
    n_batches = len(case["batches"])
    assert "cpu" in seen, "the tests saw no CPU run"
    gpu = seen.pop("gpu")
    assert gpu["failure"] is None, gpu["failure"]
    assert gpu["result_type"] == "float", (
        f"on a GPU, evaluate should return a Python float, got {gpu['result_type']}"
    )
    assert abs(gpu["result"] - expected) < case["tolerance"], (
        f"on a GPU, evaluate returned {gpu['result']}, expected {expected}"
    )
    for run in seen.values():
        assert_inputs_left_alone(run["inputs_changed"], "evaluate(model, batches)")
        calls = run["grad_enabled_at_call"]
        if calls is not None:
            assert len(calls) == n_batches, f"model ran {len(calls)} times for {n_batches} batches"
            assert not any(calls), (
                "autograd was on while the model ran, so a graph was built. "
                + explain("autograd-on-in-evaluation")
            )
        assert run["result_type"] == "float", (
            f"evaluate should return a Python float, got {run['result_type']}"
        )
        result = run["result"]
        assert abs(result - expected) < case["tolerance"], (
            f"evaluate returned {result}, expected {expected}: is the model in evaluation "
            "mode (dropout off, batch norm on its running statistics), and is the result the "
            "mean over batches?"
        )
        modes = set(run["training_after"])
        assert len(modes) == 1, (
            "after evaluate, some of the model's layers are in training mode and some not: "
            "model.eval() switches them all, model.train(mode) switches them all back"
        )
        assert all(p == 0.5 for p in run["dropout_p_after"]), (
            f"evaluate changed a dropout's p for good (now {run['dropout_p_after']}): the model "
            "is the caller's; model.eval() turns dropout off and keeps p"
        )
        assert not run["changed"], (
            f"evaluate changed the model's {', '.join(run['changed'])}: the model is the "
            "caller's (in training mode, batch norm updates its running statistics)"
        )


### END JUDGE
probe_and_judge("q3", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. `total_loss += loss` keeps every step's graph alive
#
# One older post warns that accumulating the loss as a tensor keeps each step's graph alive, and it shows the culprit as `total_loss += loss.data[0]`.
# That example is wrong on torch 2.x twice over.
# `loss.data[0]` raises, as section 6 showed.
# And `.data` has no history, so even `total_loss += loss.data` keeps no graph.
# The line that keeps the graph is `total_loss += loss`, without anything in between.

# %%
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
accumulate = {
    "loss": lambda loss: loss,
    "loss.data": lambda loss: loss.data,
    "loss.detach()": lambda loss: loss.detach(),
    "loss.item()": lambda loss: loss.item(),
}
for expression, take in accumulate.items():
    total_loss = 0.0
    for _ in range(3):
        loss = (w * w).sum()
        total_loss += take(loss)
    kept = isinstance(total_loss, torch.Tensor) and total_loss.grad_fn is not None
    print(f"total_loss += {expression:14} -> {type(total_loss).__name__:6} | keeps a graph: {kept}")
    assert kept == (expression == "loss")

# %% [markdown]
# How much does it keep?
# To measure it, walk the graph below `total_loss` through `grad_fn.next_functions`, as `backward()` would.
# Count the nodes, and add up the bytes of the tensors they saved for backward and still hold.
# A saved tensor already freed by `backward()` raises when read: it holds nothing.
# Tensors that are kept anyway (the parameters, the data) are not counted.


# %%
@functools.cache
def saved_attributes(node_type: type) -> list[str]:
    """The `_saved_*` attributes of a kind of node, e.g. `_saved_self` for MulBackward0."""
    return [name for name in dir(node_type) if name.startswith("_saved_")]


def graph_size(total: float | torch.Tensor, kept_anyway: list[torch.Tensor]) -> tuple[int, int]:
    """Returns (nodes, bytes of saved tensors held only by the graph) below total."""
    if not isinstance(total, torch.Tensor) or total.grad_fn is None:
        return 0, 0
    kept_memory = {t.data_ptr() for t in kept_anyway}
    seen, stack, held = set(), [total.grad_fn], {}
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
        for attribute in saved_attributes(type(node)):
            try:
                saved = getattr(node, attribute)
            except RuntimeError:  # freed by an earlier backward()
                continue
            if isinstance(saved, torch.Tensor) and saved.data_ptr() not in kept_memory:
                storage = saved.untyped_storage()
                held[storage.data_ptr()] = storage.nbytes()
    return len(seen), sum(held.values())


# %% [markdown]
# Now a small training loop, 30 steps of SGD on a two-layer network, run three times: accumulating `loss`, `loss.item()` and `loss.detach()`.
# Then the same three for an evaluation loop that forgot `torch.no_grad()`: no `backward()` there.

# %%
torch.manual_seed(0)
data = [(torch.randn(16, 4), torch.randn(16, 1)) for _ in range(30)]  # batches of 16
inputs = [x for x, _ in data]

# %% nbgrader={"grade_id": "demo-total-loss-ways", "locked": true} tags=["grading-skip"]
ways = {
    "+= loss": lambda loss: loss,
    "+= loss.item()": lambda loss: loss.item(),
    "+= loss.detach()": lambda loss: loss.detach(),
}
nodes, held = {}, {}
for training in (True, False):
    for way, take in ways.items():
        torch.manual_seed(1)
        net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
        total_loss, sizes = 0.0, []
        for x, y in data:
            loss = ((net(x) - y) ** 2).mean()
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total_loss += take(loss)
            sizes.append(graph_size(total_loss, [*net.parameters(), *inputs]))
        nodes[training, way] = [n for n, _ in sizes]
        held[training, way] = [b for _, b in sizes]
        print(
            f"{'training' if training else 'evaluation':10} {way:17} after 30 steps: "
            f"{nodes[training, way][-1]:3} nodes, {held[training, way][-1]:6} bytes held"
        )
for training in (True, False):
    growth = nodes[training, "+= loss"]
    assert growth[0] > 0 and len({b - a for a, b in itertools.pairwise(growth)}) == 1  # linear
    assert nodes[training, "+= loss.item()"] == nodes[training, "+= loss.detach()"] == [0] * 30
assert held[True, "+= loss"] == [0] * 30  # backward() freed what each step saved
per_step = 16 * 16 * 4 + 16 * 1 * 4  # float32 bytes: tanh's output (16, 16), pow's input (16, 1)
assert held[False, "+= loss"] == [per_step * step for step in range(1, 31)]  # nothing frees it

# %% nbgrader={"grade_id": "demo-graph-growth-plot", "locked": true} tags=["grading-skip"]
figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
steps = range(1, 31)
styles = {"+= loss": "-", "+= loss.item()": "--", "+= loss.detach()": ":"}  # the last two overlap
for way in ways:
    left.plot(steps, nodes[True, way], styles[way], marker=".", label=way)
    right.plot(steps, held[False, way], styles[way], marker=".", label=way)
left.set(title="training loop: graph nodes kept by total_loss", xlabel="step", ylabel="nodes")
right.set(
    title="evaluation loop without no_grad: saved tensors kept",
    xlabel="step",
    ylabel="bytes held",
)
left.legend()
right.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# Read the two plots together.
# In both loops, `total_loss += loss` keeps every step's graph: the node count grows by the same amount each step, without end.
# In the training loop each `backward()` has already freed the tensors its step saved, so what piles up is the nodes themselves (small, but never released, and every step's graph is now chained to the next).
# In an evaluation loop nothing frees them: every step's activations stay in memory, 1,088 bytes a step here (the (16, 16) output of `tanh` and the (16, 1) difference that `** 2` saved, in float32).
# That grows with the batch and the model, and it never stops growing: with real activations, this is how an evaluation runs out of memory.
# `loss.item()` and `loss.detach()` keep nothing (both curves lie at 0).
#
# The drawing shows the chain after three training steps: one `AddBackward0` per step, each holding a whole step's graph, with the saved tensors already freed by `backward()` (grey).
# To fit the page, the model here is a single `nn.Linear(4, 1)`.

# %%
torch.manual_seed(1)
net = nn.Linear(4, 1)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
total_loss = 0.0
for x, y in data[:3]:
    loss = ((net(x) - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total_loss += loss
names = {"total_loss": total_loss, **dict(net.named_parameters())}
print("nodes below total_loss:", graph_size(total_loss, [*net.parameters(), *inputs])[0])
draw(total_loss, names=names)

# %% [markdown]
# Calling `total_loss.backward()` would fail, since each step's `backward()` already freed what this graph needs, and `diagnose` says so before you try.

# %%
freed = [
    finding for finding in diagnose(total_loss).findings if finding.kind == "freed-saved-tensor"
]
print(f"diagnose: {len(freed)} saved tensors already freed, the first one by {freed[0].node}")
with expect_error(RuntimeError, match="Trying to backward through the graph a second time"):
    total_loss.backward()

# %% [markdown]
# ### Exercise 4 — fix the training loop (3 points)
#
# This loop trains, returns the right number, and raises nothing.
# It has two problems from this notebook.
# Run it: the parameters' versions show the first (the second is in section 7).


# %%
def train_epoch_buggy(
    model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], lr: float
) -> float:
    """Buggy: one epoch of SGD on mean((model(x) - y) ** 2); returns the mean loss."""
    total_loss = 0
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= lr * p.grad  # legacy update, hidden from autograd
        total_loss += loss  # keeps every step's graph
    return (total_loss / len(batches)).item()


torch.manual_seed(0)
buggy_model = nn.Linear(3, 1)
versions_before = [p._version for p in buggy_model.parameters()]  # 1: nn.init wrote them once
mean_loss = train_epoch_buggy(buggy_model, [(torch.randn(4, 3), torch.randn(4, 1))] * 5, lr=0.1)
versions_after = [p._version for p in buggy_model.parameters()]
print(
    f"mean loss: {mean_loss:.4f} | versions before: {versions_before}, "
    f"after 5 updates: {versions_after}"
)
assert versions_after == versions_before  # five updates, and autograd saw none of them

# %% [markdown]
# Write `train_epoch(model, batches, lr)`, a fixed copy.
# For each batch, in order: compute `loss = mean((model(x) - y) ** 2)` with one call of `model`, compute fresh gradients (not added to the previous step's), and update every parameter in place with plain SGD, `p ← p − lr · p.grad`.
# Return the mean of the per-step losses, each taken before its update, as a Python `float`.
# Train `model` in place, and leave `batches` as they were.
# Two requirements the buggy loop breaks:
# - autograd must see each update: the tests check that, by the end, every parameter's `_version` has gone up at least once per step, so `.data` updates fail;
# - no step's graph may outlive its step: the tests count, at each call of `model`, how many earlier steps' graphs are still alive, and accept at most one (the previous `loss`, until you rebind the name).
#
# For `nn.Linear(1, 1)` with weight 1 and bias 0, `lr = 0.1`, the batch `x = [[1]]`, `y = [[3]]`, then the same row twice, `x = [[1], [1]]`, `y = [[3], [3]]`: the first loss is `(1 − 3)² = 4` and the gradients are `∂/∂w = ∂/∂b = 2 · (1 − 3) = −4`, so `w = 1.4`, `b = 0.4`; the second loss is `(1.8 − 3)² = 1.44` (the mean over its two rows), with gradients `2 · (1.8 − 3) = −2.4`, so `w = 1.64`, `b = 0.64` after the epoch; the result is `(4 + 1.44) / 2 = 2.72`, the mean over the two steps (not over the three samples).


# %% nbgrader={"grade_id": "q4-answer", "solution": true}
def train_epoch(
    model: nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], lr: float
) -> float:
    """Runs one epoch of SGD on mean((model(x) - y) ** 2) and returns the mean loss.

    Args:
        model: The model to train, in place.
        batches: A list of (x, y) pairs.
        lr: The learning rate.

    Returns:
        The mean of the per-step losses, a Python float.
    """
    ### BEGIN SOLUTION
    total_loss = 0.0
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        total_loss += loss.item()
    return total_loss / len(batches)
    ### END SOLUTION


# %% nbgrader={"grade_id": "q4-tests", "grade": true, "locked": true, "points": 3}
"""Checks train_epoch: the mean loss, the parameters, versions, and graphs kept across steps.

Visible: the example by hand (batches of two sizes, left as they were), then random batches
(versions, graphs alive, the parameters kept). Hidden: random models, batches, learning rates
and dtypes, against the intended computation.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


class StepGraph(torch.autograd.Function):
    """Identity whose graph node is a Python object: alive exactly as long as its step's graph."""

    alive: ClassVar[weakref.WeakSet] = weakref.WeakSet()

    @staticmethod
    def forward(ctx, x):
        StepGraph.alive.add(ctx)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class CountingModel(nn.Module):
    """A linear model that counts its calls and the earlier steps' graphs alive at each call."""

    def __init__(self, n_in: int) -> None:
        super().__init__()
        self.linear = nn.Linear(n_in, 1)
        self.graphs_alive_at_call: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.graphs_alive_at_call.append(len(StepGraph.alive))
        return StepGraph.apply(self.linear(x))


def check_epoch(model: CountingModel, batches, lr: float) -> None:
    """Runs train_epoch on model: a float, one call per batch, no graph kept, Parameters kept.

    The values on these random batches are checked by the hidden tests.
    """
    parameters = list(model.parameters())
    versions = [p._version for p in parameters]
    result = train_epoch(model, batches, lr)
    assert type(result) is float, (
        f"train_epoch should return a Python float, got {type(result).__name__}"
    )
    assert len(model.graphs_alive_at_call) == len(batches), (
        f"model was called {len(model.graphs_alive_at_call)} times for {len(batches)} batches"
    )
    assert max(model.graphs_alive_at_call) <= 1, (
        f"up to {max(model.graphs_alive_at_call)} earlier steps' graphs were still alive "
        "when model was called. " + explain("graph-kept-alive")
    )
    assert list(model.parameters()) == parameters, "update the parameters in place, keep them"
    for (name, p), before in zip(model.named_parameters(), versions, strict=True):
        assert_version(p, before + len(batches), name=name)
        assert_is_leaf(p, name=name)


for device in devices():
    model = CountingModel(1).to(device)
    with torch.no_grad():
        model.linear.weight.fill_(1.0)
        model.linear.bias.zero_()
    example = [
        (torch.tensor([[1.0]], device=device), torch.tensor([[3.0]], device=device)),
        (torch.tensor([[1.0], [1.0]], device=device), torch.tensor([[3.0], [3.0]], device=device)),
    ]
    kept = KeptInputs(batches=example)
    result = train_epoch(model, example, lr=0.1)
    assert_inputs_left_alone(kept.changes(), "train_epoch(model, batches, lr)")
    assert type(result) is float, (
        f"train_epoch should return a Python float, got {type(result).__name__}"
    )
    assert abs(result - 2.72) < 1e-5, (
        f"the mean loss should be 2.72, the mean over the steps, got {result}"
    )
    assert torch.allclose(model.linear.weight.detach(), torch.tensor([[1.64]], device=device)), (
        f"the weight should be 1.64 after the epoch, got {model.linear.weight.item()}"
    )
    assert torch.allclose(model.linear.bias.detach(), torch.tensor([0.64], device=device)), (
        f"the bias should be 0.64 after the epoch, got {model.linear.bias.item()}"
    )

    torch.manual_seed(4)
    model = CountingModel(3).to(device)
    batches = [
        (torch.randn(5, 3, device=device), torch.randn(5, 1, device=device)) for _ in range(4)
    ]
    check_epoch(model, batches, lr=0.05)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible example by hand, then random linear models, batches of several sizes,
    learning rates, float32 and float64."""
    example = [
        (torch.tensor([[1.0]]), torch.tensor([[3.0]])),
        (torch.tensor([[1.0], [1.0]]), torch.tensor([[3.0], [3.0]])),
    ]
    cases = [
        {"weight": torch.tensor([[1.0]]), "bias": torch.tensor([0.0]), "batches": example,
         "lr": 0.1, "dtype": torch.float32}
    ]  # fmt: skip
    for n_in, rows, lr, dtype in [
        (3, (5, 5, 5, 5), 0.05, torch.float32),
        (2, (7, 3, 9, 1, 7, 4), 0.1, torch.float32),
        (5, (7, 2, 6), 0.02, torch.float64),
        (4, (3, 8, 5, 7, 2, 6, 7, 1), 0.07, torch.float64),
    ]:
        batches = [
            (torch.randn(n, n_in, generator=rng), torch.randn(n, 1, generator=rng)) for n in rows
        ]
        weight = torch.randn(1, n_in, generator=rng) / n_in**0.5
        bias = torch.randn(1, generator=rng) * 0.1
        cases.append({"weight": weight, "bias": bias, "batches": batches, "lr": lr, "dtype": dtype})
    return cases


def observe(case):
    """Runs train_epoch on a CountingModel on every device; sees result, calls, parameters."""
    seen = {}
    for device in devices():
        model = CountingModel(case["weight"].shape[1])
        with torch.no_grad():
            model.linear.weight.copy_(case["weight"])
            model.linear.bias.copy_(case["bias"])
        model.to(device, case["dtype"])
        parameters = list(model.parameters())
        versions = [p._version for p in parameters]
        batches = [
            (x.to(device, case["dtype"]), y.to(device, case["dtype"])) for x, y in case["batches"]
        ]
        kept = KeptInputs(batches=batches)
        result = train_epoch(model, batches, case["lr"])
        now = list(model.parameters())
        seen[device.type] = {
            "result_type": type(result).__name__,
            "result": result if type(result) is float else None,
            "graphs_alive_at_call": list(model.graphs_alive_at_call),
            "same_parameters": len(now) == len(parameters)
            and all(p is q for p, q in zip(now, parameters, strict=True)),
            "parameters": dict(model.named_parameters()),
            "versions_before": versions,
            "inputs_changed": kept.changes(),
        }
    return seen


### BEGIN JUDGE
def reference_epoch(model: nn.Module, batches, lr: float) -> float:
    """The intended computation, on a copy of the model (the grader's side only)."""
    losses = []
    for x, y in batches:
        loss = ((model(x) - y) ** 2).mean()
        grads = torch.autograd.grad(loss, list(model.parameters()))
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads, strict=True):
                p -= lr * g
        losses.append(loss.item())
    return sum(losses) / len(losses)


def judge(seen, case):
    """The mean loss and parameters against reference_epoch; versions, graphs alive, leaves."""
    reference = CountingModel(case["weight"].shape[1])
    with torch.no_grad():
        reference.linear.weight.copy_(case["weight"])
        reference.linear.bias.copy_(case["bias"])
    reference.to(case["dtype"])
    batches = [(x.to(case["dtype"]), y.to(case["dtype"])) for x, y in case["batches"]]
    expected = reference_epoch(reference, batches, case["lr"])
    n_batches = len(case["batches"])
    assert "cpu" in seen, "the tests saw no CPU run"
    for run in seen.values():
        assert_inputs_left_alone(run["inputs_changed"], "train_epoch(model, batches, lr)")
        assert run["result_type"] == "float", (
            f"train_epoch should return a Python float, got {run['result_type']}"
        )
        assert abs(run["result"] - expected) < 1e-5, (
            f"the mean loss should be {expected}, got {run['result']}"
        )
        calls = run["graphs_alive_at_call"]
        assert len(calls) == n_batches, (
            f"model was called {len(calls)} times for {n_batches} batches"
        )
        assert max(calls) <= 1, (
            f"up to {max(calls)} earlier steps' graphs were still alive "
            "when model was called. " + explain("graph-kept-alive")
        )
        assert run["same_parameters"], "update the parameters in place, keep them"
        for (name, p), q, before in zip(
            run["parameters"].items(), reference.parameters(), run["versions_before"], strict=True
        ):
            assert isinstance(p, TensorSeen) and p.cls in ("Tensor", "Parameter"), (
                f"{name} should be a torch.Tensor (or an nn.Parameter), not {getattr(p, 'cls', p)}."
            )
            assert p.version >= before + n_batches, (
                f"{name}._version is {p.version}, expected at least {before + n_batches}: "
                "autograd did not see the write. " + explain("hidden-write")
            )
            assert p.dtype == case["dtype"], f"{name} should stay {case['dtype']}, is {p.dtype}"
            assert torch.allclose(p.values, q.detach(), atol=1e-5), (
                f"{name} after the epoch should be {q.detach().tolist()}, got {p.values.tolist()}"
            )
            assert p.is_leaf, f"{name} is not a leaf: it has grad_fn=<{p.grad_fn}>. " + explain(
                "not-a-leaf"
            )
            assert p.requires_grad, f"{name} does not require grad. " + explain("no-requires-grad")


### END JUDGE
probe_and_judge("q4", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Part 1 (`03a_data_vs_detach`): `.detach()` shares the version counter and `.data` does not, so a write through `.data` to a tensor autograd saved gives a wrong gradient with no error; today, `torch.no_grad()` and `.detach()`, never `.data`.
# - Legacy: `Variable(t)` returns `t.detach()`, a plain tensor; `volatile=True` warns and does nothing; `loss.data[0]` raises, use `loss.item()` (`tolist()` for many values); `float(loss)` warns when `loss` requires grad; prefer `.detach().cpu().numpy()` to `.data.cpu().numpy()`.
# - `total_loss += loss` chains every step's graph to the next; in an evaluation loop without `no_grad` it keeps every step's activations too. Accumulate `loss.item()` or `loss.detach()`.
