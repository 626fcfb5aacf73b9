# %% [markdown]
# # 01b · Leaf tensors (part 2 of 2)
#
# This continues `01a_leaf_tensors` (sections 1–4: leaves and non-leaves, where `.grad` lands, an intermediate's gradient, and rebinding a Parameter's name).
# Sections and exercises keep their numbers, so this part starts at section 5 and Exercise 4.
#
# **What you will learn**
#
# - that a slice of a Parameter shares its memory, and how `clone()` copies it;
# - to finish a tensor first (shape, dtype, device) and wrap it in `nn.Parameter` last.
#
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.

# %% nbgrader={"grade_id": "setup", "locked": true}
import inspect
import warnings

import torch
from torch import nn

from autograd_pitfalls import (
    GPU,
    KeptInputs,
    TensorSeen,
    assert_grad_close,
    assert_inputs_left_alone,
    assert_is_leaf,
    compare,
    devices,
    draw,
    expect_error,
    expect_warning,
    explain,
    gpu_standin,
    on_gpu,
    probe_and_judge,
    reset_torch_settings,
)

print(f"torch {torch.__version__}")

# %% [markdown]
# ## 5. A slice of a Parameter is a view: it shares memory
#
# `v1[:4]` copies nothing.
# It is a *view*: a new tensor object that looks at the memory of `v1`.
# An operation made it (`SliceBackward0`), so it is not a leaf.

# %%
v1 = nn.Parameter(torch.arange(10.0))
a = v1[:4]
print(f"a: is_leaf={a.is_leaf}, grad_fn={a.grad_fn.name()}, a._base is v1: {a._base is v1}")
print(f"same memory: {a.data_ptr() == v1.data_ptr()}")
assert not a.is_leaf and a._base is v1 and a.data_ptr() == v1.data_ptr()

# %% [markdown]
# So writing into `a` writes into `v1`.
# Older posts show this with `a.data.copy_(...)`:

# %%
returned = a.data.copy_(torch.tensor([-1.0, -2.0, -3.0, -4.0]))
print(f"a.data.copy_ returned {returned}")
print(f"same memory as a: {returned.data_ptr() == a.data_ptr()}, grad_fn={returned.grad_fn}")
print(v1)
assert torch.equal(v1.detach()[:4], torch.tensor([-1.0, -2.0, -3.0, -4.0]))
assert returned.data_ptr() == a.data_ptr() and returned.grad_fn is None and v1._version == 0

# %% [markdown]
# The Parameter changed, and its version counter `_version` is still 0.
# A write through `.data` is hidden from autograd; notebooks 02a and 02b show why that matters.
# Older posts print `grad_fn=<SliceBackward0>` on the value that `a.data.copy_` returns.
# Here it returns a tensor on the same memory as `a` with no `grad_fn`: `a.data` itself.
#
# Without `.data`, autograd refuses the write while it is recording:

# %%
with expect_error(RuntimeError, match="view of a leaf Variable that requires grad"):
    a.copy_(torch.zeros(4))

# %% [markdown]
# `clone()` makes a copy with its own memory.
# The copy is still in the graph (`CloneBackward0`): gradients flow through it into the Parameter.
# The copy is not a leaf, so an in-place write to it is allowed, and it leaves `v2` alone.

# %% nbgrader={"grade_id": "demo-clone-graph", "locked": true} tags=["grading-skip"]
v2 = nn.Parameter(torch.arange(10.0))
b = v2[:4].clone()
b.add_(100)  # b = [100, 101, 102, 103]; v2 is untouched
print(f"b = {b}")
print(f"v2 = {v2}")
assert b.data_ptr() != v2.data_ptr() and torch.equal(v2.detach(), torch.arange(10.0))
loss = (b**2).sum()
draw(loss, names={"v2": v2, "b": b, "loss": loss})

# %% [markdown]
# From `loss` the arrows go through `PowBackward0`, `AddBackward0` (the in-place `add_`),
# `CloneBackward0` and `SliceBackward0`, down to the `AccumulateGrad` of `v2`.
# `PowBackward0` saved `b` after the `add_` (version 1), so `backward()` will accept it.
# By hand: $\partial\,\text{loss} / \partial v2_i = 2 b_i$ for $i < 4$, and $0$ elsewhere.
# So we expect $[200, 202, 204, 206, 0, \dots, 0]$.

