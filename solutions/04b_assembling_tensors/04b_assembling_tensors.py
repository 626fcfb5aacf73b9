# %% [markdown]
# # 04b · Assembling a tensor from pieces that need gradients (part 2 of 2)
#
# This continues `04a_assembling_tensors` (sections 1–5: why `torch.tensor([...])` cuts the graph, when a fill-in into a buffer works and when it fails, and the rule for a safe fill-in).
# Sections and exercises keep their numbers, so this part starts at section 6 and Exercise 3.
#
# **What you will learn**
#
# - how to build on the input's device and dtype (`new_zeros`, `zeros_like`, `stack`), and what integer tensors do to the dtype;
# - what a fill-in costs compared with `stack`, measured on this machine.
#
# *The seed* is the older Chinese blog post this lesson grew from; its model is in section 3 (in `04a_assembling_tensors`). This part comes back to its integer bounds and its `torch.zeros([3])` buffer, and shows what they do on today's PyTorch.
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.

# %% nbgrader={"grade_id": "setup", "locked": true}
import time
import warnings

import torch
from torch import nn

from autograd_pitfalls import (
    GPU,
    KeptInputs,
    TensorSeen,
    assert_grad_close,
    assert_inputs_left_alone,
    devices,
    diagnose,
    draw,
    expect_error,
    explain,
    on_gpu,
    probe_and_judge,
    reset_torch_settings,
    track_inplace,
)

print(f"torch {torch.__version__}")

# %% [markdown]
# ## 6. Building on the right device and dtype
#
# `torch.zeros(n)` makes a float32 tensor on the CPU, whatever the pieces you then write into it.
# Next to float64 parameters, the fill-in silently rounds every piece to float32:

# %%
p64 = nn.Parameter(torch.tensor([0.1, 0.2], dtype=torch.float64))
buf = torch.zeros(2)
buf[0] = p64[0]
buf[1] = p64[1]
print("buffer dtype:", buf.dtype, "| buf[0] - p64[0] =", (buf[0].double() - p64[0]).item())
assert buf.dtype == torch.float32 and buf[0].double().item() != 0.1

# %% [markdown]
# `torch.zeros_like` and `new_zeros` copy the dtype and device of the tensor you give them.
# Give them the *wrong* tensor and it bites the other way: the seed's bounds are integer tensors (`torch.tensor([2, 4, 2])` is int64), and a buffer shaped like them is int64.
# Writing a float that needs gradients into it truncates the value, and the graph is silently cut: no error, no warning, no `grad_fn`.

# %%
param_max = torch.tensor([2, 4, 2])
x = torch.tensor(1.7, requires_grad=True)
int_buf = torch.zeros_like(param_max)  # int64, like param_max
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    int_buf[0] = x * 1
print(int_buf, "| dtype:", int_buf.dtype, "| requires_grad:", int_buf.requires_grad)
print("warnings:", len(caught))
assert int_buf.tolist() == [1, 0, 0] and not int_buf.requires_grad and not caught

# %% [markdown]
# In arithmetic the integer bounds are harmless: type promotion makes `float32 × int64` a float32 and `float64 × int64` a float64, and `/` of two integer tensors is the default float dtype (float32 unless `torch.set_default_dtype` changed it).
# So the bounds do not decide the dtype of the seed's features; its float32 buffer does.

# %%
r1n = torch.tensor(0.5, requires_grad=True)
print((r1n * param_max).dtype, (r1n.double() * param_max).dtype, (param_max / param_max).dtype)
assert (r1n * param_max).dtype == torch.float32
assert (r1n.double() * param_max).dtype == torch.float64
assert (param_max / param_max).dtype == torch.get_default_dtype() == torch.float32

# %% [markdown]
# The seed stores the bounds as plain attributes (`self.param_max = torch.tensor(...)`).
# `model.to(device)` moves parameters and *registered buffers* only, so plain tensor attributes stay behind on the CPU.
# This machine may have no GPU, so the course's stand-in for one shows the mismatch: `GPU`, a device named `gpu` whose tensors keep their values on the CPU and refuse to be mixed with CPU tensors where CUDA refuses.


