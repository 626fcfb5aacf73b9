# %% [markdown]
# # 01a · Leaf tensors (part 1 of 2)
#
# By default, `backward()` writes gradients only into *leaf* tensors (`retain_grad()` or `backward(inputs=...)` change that: section 3).
# Most "my gradient is None" bugs come from a tensor you think is a leaf and is not.
#
# **What you will learn**
#
# - to tell a leaf from a non-leaf with `is_leaf`, `grad_fn` and `requires_grad`;
# - why `.grad` is filled only on leaves by default;
# - how `retain_grad()`, `backward(inputs=...)` or `torch.autograd.grad` give you an intermediate's gradient;
# - why `eta = eta * 2` loses your `nn.Parameter`, and how to keep it.
#
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.
#
# Part 2 is `01b_leaf_tensors` (sections 5–6).

# %% nbgrader={"grade_id": "setup", "locked": true}
import warnings
from collections.abc import Callable

import torch
from torch import nn

from autograd_pitfalls import (
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
    on_gpu,
    probe_and_judge,
    reset_torch_settings,
)

print(f"torch {torch.__version__}")

# %% [markdown]
# ## 1. Leaves and non-leaves
#
# A tensor that you create yourself is a leaf.
# A tensor computed by a differentiable operation from something that requires grad, while autograd records (grad mode on, the default), is not a leaf.
# It remembers the operation that made it in `grad_fn`.

# %%
a = torch.ones(2, 2, requires_grad=True)  # created by you
b = a + 2  # made by an operation
print(f"a: is_leaf={a.is_leaf}, grad_fn={a.grad_fn}")
print(f"b: is_leaf={b.is_leaf}, grad_fn={b.grad_fn}")
assert a.is_leaf and a.grad_fn is None
assert not b.is_leaf and b.grad_fn.name().startswith("Add")  # the node of +: its name is torch's

# %% [markdown]
# A tensor that does not require grad is a leaf by convention, even when an operation made it.
# Autograd records nothing for it, so there is no `grad_fn` to point back to.
# `detach()` also gives a leaf that does not require grad.
# So does an operation on `a` under `torch.no_grad()`, which turns recording off for its block: `c = a + 2` there is a leaf, with no `grad_fn` and no `requires_grad`.
# So does an operation no gradient flows through, even on `a` with grad mode on: `i = a.argmax()` (an index) is a leaf that does not require grad.

# %%
x = torch.zeros(3)  # requires_grad=False
y = x * 2  # an operation, but nothing to record
z = a.detach()
with torch.no_grad():
    c = a + 2  # a requires grad, but nothing is recorded here
i = a.argmax()  # grad mode on, but an index has no gradient
for name, tensor in {"x": x, "y": y, "z": z, "c": c, "i": i}.items():
    print(f"{name}: is_leaf={tensor.is_leaf}, requires_grad={tensor.requires_grad}")
    assert tensor.is_leaf and not tensor.requires_grad and tensor.grad_fn is None

# %% [markdown]
# So `is_leaf` only matters for tensors that require grad.
# For those, the rule is short: **a leaf has no `grad_fn`**.
#
# Older posts build a leaf with `w = torch.FloatTensor(10)` and then `w.requires_grad = True`.
# That legacy constructor does not initialise the memory it allocates, like `torch.empty(10)`.
# Its values are whatever was in that memory, so we do not print them.
# Say what you mean instead: `torch.zeros(10, requires_grad=True)` or `torch.randn(...)`.
# The cell shows the missing initialisation with `torch.use_deterministic_algorithms(True)`, under which PyTorch fills the floating-point memory it leaves uninitialised with NaN, then turns it off again.

# %%
legacy = torch.FloatTensor(10)  # uninitialised values
legacy.requires_grad = True
clear = torch.zeros(10, requires_grad=True)
print(f"legacy: dtype={legacy.dtype}, is_leaf={legacy.is_leaf}")
print(f"clear:  dtype={clear.dtype}, is_leaf={clear.is_leaf}, values={clear.tolist()}")
assert legacy.dtype == clear.dtype == torch.float32 and legacy.is_leaf and clear.is_leaf
torch.use_deterministic_algorithms(True)
try:
    uninitialised = {"FloatTensor(3)": torch.FloatTensor(3), "empty(3)": torch.empty(3)}
finally:
    torch.use_deterministic_algorithms(False)  # the default
for name, tensor in uninitialised.items():
    print(f"deterministic mode, torch.{name}: {tensor.tolist()}")
    assert tensor.isnan().all()