# %%
v2 = nn.Parameter(torch.arange(10.0))  # the graph drawn above, afresh
b = v2[:4].clone()
b.add_(100)
loss = (b**2).sum()
loss.backward()
expected = torch.zeros(10)
expected[:4] = 2 * b.detach()
print(compare("v2.grad", v2.grad, expected))
assert torch.equal(v2.grad, expected)

# %% [markdown]
# `v2[:4].detach().clone()` (or `.data.clone()`) also has its own memory.
# But it has left the graph: no gradient can reach `v2` through it.

# %%
cut = v2[:4].detach().clone()
also_cut = v2[:4].data.clone()
for name, copy in {"cut": cut, "also_cut": also_cut}.items():
    print(f"{name}: requires_grad={copy.requires_grad}, grad_fn={copy.grad_fn}")
    assert not copy.requires_grad and copy.grad_fn is None
print("own memory:", cut.data_ptr() != v2.data_ptr(), also_cut.data_ptr() != v2.data_ptr())
assert cut.data_ptr() != v2.data_ptr() and also_cut.data_ptr() != v2.data_ptr()

# %% [markdown]
# ### Exercise 4 — zero the tail, keep the Parameter (3 points)
#
# Write `zero_tail(param, k)`.
# It returns a new tensor equal to the 1-D Parameter `param`, with every entry from index `k` on set to 0.
# It must
# (1) leave `param` unchanged, now and when someone later writes into the result,
# (2) stay connected to `param`: a loss computed from the result sends a gradient into `param.grad`,
# (3) live on `param`'s device, with `param`'s dtype.
# Leaving `param` unchanged includes its values, its `requires_grad` and its version counter: write only into tensors of your own.
#
# Example: for `param = nn.Parameter(torch.tensor([1., 2., 3., 4., 5.]))` and `k = 2`,
# the result holds `[1., 2., 0., 0., 0.]`.
# After `zero_tail(param, 2).sum().backward()`, `param.grad` is `[1., 1., 0., 0., 0.]`.
# Section 5 has every piece you need; think about which write is allowed, and on what.


# %% nbgrader={"grade_id": "q4-answer", "solution": true}
def zero_tail(param: nn.Parameter, k: int) -> torch.Tensor:
    """Returns a copy of param with the entries from index k on set to 0, in param's graph.

    Args:
        param: A 1-D Parameter; left unchanged.
        k: How many leading entries to keep (0 <= k <= len(param)).

    Returns:
        A tensor of param's shape, device and dtype, sharing no memory with param, equal to
        param on [:k] and 0 on [k:], through which gradients reach param.
    """
    ### BEGIN SOLUTION
    copy = param.clone()  # own memory, still in the graph (CloneBackward0)
    copy[k:] = 0  # an in-place write to a non-leaf copy: allowed, and param is untouched
    return copy
    ### END SOLUTION


