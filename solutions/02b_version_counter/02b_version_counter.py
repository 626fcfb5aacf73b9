# %% [markdown]
# # 02b · In-place operations and the version counter (part 2 of 2)
#
# This continues `02a_version_counter` (sections 1–5: in-place operations, the version counter, the two in-place writes autograd forbids, `diagnose`, and when an in-place write is harmless).
# Sections and exercises keep their numbers, so this part starts at section 6 and Exercise 2.
#
# ## What you will learn
# - Why the order of the lines matters, three ways to fix a version error, and the way to write to a leaf (`torch.no_grad()`).
# - How to initialise a parameter in place (`torch.no_grad()`, `nn.init`), and why `.data` is the wrong tool.
# - What `diagnose` and `track_inplace` cannot see.
# - How anomaly mode names the forward line behind a backward error.
# - What `Trying to backward through the graph a second time` means, and how to get two gradients right.
#
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.

# %% nbgrader={"grade_id": "setup", "locked": true}
import inspect

import torch
from torch import nn

from autograd_pitfalls import (
    CountForwardProducts,
    KeptInputs,
    TensorSeen,
    WatchWrites,
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
    track_inplace,
)

print(torch.__version__)

# %% [markdown]
# ## 6. Order matters
#
# The same three lines as in section 4 (in `02a_version_counter`), with the write moved before the use, run without error.
# `f` is now computed from the new `d`, and that is what its gradient reflects:
# `w2.grad` is the new `d` (0, not 4), and `w1.grad` is 0 because `d[:] = 0` replaced every value that depended on `w1`.
# Whether that is right depends on what you meant: autograd differentiates the code you ran.

# %%
x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)

d = x @ w1
d[:] = 0  # before d is used: nothing saved it yet
f = d @ w2  # saves d at version 1
f.backward()
print("w2.grad:", w2.grad, "| w1.grad:", w1.grad.flatten())
assert torch.equal(w2.grad, d.detach().flatten()) and w2.grad.item() == 0.0
assert torch.equal(w1.grad, torch.zeros(2, 1))

# %% [markdown]
# ## 7. Three fixes, and the leaf case
#
# Suppose the intended computation is: `f` uses the original `d` (so `w2.grad = 4` and, by hand, `w1.grad = xᵀ·w2 = [[3], [6]]`), and afterwards we want `d` scaled by 10 for some later step.
# `d *= 10` after `f = d @ w2` raises, as in section 4 (part 1).
# Each of the three fixes below gives the intended gradients, checked against the hand-derived ones.


# %%
def fresh_forward() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Returns (w1, w2, d, f) for the example of sections 4 (part 1) and 6, built from scratch."""
    x = torch.tensor([[1.0, 2.0]])
    w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
    w2 = torch.tensor([3.0], requires_grad=True)
    d = x @ w1
    return w1, w2, d, d @ w2


def check_intended(w1: torch.Tensor, w2: torch.Tensor, scaled: torch.Tensor) -> None:
    """Prints the gradients and asserts they are the hand-derived ones for the original d."""
    print(
        f"w2.grad = {w2.grad.tolist()}, w1.grad = {w1.grad.flatten().tolist()}, "
        f"scaled d = {scaled.item()}"
    )
    assert torch.equal(w2.grad, torch.tensor([4.0]))
    assert torch.equal(w1.grad, torch.tensor([[3.0], [6.0]]))
    assert scaled.item() == 40.0


w1, w2, d, f = fresh_forward()
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    d *= 10
    f.backward()

# 1. Out of place: a new tensor; the saved d is untouched.
w1, w2, d, f = fresh_forward()
scaled = d * 10
assert not diagnose(f)
f.backward()
check_intended(w1, w2, scaled)

# 2. Clone, then modify the clone in place: the clone has its own memory and counter.
w1, w2, d, f = fresh_forward()
scaled = d.clone()
scaled *= 10
assert not diagnose(f)
f.backward()
check_intended(w1, w2, scaled)

# 3. Modify after backward(): once backward() is done, nothing needs d any more.
w1, w2, d, f = fresh_forward()
f.backward()
d *= 10
check_intended(w1, w2, d)

# %% [markdown]
# Leaves, the case of section 3 (part 1), take another way: write under `torch.no_grad()`, before the leaf is used.
# That is parameter initialisation (and the optimiser's update step), next section.
#
# Three "fixes" to avoid.
# `d.data *= 10` silences the error and gives a wrong gradient (`w2.grad = 40`), because autograd no longer sees the write.
# `diagnose` cannot see it either, even under `track_inplace()`: it reads the same version counters, and `d._version` stays 0.
# A write through numpy (`d.detach().numpy()`) is just as invisible: numpy writes the memory directly.
# Version tracking cannot see such writes, so "nothing found" never rules them out; its own message says so.
# `d.detach().mul_(10)` does not even silence the error: a detached tensor shares the counter (section 2, part 1).

# %%
with track_inplace():
    w1, w2, d, f = fresh_forward()
    d.data *= 10  # hidden from the counter
report = diagnose(f, names={"d": d})
print(report)
assert not report and d._version == 0  # nothing to report ...
f.backward()  # ... no error ...
print("w2.grad:", w2.grad, "<- wrong: the intended gradient is 4")
assert w2.grad.item() == 40.0

w1, w2, d, f = fresh_forward()
d.detach().numpy()[:] *= 10  # numpy: no counter moves either
assert not diagnose(f) and d._version == 0
f.backward()
print("w2.grad:", w2.grad, "<- wrong again")
assert w2.grad.item() == 40.0

w1, w2, d, f = fresh_forward()
d.detach().mul_(10)  # the same counter: still caught
assert diagnose(f).findings[0].node == f.grad_fn.name()
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    f.backward()

# %% [markdown]
# When you cannot change the code that writes (a library's, say), PyTorch can do fix 2 for you: inside `torch.autograd.graph.allow_mutation_on_saved_tensors()`, a write to a saved tensor clones it before writing, and backward uses the clone.
# The cost is that copy, in memory of its own (the cell shows it); and the forward and the backward must both run inside the block.

# %%
with torch.autograd.graph.allow_mutation_on_saved_tensors():
    w1, w2, d, f = fresh_forward()
    d *= 10  # the write that raised above
    saved = f.grad_fn._saved_self  # what backward will use for d
    print("saved d:", saved.item(), "| same memory as d:", saved.data_ptr() == d.data_ptr())
    assert saved.item() == 4.0 and saved.data_ptr() != d.data_ptr()  # a copy, made by the write
    f.backward()
check_intended(w1, w2, d)

with torch.autograd.graph.allow_mutation_on_saved_tensors():
    w1, w2, d, f = fresh_forward()
    d *= 10
with expect_error(
    AssertionError, match="backward outside of the 'allow_mutation_on_saved_tensors'"
):
    f.backward()

# %% [markdown]
# ### Exercise 2 — fix the saved-tensor bug (3 points)
#
# `loss_and_centred_buggy` computes activations `h = x @ w`, a loss `mean(h²)`, backpropagates it into `w.grad`, and returns the loss with the column-centred activations `h - h.mean(dim=0)` for a later step.
# It raises at `loss.backward()`: run the cell below to see.


# %%
def loss_and_centred_buggy(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Buggy: fills w.grad with d mean((x @ w)**2) / dw, returns (loss, centred h)."""
    h = x @ w  # (n, k) activations
    loss = (h**2).mean()  # PowBackward0 saves h
    h -= h.mean(dim=0)  # centre each column for a later step
    loss.backward()
    return loss.detach(), h