# %%
class Bounds(nn.Module):
    """The seed's bounds twice: as a plain attribute and as a registered buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.paramn_ = nn.Parameter(torch.rand(2))
        self.param_max = torch.tensor([2, 4, 2])  # plain attribute: .to() ignores it
        self.register_buffer("param_min", torch.tensor([1, 2, 0]))  # moved by .to()


moved = Bounds().to(GPU)
print(
    "paramn_:",
    moved.paramn_.device,
    "| param_max:",
    moved.param_max.device,
    "| param_min:",
    moved.param_min.device,
)
assert moved.param_max.device.type == "cpu" and moved.param_min.device == GPU
with expect_error(RuntimeError, match="same device"):
    moved.paramn_ * moved.param_max[:2]

# %% [markdown]
# And the seed's fill-in buffer `torch.zeros([3])` is on the CPU too, whatever the parameters.
# Writing a GPU piece into it is a copy, which a GPU allows: nothing fails there.
# The buffer stays on the CPU, and the first op that mixes it with the parameters fails.

# %%
paramn_gpu = nn.Parameter(torch.rand(2, device=GPU))
paramn = torch.zeros([3])
paramn[0] = paramn_gpu[0]  # a copy from the GPU to the CPU: allowed
print(f"the buffer: on {paramn.device}, grad_fn={paramn.grad_fn.name()}")
assert paramn.device.type == "cpu" and paramn.grad_fn is not None
with expect_error(RuntimeError, match="same device"):
    paramn[:2] * paramn_gpu

# %% [markdown]
# Three ways that follow the pieces wherever they live:
# - `p.new_zeros(n)` and `torch.zeros_like(p)`: same device and dtype as `p` (pick `p` well: a parameter, not the integer bounds);
# - `torch.zeros(n, device=p.device, dtype=p.dtype)`: the same, spelled out;
# - `torch.stack(pieces)`, `torch.cat(pieces)`: no buffer at all; all pieces must share a device, and the dtype is promoted like arithmetic.

# %%
for p in (p64, paramn_gpu):
    built = {
        "new_zeros": p.new_zeros(3),
        "zeros_like": torch.zeros_like(p),
        "zeros(device, dtype)": torch.zeros(3, device=p.device, dtype=p.dtype),
        "stack": torch.stack([p[0], p[1], p[0] / p[1]]),
    }
    for label, tensor in built.items():
        print(f"{label:21} {tensor.device}, {tensor.dtype}")
        assert tensor.device == p.device and tensor.dtype == p.dtype
print("stack of float32 and float64:", torch.stack([torch.tensor(1.0), p64[0]]).dtype)
assert torch.stack([torch.tensor(1.0), p64[0]]).dtype == torch.float64
with expect_error(RuntimeError, match="same device"):
    torch.stack([torch.tensor(1.0), paramn_gpu[0]])  # a CPU piece among GPU pieces

# %% [markdown]
# ### Exercise 3 — a differentiable assembly that keeps the device and dtype (3 points)
#
# Write `vandermonde(x, degree)`: for a 1-d tensor `x` of shape `(n,)` and an integer `degree >= 1`, return the `(n, degree + 1)` matrix whose column `j` is `x ** j` (column 0 is all ones).
# Example: `x = [1, 2]`, `degree = 2` gives `[[1, 1, 1], [1, 2, 4]]`, and the gradient of its sum with respect to `x` is, by hand, `Σ_j j·x^(j-1)` per entry: `[0 + 1 + 2, 0 + 1 + 4] = [3, 5]`.
# The result must be differentiable with respect to `x`, on `x`'s device and with `x`'s dtype; leave `x` as it was (its values, `requires_grad` and version).
# The tests run it on the GPU stand-in too: a column of ones made with `torch.ones(n)` and no `device=`, stacked or concatenated with columns on `x`'s device, fails there, as it would on a GPU (section 6).
# `torch.vander(x, degree + 1, increasing=True)` gives the right values, but on torch 2.13 it is itself assembled by fill-ins that section 5's rule (in `04a_assembling_tensors`) refuses: its `backward()` raises (the cell below shows it), so it is not an answer.

# %%
x_try = torch.tensor([1.0, 2.0], requires_grad=True)
library_matrix = torch.vander(x_try, 3, increasing=True)
print(library_matrix)
with expect_error(RuntimeError, match="modified by an inplace operation"):
    library_matrix.sum().backward()


# %% nbgrader={"grade_id": "q3-answer", "solution": true}
def vandermonde(x: torch.Tensor, degree: int) -> torch.Tensor:
    """Returns the (n, degree + 1) matrix [x**0, x**1, ..., x**degree], column by column.

    Args:
        x: A 1-d tensor, shape (n,), float32 or float64, maybe requiring grad.
        degree: The highest power, at least 1.

    Returns:
        The matrix, shape (n, degree + 1), on x's device, with x's dtype, differentiable
        with respect to x.
    """
    ### BEGIN SOLUTION
    columns = [torch.ones_like(x)] + [x**power for power in range(1, degree + 1)]
    return torch.stack(columns, dim=1)  # (n, degree + 1)
    ### END SOLUTION


# %% nbgrader={"grade_id": "q3-tests", "grade": true, "locked": true, "points": 3}
"""Checks vandermonde: values, gradient (by hand), device (on a GPU stand-in), dtype, x left alone."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_vandermonde(x_values, degree, weights, device, dtype):
    x = x_values.to(device, dtype).requires_grad_(True)
    kept = KeptInputs(x=x)
    matrix = vandermonde(x, degree)
    assert_inputs_left_alone(kept.changes(), f"vandermonde(x, {degree})")
    n = x.shape[0]
    assert isinstance(matrix, torch.Tensor) and matrix.shape == (n, degree + 1), (
        f"the result should have shape {(n, degree + 1)}"
    )
    assert matrix.device.type == device.type, explain("wrong-device")
    assert matrix.dtype == dtype, f"the result is {matrix.dtype}, x is {dtype}. " + explain(
        "wrong-dtype"
    )
    assert matrix.grad_fn is not None, "the result has no grad_fn: " + explain("graph-cut-assembly")
    powers = torch.arange(degree + 1, device=device)
    expected = x.detach().unsqueeze(1) ** powers
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    assert torch.allclose(matrix.detach(), expected, rtol=tolerance, atol=tolerance), (
        f"expected {expected.tolist()}, got {matrix.tolist()}"
    )
    weights = weights.to(device, dtype)
    try:
        (matrix * weights).sum().backward()
    except RuntimeError as error:
        raise AssertionError(
            f"backward() raised: {str(error).splitlines()[0][:160]}\n"
            + explain("stale-saved-tensor")
        ) from None
    # By hand: d/dx_i of sum_j w_ij x_i^j is sum_j w_ij · j · x_i^(j - 1).
    by_hand = (weights[:, 1:] * powers[1:] * x.detach().unsqueeze(1) ** (powers[1:] - 1)).sum(1)
    assert_grad_close(x.grad, by_hand, name="x.grad", rtol=tolerance, atol=tolerance)