# %% nbgrader={"grade_id": "q4-tests", "grade": true, "locked": true, "points": 3}
"""Checks zero_tail on every device, on the example in float32 and float64.

The values; param unchanged (values, requires_grad, version), also after a write into the
result; the gradient that reaches param; the result on param's device (checked on a GPU
stand-in) and with param's dtype.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_zero_tail(param: nn.Parameter, k: int, weights: torch.Tensor) -> None:
    before = param.detach().clone()
    expected = before.clone()
    expected[k:] = 0
    kept = KeptInputs(param=param)
    result = zero_tail(param, k)
    assert_inputs_left_alone(kept.changes(), f"zero_tail(param, {k})")
    assert isinstance(result, torch.Tensor), f"return a tensor, not {type(result).__name__}"
    assert result.dtype == param.dtype, f"the result is {result.dtype}, param is {param.dtype}"
    assert result.shape == param.shape, (
        f"shape {tuple(result.shape)}, expected {tuple(param.shape)}"
    )
    assert torch.equal(result.detach(), expected), f"expected {expected.tolist()}"
    assert torch.equal(param.detach(), before), "param was modified"
    assert result.requires_grad and result.grad_fn is not None, (
        "the result has left the graph (no grad_fn), so no gradient can reach param: "
        ".detach(), .data and torch.no_grad() cut the graph; clone() keeps it."
    )
    (result * weights).sum().backward()
    expected_grad = weights.clone()
    expected_grad[k:] = 0  # d loss / d param_i = weights_i where kept, 0 where zeroed
    assert_grad_close(param.grad, expected_grad, name="param.grad")
    with torch.no_grad():
        zero_tail(param, k).fill_(123.0)  # someone writes into the result
    assert torch.equal(param.detach(), before), (
        "writing into the result changed param: it shares param's memory "
        "(a slice or a view); give it its own memory with clone()."
    )


for device in devices():
    for dtype in (torch.float32, torch.float64):
        param = nn.Parameter(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], device=device, dtype=dtype))
        _check_zero_tail(param, 2, torch.ones(5, device=device, dtype=dtype))
on_gpu(zero_tail, nn.Parameter(torch.ones(5)), 2, name="zero_tail(param, 2)")


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example in both dtypes, then random values (both dtypes), weights and k, k = 0 and
    k = len."""
    cases = [
        {"values": torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=dtype), "k": 2,
         "weights": torch.ones(5, dtype=dtype)}
        for dtype in (torch.float32, torch.float64)
    ]  # fmt: skip
    drawn_size = int(torch.randint(2, 12, (), generator=rng))
    drawn_k = int(torch.randint(0, drawn_size + 1, (), generator=rng))
    shapes = [(10, 4, torch.float32), (7, 1, torch.float64), (6, 6, torch.float32)]
    shapes.append((drawn_size, drawn_k, torch.float64))
    for size, k, dtype in shapes:
        values = torch.randn(size, generator=rng, dtype=dtype)
        weights = torch.randn(size, generator=rng, dtype=dtype)
        cases.append({"values": values, "k": k, "weights": weights})
    cases.append({"values": torch.randn(5, generator=rng), "k": 0, "weights": torch.ones(5)})
    return cases


def _first_line(error):
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:160]}"


def observe(case):
    """Calls zero_tail on every device: backpropagates, writes into a result; then on a GPU stand-in."""
    seen = {}
    k, weights = case["k"], case["weights"]
    for device in devices():
        param = nn.Parameter(case["values"].clone().to(device))
        kept = KeptInputs(param=param)
        result = zero_tail(param, k)
        run = {"result": result, "param_after_call": param.detach().clone()}
        run["inputs_changed"] = kept.changes()
        seen[device.type] = run
        if not isinstance(result, torch.Tensor):
            continue
        run["result_values"] = result.detach().clone()
        run["backward_error"] = run["write_error"] = None
        if result.requires_grad:
            try:
                (result * weights.to(device)).sum().backward()
            except Exception as error:
                run["backward_error"] = _first_line(error)
        run["grad"] = param.grad
        try:
            with torch.no_grad():
                zero_tail(param, k).fill_(123.0)  # someone writes into the result
        except Exception as error:
            run["write_error"] = _first_line(error)
        run["param_after_write"] = param.detach().clone()
    try:
        result = on_gpu(zero_tail, nn.Parameter(case["values"]), k, name=f"zero_tail(param, {k})")
        seen["gpu"] = {"failure": None, "result": result}
    except AssertionError as error:
        seen["gpu"] = {"failure": str(error), "result": None}
    return seen


### BEGIN JUDGE
def _assert_seen_grad(seen, expected, *, name, device) -> None:
    """assert_grad_close on what the probe saw: a plain tensor, on the run's device."""
    if isinstance(seen, TensorSeen):
        assert seen.cls in ("Tensor", "Parameter"), (
            f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
        )
        assert seen.is_on(device), f"{name} is on {seen.device}, expected it on {device}."
        seen = seen.values
    assert_grad_close(seen, expected, name=name)