# %% [markdown]
# ## 2. `.grad` lands on leaves by default (a worked example)
#
# Take $b = a \cdot a$ and $\text{loss} = \sum_i 3 b_i = 3 \sum_i a_i^2$.
# By hand: $\partial\,\text{loss} / \partial a_i = 6 a_i$.
# For $a = [1, 2, 3]$ we expect $[6, 12, 18]$.
# Build the graph and draw it before calling `backward()`.

# %% nbgrader={"grade_id": "demo-first-graph", "locked": true} tags=["grading-skip"]
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * a
loss = (3 * b).sum()
draw(loss, names={"a": a, "b": b, "loss": loss})

# %% [markdown]
# Read the drawing from the top: `backward()` starts at `loss` and follows the arrows.
# Only the leaf `a` (blue) hangs under an `AccumulateGrad` node: that node writes `a.grad`.
# `b` has no box of its own: it is the output of the lower `MulBackward0`.
# Its gradient passes through that node on the way to `a`, and is then dropped.
# The orange boxes are what each node saved for backward.
# The lower `MulBackward0` saved `a` twice (as `self` and `other`); the upper one saved the 3.
#
# The cell below builds the same graph again before calling `backward()`.
# `backward()` frees what the graph saved and adds into `.grad` (notebook 02b, section 10): a cell that reused the graph of the cell above would raise, or print another gradient, when you run it again.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)  # the graph drawn above, afresh
b = a * a
loss = (3 * b).sum()
loss.backward()
expected = 6 * a.detach()  # derived by hand: d loss / d a = 6 a
print(compare("a.grad", a.grad, expected))
assert torch.equal(a.grad, torch.tensor([6.0, 12.0, 18.0]))

# %% [markdown]
# Reading `.grad` of the non-leaf `b` gives `None`, and PyTorch warns.
# `expect_warning` records the warning, prints its live text, and fails if it is not issued.
# Older posts show it with a path ending in `TensorBody.h:475`; that line number moves.

# %%
with expect_warning(UserWarning, match="not a leaf"):
    b_grad = b.grad
print(f"b.grad = {b_grad}")
assert b_grad is None

# %% [markdown]
# Why drop it?
# Intermediate gradients are rarely needed.
# Keeping one for every operation would cost memory: each such gradient is as large as the tensor it belongs to.

# %% [markdown]
# ## 3. An intermediate's gradient: `retain_grad()`, `backward(inputs=...)` or `torch.autograd.grad`
#
# Call `retain_grad()` on the non-leaf **before** `backward()`.
# Here $\partial\,\text{loss} / \partial b_i = 3$.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * a
b.retain_grad()
loss = (3 * b).sum()
loss.backward()
print(f"b.retains_grad={b.retains_grad}, b.is_leaf={b.is_leaf}, b.grad={b.grad}")
assert not b.is_leaf and torch.equal(b.grad, torch.full((3,), 3.0))
assert torch.equal(a.grad, torch.tensor([6.0, 12.0, 18.0]))  # a still gets its gradient

# %% [markdown]
# `torch.autograd.grad(loss, [b])` returns the gradient instead of storing it.
# It writes no `.grad` on the leaves, not even on `a` (a tensor on the way that called `retain_grad()` would still get its `.grad`).

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * a
loss = (3 * b).sum()
(dloss_db,) = torch.autograd.grad(loss, [b])
print(f"d loss / d b = {dloss_db}, a.grad = {a.grad}")
assert torch.equal(dloss_db, torch.full((3,), 3.0)) and a.grad is None

# %% [markdown]
# `loss.backward(inputs=[b])` fills `.grad` on the tensors you list, leaves or not, and on no other leaf: here `b.grad`, not `a.grad` (a tensor on the way that called `retain_grad()` still gets its `.grad`).

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * a
loss = (3 * b).sum()
loss.backward(inputs=[b])
print(f"b.is_leaf={b.is_leaf}, b.grad={b.grad}, a.grad={a.grad}")
assert not b.is_leaf and torch.equal(b.grad, torch.full((3,), 3.0)) and a.grad is None

# %% [markdown]
# ### Exercise 1 — predict leaves and gradients (2 points)
#
# Read this snippet without running it:
#
# ```python
# x = torch.randn(3)
# w = torch.randn(3, requires_grad=True)
# p = nn.Parameter(torch.randn(3))
# m = x * 2
# h = w * m
# h.retain_grad()
# s = p[:2]
# d = w.detach()
# loss = h.sum() + s.sum()
# loss.backward()
# ```
#
# Complete `predict_snippet()`.
# For each of the eight names it returns a dict of three booleans:
# `"is_leaf"` (`t.is_leaf`), `"has_grad_fn"` (`t.grad_fn is not None`),
# and `"has_grad"` (`t.grad is not None` after `loss.backward()`).
# For example, `"w"` maps to `{"is_leaf": True, "has_grad_fn": False, "has_grad": True}`.
# Nothing in this notebook runs the snippet for you: predict it.
# The visible test checks the form of your answer and the example of `w`.
# The grader runs the snippet in its own process, on every device, and checks all eight names against what PyTorch says there.