x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
w = torch.eye(2, requires_grad=True)
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    loss_and_centred_buggy(x, w)

# %% [markdown]
# Write `loss_and_centred`, a fixed copy.
# The intended computation: the loss uses the original `h`; by hand, `d mean(h²) / dw = xᵀ · 2h / h.numel()`.
# For `x = [[1, 2], [3, 4]]` and `w = I`: `h = x`, the loss is `(1 + 4 + 9 + 16) / 4 = 7.5`, `w.grad = [[5, 7], [7, 10]]`, and the centred `h` is `[[-1, -1], [1, 1]]`.
# Silencing the error with `.data` gives a wrong `w.grad`; the tests compare with the hand-derived gradient.
# `x` may require grad too: `loss.backward()` then fills `x.grad` as well, and it must be right too: by hand `d mean(h²) / dx = 2h / h.numel() · wᵀ`, `[[0.5, 1], [1.5, 2]]` for the example.
# Return the loss and the centred `h` as tensors on `x`'s device and in its dtype.
# Leave `x` and `w` as they were: the caller still uses them (only their `.grad` fills).
# `x -= x.mean(0)` would centre the caller's `x`, not a tensor of yours.
#
# The tests also run your function on the course's stand-in for a GPU (notebook 01b, section 6): a tensor it builds without `device=` fails there, as on a GPU; the example after the tests shows one.


# %% nbgrader={"grade_id": "q2-answer", "solution": true}
def loss_and_centred(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Calls loss.backward() for loss = mean((x @ w) ** 2); returns it and the centred h.

    Args:
        x: Inputs, shape (n, m).
        w: Weights, a leaf that requires grad, shape (m, k).

    Returns:
        (loss, centred): the loss computed from the original h = x @ w, and
        h - h.mean(dim=0), shape (n, k).
    """
    ### BEGIN SOLUTION
    h = x @ w
    loss = (h**2).mean()
    centred = h - h.mean(dim=0)  # out of place: the h that pow saved stays at version 0
    loss.backward()
    return loss.detach(), centred
    ### END SOLUTION


# %% nbgrader={"grade_id": "q2-tests", "grade": true, "locked": true, "points": 3}
"""Checks loss_and_centred: the loss, w.grad (and x.grad) against the hand-derived gradient,
the centred h, their dtype, x and w left as they were.

Visible: the example in float32, then in float64 with x requiring grad. Hidden: random x and w.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
for device in devices():
    for dtype, x_requires_grad in ((torch.float32, False), (torch.float64, True)):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, dtype=dtype)
        x.requires_grad_(x_requires_grad)
        w = torch.eye(2, device=device, dtype=dtype, requires_grad=True)
        kept = KeptInputs(x=x, w=w)
        loss, centred = loss_and_centred(x, w)
        assert_inputs_left_alone(kept.changes(), "loss_and_centred(x, w)")
        assert abs(float(loss) - 7.5) < 1e-5, f"the loss should be 7.5, got {float(loss)}"
        for name, result in (("loss", loss), ("centred h", centred)):
            assert result.dtype == dtype, (
                f"keep the inputs' dtype ({str(dtype).removeprefix('torch.')} here); "
                f"the {name} is {result.dtype}. " + explain("wrong-dtype")
            )
        expected_w_grad = torch.tensor([[5.0, 7.0], [7.0, 10.0]], device=device, dtype=dtype)
        assert_grad_close(w.grad, expected_w_grad, name="w.grad")
        if x_requires_grad:
            expected_x_grad = torch.tensor([[0.5, 1.0], [1.5, 2.0]], device=device, dtype=dtype)
            assert_grad_close(x.grad, expected_x_grad, name="x.grad")
        expected_centred = torch.tensor([[-1.0, -1.0], [1.0, 1.0]], device=device, dtype=dtype)
        assert torch.allclose(centred, expected_centred), (
            f"the centred activations should be [[-1, -1], [1, 1]], got {centred.tolist()}"
        )
        assert_is_leaf(w, name="w")