def judge(seen, case):
    """Values; param unchanged, also after a write into the result; the gradient; device, dtype."""
    values, k = case["values"], case["k"]
    kept = values.clone()
    kept[k:] = 0
    weights = case["weights"].clone()
    weights[k:] = 0  # d loss / d param_i = weights_i where kept, 0 where zeroed
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        result = run["result"]
        assert isinstance(result, TensorSeen), (
            f"return a tensor, not {getattr(result, 'cls', type(result).__name__)}"
        )
        assert result.dtype == values.dtype, (
            f"the result is {result.dtype}, param is {values.dtype}"
        )
        assert result.shape == values.shape, (
            f"shape {tuple(result.shape)}, expected {tuple(values.shape)}"
        )
        assert result.is_on(device), (
            f"the result is on {result.device}, param on {device}. " + explain("wrong-device")
        )
        assert torch.equal(run["result_values"].values, kept), f"expected {kept.tolist()}"
        assert torch.equal(run["param_after_call"].values, values), "param was modified"
        assert_inputs_left_alone(run["inputs_changed"], f"zero_tail(param, {k})")
        assert result.requires_grad and result.grad_fn is not None, (
            "the result has left the graph (no grad_fn), so no gradient can reach param: "
            ".detach(), .data and torch.no_grad() cut the graph; clone() keeps it."
        )
        assert run["backward_error"] is None, f"backward() raised {run['backward_error']}"
        _assert_seen_grad(run["grad"], weights, name="param.grad", device=device)
        assert run["write_error"] is None, f"writing into the result raised {run['write_error']}"
        assert torch.equal(run["param_after_write"].values, values), (
            "writing into the result changed param: it shares param's memory "
            "(a slice or a view); give it its own memory with clone()."
        )
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    result = gpu["result"]
    assert isinstance(result, TensorSeen), "on a GPU, zero_tail should return a tensor"
    assert result.dtype == values.dtype and result.shape == values.shape, (
        f"on a GPU, zero_tail returned {result.dtype}, shape {tuple(result.shape)}; "
        f"param was {values.dtype}, shape {tuple(values.shape)}"
    )