# %% nbgrader={"grade_id": "q1-answer", "solution": true}
def predict_snippet() -> dict[str, dict[str, bool]]:
    """Predicts is_leaf, grad_fn and .grad for each tensor of the snippet above.

    Returns:
        A dict from each name ("x", "w", "p", "m", "h", "s", "d", "loss") to a dict with
        the keys "is_leaf", "has_grad_fn" and "has_grad", each True or False.
    """
    ### BEGIN SOLUTION
    leaf_without_grad = {"is_leaf": True, "has_grad_fn": False, "has_grad": False}
    leaf_with_grad = {"is_leaf": True, "has_grad_fn": False, "has_grad": True}
    return {
        "x": leaf_without_grad,  # does not require grad: a leaf by convention
        "w": leaf_with_grad,
        "p": leaf_with_grad,  # a Parameter you created is a leaf
        "m": leaf_without_grad,  # x * 2: nothing requires grad, nothing recorded
        "h": {"is_leaf": False, "has_grad_fn": True, "has_grad": True},  # retain_grad()
        "s": {"is_leaf": False, "has_grad_fn": True, "has_grad": False},  # a view, an op
        "d": leaf_without_grad,  # detach(): a new leaf without requires_grad
        "loss": {"is_leaf": False, "has_grad_fn": True, "has_grad": False},
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "q1-tests", "grade": true, "locked": true, "points": 2}
"""Checks predict_snippet(): visible, its form and the example of w; the grader, all eight.

The snippet runs only in the grader's process (its judge), on every device.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_predictions(predictions: dict, truth: dict, names: list[str]) -> None:
    for name in names:
        for key, actual in truth[name].items():
            assert predictions[name][key] == actual, (
                f"{name}: you predicted {key}={predictions[name][key]}, PyTorch says {actual}. "
                "Look again at section 1 (leaves) and section 3 (retain_grad)."
            )


def _plain_predictions(answer: object) -> dict[str, dict[str, bool]]:
    """Copies the answer into plain dicts and checks that every prediction is True or False.

    Any mapping is accepted (dict, OrderedDict, ...); the copy holds only what it stored,
    so == below compares what you predicted and nothing else.
    """
    from collections.abc import Mapping

    assert isinstance(answer, Mapping), f"return a dict, not {type(answer).__name__}"
    plain = {}
    for name, row in dict(answer).items():
        assert isinstance(row, Mapping), f"{name}: use a dict, not {type(row).__name__}"
        plain[name] = dict(row)
        assert set(plain[name]) == {"is_leaf", "has_grad_fn", "has_grad"}, (
            f"{name}: keys {sorted(plain[name])}"
        )
        assert all(type(value) is bool for value in plain[name].values()), f"{name}: use True/False"
    assert set(plain) == {"x", "w", "p", "m", "h", "s", "d", "loss"}, sorted(plain)
    return plain


predictions = _plain_predictions(predict_snippet())
# The example the exercise gives: a leaf you created with requires_grad=True.
_check_predictions(
    predictions, {"w": {"is_leaf": True, "has_grad_fn": False, "has_grad": True}}, ["w"]
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The snippet has no inputs: one case, the eight names it defines."""
    return [{"names": ["x", "w", "p", "m", "h", "s", "d", "loss"]}]


def observe(case):
    """Copies predict_snippet()'s answer into plain data: its types, names, keys and values."""
    from collections.abc import Mapping

    answer = predict_snippet()
    if not isinstance(answer, Mapping):
        return {"type": type(answer).__name__, "rows": None}
    rows = []
    for name, row in dict(answer).items():
        items = list(map(list, dict(row).items())) if isinstance(row, Mapping) else None
        rows.append({"name": name, "type": type(row).__name__, "items": items})
    return {"type": type(answer).__name__, "rows": rows}


### BEGIN JUDGE
def _snippet_truth(device: torch.device) -> dict[str, dict[str, bool]]:
    """Runs the snippet of Exercise 1 on device; returns what PyTorch says of each name."""
    x = torch.randn(3, device=device)
    w = torch.randn(3, device=device, requires_grad=True)
    p = nn.Parameter(torch.randn(3, device=device))
    m = x * 2
    h = w * m
    h.retain_grad()
    s = p[:2]
    d = w.detach()
    loss = h.sum() + s.sum()
    loss.backward()
    tensors = {"x": x, "w": w, "p": p, "m": m, "h": h, "s": s, "d": d, "loss": loss}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading .grad of a non-leaf warns
        return {
            name: {
                "is_leaf": t.is_leaf,
                "has_grad_fn": t.grad_fn is not None,
                "has_grad": t.grad is not None,
            }
            for name, t in tensors.items()
        }