for device in devices():
    for dtype in (torch.float32, torch.float64):
        _check_vandermonde(torch.tensor([1.0, 2.0]), 2, torch.ones(2, 3), device, dtype)
x = torch.tensor([1.0, 2.0], requires_grad=True)
matrix = on_gpu(vandermonde, x, 2)
assert matrix.shape == (2, 3) and matrix.requires_grad, "on a GPU too, a (2, 3) matrix with a graph"


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example in both dtypes, then degrees 1, 3 and 4 with random sizes, values, weights."""
    cases = [
        {"values": torch.tensor([1.0, 2.0]), "degree": 2, "weights": torch.ones(2, 3),
         "dtype": dtype}
        for dtype in ("float32", "float64")
    ]  # fmt: skip
    for dtype in ("float32", "float64"):
        for degree in (1, 3, 4):  # around the example's 2
            n = int(torch.randint(2, 7, (1,), generator=rng))
            values = torch.rand(n, generator=rng, dtype=torch.float64) * 3 - 1.5
            weights = torch.randn(n, degree + 1, generator=rng)
            cases.append({"values": values, "degree": degree, "weights": weights, "dtype": dtype})
    return cases


def observe(case):
    """Calls vandermonde on every device and on a GPU stand-in; backpropagates the weighted sum."""
    dtype = getattr(torch, case["dtype"])
    seen = {}
    for device in devices():
        x = case["values"].to(device, dtype, copy=True).requires_grad_(True)
        kept = KeptInputs(x=x)
        matrix = vandermonde(x, case["degree"])
        inputs_changed = kept.changes()
        backward_error = None
        try:
            (matrix * case["weights"].to(device, dtype)).sum().backward()
        except RuntimeError as error:
            backward_error = str(error).splitlines()[0][:160]
        seen[device.type] = {
            "matrix": matrix, "grad": x.grad, "backward_error": backward_error,
            "inputs_changed": inputs_changed,
        }  # fmt: skip
    try:
        x = case["values"].to(dtype, copy=True).requires_grad_(True)
        seen["gpu"] = {"matrix": on_gpu(vandermonde, x, case["degree"]), "failure": None}
    except AssertionError as error:
        seen["gpu"] = {"matrix": None, "failure": str(error)}
    return seen


### BEGIN JUDGE
def _vandermonde_by_hand(case):
    """The matrix and the weighted sum's gradient for x, derived by hand."""
    dtype = getattr(torch, case["dtype"])
    x, weights = case["values"].to(dtype), case["weights"].to(dtype)
    powers = torch.arange(case["degree"] + 1)
    # By hand: d/dx_i of sum_j w_ij x_i^j is sum_j w_ij · j · x_i^(j - 1).
    by_hand = (weights[:, 1:] * powers[1:] * x.unsqueeze(1) ** (powers[1:] - 1)).sum(1)
    return x.unsqueeze(1) ** powers, by_hand