### END JUDGE
probe_and_judge("q4", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Create, then wrap
#
# `nn.Parameter(...)` makes a leaf.
# An operation on it that makes a new tensor while grad mode records (a reshape, a new floating dtype or a device) returns a tensor that is not a leaf.
# That alone is harmless, as long as you keep a name on the Parameter:

# %%
torch.manual_seed(0)
t = nn.Parameter(torch.randn(12, 1))
T = t.view(3, 4)  # a view of the Parameter, made by an operation
T.sum().backward()
print(f"t: is_leaf={t.is_leaf}, grad shape={tuple(t.grad.shape)}, grad={t.grad.flatten()}")
print(f"T: is_leaf={T.is_leaf}, grad_fn={T.grad_fn.name()}")
assert t.is_leaf and torch.equal(t.grad, torch.ones(12, 1)) and not T.is_leaf

# %% [markdown]
# Older posts say this loses the gradient.
# It does not: `t` is still the leaf, and `backward()` filled `t.grad` through the view.
# What breaks is keeping only the view.
# Here the Parameter is made and reshaped on one line, so no name of yours points at it:

# %%
torch.manual_seed(0)
T = nn.Parameter(torch.randn(12, 1)).view(3, 4)
print(f"T: {type(T).__name__}, is_leaf={T.is_leaf}, grad_fn={T.grad_fn.name()}")
assert type(T) is torch.Tensor and not T.is_leaf
draw(T.sum(), names={"T": T})

# %% [markdown]
# The drawing shows a leaf labelled only `leaf` (none of your names points at it), of shape `(12, 1)`, below `ViewBackward0`.
# That Parameter does receive the gradient, but `T.grad` stays `None`.
# The gradient sits on the Parameter that the view `T` was made from, `T._base`.

# %%
T = nn.Parameter(torch.randn(12, 1)).view(3, 4)  # as above, afresh
T.sum().backward()
with expect_warning(UserWarning, match="not a leaf") as caught:
    t_grad = T.grad
print(f"T.grad = {t_grad}")
base = T._base
print(f"T._base: {type(base).__name__} {tuple(base.shape)}, grad = {base.grad.flatten()}")
assert t_grad is None and len(caught) == 1 and torch.equal(base.grad, torch.ones(12, 1))

# %% [markdown]
# `t = t.view(3, 4)` on two lines ends the same way: it rebinds the only name, as in section 4 (in `01a_leaf_tensors`).

# %%
t = nn.Parameter(torch.randn(12, 1))
t = t.view(3, 4)  # the name t now points at the view
print(f"t: {type(t).__name__}, is_leaf={t.is_leaf}, t._base: {type(t._base).__name__}")
assert type(t) is torch.Tensor and not t.is_leaf and isinstance(t._base, nn.Parameter)

# %% [markdown]
# In a module it is worse: the view stored as an attribute is a plain tensor,
# so the module registers nothing.
# The optimiser then has nothing to train:

# %%
layer = nn.Module()
layer.weight = nn.Parameter(torch.randn(12, 1)).view(3, 4)
print(f"registered parameters: {list(layer.parameters())}")
with expect_error(ValueError, match="empty parameter list"):
    torch.optim.SGD(layer.parameters(), lr=0.1)

# %% [markdown]
# The fix: finish the tensor first, wrap it last.

# %%
k = torch.randn(12, 1).view(3, 4)
kp = nn.Parameter(k)
kp.sum().backward()
layer = nn.Module()
layer.weight = kp
print(f"kp: is_leaf={kp.is_leaf}, grad={kp.grad}")
print(f"registered: {[name for name, _ in layer.named_parameters()]}")
assert kp.is_leaf and torch.equal(kp.grad, torch.ones(3, 4))
assert [name for name, _ in layer.named_parameters()] == ["weight"]

# %% [markdown]
# A new dtype or device after wrapping does the same.
# `.to()` returns the tensor itself when nothing changes: `p.to("cpu")` on a CPU Parameter is `p`.
# When it must copy (another floating dtype, another device) it returns a non-leaf.
# So `nn.Parameter(x).to(device)` gives a leaf when `device` is the CPU, and a non-leaf on a GPU.
# This machine may have no GPU, so we use the course's stand-in for one, `GPU`, to show it:
# a device named `gpu` whose tensors keep their values on the CPU and follow CUDA's rules on mixing devices; autograd treats it like any other device. On a machine with a GPU, `GPU` is that GPU (`cuda:0`), and the cell runs there.

# %%
p = nn.Parameter(torch.randn(3))
print(f"p.to('cpu') is p: {p.to('cpu') is p}")
p64 = p.to(torch.float64)
print(f"p.to(torch.float64): is_leaf={p64.is_leaf}, grad_fn={p64.grad_fn.name()}")
moved = nn.Parameter(torch.randn(3)).to(GPU)  # like .to("cuda") on a GPU machine
print(f"nn.Parameter(x).to(GPU): Parameter={isinstance(moved, nn.Parameter)}, ", end="")
print(f"is_leaf={moved.is_leaf}, grad_fn={moved.grad_fn.name()}, on {moved.device}")
assert p.to("cpu") is p and not p64.is_leaf and not moved.is_leaf
assert not isinstance(moved, nn.Parameter) and moved.grad_fn.name() == p64.grad_fn.name()

# %% [markdown]
# A module's own `.double()`, `.half()` or `.to(dtype)` is different: it keeps each Parameter.
# They go through `Module._apply`, which computes each new tensor under `torch.no_grad()`.
# Where the old and the new tensor are of compatible kinds, it then puts the new one into the same Parameter object through `param.data = ...`, the legacy attribute that swaps a tensor's memory without autograd (notebook 03b, section 6).
# So the Parameter stays the same leaf, and an optimiser made before the cast still holds it.
# Here are those lines of the installed torch, then the effect:

# %%
lines = [line.strip() for line in inspect.getsource(nn.Module._apply).splitlines()]
shown = ["with torch.no_grad():", "param_applied = fn(param)", "param.data = param_applied"]
print("\n".join(line for line in shown if line in lines))
assert all(line in lines for line in shown)

layer = nn.Linear(3, 2)
weight, memory = layer.weight, layer.weight.data_ptr()
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
layer.double()
print(f"same object: {layer.weight is weight}, {weight.dtype}, is_leaf={weight.is_leaf}")
print(f"new memory: {weight.data_ptr() != memory}")
print(f"the optimiser holds it: {optimizer.param_groups[0]['params'][0] is layer.weight}")
assert layer.weight is weight and weight.dtype == torch.float64 and weight.is_leaf
assert weight.data_ptr() != memory and optimizer.param_groups[0]["params"][0] is weight
half_layer, float64_layer = nn.Linear(3, 2), nn.Linear(3, 2)
half_weight, float64_weight = half_layer.weight, float64_layer.weight
half_layer.half()
float64_layer.to(torch.float64)
print(f"layer.half(): same object: {half_layer.weight is half_weight}, {half_weight.dtype}")
print(f"layer.to(torch.float64): same object: {float64_layer.weight is float64_weight}")
assert half_layer.weight is half_weight and half_weight.dtype == torch.float16
assert float64_layer.weight is float64_weight and float64_weight.dtype == torch.float64

# %% [markdown]
# For plain tensors (a tensor subclass can take another path), where the kinds are not compatible, or where you ask for it (`torch.__future__.set_overwrite_module_params_on_conversion(True)`), and the swap flag of notebook 06a, section 3, is off, `_apply` wraps the new tensor in a new Parameter instead.
# The module then gets a new leaf Parameter, and an optimiser made before still holds the old one, which training no longer reaches.
# Moving a module from the CPU to a GPU is not such a case: `layer.to("cuda")` keeps each Parameter object, and an optimiser made before the move still holds it.
# The cell's last lines show this where a GPU is present; on a machine without one they show the stand-in instead, the exception below.
# `nn.Module.cuda`'s own docstring says that moving makes the Parameters different objects (the cell prints its line from the installed torch); they stay the same objects all the same.
# The course's GPU stand-in is such a case, though: its tensors are a wrapper subclass on another device, which `param.data = ...` cannot take (the cell shows the refusal there), so there the module gets new Parameters.

# %%
layer = nn.Linear(3, 2)
weight = layer.weight
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
torch.__future__.set_overwrite_module_params_on_conversion(True)
try:
    layer.double()
finally:
    torch.__future__.set_overwrite_module_params_on_conversion(False)
held = optimizer.param_groups[0]["params"][0]
print(f"same object: {layer.weight is weight} | new Parameter: {layer.weight.dtype}")
print(f"the optimiser holds the old one: {held is weight}, {held.dtype}")
assert layer.weight is not weight and isinstance(layer.weight, nn.Parameter)
assert layer.weight.is_leaf and held is weight and held.dtype == torch.float32

docstring = " ".join(nn.Module.cuda.__doc__.split())
print("nn.Module.cuda:", docstring[docstring.index("This also") :].split(". ")[0] + ".")
assert "makes associated parameters and buffers different objects" in docstring
layer = nn.Linear(3, 2)
weight = layer.weight
layer.to(GPU)  # a real GPU where there is one, else the stand-in
print(f"layer.to({GPU}): same object: {layer.weight is weight}, on {layer.weight.device}")
assert (layer.weight is weight) == (GPU.type == "cuda")
if GPU.type != "cuda":  # the stand-in
    with expect_error(RuntimeError, match="incompatible tensor type"):
        nn.Parameter(torch.zeros(2)).data = torch.ones(2).to(GPU)

# %% [markdown]
# So cast the module first and build the optimiser after it: that order is right whatever `_apply` does.
# For a Parameter of your own, create the tensor on its device, with its dtype, then wrap:

# %%
right = nn.Parameter(torch.randn(3, dtype=torch.float64, device=GPU))
print(f"right: Parameter={isinstance(right, nn.Parameter)}, is_leaf={right.is_leaf}, ", end="")
print(f"{right.dtype}, {right.device}")
assert isinstance(right, nn.Parameter) and right.is_leaf

# %% [markdown]
# ### Exercise 5 — load a weight from a checkpoint (3 points)
#
# Write `weight_from_checkpoint(flat, rows, cols, device, dtype)`.
# A checkpoint gives you `flat`: a 1-D float32 tensor on the CPU with `rows * cols` values.
# Return the trainable weight: an `nn.Parameter` that is a leaf, of shape `(rows, cols)`
# (the values laid out row by row), on `device`, with `dtype`.
# Training the weight must not change the checkpoint: the Parameter has memory of its own.
# Leave `flat` as it was, too.
#
# Example: `weight_from_checkpoint(torch.arange(6.0), 2, 3, "cpu", torch.float64)`
# holds `[[0., 1., 2.], [3., 4., 5.]]` as float64.
# The test then computes `loss = (x @ W).sum()`.
# Its gradient, by hand, is `W.grad[i, j] = x[:, i].sum()`.


# %% nbgrader={"grade_id": "q5-answer", "solution": true}
def weight_from_checkpoint(
    flat: torch.Tensor,
    rows: int,
    cols: int,
    device: torch.device | str,
    dtype: torch.dtype,
) -> nn.Parameter:
    """Returns flat as a (rows, cols) leaf Parameter on device with dtype, sharing no memory.

    Args:
        flat: The checkpoint's values, shape (rows * cols,), float32 on the CPU; unchanged.
        rows: Number of rows.
        cols: Number of columns.
        device: Where the Parameter lives.
        dtype: The Parameter's dtype.

    Returns:
        The Parameter, a leaf that requires grad.
    """
    ### BEGIN SOLUTION
    values = flat.reshape(rows, cols).to(device=device, dtype=dtype, copy=True)  # finish first
    return nn.Parameter(values)  # wrap last
    ### END SOLUTION


# %% nbgrader={"grade_id": "q5-tests", "grade": true, "locked": true, "points": 3}
"""Checks weight_from_checkpoint on every device, and on a GPU stand-in.

A leaf nn.Parameter of the right shape, device, dtype and values, whose .grad backward()
fills, with memory of its own; flat left as it was.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_weight(flat, rows, cols, device, dtype, x) -> None:
    checkpoint = flat.clone()
    kept = KeptInputs(flat=flat)
    weight = weight_from_checkpoint(flat, rows, cols, device, dtype)
    assert_inputs_left_alone(kept.changes(), "weight_from_checkpoint(flat, ...)")
    assert_is_leaf(weight, name="weight_from_checkpoint(...)")
    assert isinstance(weight, nn.Parameter), f"return an nn.Parameter, not a {type(weight)}"
    assert weight.shape == (rows, cols), f"shape {tuple(weight.shape)}, expected {(rows, cols)}"
    assert weight.device.type == torch.device(device).type, f"the weight is on {weight.device}"
    assert weight.dtype == dtype, f"the weight is {weight.dtype}, expected {dtype}"
    expected = checkpoint.view(rows, cols).to(device, dtype)
    assert torch.equal(weight.detach(), expected), f"values {weight.tolist()}"
    (x.to(dtype) @ weight).sum().backward()
    # By hand: d/dW[i, j] of sum_{n, j} (x @ W)[n, j] is sum_n x[n, i].
    expected_grad = x.to(dtype).sum(0).unsqueeze(1).expand(rows, cols)
    assert_grad_close(weight.grad, expected_grad, name="weight.grad")
    with torch.no_grad():
        weight.add_(1.0)  # one optimiser step
    assert torch.equal(flat, checkpoint), (
        "training the weight changed the checkpoint: they share memory (.to() returns the "
        "tensor itself when nothing changes); copy it."
    )


generator = torch.Generator().manual_seed(5)
for device in devices():
    x = torch.randn(4, 2, generator=generator).to(device)
    _check_weight(torch.arange(6.0), 2, 3, device, torch.float64, x)
    _check_weight(torch.arange(6.0), 2, 3, device, torch.float32, x)
with gpu_standin():  # the course's stand-in for a GPU (device "gpu"), with values
    _check_weight(torch.arange(6.0), 2, 3, GPU, torch.float32, torch.randn(4, 2).to(GPU))


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example in both dtypes and on a GPU stand-in, then random checkpoints, shapes and inputs."""
    x = torch.randn(4, 2, generator=rng)
    cases = [
        {"flat": torch.arange(6.0), "rows": 2, "cols": 3, "dtype": dtype, "x": x, "gpu": False}
        for dtype in (torch.float64, torch.float32)
    ]
    cases.append(
        {"flat": torch.arange(6.0), "rows": 2, "cols": 3, "dtype": torch.float32, "x": x,
         "gpu": True}
    )  # fmt: skip
    drawn_rows, drawn_cols = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
    for rows, cols, dtype in [
        (3, 4, torch.float32),
        (1, 5, torch.float64),
        (5, 1, torch.float32),
        (drawn_rows, drawn_cols, torch.float64),
    ]:
        flat = torch.randn(rows * cols, generator=rng)
        x = torch.randn(3, rows, generator=rng)
        cases.append(
            {"flat": flat, "rows": rows, "cols": cols, "dtype": dtype, "x": x, "gpu": False}
        )
    for dtype in (torch.float32, torch.float64):
        flat = torch.randn(6, generator=rng)
        x = torch.randn(2, 3, generator=rng)
        cases.append({"flat": flat, "rows": 3, "cols": 2, "dtype": dtype, "x": x, "gpu": True})
    return cases


def _first_line(error):
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:160]}"