def judge(seen, case):
    """The checks of _plain_predictions, then every name against the snippet run here."""
    assert seen["rows"] is not None, f"return a dict, not {seen['type']}"
    plain = {}
    for row in seen["rows"]:
        name = row["name"]
        assert row["items"] is not None, f"{name}: use a dict, not {row['type']}"
        plain[name] = {key: value for key, value in row["items"]}
        assert set(plain[name]) == {"is_leaf", "has_grad_fn", "has_grad"}, (
            f"{name}: keys {sorted(plain[name])}"
        )
        assert all(type(value) is bool for value in plain[name].values()), f"{name}: use True/False"
    assert set(plain) == set(case["names"]), sorted(plain)
    for device in devices():
        snippet = _snippet_truth(device)
        _check_predictions(plain, snippet, ["x", "w", "loss"])
        _check_predictions(plain, snippet, sorted(plain))


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2 — the gradient of an intermediate (2 points)
#
# Write `hidden_and_weight_grads(x, w, loss_fn)`.
# In one forward pass it computes `hidden = torch.tanh(x @ w)` and `loss = loss_fn(hidden)`.
# It calls `loss.backward()` once, and returns `(d loss / d hidden, w.grad)`.
# The tests call it with `squared_sum` (below) and with other losses you cannot know in advance.
# So let autograd compute `d loss / d hidden`: keep `hidden` in the graph and keep its gradient.
# A detached copy of `hidden` is a new leaf (section 1): it cuts `w` out of the graph.
#
# Example: `x = [[1., 0.]]`, `w = [[0.5], [2.0]]` and `squared_sum` give `hidden = tanh(0.5) = 0.4621`.
# Then `d loss / d hidden = 2 · hidden = [[0.9242]]`,
# and `w.grad = [[0.9242 · (1 − 0.4621²)], [0.]] = [[0.7269], [0.]]`.
# With `loss_fn = cubed_sum` instead, `d loss / d hidden = 3 · hidden² = [[0.6407]]`.
# Return both on the device of `x` and `w`.
# Leave `x` and the values of `w` as they were: only `w.grad` is yours to fill.


# %%
def squared_sum(hidden: torch.Tensor) -> torch.Tensor:
    """The example's loss: (hidden ** 2).sum(). Just run this cell."""
    return (hidden**2).sum()


def cubed_sum(hidden: torch.Tensor) -> torch.Tensor:
    """Another loss: (hidden ** 3).sum()."""
    return (hidden**3).sum()


# %% nbgrader={"grade_id": "q2-answer", "solution": true}
def hidden_and_weight_grads(
    x: torch.Tensor, w: torch.Tensor, loss_fn: Callable[[torch.Tensor], torch.Tensor] = squared_sum
) -> tuple[torch.Tensor, torch.Tensor]:
    """Backpropagates loss = loss_fn(tanh(x @ w)) once; returns d loss / d hidden and w.grad.

    Args:
        x: Inputs, shape (n, k); does not require grad.
        w: Weights, shape (k, m); a leaf that requires grad.
        loss_fn: Turns hidden, shape (n, m), into a scalar loss. Call it once.

    Returns:
        (the gradient of loss w.r.t. hidden = tanh(x @ w), shape (n, m); w.grad, shape (k, m)).
    """
    ### BEGIN SOLUTION
    hidden = torch.tanh(x @ w)
    hidden.retain_grad()  # before backward(): keep this non-leaf's gradient
    loss = loss_fn(hidden)
    loss.backward()
    return hidden.grad, w.grad
    ### END SOLUTION