# Device-following: on the GPU stand-in, both results must stay on it.
loss, centred = on_gpu(loss_and_centred, torch.ones(3, 2), torch.ones(2, 4, requires_grad=True))
assert isinstance(loss, torch.Tensor), "return the loss as a tensor"
assert centred.shape == (3, 4), (
    f"the centred h should have shape (3, 4), got {tuple(centred.shape)}"
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible examples, then random x (nonzero column means) and w, float32 and float64."""
    cases = [
        {"x": torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dtype), "w": torch.eye(2, dtype=dtype),
         "visible": True}
        for dtype in (torch.float32, torch.float64)
    ]  # fmt: skip
    cases += [
        {"x": torch.ones(3, 2), "w": torch.ones(2, 4), "visible": True},  # the one on_gpu runs
        {"x": torch.ones(2, 3), "w": torch.ones(3, 2), "visible": False},
    ]
    shapes = [(3, 5, 2), (1, 4, 3), (6, 2, 4), (4, 3, 2)]
    for n, m, k, dtype in [(*shape, torch.float32) for shape in shapes] + [
        (4, 3, 2, torch.float64)
    ]:
        x = torch.randn(n, m, generator=rng, dtype=dtype) + 1.0
        w = torch.randn(m, k, generator=rng, dtype=dtype)
        cases.append({"x": x, "w": w, "visible": False})
    return cases


def run_loss_and_centred(x, w):
    """Calls loss_and_centred(x, w); returns its two results and what became of w and x."""
    kept = KeptInputs(x=x, w=w)
    loss, centred = loss_and_centred(x, w)
    after = {"w": w, "w_grad": w.grad, "x_grad": x.grad, "inputs_changed": kept.changes()}
    return loss, centred, after


def observe(case):
    """On every device and on a GPU stand-in: x as given, then x a leaf that requires grad too."""
    seen = {}
    for device in devices():
        for label, x_requires_grad in (("", False), (" x_leaf", True)):
            x = case["x"].to(device, copy=True).requires_grad_(x_requires_grad)
            w = case["w"].to(device, copy=True).requires_grad_(True)
            loss, centred, after = run_loss_and_centred(x, w)
            seen[device.type + label] = {"loss": loss, "centred": centred, **after}
    for label, x_requires_grad in (("", False), (" x_leaf", True)):
        try:
            loss, centred, after = on_gpu(
                run_loss_and_centred,
                case["x"].clone().requires_grad_(x_requires_grad),
                case["w"].clone().requires_grad_(True),
                name="loss_and_centred(...)",
            )
            seen["gpu" + label] = {"failure": None, "loss": loss, "centred": centred, **after}
        except AssertionError as error:
            seen["gpu" + label] = {"failure": str(error)}
    return seen


### BEGIN JUDGE
def _grad_close(seen, expected, name, device, atol):
    """assert_grad_close on what the probe saw: its class and device, then its values."""
    if seen is not None:
        assert isinstance(seen, TensorSeen), f"{name} should be a tensor, got {seen!r}."
        assert seen.cls in ("Tensor", "Parameter"), (
            f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
        )
        assert seen.is_on(device), f"{name} is on {seen.device}, expected it on {device}."
        assert seen.values is not None, f"{name}: its values could not be read ({seen.dtype})"
        seen = seen.values
    assert_grad_close(seen, expected, name=name, atol=atol)


def _tensor_on(seen, name, device, dtype):
    """Asserts a plain tensor on ``device`` with ``dtype``; returns its values."""
    assert isinstance(seen, TensorSeen), f"return the {name} as a tensor"
    assert seen.cls in ("Tensor", "Parameter"), (
        f"the {name} should be a torch.Tensor, not the subclass {seen.cls}."
    )
    assert seen.is_on(device), (
        f"the {name} is on {seen.device}, the inputs on {device}. " + explain("wrong-device")
    )
    assert seen.dtype == dtype, (
        f"keep the inputs' dtype ({str(dtype).removeprefix('torch.')} here); "
        f"the {name} is {seen.dtype}. " + explain("wrong-dtype")
    )
    return seen.values


def _leaf(seen, name):
    """assert_is_leaf on what the probe saw."""
    assert isinstance(seen, TensorSeen), f"{name} should be a tensor, got {seen!r}."
    assert seen.cls in ("Tensor", "Parameter"), (
        f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
    )
    assert seen.is_leaf, f"{name} is not a leaf: it has grad_fn=<{seen.grad_fn}>. " + explain(
        "not-a-leaf"
    )
    assert seen.requires_grad, f"{name} does not require grad. " + explain("no-requires-grad")


def judge(seen, case):
    """Loss, w.grad and x.grad against the hand derivation; the centred h; w unchanged; on a GPU stand-in."""
    x, w = case["x"], case["w"]
    h = x @ w
    grad_h = 2 * h / h.numel()  # d mean(h²) / dh
    loss, centred = (h**2).mean(), h - h.mean(dim=0)
    atol = 1e-5 if x.dtype == torch.float32 and not case["visible"] else 1e-6
    assert "cpu" in seen, "the tests saw no CPU run"
    for label, run in seen.items():
        device = label.split()[0]
        if device == "gpu":
            assert run["failure"] is None, run["failure"]
            _tensor_on(run["loss"], "loss", "gpu", x.dtype)
            _tensor_on(run["centred"], "centred h", "gpu", x.dtype)
            assert run["centred"].shape == tuple(centred.shape), (
                f"the centred h should have shape {tuple(centred.shape)}, "
                f"got {run['centred'].shape}"
            )
            continue
        seen_loss = _tensor_on(run["loss"], "loss", device, x.dtype)
        assert seen_loss.numel() == 1, f"the loss should be one number, got {seen_loss.tolist()}"
        if case["visible"]:
            assert abs(float(seen_loss) - float(loss)) < 1e-5, (
                f"the loss should be {float(loss):g}, got {float(seen_loss)}"
            )
        assert torch.allclose(seen_loss.reshape(()), loss, atol=1e-5), (
            "the loss should be computed from the original h = x @ w"
        )
        _grad_close(run["w_grad"], x.T @ grad_h, "w.grad", device, atol)
        seen_centred = _tensor_on(run["centred"], "centred h", device, x.dtype)
        if case["visible"]:
            assert seen_centred.shape == centred.shape and torch.allclose(seen_centred, centred), (
                f"the centred activations should be {centred.tolist()}, got {seen_centred.tolist()}"
            )
        assert seen_centred.shape == centred.shape and torch.allclose(
            seen_centred, centred, atol=atol
        ), "the second value should be h - h.mean(dim=0)"
        assert torch.equal(run["w"].values, w), "w itself should not change"
        assert_inputs_left_alone(run["inputs_changed"], "loss_and_centred(x, w)")
        _leaf(run["w"], "w")
        if label.endswith("x_leaf"):  # x requires grad too: its gradient uses the original h
            _grad_close(run["x_grad"], grad_h @ w.T, "x.grad", device, atol)


### END JUDGE
probe_and_judge("q2", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ### What the GPU stand-in catches
#
# The tests of Exercise 2 run your function through `on_gpu`: its tensor arguments are moved to the course's stand-in for a GPU, a device named `gpu` whose tensors keep their values on the CPU and refuse to be mixed with CPU tensors where CUDA refuses.
# It catches a device bug: a tensor built on the CPU whatever the input's device.
# Here the column means are summed into `torch.zeros(k)`, made without `device=`.
# On a CPU the values are right.
# On a GPU, `mean += row / n` adds a CUDA row into that CPU tensor, and the GPU refuses (this cell shows it when a GPU is present).
# On the stand-in it fails on any machine:


# %%
def centred_rebuilt(h: torch.Tensor) -> torch.Tensor:
    """h - h.mean(dim=0), with the means summed into a tensor built on the CPU: a device bug."""
    mean = torch.zeros(h.shape[1])  # no device=: on the CPU whatever h's device
    for row in h:
        mean += row / h.shape[0]
    return h - mean


h = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
print("on the CPU:", centred_rebuilt(h).tolist())  # right
assert torch.equal(centred_rebuilt(h), h - h.mean(dim=0))
for device in devices():
    if device.type == "cuda":
        with expect_error(RuntimeError, match="same device"):
            centred_rebuilt(h.to(device))
with expect_error(AssertionError, match="failed when its inputs were on a GPU"):
    on_gpu(centred_rebuilt, h)
print("on the GPU stand-in:", on_gpu(lambda h: h - h.mean(dim=0), h))  # device-following: fine

# %% [markdown]
# ## 8. Initialising a parameter: `torch.no_grad()`, not `.data`
#
# A parameter that is not frozen is a leaf that requires grad, so `w.normal_()` is refused (section 3, in part 1).

# %%
w = nn.Parameter(torch.empty(2, 3))
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    w.normal_()

# %% [markdown]
# Older posts work around it with `w.data = w.data.normal()`.
# That line is a typo (there is no `Tensor.normal`, only the in-place `normal_`), and `.data` is the legacy way.

# %%
with expect_error(AttributeError, match="has no attribute 'normal'"):
    w.data = w.data.normal()

# %% [markdown]
# The current way: write under `torch.no_grad()`.
# Autograd records nothing inside the block, so the write is allowed; `w` stays the same leaf object and still requires grad.
# Unlike a `.data` write, it bumps the version counter.

# %%
w = nn.Parameter(torch.empty(2, 3))
before = w  # keep a reference, to check it is the same object afterwards
with torch.no_grad():
    w.normal_()
print(f"same object: {w is before} | is_leaf: {w.is_leaf} | requires_grad: {w.requires_grad}")
print(f"version: 0 -> {w._version}")
assert w is before and w.is_leaf and w.requires_grad and w._version == 1

# %% [markdown]
# `nn.init` does exactly this: `nn.init.normal_`, like its other in-place functions, wraps the op in `torch.no_grad()`.
# Here is the source of the function behind `nn.init.normal_`, from the installed torch:

# %%
source = inspect.getsource(nn.init._no_grad_normal_)
print(source)
assert "with torch.no_grad():" in source and "tensor.normal_(" in source

w = nn.Parameter(torch.empty(2, 3))
nn.init.normal_(w)
print("after nn.init.normal_: is_leaf", w.is_leaf, "| version", w._version)
assert w.is_leaf and w._version == 1

# %% [markdown]
# A built-in optimiser's `step()` updates the parameters in place the same way: by default (`differentiable=False`) it turns grad mode off while it writes, as `torch.no_grad()` does.
# `WatchWrites(w)`, a helper of this course, shows it: inside its block it notes each torch call that moved `w`'s counter, with `torch.is_grad_enabled()` at that moment.
# By hand, `d sum(w²) / dw = 2w = [2, 2]`, so one SGD step with `lr = 0.1` gives `1 - 0.1 · 2 = 0.8`.

# %%
w = nn.Parameter(torch.ones(2))
(w**2).sum().backward()
optimizer = torch.optim.SGD([w], lr=0.1)
with WatchWrites(w) as watch:
    optimizer.step()
print("writes inside step():", watch.writes)
print("grad mode after step():", torch.is_grad_enabled())
print(w, "| is_leaf:", w.is_leaf, "| version:", w._version)
assert [write.grad_enabled for write in watch.writes] == [False] and torch.is_grad_enabled()
assert torch.allclose(w.detach(), torch.full((2,), 0.8)) and w.is_leaf and w._version == 1

# %% [markdown]
# Why the counter matters: the same write made *after* `w` was used.
# Under `no_grad` autograd sees it and refuses to compute a wrong gradient; through `.data` it cannot see it, and you get a wrong gradient with no error.
# (An older post says that such a late write raises an error: only the first one does.)
# `diagnose` sees exactly what the counter sees: the first write, not the second.
# By hand, `d sum(w²) / dw = 2w` with the values the forward pass used: `[2, 2]` for `w = [1, 1]`.

# %%
w = nn.Parameter(torch.ones(2))
squares = w**2  # PowBackward0 saves w
loss = squares.sum()
with torch.no_grad():
    w.mul_(10)  # seen: version 0 -> 1
assert diagnose(loss).findings[0].node == squares.grad_fn.name()
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    loss.backward()

w = nn.Parameter(torch.ones(2))
loss = (w**2).sum()
w.data.mul_(10)  # not seen: version stays 0
assert not diagnose(loss)
loss.backward()
print("w.grad:", w.grad, "<- wrong: the values the forward pass used give [2, 2]")
assert torch.equal(w.grad, torch.tensor([20.0, 20.0]))

# %% [markdown]
# ### The counter counts writes, not which write
#
# A version that went up does not prove that autograd saw the write you care about.
# Here a seen write moves the counter to 1, then a `.data` write puts other values in: the version still says 1.

# %%
w = nn.Parameter(torch.ones(2))
with torch.no_grad():
    w.zero_()  # seen: version 0 -> 1
w.data.fill_(5.0)  # hidden: the values change, the version stays 1
print(w, "| version:", w._version)
assert w._version == 1 and w.tolist() == [5.0, 5.0]

# %% [markdown]
# `WatchWrites` tells the two apart, and the tests of Exercise 3 use it.
# After each call that moved `w`'s counter it also copies `w`'s values, into `watch.seen`: what autograd last saw.
# If `w` ends with other values, the last write was hidden, and `watch.last_write_seen()` says False.

# %%
w = nn.Parameter(torch.ones(2))
with WatchWrites(w) as watch:
    with torch.no_grad():
        w.zero_()
    w.data.fill_(5.0)
print("version:", w._version, "| last seen values:", watch.seen, "| now:", w.detach())
assert w._version == 1 and not watch.last_write_seen()

w = nn.Parameter(torch.ones(2))
with WatchWrites(w) as watch, torch.no_grad():
    w.fill_(5.0)
print("a write under no_grad: last write seen:", watch.last_write_seen())
assert watch.last_write_seen()

# %% [markdown]
# ### Exercise 3 — initialise a parameter in place (3 points)
#
# Write `init_scaled_identity_(weight, scale)`: overwrite the existing 2-D parameter `weight` with `scale` times the identity (ones on the main diagonal, as `torch.eye(rows, cols)` gives), and return it.
# For a (2, 3) weight and `scale = 0.5` the result is `[[0.5, 0, 0], [0, 0.5, 0]]`.
# It must stay the same object (an optimiser holds a reference to it), in the same memory, a leaf that requires grad, and autograd must see the write that leaves the final values: the tests watch your function with `WatchWrites`, so a `.data` or numpy write fails, even after a write autograd saw.
# Your function must follow `weight`'s device: the tests also run it on a parameter on the GPU stand-in.


# %% nbgrader={"grade_id": "q3-answer", "solution": true}
def init_scaled_identity_(weight: nn.Parameter, scale: float) -> nn.Parameter:
    """Overwrites weight in place with scale * identity and returns the same object.

    Args:
        weight: A 2-D parameter, shape (rows, cols).
        scale: The value on the main diagonal.

    Returns:
        weight itself, now holding scale * torch.eye(rows, cols).
    """
    ### BEGIN SOLUTION
    with torch.no_grad():
        nn.init.eye_(weight)
        weight.mul_(scale)
    return weight
    ### END SOLUTION


# %% nbgrader={"grade_id": "q3-tests", "grade": true, "locked": true, "points": 3}
"""Checks init_scaled_identity_: values, same leaf object and memory, last write seen, device."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def watched_init(weight: nn.Parameter, scale: float) -> nn.Parameter:
    """Calls init_scaled_identity_ under WatchWrites; checks what autograd saw."""
    version, pointer = weight._version, weight.data_ptr()
    with WatchWrites(weight) as watch:
        result = init_scaled_identity_(weight, scale)
    assert result is weight, "return the same Parameter object, do not make a new one"
    assert weight.data_ptr() == pointer, "write into weight's memory; do not assign .data"
    assert_is_leaf(weight, name="weight")
    assert_version(weight, version + 1, name="weight")
    assert watch.last_write_seen(), (
        "autograd did not see the write that left weight's final values (.data or numpy?): "
        "write under torch.no_grad() instead"
    )
    return result


for device in devices():
    weight = nn.Parameter(torch.full((2, 3), 7.0, device=device))
    watched_init(weight, 0.5)
    expected = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.5, 0.0]], device=device)
    assert torch.equal(weight.detach(), expected), f"weight should be {expected.tolist()}"