def observe(case):
    """Loads the weight on every device (or on a GPU stand-in), registers it, trains a step."""
    seen = {}
    places = [GPU] if case["gpu"] else devices()
    for device in places:
        flat = case["flat"].clone()
        kept = KeptInputs(flat=flat)
        with gpu_standin():
            weight = weight_from_checkpoint(flat, case["rows"], case["cols"], device, case["dtype"])
        run = {"weight": weight, "inputs_changed": kept.changes()}
        seen[device.type] = run
        if not isinstance(weight, torch.Tensor):
            continue
        module = nn.Module()
        module.weight = weight
        run["registered"] = [name for name, _ in module.named_parameters()]
        run["values"] = weight.detach().clone()
        run["backward_error"] = run["step_error"] = None
        try:
            (case["x"].to(device, case["dtype"]) @ weight).sum().backward()
        except Exception as error:
            run["backward_error"] = _first_line(error)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading .grad of a non-leaf warns
            run["grad"] = weight.grad
        try:
            with torch.no_grad():
                weight.add_(1.0)  # one optimiser step
        except Exception as error:
            run["step_error"] = _first_line(error)
        run["flat_after"] = flat
    return seen


### BEGIN JUDGE
def _assert_seen_leaf(seen, name) -> None:
    """assert_is_leaf on what the probe saw."""
    assert isinstance(seen, TensorSeen), (
        f"{name} should be a tensor, got {getattr(seen, 'cls', type(seen).__name__)}."
    )
    assert seen.cls in ("Tensor", "Parameter"), (
        f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
    )
    not_a_leaf = f"{name} is not a leaf: it has grad_fn=<{seen.grad_fn}>. "
    assert seen.is_leaf, not_a_leaf + explain("not-a-leaf")
    assert seen.requires_grad, f"{name} does not require grad. " + explain("no-requires-grad")