# %% nbgrader={"grade_id": "q2-tests", "grade": true, "locked": true, "points": 2}
"""Checks both gradients on every device, after one forward pass and one backward().

Visible: the example with squared_sum and cubed_sum, by hand; x and w left as they were; the
results follow the inputs' device (checked on a GPU stand-in). Hidden: random inputs and losses.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


class _CountedLoss:
    """Wraps a loss function and counts how many times it is called."""

    def __init__(self, loss_fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        self.loss_fn, self.calls = loss_fn, 0

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.loss_fn(hidden)


def _check_grads(x, w, loss_fn, expected_dhidden, expected_dw, atol=1e-6) -> None:
    counted = _CountedLoss(loss_fn)
    kept = KeptInputs(x=x, w=w)
    dhidden, w_grad = hidden_and_weight_grads(x, w, counted)
    assert counted.calls == 1, f"loss_fn was called {counted.calls} times: one forward pass"
    assert_inputs_left_alone(kept.changes(), "hidden_and_weight_grads(x, w, loss_fn)")
    assert_grad_close(dhidden, expected_dhidden, name="d loss / d hidden", atol=atol)
    assert_grad_close(w.grad, expected_dw, name="w.grad", atol=atol)
    assert isinstance(w_grad, torch.Tensor) and torch.equal(w_grad, w.grad), (
        "the second value returned should be w.grad"
    )


for device in devices():
    x = torch.tensor([[1.0, 0.0]], device=device)
    w = torch.tensor([[0.5], [2.0]], device=device, requires_grad=True)
    dw = torch.tensor([[0.7269], [0.0]], device=device)
    _check_grads(x, w, squared_sum, torch.tensor([[0.9242]], device=device), dw, atol=1e-4)
    w = torch.tensor([[0.5], [2.0]], device=device, requires_grad=True)
    dw = torch.tensor([[0.6407 * (1 - 0.4621**2)], [0.0]], device=device)
    _check_grads(x, w, cubed_sum, torch.tensor([[0.6407]], device=device), dw, atol=1e-4)
on_gpu(
    hidden_and_weight_grads,
    torch.ones(2, 3),
    torch.ones(3, 2, requires_grad=True),
    squared_sum,
    name="hidden_and_weight_grads(x, w, squared_sum)",
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example with squared_sum and cubed_sum, then random inputs, dtypes and losses."""
    example = {"x": torch.tensor([[1.0, 0.0]]), "w": torch.tensor([[0.5], [2.0]]), "weights": None}
    cases = [{**example, "loss": loss} for loss in ("squared_sum", "cubed_sum")]
    for n, k, m, dtype in [
        (5, 3, 2, torch.float32),
        (1, 4, 1, torch.float32),
        (3, 2, 6, torch.float32),
        (4, 3, 2, torch.float64),
    ]:
        x = torch.randn(n, k, generator=rng, dtype=dtype)
        weights = torch.randn(n, m, generator=rng, dtype=dtype)
        for loss in ("squared_sum", "weighted_sum", "logsumexp"):
            w = torch.randn(k, m, generator=rng, dtype=dtype)
            cases.append({"x": x, "w": w, "weights": weights, "loss": loss})
    return cases


def hidden_loss(case):
    """The case's loss, a function of hidden (its weights follow hidden's device)."""
    weights = case["weights"]
    losses = {
        "squared_sum": lambda hidden: (hidden**2).sum(),
        "cubed_sum": lambda hidden: (hidden**3).sum(),
        "weighted_sum": lambda hidden: (hidden * weights.to(hidden.device)).sum(),
        "logsumexp": lambda hidden: torch.logsumexp(hidden.flatten() * 3.0, dim=0),
    }
    return losses[case["loss"]]


def observe(case):
    """Calls the answer on every device with a counted loss, then on a GPU stand-in."""
    seen = {}
    for device in devices():
        x = case["x"].to(device)
        w = case["w"].clone().to(device).requires_grad_()
        counted = _CountedLoss(hidden_loss(case))
        kept = KeptInputs(x=x, w=w)
        dhidden, returned = hidden_and_weight_grads(x, w, counted)
        seen[device.type] = {
            "calls": counted.calls, "dhidden": dhidden, "w_grad": w.grad, "returned": returned,
            "inputs_changed": kept.changes(),
        }  # fmt: skip
    try:
        on_gpu(
            hidden_and_weight_grads,
            case["x"],
            case["w"].clone().requires_grad_(),
            hidden_loss(case),
            name=f"hidden_and_weight_grads(x, w, {case['loss']})",
        )
        seen["gpu"] = None
    except AssertionError as error:
        seen["gpu"] = str(error)
    return seen