weight_on_gpu = on_gpu(
    watched_init, nn.Parameter(torch.full((2, 3), 7.0)), 0.5, name="init_scaled_identity_"
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible example, then random weights, scales and inputs; float32 and float64."""
    cases = [{"start": torch.full((2, 3), 7.0), "scale": 0.5, "visible": True}]
    for rows, cols, dtype in [
        (3, 3, torch.float32), (4, 2, torch.float32), (1, 5, torch.float32), (2, 4, torch.float64)
    ]:  # fmt: skip
        scale = float(torch.rand(1, generator=rng)) + 0.5
        start = torch.randn(rows, cols, generator=rng, dtype=dtype)
        cases.append({"start": start, "scale": scale, "visible": False})
    for case in cases:  # the input of a forward and backward pass after the init
        rows, cols = case["start"].shape
        case["x"] = torch.randn(5, cols, generator=rng, dtype=case["start"].dtype)
    return cases


def watch_init(weight, scale, seen):
    """Calls init_scaled_identity_ under WatchWrites; puts what it saw in seen."""
    version, pointer = weight._version, weight.data_ptr()
    with WatchWrites(weight) as watch:
        result = init_scaled_identity_(weight, scale)
    seen.update(
        same_object=result is weight,
        same_memory=weight.data_ptr() == pointer,
        start_version=version,
        version=weight._version,
        weight=weight,
        last_write_seen=watch.last_write_seen(),
        grad_is_none=weight.grad is None,
    )
    return result


def observe(case):
    """On every device: the init, then loss = sum((x @ weight.T) ** 2) / 2 backward; on a GPU stand-in."""
    seen = {}
    for device in devices():
        weight = nn.Parameter(case["start"].to(device, copy=True))
        run = seen[device.type] = {}
        watch_init(weight, case["scale"], run)
        y = case["x"].to(device) @ weight.T
        try:
            (y**2).sum().div(2).backward()
            run["backward_error"] = None
        except RuntimeError as error:
            run["backward_error"] = str(error).strip().splitlines()[0][:160]
        run["grad"] = weight.grad
    on_gpu_run = seen["gpu"] = {}

    def watch_init_on_gpu(weight, scale):
        return watch_init(weight, scale, on_gpu_run)

    try:
        on_gpu(
            watch_init_on_gpu,
            nn.Parameter(case["start"].clone()),
            case["scale"],
            name="init_scaled_identity_",
        )
        on_gpu_run["failure"] = None
    except AssertionError as error:
        on_gpu_run["failure"] = str(error)
    return seen


### BEGIN JUDGE
def _grad_close(seen, expected, name, device, atol):
    """assert_grad_close on what the probe saw: its class and device, then its values."""
    if seen is not None:
        assert isinstance(seen, TensorSeen), f"{name} should be a tensor, got {seen!r}."
        assert seen.cls in ("Tensor", "Parameter"), (
            f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
        )
        assert seen.is_on(device), f"{name} is on {seen.device}, expected it on {device}."
        assert seen.values is not None, f"{name}: its values could not be read ({seen.dtype})"
        seen = seen.values
    assert_grad_close(seen, expected, name=name, atol=atol)


def _watched(run):
    """What watched_init asserts, on what the probe saw: same object and memory, a seen write."""
    assert run["same_object"], "return the same Parameter object, do not make a new one"
    assert run["same_memory"], "write into weight's memory; do not assign .data"
    weight = run["weight"]
    assert weight.cls in ("Tensor", "Parameter"), (
        f"weight should be a torch.Tensor (or an nn.Parameter), not the subclass {weight.cls}."
    )
    assert weight.is_leaf, f"weight is not a leaf: it has grad_fn=<{weight.grad_fn}>. " + explain(
        "not-a-leaf"
    )
    assert weight.requires_grad, "weight does not require grad. " + explain("no-requires-grad")
    at_least = run["start_version"] + 1
    assert run["version"] >= at_least, (
        f"weight._version is {run['version']}, expected at least {at_least}: "
        "autograd did not see the write. " + explain("hidden-write")
    )
    assert run["last_write_seen"], (
        "autograd did not see the write that left weight's final values (.data or numpy?): "
        "write under torch.no_grad() instead"
    )


def judge(seen, case):
    """The watched init on every device and on a GPU stand-in; the values; a backward pass afterwards."""
    rows, cols = case["start"].shape
    scale, x = case["scale"], case["x"]
    eye = torch.eye(rows, cols, dtype=x.dtype)
    y = x @ (scale * eye).T
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            if "weight" in run:  # the answer returned: watched_init's checks come first
                _watched(run)
            assert run["failure"] is None, run["failure"]
            continue
        _watched(run)
        values = run["weight"].values
        if case["visible"]:
            assert torch.equal(values, scale * eye), f"weight should be {(scale * eye).tolist()}"
        assert torch.allclose(values, scale * eye), (
            f"weight should be {scale} * torch.eye({rows}, {cols})"
        )
        assert run["grad_is_none"], "initialising should not fill weight.grad"
        assert run["backward_error"] is None, (
            f"backward() through weight raised after the init: {run['backward_error']}"
        )
        _grad_close(run["grad"], y.T @ x, "weight.grad", device, atol=1e-5)


### END JUDGE
probe_and_judge("q3", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 9. Anomaly mode names the forward line
#
# A version error is raised in the backward pass, far from the line that caused it.
# `torch.autograd.detect_anomaly()` records the forward traceback of every op; when backward fails, it warns with the traceback of the forward op whose backward failed.
# It slows everything down (its own first warning says so): use it to debug, never to train.
# `expect_warning` records the warnings of its block and, when the block ends, prints them, shortened to their first line and the end of the traceback.
# So here the warning comes below the error, whose hint says "further above": without `expect_warning` the full warning prints first, on its own.

# %%
x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)

with (
    expect_warning(
        UserWarning, match="Anomaly Detection has been enabled|Error detected"
    ) as caught,
    torch.autograd.detect_anomaly(),
):
    d = x @ w1
    f = d @ w2
    d[:] = 0
    with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
        f.backward()

messages = [str(warning.message) for warning in caught]
assert any("slow" in message or "increase the runtime" in message for message in messages)
assert any(f"Error detected in {f.grad_fn.name()}" in message for message in messages)
assert any("f = d @ w2" in message for message in messages)  # the forward line

# %% [markdown]
# The warning names `MvBackward0`, the backward of `f = d @ w2`, and points to that line: the op that saved `d`.
# The culprit is a write to one of its saved tensors made after that line (here `d[:] = 0`), and the warning does not say which write.
#
# `diagnose(f)` (section 4, in part 1) says more, before `backward()` is called: besides the node, the saved tensor (`self`, that is `d`), its two versions, and, under `track_inplace()`, the line of the write.
# `draw(f)` shows the same in red.

# %% nbgrader={"grade_id": "demo-track-inplace", "locked": true} tags=["grading-skip"]
with track_inplace() as log:
    d = x @ w1
    f = d @ w2
    d[:] = 0
[finding] = diagnose(f, names={"d": d}).findings
[write] = log.writes
print(
    f"{finding.node} saved `{finding.saved}` ({finding.name}) at version "
    f"{finding.saved_version}, now {finding.current_version}, written by `{write.code}`"
)
assert (finding.node, finding.saved, finding.name) == (f.grad_fn.name(), "self", "d")
assert (finding.saved_version, finding.current_version) == (0, 1)
assert write.code == "d[:] = 0"
draw(f, names={"d": d, "f": f}, writes=log)  # the saved d in red, with the line of the write

# %% [markdown]
# Anomaly mode checks every gradient for NaN by reading its values (notebook 06b, section 7, shows it finding one).
# The GPU stand-in's tensors have values (section 7, after Exercise 2), so a `detect_anomaly()` left in an answer runs there as on a GPU:


# %%
def debugged_mean_square(h: torch.Tensor) -> torch.Tensor:
    """d mean(h**2) / dh, computed with anomaly mode on (as while debugging)."""
    with torch.autograd.detect_anomaly():
        h = h.detach().requires_grad_(True)
        (h**2).mean().backward()
    return h.grad


with expect_warning(UserWarning, match="Anomaly Detection has been enabled"):
    print("on the GPU stand-in:", on_gpu(debugged_mean_square, torch.ones(2)))

# %% [markdown]
# ## 10. Backward twice
#
# `backward()` frees the saved tensors once it has used them, to save memory (unless it is called with `retain_graph=True` or `create_graph=True`).
# A second `backward()` through the same graph fails if the graph saved something: it finds the saved tensors gone.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()  # SigmoidBackward0 saves out
out.sum().backward()
with expect_error(RuntimeError, match="Trying to backward through the graph a second time"):
    out.sum().backward()

# %% [markdown]
# A graph that saved nothing has nothing to free: `(v + 1).sum()` backpropagates twice without error, and the two gradients add up in `v.grad` (more on that below).

# %%
v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
total = (v + 1).sum()
nodes = [total.grad_fn.name(), total.grad_fn.next_functions[0][0].name()]
print("nodes:", nodes)  # neither saves a tensor (the table of section 5, in part 1)
total.backward()
total.backward()  # no error
print("v.grad after two backward() calls:", v.grad)
assert [node.split("Backward")[0] for node in nodes] == ["Sum", "Add"]
assert torch.equal(v.grad, torch.full((3,), 2.0))

# %% [markdown]
# The drawing of the sigmoid graph shows its freed saved tensor in grey.

# %%
draw(out, names={"a": a, "out": out})

# %% [markdown]
# `retain_graph=True` keeps them for another pass.
# Note that the gradients of the two passes *add up* in `a.grad`: by hand `d sigmoid(a) / da = σ(a)(1 - σ(a))`, and `a.grad` holds twice that.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
out.sum().backward(retain_graph=True)
out.sum().backward()
by_hand = a.detach().sigmoid() * (1 - a.detach().sigmoid())
print("a.grad:", a.grad, "| 2 σ(a)(1 - σ(a)):", 2 * by_hand)
assert torch.allclose(a.grad, 2 * by_hand)

# %% [markdown]
# Usually the better fix is to rebuild the graph: one forward pass per backward pass, as a training loop does.
# Keeping a graph alive keeps its saved tensors in memory.
# And when you do need two gradients from one graph, reset `.grad` between the passes (or use `torch.autograd.grad`, which returns the gradients without touching `.grad`).
# Careful: `w.grad.zero_()` is itself an in-place write, to the very tensor you may have kept a reference to.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
a.sigmoid().sum().backward()
first = a.grad  # a reference, not a copy
a.grad.zero_()  # zeroes `first` too
(a * a).sum().backward()  # a second loss: its gradient 2a goes into the same tensor
print("first is a.grad:", first is a.grad, "| first:", first, "<- 2a, not σ(a)(1 - σ(a))")
assert first is a.grad and torch.equal(first, 2 * a.detach())

(first,) = torch.autograd.grad(a.sigmoid().sum(), a)  # a new tensor; a.grad untouched
print("autograd.grad:", first, "| a.grad still:", a.grad)
assert torch.allclose(first, by_hand) and torch.equal(a.grad, 2 * a.detach())

# %% [markdown]
# ### Exercise 4 — two gradients from one forward pass (2 points)
#
# Write `two_gradients(layer, x)`: run the forward pass `h = layer(x)` once, and return the gradients with respect to the parameter `layer.weight` of `h.sum()` and of `(h ** 2).sum()`, as two separate tensors.
# `layer` is any module with a parameter `weight`.
# The example is `TanhLayer` below, `h = tanh(x @ weight)`; the tests also use other layers (an `nn.Linear`, for one), so let autograd compute the gradients.
# The tests count the forward passes your function computes, on `layer` or on anything else holding its weight (a copy of `layer` counts too): one, as the title says.
# By hand, for `TanhLayer`, with `s = 1 - h²`: the first gradient is `xᵀ · s`, the second `xᵀ · (2h · s)`.
# For `x = [[1, 2]]` and `weight = [[0.5], [0]]`: `h = tanh(0.5) ≈ 0.4621`, the first gradient is `≈ [[0.7864], [1.5729]]` and the second `≈ [[0.7269], [1.4537]]`.
# For an `nn.Linear(2, 1)`, `h = x @ weightᵀ + bias`: the first gradient is `1ᵀ · x`, the second `2hᵀ · x`; with `weight = [[0.5, 0]]`, `bias = [0.5]` and the same `x`, `h = 1`, and the gradients are `[[1, 2]]` and `[[2, 4]]`.
# Each gradient has `layer.weight`'s dtype: the tests also use float64 layers.
# Leave `layer` (its parameters and buffers) and `x` unchanged, and follow their device: the tests also run your function on the GPU stand-in.
# Watch out for the two traps of section 10: the freed graph, and gradients that add up.


# %%
class TanhLayer(nn.Module):
    """h = tanh(x @ weight), with weight a parameter of shape (m, k)."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.weight)


layer = TanhLayer(torch.tensor([[0.5], [0.0]]))
h = layer(torch.tensor([[1.0, 2.0]]))
print("h:", h, "| tanh(0.5):", torch.tanh(torch.tensor(0.5)).item())
assert torch.allclose(h, torch.tanh(torch.tensor([[0.5]])))


# %% nbgrader={"grade_id": "q4-answer", "solution": true}
def two_gradients(layer: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns d h.sum() / d layer.weight and d (h**2).sum() / d layer.weight, h = layer(x).

    Args:
        layer: A module with a parameter ``weight``; call it once.
        x: Its input.

    Returns:
        The two gradients, each of layer.weight's shape, as separate tensors.
    """
    ### BEGIN SOLUTION
    h = layer(x)
    (first,) = torch.autograd.grad(h.sum(), layer.weight, retain_graph=True)
    (second,) = torch.autograd.grad((h**2).sum(), layer.weight)
    return first, second
    ### END SOLUTION


# %% nbgrader={"grade_id": "q4-tests", "grade": true, "locked": true, "points": 2}
"""Checks two_gradients: one forward pass (counted), the gradients, on every device and on a GPU stand-in.

Visible: the TanhLayer example, and the nn.Linear example in float64; layer and x left as they
were. Hidden: random TanhLayers and nn.Linear layers.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def counted_two_gradients(layer: nn.Module, x: torch.Tensor):
    """Calls two_gradients; returns its result and the forward passes it computed."""
    with CountForwardProducts(layer.weight) as passes:
        result = two_gradients(layer, x)
    return result, passes.count


def check_two_gradients(layer: nn.Module, x: torch.Tensor, expected_first, expected_second):
    """Calls two_gradients once: one forward pass, layer and x unchanged, both gradients."""
    kept = KeptInputs(layer=layer, x=x)
    (first, second), calls = counted_two_gradients(layer, x)
    check_one_forward(calls)
    assert_inputs_left_alone(kept.changes(), "two_gradients(layer, x)")
    assert_grad_close(first, expected_first, name="first")
    assert_grad_close(second, expected_second, name="second")
    assert first.dtype == second.dtype == layer.weight.dtype, "keep layer.weight's dtype"


def check_one_forward(calls: int) -> None:
    assert calls == 1, f"{calls} forward passes were computed; run h = layer(x) once"


for device in devices():
    x = torch.tensor([[1.0, 2.0]], device=device)
    layer = TanhLayer(torch.tensor([[0.5], [0.0]], device=device))
    s = 1 - torch.tanh(torch.tensor(0.5)) ** 2
    h = torch.tanh(torch.tensor(0.5))
    column = torch.tensor([[1.0], [2.0]], device=device)
    check_two_gradients(layer, x, column * s, column * 2 * h * s)
    # nn.Linear(2, 1) in float64: h = x @ weight.T + bias = 1, so 1ᵀ x and 2 hᵀ x.
    x = torch.tensor([[1.0, 2.0]], device=device, dtype=torch.float64)
    layer = nn.Linear(2, 1, device=device, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.5, 0.0]]))
        layer.bias.fill_(0.5)
    row = torch.tensor([[1.0, 2.0]], device=device, dtype=torch.float64)
    check_two_gradients(layer, x, row, 2 * row)