def judge(seen, case):
    """Shape, device, dtype, graph, values and the gradient by hand; on a GPU stand-in, the same shape."""
    dtype, degree = getattr(torch, case["dtype"]), case["degree"]
    n = case["values"].shape[0]
    expected, by_hand = _vandermonde_by_hand(case)
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        assert_inputs_left_alone(run["inputs_changed"], f"vandermonde(x, {degree})")
        matrix = run["matrix"]
        assert isinstance(matrix, TensorSeen) and matrix.shape == (n, degree + 1), (
            f"the result should have shape {(n, degree + 1)}"
        )
        assert matrix.is_on(device), explain("wrong-device")
        assert matrix.dtype == dtype, f"the result is {matrix.dtype}, x is {dtype}. " + explain(
            "wrong-dtype"
        )
        assert matrix.grad_fn is not None, "the result has no grad_fn: " + explain(
            "graph-cut-assembly"
        )
        assert torch.allclose(matrix.values, expected, rtol=tolerance, atol=tolerance), (
            f"expected {expected.tolist()}, got {matrix.values.tolist()}"
        )
        assert run["backward_error"] is None, (
            f"backward() raised: {run['backward_error']}\n" + explain("stale-saved-tensor")
        )
        grad = run["grad"]
        if isinstance(grad, TensorSeen):
            assert grad.cls in ("Tensor", "Parameter"), f"x.grad is a {grad.cls}."
            grad = grad.values
        assert_grad_close(grad, by_hand, name="x.grad", rtol=tolerance, atol=tolerance)
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    matrix = gpu["matrix"]
    assert isinstance(matrix, TensorSeen) and matrix.shape == (n, degree + 1), (
        "on a GPU too, a matrix of shape (n, degree + 1) with a graph"
    )
    assert matrix.requires_grad, "on a GPU too, a matrix of shape (n, degree + 1) with a graph"
    assert matrix.dtype == dtype, f"on a GPU, {dtype} in, {dtype} out. " + explain("wrong-dtype")