### BEGIN JUDGE
def _reference_grads(
    x: torch.Tensor, w: torch.Tensor, loss_fn
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients from a graph built here, on a fresh copy of w."""
    w_copy = w.detach().clone().requires_grad_()
    hidden = torch.tanh(x @ w_copy)
    (dhidden, dw) = torch.autograd.grad(loss_fn(hidden), [hidden, w_copy])
    return dhidden, dw


def _assert_seen_grad(seen, expected, *, name, device, atol) -> None:
    """assert_grad_close on what the probe saw: a plain tensor, on the run's device."""
    if isinstance(seen, TensorSeen):
        assert seen.cls in ("Tensor", "Parameter"), (
            f"{name} should be a torch.Tensor (or an nn.Parameter), not the subclass {seen.cls}."
        )
        assert seen.is_on(device), f"{name} is on {seen.device}, expected it on {device}."
        seen = seen.values
    assert_grad_close(seen, expected, name=name, atol=atol)


def judge(seen, case):
    """One forward pass; both gradients against autograd's, here; the second value is w.grad."""
    dhidden, dw = _reference_grads(case["x"], case["w"], hidden_loss(case))
    atol = 1e-5 if case["x"].dtype == torch.float32 else 1e-10
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        assert run["calls"] == 1, f"loss_fn was called {run['calls']} times: one forward pass"
        assert_inputs_left_alone(run["inputs_changed"], "hidden_and_weight_grads(x, w, loss_fn)")
        _assert_seen_grad(
            run["dhidden"], dhidden, name="d loss / d hidden", device=device, atol=atol
        )
        _assert_seen_grad(run["w_grad"], dw, name="w.grad", device=device, atol=atol)
        returned, w_grad = run["returned"], run["w_grad"]
        assert (
            isinstance(returned, TensorSeen)
            and returned.device == w_grad.device
            and returned.shape == w_grad.shape
            and torch.equal(returned.values, w_grad.values)
        ), "the second value returned should be w.grad"
    assert seen["gpu"] is None, seen["gpu"]


### END JUDGE
probe_and_judge("q2", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Rebinding a Parameter: `eta = eta * 2`
#
# Older posts warn: "don't assign a variable to itself".
# Here is what actually happens.
# We keep a second name, `parameter`, on the Parameter, to look at it afterwards.

# %%
torch.manual_seed(0)
eta = nn.Parameter(torch.rand(4))
parameter = eta  # a second name on the same Parameter
eta = eta * 2  # meant: "double eta"; does: bind the name eta to a new tensor
print(f"eta:       {type(eta).__name__}, is_leaf={eta.is_leaf}, grad_fn={eta.grad_fn.name()}")
print(f"parameter: {type(parameter).__name__}, is_leaf={parameter.is_leaf}")
assert type(eta) is torch.Tensor and not eta.is_leaf and isinstance(parameter, nn.Parameter)
draw(eta, names={"eta": eta, "parameter": parameter})

# %% [markdown]
# The drawing shows where the gradient will go.
# `eta` (green) is now the output of `MulBackward0`: no node will write its `.grad`.
# The `AccumulateGrad` one step down writes the `.grad` of the Parameter (blue).

# %%
eta = parameter = nn.Parameter(torch.rand(4))  # the cell above again, afresh
eta = eta * 2
eta.sum().backward()
with expect_warning(UserWarning, match="not a leaf") as caught:
    eta_grad = eta.grad  # the non-leaf: None, with the warning
print(f"eta.grad = {eta_grad}")
print(f"parameter.grad = {parameter.grad}")
assert eta_grad is None and len(caught) == 1
assert torch.equal(parameter.grad, torch.full((4,), 2.0))

# %% [markdown]
# The gradient was not lost: it landed on the Parameter.
# What was lost is your name for it.
# Without the second name, no name of yours points at the Parameter; only the graph still holds it (`eta.grad_fn.next_functions[0][0].variable`, shown below).
# And an optimiser handed the new `eta` refuses it:

# %%
with expect_error(ValueError, match="non-leaf"):
    torch.optim.SGD([eta], lr=0.1)
held = eta.grad_fn.next_functions[0][0].variable  # what the AccumulateGrad node fills
print(f"the graph still holds the Parameter: {held is parameter}")
assert held is parameter

# %% [markdown]
# The fix: keep the Parameter's name and give the result another one.

# %%
eta = nn.Parameter(torch.rand(4))
eta_doubled = eta * 2
eta_doubled.sum().backward()
print(f"eta.is_leaf={eta.is_leaf}, eta.grad={eta.grad}")
assert eta.is_leaf and torch.equal(eta.grad, torch.full((4,), 2.0))

# %% [markdown]
# Inside an `nn.Module`, the same rebinding of an attribute is refused outright.
# A registered Parameter can only be replaced by a Parameter (or `None`).


# %%
class Scaler(nn.Module):
    """A module with one registered Parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.eta = nn.Parameter(torch.ones(4))


scaler = Scaler()
with expect_error(TypeError, match="cannot assign"):
    scaler.eta = scaler.eta * 2

# %% [markdown]
# ### Exercise 3 — fix the rebinding bug (3 points)
#
# Just run the next cell: it defines a buggy function and shows what it returns.
# The function should wrap `values` in a Parameter,
# use it in `loss = loss_fn(scale * parameter)` and call `loss.backward()`,
# and return the Parameter with its gradient.


# %%
def scaled_parameter_grad_buggy(
    values: torch.Tensor, scale: float, loss_fn=squared_sum
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The buggy version: rebinds the Parameter's name."""
    eta = nn.Parameter(values.clone())
    eta = eta * scale
    loss = loss_fn(eta)
    loss.backward()
    return eta, eta.grad


with expect_warning(UserWarning, match="not a leaf") as caught:
    returned, returned_grad = scaled_parameter_grad_buggy(torch.tensor([1.0, -2.0, 3.0]), 2.0)
print(f"returned: {returned}")
print(f"gradient: {returned_grad}")
assert not returned.is_leaf and returned_grad is None and len(caught) == 1

# %% [markdown]
# Fix it in `scaled_parameter_grad` below: copy the body and change what needs changing.
# With `squared_sum`, by hand, $\text{loss} = \text{scale}^2 \sum_i \eta_i^2$.
# So the gradient is $2\,\text{scale}^2\,\eta$.
# For `values = [1., -2., 3.]` and `scale = 2.0`, return the Parameter holding `[1., -2., 3.]`
# and its `.grad`, `[8., -16., 24.]`.
# With `cubed_sum`, $\text{loss} = \text{scale}^3 \sum_i \eta_i^3$, and the same example gives `[24., 96., 216.]`.
# The tests also pass other losses, so let `backward()` compute the gradient.
# Leave the Parameter's values as they are (do not scale it in place), and leave `values` alone.
# The Parameter lives on the device of `values`.


# %% nbgrader={"grade_id": "q3-answer", "solution": true}
def scaled_parameter_grad(
    values: torch.Tensor,
    scale: float,
    loss_fn: Callable[[torch.Tensor], torch.Tensor] = squared_sum,
) -> tuple[nn.Parameter, torch.Tensor]:
    """Wraps values in a Parameter and backpropagates loss = loss_fn(scale * parameter).

    Args:
        values: The Parameter's initial values, any shape, on any device; not modified.
        scale: The factor applied to the Parameter inside the loss.
        loss_fn: Turns scale * parameter into a scalar loss.

    Returns:
        (parameter, parameter.grad): the leaf Parameter holding values (on values' device)
        and the gradient backward() stored on it.
    """
    ### BEGIN SOLUTION
    eta = nn.Parameter(values.clone())
    scaled = eta * scale  # a new name for the result; eta stays the Parameter
    loss = loss_fn(scaled)
    loss.backward()
    return eta, eta.grad
    ### END SOLUTION


# %% nbgrader={"grade_id": "q3-tests", "grade": true, "locked": true, "points": 3}
"""Checks that scaled_parameter_grad returns the leaf Parameter and the gradient stored on it.

Visible: the example on every device, with squared_sum and cubed_sum (a leaf nn.Parameter
still holding values, .grad by hand, values left as they were), and the Parameter on the device
of values (checked on a GPU stand-in). Hidden: random values, scales and losses.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_parameter_grad(values: torch.Tensor, scale: float, loss_fn, expected) -> None:
    before = values.clone()
    kept = KeptInputs(values=values)
    parameter, grad = scaled_parameter_grad(values, scale, loss_fn)
    assert_is_leaf(parameter, name="the returned parameter")
    assert isinstance(parameter, nn.Parameter), f"return the nn.Parameter, not a {type(parameter)}"
    assert parameter.device == values.device, f"the Parameter is on {parameter.device}"
    assert torch.equal(values, before), "values was modified"
    assert_inputs_left_alone(kept.changes(), "scaled_parameter_grad(values, ...)")
    assert torch.equal(parameter.detach(), before), "the Parameter should still hold values"
    assert_grad_close(parameter.grad, expected, name="parameter.grad")
    assert isinstance(grad, torch.Tensor) and torch.equal(grad, parameter.grad), (
        "return parameter.grad, the gradient stored on the Parameter"
    )


for device in devices():
    values = torch.tensor([1.0, -2.0, 3.0], device=device)
    _check_parameter_grad(values, 2.0, squared_sum, torch.tensor([8.0, -16.0, 24.0], device=device))
    values = torch.tensor([1.0, -2.0, 3.0], device=device)
    _check_parameter_grad(values, 2.0, cubed_sum, torch.tensor([24.0, 96.0, 216.0], device=device))
parameter, grad = on_gpu(
    scaled_parameter_grad, torch.ones(3), 2.0, squared_sum, name="scaled_parameter_grad"
)
assert isinstance(parameter, nn.Parameter) and parameter.is_leaf, "return the leaf nn.Parameter"


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example with both losses, then random values (several shapes, both dtypes), scales
    and losses."""
    cases = [
        {"values": torch.tensor([1.0, -2.0, 3.0]), "scale": 2.0, "loss": loss, "weights": None}
        for loss in ("squared_sum", "cubed_sum")
    ]
    for shape, scale, dtype in [
        ((2, 3), -0.5, torch.float32),
        ((5,), 3.0, torch.float32),
        ((1,), 1.0, torch.float32),
        ((3, 2), 1.5, torch.float64),
    ]:
        values = torch.randn(shape, generator=rng, dtype=dtype)
        weights = torch.randn(shape, generator=rng, dtype=dtype)
        cases += [
            {"values": values, "scale": scale, "loss": loss, "weights": weights}
            for loss in ("squared_sum", "weighted_sum", "cubed_sum")
        ]
    return cases


def hidden_loss(case):
    """The case's loss, a function of scale * parameter (its weights follow the device)."""
    weights = case["weights"]
    losses = {
        "squared_sum": lambda scaled: (scaled**2).sum(),
        "weighted_sum": lambda scaled: (weights.to(scaled.device) * scaled).sum(),
        "cubed_sum": lambda scaled: (scaled**3).sum(),
    }
    return losses[case["loss"]]


def observe(case):
    """Calls the answer on every device, then on a GPU stand-in; reads the Parameter and its .grad."""
    seen = {}
    for device in devices():
        values = case["values"].clone().to(device)
        kept = KeptInputs(values=values)
        parameter, returned = scaled_parameter_grad(values, case["scale"], hidden_loss(case))
        inputs_changed = kept.changes()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading .grad of a non-leaf warns
            grad = parameter.grad if isinstance(parameter, torch.Tensor) else None
        seen[device.type] = {
            "parameter": parameter, "grad": grad, "returned": returned, "values": values,
            "inputs_changed": inputs_changed,
        }  # fmt: skip
    try:
        result = on_gpu(
            scaled_parameter_grad,
            case["values"],
            case["scale"],
            hidden_loss(case),
            name="scaled_parameter_grad",
        )
        seen["gpu"] = {"failure": None, "result": result}
    except AssertionError as error:
        seen["gpu"] = {"failure": str(error), "result": None}
    return seen


### BEGIN JUDGE
def _expected_grad(case):
    """d loss / d parameter, by hand: the loss is a function of scale * parameter."""
    values, scale = case["values"], case["scale"]
    if case["loss"] == "squared_sum":
        return 2 * scale**2 * values
    if case["loss"] == "weighted_sum":
        return scale * case["weights"]  # whatever the parameter holds
    return 3 * scale**3 * values**2  # cubed_sum


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
    """A leaf Parameter on values' device, still holding values, whose .grad is returned."""
    values = case["values"]
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        parameter = run["parameter"]
        _assert_seen_leaf(parameter, "the returned parameter")
        assert parameter.cls == "Parameter", f"return the nn.Parameter, not a {parameter.cls}"
        assert parameter.is_on(device), f"the Parameter is on {parameter.device}"
        assert torch.equal(run["values"].values, values), "values was modified"
        assert_inputs_left_alone(run["inputs_changed"], "scaled_parameter_grad(values, ...)")
        assert parameter.shape == values.shape and torch.equal(parameter.values, values), (
            "the Parameter should still hold values"
        )
        _assert_seen_grad(run["grad"], _expected_grad(case), name="parameter.grad", device=device)
        returned, grad = run["returned"], run["grad"]
        assert (
            isinstance(returned, TensorSeen)
            and returned.device == grad.device
            and returned.shape == grad.shape
            and torch.equal(returned.values, grad.values)
        ), "return parameter.grad, the gradient stored on the Parameter"
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    result = gpu["result"]
    assert isinstance(result, list) and len(result) == 2, (
        "return (parameter, parameter.grad), also on a GPU"
    )
    parameter = result[0]
    assert (
        isinstance(parameter, TensorSeen) and parameter.cls == "Parameter" and parameter.is_leaf
    ), "return the leaf nn.Parameter"


### END JUDGE
probe_and_judge("q3", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - A tensor that requires grad is a leaf exactly when it has no `grad_fn`.
# - Tensors that do not require grad are leaves by convention; so are results computed under `torch.no_grad()`.
# - By default, `backward()` fills `.grad` on leaves only.
# - For an intermediate, call `retain_grad()` before `backward()`, pass it in `backward(inputs=...)`, or use `torch.autograd.grad`.
# - `eta = eta * 2` rebinds the name: the Parameter gets the gradient, you lose your name for it.
#   Give the result another name.
#
# Part 2, `01b_leaf_tensors`, goes on with section 5: a slice of a Parameter, then creating a tensor before wrapping it.