gradients_on_gpu = on_gpu(two_gradients, TanhLayer(torch.ones(2, 1)), torch.ones(1, 2))


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible examples, random TanhLayers, then nn.Linear layers in float64 and float32."""
    cases = [
        {"layer": "tanh", "x": torch.tensor([[1.0, 2.0]]), "weight": torch.tensor([[0.5], [0.0]]),
         "visible": True},
        {"layer": "tanh", "x": torch.ones(1, 2), "weight": torch.ones(2, 1), "visible": True},
        {"layer": "linear", "x": torch.tensor([[1.0, 2.0]], dtype=torch.float64),
         "weight": torch.tensor([[0.5, 0.0]], dtype=torch.float64),
         "bias": torch.tensor([0.5], dtype=torch.float64), "visible": True},
    ]  # fmt: skip
    for n, m, k in [(3, 4, 2), (5, 2, 3)]:
        x = torch.randn(n, m, generator=rng)
        weight = torch.randn(m, k, generator=rng) / 2
        cases.append({"layer": "tanh", "x": x, "weight": weight, "visible": False})
    # Another layer: h = x @ weight.T + bias, so d h.sum() / d weight = 1ᵀ x and
    # d (h**2).sum() / d weight = 2 hᵀ x. In float64 too, to check the dtype.
    for n, m, k, dtype in [
        (4, 3, 2, torch.float64),
        (2, 5, 5, torch.float64),
        (4, 3, 2, torch.float32),
    ]:
        weight = torch.randn(k, m, generator=rng, dtype=dtype)
        bias = torch.randn(k, generator=rng, dtype=dtype)
        x = torch.randn(n, m, generator=rng, dtype=dtype)
        cases.append({"layer": "linear", "x": x, "weight": weight, "bias": bias, "visible": False})
    return cases


def build_layer(case, device):
    """The case's layer on device: a TanhLayer or an nn.Linear."""
    if case["layer"] == "tanh":
        return TanhLayer(case["weight"].to(device, copy=True))
    k, m = case["weight"].shape
    layer = nn.Linear(m, k, dtype=case["weight"].dtype, device=device)
    with torch.no_grad():  # the case's values, not the global random state
        layer.weight.copy_(case["weight"])
        layer.bias.copy_(case["bias"])
    return layer