### END JUDGE
probe_and_judge("q3", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. What a fill-in costs
#
# A fill-in of `n` pieces records `n` `CopySlices` nodes, each with its own backward step; `stack` records one node.
# Count them, then time a forward and backward pass for 200 pieces (a few repetitions, so that the cell stays fast).


# %% nbgrader={"grade_id": "demo-assembly-timing", "locked": true} tags=["grading-skip"]
def count_nodes(output: torch.Tensor) -> int:
    """Returns the number of backward nodes reachable from output.grad_fn."""
    seen, todo = set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        todo.extend(next_node for next_node, _ in node.next_functions)
    return len(seen)


n = 200
x = torch.rand(n, requires_grad=True)


def by_fill_in(x: torch.Tensor) -> torch.Tensor:
    out = x.new_zeros(n)
    for i in range(n):
        out[i] = x[i] * 2
    return out


def by_stack(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([x[i] * 2 for i in range(n)])


def vectorised(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def time_ms(build, repeats: int = 5) -> float:
    """Returns the best time of `repeats` forward + backward passes, in milliseconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        build(x).sum().backward()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


for build in (by_fill_in, by_stack, vectorised):
    nodes = count_nodes(build(x))
    print(f"{build.__name__:10} nodes: {nodes:4} | best of 5: {time_ms(build):7.3f} ms")
    assert torch.equal(build(x), x.detach() * 2)
assert (
    count_nodes(by_fill_in(x)) == 3 * n + 1
)  # per piece: CopySlices, MulBackward0, SelectBackward0
assert count_nodes(by_stack(x)) == 2 * n + 2  # per piece: MulBackward0, SelectBackward0; + Stack
assert count_nodes(vectorised(x)) == 2

# %% [markdown]
# The node counts are exact and the same on every machine.
# The times are what this machine measured in this run: they vary between runs and machines, and fill-in and stack can come out close, in either order. Read your own numbers.
# What does not vary is the size of the graph: when the pieces are one operation applied to every entry, the vectorised line records one node instead of hundreds, so there is nothing to assemble.
# Assemble piece by piece only when the pieces really are different computations.

# %% [markdown]
# Drawn for three pieces, the fill-in is a chain: each write adds a `CopySlices` node above the previous one, each piece (`MulBackward0` over `SelectBackward0`) hangs below the `CopySlices` node of its write, and the three pieces meet at the leaf `three` (`saved=()` leaves the saved tensors out).

# %% nbgrader={"grade_id": "demo-fill-in-chain", "locked": true} tags=["grading-skip"]
three = torch.rand(3, requires_grad=True)
chain = three.new_zeros(3)
for i in range(3):
    chain[i] = three[i] * 2
copies, node = 0, chain.grad_fn
while node is not None and "CopySlices" in node.name():
    copies, node = copies + 1, node.next_functions[0][0]  # down to the previous write
assert copies == 3
draw(chain, names={"three": three, "chain": chain}, saved=())


# %% [markdown]
# ### Exercise 4 — repair a fill-in that builds a matrix (3 points)
#
# A 2-d pose (a rotation by `theta`, then a translation) as a 3 × 3 homogeneous matrix, with the translation rotated too:
#
# ```
# [[cos θ, -sin θ, (R t)_0],
#  [sin θ,  cos θ, (R t)_1],
#  [0,      0,     1      ]]      where R = [[cos θ, -sin θ], [sin θ, cos θ]]
# ```
#
# `pose_matrix_buggy` below builds it by fill-in; run the cell to see how it fails.


# %%
def pose_matrix_buggy(theta: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Buggy: the 3 x 3 pose matrix for angle theta (0-d) and translation t, shape (2,)."""
    matrix = torch.zeros(3, 3)
    matrix[0, 0] = torch.cos(theta)
    matrix[0, 1] = -torch.sin(theta)
    matrix[1, 0] = torch.sin(theta)
    matrix[1, 1] = torch.cos(theta)
    matrix[:2, 2] = matrix[:2, :2] @ t  # rotate the translation with the block just written
    matrix[2, 2] = 1.0
    return matrix


theta = torch.tensor(torch.pi / 2, requires_grad=True)
t = torch.tensor([1.0, 2.0], requires_grad=True)
with track_inplace() as log:
    matrix = pose_matrix_buggy(theta, t)
print(matrix)
for finding in diagnose(matrix, names={"theta": theta, "t": t}).findings:
    print(
        f"{finding.node} saved `{finding.saved}` {finding.shape} at version "
        f"{finding.saved_version}, now {finding.current_version}"
    )
print("written by:", log.writes[4].code)
assert log.writes[4].code.startswith("matrix[:2, 2] = matrix[:2, :2] @ t")
with expect_error(RuntimeError, match="modified by an inplace operation"):
    matrix.sum().backward()

# %% [markdown]
# The product `matrix[:2, :2] @ t` saved a view of the buffer at version 4 (after four writes), and the next two writes moved the buffer, and the view with it, to version 6.
#
# Write `pose_matrix(theta, t)`, a repaired version: the same matrix, differentiable with respect to `theta` and `t`, on `theta`'s device and with `theta`'s dtype (`t` has the same device and dtype).
# Example: `theta = π/2`, `t = [1, 2]` gives `[[0, -1, -2], [1, 0, 1], [0, 0, 1]]`; by hand, the gradient of its sum is `-5` for `theta` and `[1, -1]` for `t`.
# Any assembly that follows the rule of section 5 (in `04a_assembling_tensors`) is fine; the tests run your function on the GPU stand-in too.
# Leave `theta` and `t` as they were.


# %% nbgrader={"grade_id": "q4-answer", "solution": true}
def pose_matrix(theta: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Returns the 3 x 3 pose matrix [[R, R @ t], [0, 0, 1]] for R the rotation by theta.

    Args:
        theta: The angle, a 0-d tensor (float32 or float64), maybe requiring grad.
        t: The translation, shape (2,), same device and dtype as theta, maybe requiring grad.

    Returns:
        The matrix, shape (3, 3), on theta's device, with its dtype, differentiable with
        respect to theta and t.
    """
    ### BEGIN SOLUTION
    cos, sin = torch.cos(theta), torch.sin(theta)
    rotation = torch.stack([torch.stack([cos, -sin]), torch.stack([sin, cos])])  # (2, 2)
    top = torch.cat([rotation, (rotation @ t).unsqueeze(1)], dim=1)  # (2, 3)
    zero, one = torch.zeros_like(theta), torch.ones_like(theta)
    bottom = torch.stack([zero, zero, one]).unsqueeze(0)  # (1, 3)
    return torch.cat([top, bottom], dim=0)
    ### END SOLUTION


# %% nbgrader={"grade_id": "q4-tests", "grade": true, "locked": true, "points": 3}
"""Checks pose_matrix: values, gradients for theta and t (by hand), device (on a GPU stand-in),
dtype, theta and t left as they were."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_pose(angle, shift, weights, device, dtype):
    theta = torch.tensor(angle, device=device, dtype=dtype, requires_grad=True)
    t = shift.to(device, dtype).requires_grad_(True)
    kept = KeptInputs(theta=theta, t=t)
    matrix = pose_matrix(theta, t)
    assert_inputs_left_alone(kept.changes(), "pose_matrix(theta, t)")
    assert isinstance(matrix, torch.Tensor) and matrix.shape == (3, 3), "return a (3, 3) tensor"
    assert matrix.device.type == device.type, explain("wrong-device")
    assert matrix.dtype == dtype, f"the matrix is {matrix.dtype}, theta is {dtype}. " + explain(
        "wrong-dtype"
    )
    assert matrix.grad_fn is not None, "the matrix has no grad_fn: " + explain("graph-cut-assembly")
    c, s = torch.cos(theta.detach()), torch.sin(theta.detach())
    t0, t1 = t.detach()
    expected = torch.stack(
        [
            torch.stack([c, -s, c * t0 - s * t1]),
            torch.stack([s, c, s * t0 + c * t1]),
            torch.tensor([0.0, 0.0, 1.0], device=device, dtype=dtype),
        ]
    )
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    assert torch.allclose(matrix.detach(), expected, atol=tolerance), (
        f"expected {expected.tolist()}, got {matrix.tolist()}"
    )
    w = weights.to(device, dtype)
    try:
        (matrix * w).sum().backward()
    except RuntimeError as error:
        raise AssertionError(
            f"backward() raised: {str(error).splitlines()[0][:160]}\n"
            + explain("stale-saved-tensor")
        ) from None
    # By hand: the derivative of each entry with respect to theta, weighted by w.
    d_theta = (
        w[0, 0] * -s
        + w[0, 1] * -c
        + w[0, 2] * (-s * t0 - c * t1)
        + w[1, 0] * c
        + w[1, 1] * -s
        + w[1, 2] * (c * t0 - s * t1)
    )
    d_t = torch.stack([w[0, 2] * c + w[1, 2] * s, -w[0, 2] * s + w[1, 2] * c])
    assert_grad_close(theta.grad, d_theta, name="theta.grad", atol=tolerance)
    assert_grad_close(t.grad, d_t, name="t.grad", atol=tolerance)


for device in devices():
    for dtype in (torch.float32, torch.float64):
        _check_pose(torch.pi / 2, torch.tensor([1.0, 2.0]), torch.ones(3, 3), device, dtype)
matrix = on_gpu(
    pose_matrix,
    torch.tensor(0.5, requires_grad=True),
    torch.tensor([1.0, 2.0], requires_grad=True),
)
assert matrix.shape == (3, 3) and matrix.requires_grad, "on a GPU too, a (3, 3) matrix with a graph"


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example in both dtypes, then random angles, translations and weights."""
    cases = [
        {"angle": torch.pi / 2, "shift": torch.tensor([1.0, 2.0]), "weights": torch.ones(3, 3),
         "dtype": dtype}
        for dtype in ("float32", "float64")
    ]  # fmt: skip
    for dtype in ("float32", "float64"):
        for _ in range(3):
            angle = float(torch.rand(1, generator=rng)) * 6 - 3
            shift = torch.randn(2, generator=rng, dtype=torch.float64)
            weights = torch.randn(3, 3, generator=rng)
            cases.append({"angle": angle, "shift": shift, "weights": weights, "dtype": dtype})
    return cases


def observe(case):
    """Calls pose_matrix on every device and on a GPU stand-in; backpropagates the weighted sum."""
    dtype = getattr(torch, case["dtype"])
    seen = {}
    for device in devices():
        theta = torch.tensor(case["angle"], device=device, dtype=dtype, requires_grad=True)
        t = case["shift"].to(device, dtype, copy=True).requires_grad_(True)
        kept = KeptInputs(theta=theta, t=t)
        matrix = pose_matrix(theta, t)
        inputs_changed = kept.changes()
        backward_error = None
        try:
            (matrix * case["weights"].to(device, dtype)).sum().backward()
        except RuntimeError as error:
            backward_error = str(error).splitlines()[0][:160]
        seen[device.type] = {
            "matrix": matrix, "theta_grad": theta.grad, "t_grad": t.grad,
            "backward_error": backward_error, "inputs_changed": inputs_changed,
        }  # fmt: skip
    try:
        theta = torch.tensor(case["angle"], dtype=dtype, requires_grad=True)
        t = case["shift"].to(dtype, copy=True).requires_grad_(True)
        seen["gpu"] = {"matrix": on_gpu(pose_matrix, theta, t), "failure": None}
    except AssertionError as error:
        seen["gpu"] = {"matrix": None, "failure": str(error)}
    return seen


### BEGIN JUDGE
def _pose_by_hand(case):
    """The matrix and the weighted sum's gradients for theta and t, derived by hand."""
    dtype = getattr(torch, case["dtype"])
    theta = torch.tensor(case["angle"], dtype=dtype)
    c, s = torch.cos(theta), torch.sin(theta)
    t0, t1 = case["shift"].to(dtype)
    matrix = torch.stack(
        [
            torch.stack([c, -s, c * t0 - s * t1]),
            torch.stack([s, c, s * t0 + c * t1]),
            torch.tensor([0.0, 0.0, 1.0], dtype=dtype),
        ]
    )
    w = case["weights"].to(dtype)
    d_theta = (
        w[0, 0] * -s
        + w[0, 1] * -c
        + w[0, 2] * (-s * t0 - c * t1)
        + w[1, 0] * c
        + w[1, 1] * -s
        + w[1, 2] * (c * t0 - s * t1)
    )
    d_t = torch.stack([w[0, 2] * c + w[1, 2] * s, -w[0, 2] * s + w[1, 2] * c])
    return matrix, d_theta, d_t


def _grad_values(seen, name):
    """A gradient as assert_grad_close takes it: None, or the values of a plain tensor."""
    if isinstance(seen, TensorSeen):
        assert seen.cls in ("Tensor", "Parameter"), f"{name} is a {seen.cls}."
        return seen.values
    return seen


def judge(seen, case):
    """Shape, device, dtype, graph, values and both gradients by hand; on a GPU stand-in, the same."""
    dtype = getattr(torch, case["dtype"])
    expected, d_theta, d_t = _pose_by_hand(case)
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        assert_inputs_left_alone(run["inputs_changed"], "pose_matrix(theta, t)")
        matrix = run["matrix"]
        assert isinstance(matrix, TensorSeen) and matrix.shape == (3, 3), "return a (3, 3) tensor"
        assert matrix.is_on(device), explain("wrong-device")
        assert matrix.dtype == dtype, f"the matrix is {matrix.dtype}, theta is {dtype}. " + explain(
            "wrong-dtype"
        )
        assert matrix.grad_fn is not None, "the matrix has no grad_fn: " + explain(
            "graph-cut-assembly"
        )
        assert torch.allclose(matrix.values, expected, atol=tolerance), (
            f"expected {expected.tolist()}, got {matrix.values.tolist()}"
        )
        assert run["backward_error"] is None, (
            f"backward() raised: {run['backward_error']}\n" + explain("stale-saved-tensor")
        )
        theta_grad = _grad_values(run["theta_grad"], "theta.grad")
        assert_grad_close(theta_grad, d_theta, name="theta.grad", atol=tolerance)
        assert_grad_close(_grad_values(run["t_grad"], "t.grad"), d_t, name="t.grad", atol=tolerance)
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    matrix = gpu["matrix"]
    assert isinstance(matrix, TensorSeen) and matrix.shape == (3, 3) and matrix.requires_grad, (
        "on a GPU too, a (3, 3) matrix with a graph"
    )
    assert matrix.dtype == dtype, f"on a GPU, {dtype} in, {dtype} out. " + explain("wrong-dtype")


### END JUDGE
probe_and_judge("q4", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Part 1 (`04a_assembling_tensors`): the rule is not "never fill in" but "never write to what a node saved"; `torch.stack`/`torch.cat` follow it by construction.
# - Build on the pieces' device and dtype: `new_zeros`, `zeros_like` (of the right tensor), or `stack`/`cat`; register constant tensors as buffers so that `.to()` moves them.
# - A fill-in records one node per piece; when the pieces are one operation on every entry, vectorise instead of assembling.