def _assert_seen_grad(seen, expected, *, name, device) -> None:
    """assert_grad_close on what the probe saw: a plain tensor, on the run's device."""
    if isinstance(seen, TensorSeen):
        assert seen.cls in ("Tensor", "Parameter"), (
            f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
        )
        assert seen.is_on(device), f"{name} is on {seen.device}, expected it on {device}."
        seen = seen.values
    assert_grad_close(seen, expected, name=name)


def judge(seen, case):
    """A leaf Parameter of the right shape, device, dtype and values, trained without the
    checkpoint changing; on every device and on a GPU stand-in."""
    rows, cols, dtype = case["rows"], case["cols"], case["dtype"]
    assert ("gpu" if case["gpu"] else "cpu") in seen, "the tests saw no run"
    for device, run in seen.items():
        weight = run["weight"]
        assert_inputs_left_alone(run["inputs_changed"], "weight_from_checkpoint(flat, ...)")
        _assert_seen_leaf(weight, "weight_from_checkpoint(...)")
        assert weight.cls == "Parameter", f"return an nn.Parameter, not a {weight.cls}"
        assert weight.shape == (rows, cols), f"shape {weight.shape}, expected {(rows, cols)}"
        assert weight.is_on(device), f"the weight is on {weight.device}"
        assert weight.dtype == dtype, f"the weight is {weight.dtype}, expected {dtype}"
        assert run["registered"] == ["weight"], (
            "a module does not register the weight: it is not an nn.Parameter"
        )
        values = case["flat"].view(rows, cols).to(dtype)
        assert torch.equal(run["values"].values, values), f"values {run['values'].values.tolist()}"
        assert run["backward_error"] is None, f"backward() raised {run['backward_error']}"
        # By hand: d/dW[i, j] of sum_{n, j} (x @ W)[n, j] is sum_n x[n, i].
        grad = case["x"].to(dtype).sum(0).unsqueeze(1).expand(rows, cols)
        _assert_seen_grad(run["grad"], grad, name="weight.grad", device=device)
        assert run["step_error"] is None, f"the optimiser step raised {run['step_error']}"
        assert torch.equal(run["flat_after"].values, case["flat"]), (
            "training the weight changed the checkpoint: they share memory (.to() returns the "
            "tensor itself when nothing changes); copy it."
        )


### END JUDGE
probe_and_judge("q5", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Part 1 (`01a_leaf_tensors`): a tensor that requires grad is a leaf exactly when it has no `grad_fn`, and by default `backward()` fills `.grad` on leaves only.
# - A slice is a view of the same memory.
#   `clone()` gives it its own memory and keeps the gradient path; `.detach().clone()` cuts it.
# - Reshape, cast and move first; wrap in `nn.Parameter` last.
#   A module's `.double()` keeps its Parameters (the same leaf objects, with new memory); build the optimiser after moving or casting the module all the same: an optimiser that has already stepped keeps its state in the old dtype (notebook 06a, section 3).