def observe(case):
    """On every device: the two gradients, forward passes counted, layer.weight after; on a GPU stand-in."""
    seen = {}
    for device in devices():
        layer, x = build_layer(case, device), case["x"].to(device, copy=True)
        kept = KeptInputs(layer=layer, x=x)
        (first, second), calls = counted_two_gradients(layer, x)
        seen[device.type] = {
            "first": first,
            "second": second,
            "same_tensor": first is second,
            "forward_calls": calls,
            "weight": layer.weight,
            "inputs_changed": kept.changes(),
        }
    try:
        first, second = on_gpu(two_gradients, build_layer(case, "cpu"), case["x"])
        seen["gpu"] = {"failure": None, "first": first, "second": second}
    except AssertionError as error:
        seen["gpu"] = {"failure": str(error)}
    return seen


### BEGIN JUDGE
def _grad_close(seen, expected, name, device, atol):
    """assert_grad_close on what the probe saw: its class and device, then its values."""
    if seen is not None:
        assert isinstance(seen, TensorSeen), f"{name} should be a tensor, got {seen!r}."
        assert seen.cls in ("Tensor", "Parameter"), (
            f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
        )
        assert seen.is_on(device), f"{name} is on {seen.device}, expected it on {device}."
        assert seen.values is not None, f"{name}: its values could not be read ({seen.dtype})"
        seen = seen.values
    assert_grad_close(seen, expected, name=name, atol=atol)


def _leaf(seen, name):
    """assert_is_leaf on what the probe saw."""
    assert isinstance(seen, TensorSeen), f"{name} should be a tensor, got {seen!r}."
    assert seen.cls in ("Tensor", "Parameter"), (
        f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
    )
    assert seen.is_leaf, f"{name} is not a leaf: it has grad_fn=<{seen.grad_fn}>. " + explain(
        "not-a-leaf"
    )
    assert seen.requires_grad, f"{name} does not require grad. " + explain("no-requires-grad")


def _gradients(case):
    """d h.sum() / d weight and d (h**2).sum() / d weight, derived by hand for the case's layer."""
    x, weight = case["x"], case["weight"]
    if case["layer"] == "tanh":  # h = tanh(x @ weight), s = 1 - h²
        h = torch.tanh(x @ weight)
        s = 1 - h**2
        return x.T @ s, x.T @ (2 * h * s)
    h = x @ weight.T + case["bias"]
    return torch.ones_like(h).T @ x, 2 * h.T @ x


def judge(seen, case):
    """One forward pass; both gradients; their dtype; two tensors; layer.weight unchanged; on a GPU stand-in."""
    first, second = _gradients(case)
    weight = case["weight"]
    atol = 1e-5 if weight.dtype == torch.float32 and not case["visible"] else 1e-6
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        calls = run["forward_calls"]
        assert calls == 1, f"{calls} forward passes were computed; run h = layer(x) once"
        _grad_close(run["first"], first, "first", device, atol)
        _grad_close(run["second"], second, "second", device, atol)
        assert run["first"].dtype == run["second"].dtype == weight.dtype, (
            "keep layer.weight's dtype"
        )
        assert not run["same_tensor"], "return two separate tensors"
        assert torch.equal(run["weight"].values, weight), "layer.weight should not change"
        assert_inputs_left_alone(run["inputs_changed"], "two_gradients(layer, x)")
        _leaf(run["weight"], "layer.weight")
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    for name in ("first", "second"):
        gradient = gpu[name]
        assert isinstance(gradient, TensorSeen) and gradient.shape == tuple(weight.shape), (
            f"on a GPU too, {name} should be a gradient of layer.weight's shape"
        )
        assert gradient.dtype == weight.dtype, "keep layer.weight's dtype"


### END JUDGE
probe_and_judge("q4", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Part 1 (`02a_version_counter`): `t._version` counts in-place writes, and a tensor some node saved for backward may not be written before a `backward()` that runs through that node.
# - An optimiser's `step()` may write to a leaf that requires grad, as a write under `torch.no_grad()` may: it turns grad mode off.
# - Writes through `.data` or numpy move no counter that autograd checks: `backward()` and `diagnose` both miss them, and the gradient is silently wrong.
# - Fixes: out of place, clone (or `allow_mutation_on_saved_tensors()`, which clones for you), reorder (write after backward, or before use if that is what you mean), and `torch.no_grad()` for parameters. Never `.data`.
# - `detect_anomaly()` points to the forward op that saved the tensor.
# - A second backward fails only through a graph that saved tensors; `retain_graph=True` keeps them, and gradients add up.
