# %% [markdown]
# # 03a · `.data` vs `.detach()` vs `no_grad` (part 1 of 2)
#
# Notebooks 02a (section 5) and 02b (sections 7 and 8) showed that a write through `.data` moves no version counter, so autograd cannot see it.
# This notebook is about that gap: writes autograd cannot see, where PyTorch gives no error at all and the gradient is silently wrong.
# The older posts it quotes are the Chinese blog posts and notebooks this course started from.
#
# **What you will learn**
#
# - what `.data` and `.detach()` have in common (memory, no `requires_grad`, no history), and the one thing that differs: the version counter;
# - why a write through `.data` (or numpy) gives a wrong gradient with no error, where the same write through `.detach()` or under `no_grad` raises;
# - that changing a leaf *before* it is used is harmless, and *after* it is used is not;
# - which tool is for what today: `torch.no_grad()` and `torch.inference_mode()`, `.detach()`, and why `.data` is never the answer.
#
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.
#
# Part 2 is `03b_data_vs_detach` (sections 6–7: the legacy idioms of old repositories, and why `total_loss += loss` keeps every step's graph alive).

# %% nbgrader={"grade_id": "setup", "locked": true}

import numpy as np
import torch
from torch import nn

from autograd_pitfalls import (
    compare,
    diagnose,
    draw,
    expect_error,
    expect_warning,
    explain,
    probe_and_judge,
    reset_torch_settings,
    track_inplace,
)

print(f"torch {torch.__version__} | numpy {np.__version__}")

# %% [markdown]
# ## 1. Two ways to take the values out of a graph
#
# Both `t.data` and `t.detach()` give a tensor with the values of `t` and without its history.
# Older posts list what they share, and it is all true on torch 2.13:
# the same memory as `t`, `requires_grad=False`, no `grad_fn`, and therefore a leaf.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
via_data = out.data
via_detach = out.detach()
for name, view in {"out.data": via_data, "out.detach()": via_detach}.items():
    print(
        f"{name:13} same memory: {view.data_ptr() == out.data_ptr()} | "
        f"requires_grad: {view.requires_grad} | grad_fn: {view.grad_fn} | is_leaf: {view.is_leaf}"
    )
    assert view.data_ptr() == out.data_ptr()
    assert not view.requires_grad and view.grad_fn is None and view.is_leaf

# %% [markdown]
# ## 2. The one difference: the version counter
#
# `out.detach()` shares the version counter of `out`, as a view does (notebook 02a, section 2).
# `out.data` gets a counter of its own.
# So a write through `.detach()` moves `out._version`; a write through `.data` does not.


# %%
def show_versions(when: str) -> None:
    """Prints the three version counters."""
    print(
        f"{when:24} out {out._version} | .data {via_data._version} "
        f"| .detach() {via_detach._version}"
    )


out = a.sigmoid()  # out and its two as in section 1, afresh: each counter starts at 0
via_data, via_detach = out.data, out.detach()
show_versions("start:")
via_detach.mul_(1)  # a write that changes no value still counts
show_versions("after detach().mul_(1):")
via_data.mul_(1)
show_versions("after data.mul_(1):")
assert out._version == via_detach._version == 1  # the detach write was counted on out
assert via_data._version == 1  # the data write moved only .data's own counter

# %% [markdown]
# Autograd decides whether a saved tensor is still valid by its version alone (with no saved-tensor hooks on: notebook 02a, section 5).
# That one difference decides whether a bad write is a loud error or a silent wrong gradient.

# %% [markdown]
# ## 3. The older posts' sigmoid example, both ways (a worked example)
#
# `out = a.sigmoid()`, `loss = out.sum()`.
# By hand, $\partial\,\text{loss} / \partial a_i = \sigma(a_i)\,(1 - \sigma(a_i))$.
# `SigmoidBackward0` computes it from its saved **output** $s = \sigma(a)$, as $s\,(1 - s)$.
# For $a = [1, 2, 3]$ that is about $[0.1966, 0.1050, 0.0452]$.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
true_grad = a.detach().sigmoid() * (1 - a.detach().sigmoid())  # derived by hand
print("true gradient:", true_grad)

# %% [markdown]
# First through `.data`: zero the output in place, then call `backward()`.
# The write is hidden from the counter, so `backward()` uses the zeros as $s$, and $0 \cdot (1 - 0) = 0$.
# No error, no warning: just a gradient of zeros.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
c = out.data
c.zero_()
out.sum().backward()  # no error ...
print("a.grad:", a.grad)
print(compare("a.grad", a.grad, true_grad))  # ... and a wrong gradient
assert torch.equal(a.grad, torch.zeros(3)) and not torch.allclose(a.grad, true_grad)

# %% [markdown]
# One of the older posts' notebooks shows this very cell failing with `Trying to backward through the graph a second time`, under the comment "should raise, and does not".
# That error has nothing to do with `.data`: it comes from running `backward()` a second time on the same `out`, as when a cell is run twice.

# %%
with expect_error(RuntimeError, match="Trying to backward through the graph a second time"):
    out.sum().backward()

# %% [markdown]
# Now the same write through `.detach()`: `out` moves to version 1, and `backward()` refuses.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
c = out.detach()
c.zero_()
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    out.sum().backward()
print("a.grad:", a.grad)
assert a.grad is None

# %% [markdown]
# An error is better than a wrong number: you learn that something is broken, and `diagnose` (below) finds the line.
# The fix is not to hide the write but to leave alone what autograd saved: write to a copy.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
c = out.detach().clone()  # its own memory and counter
c.zero_()
out.sum().backward()
print(compare("a.grad", a.grad, true_grad))
assert torch.allclose(a.grad, true_grad)

# %% [markdown]
# This check is what PyTorch's promise rests on ([In-place correctness checks](https://docs.pytorch.org/docs/stable/autograd.html#in-place-correctness-checks)): "if you're using in-place functions and not seeing any errors, you can be sure that the computed gradients are correct".
# For a tensor some node saved (with no saved-tensor hooks on), it holds for every write that moves its counter, and for no other: `.data` and numpy write the same memory without moving it, and step outside the promise.
# Here is the same zeroing made four ways, three of them on the saved `out` and one on a copy (notebook 02a, section 5 shows a fifth: a `torch.from_numpy` alias, which moves its own counter, not the saved one's).


# %%
def outcome(write) -> str:
    """Zeroes the saved output of a fresh sigmoid with write(out); what backward() then does."""
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    write(out)
    try:
        out.sum().backward()
    except RuntimeError as error:
        assert "expected version 0 instead" in str(error)
        return "a version error"
    return "no error, right gradient" if torch.allclose(a.grad, true_grad) else "no error, WRONG"


outcomes = {
    "out.detach().zero_()": outcome(lambda out: out.detach().zero_()),
    "out.detach().clone().zero_()": outcome(lambda out: out.detach().clone().zero_()),
    "out.data.zero_()": outcome(lambda out: out.data.zero_()),
    "out.detach().numpy().fill(0)": outcome(lambda out: out.detach().numpy().fill(0)),
}
for write, result in outcomes.items():
    print(f"{write:30} {result}")
assert list(outcomes.values()) == [
    "a version error",
    "no error, right gradient",
    "no error, WRONG",
    "no error, WRONG",
]

# %% [markdown]
# ### What `draw` and `diagnose` see
#
# Run both writes inside `track_inplace()`, which records every in-place write with its line.
# `diagnose` names the `.detach()` write: the node, the saved tensor, both versions and the line.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
with track_inplace() as log:
    out_detach = a.sigmoid()
    out_detach.detach().zero_()
    out_data = a.sigmoid()
    out_data.data.zero_()
loss_detach, loss_data = out_detach.sum(), out_data.sum()
report = diagnose(loss_detach, names={"a": a, "out": out_detach})
print(report)
[finding] = report.findings
[detach_write] = [write for write in log.writes if write.location == finding.line]
assert (finding.node, finding.saved, finding.name) == ("SigmoidBackward0", "result", "out")
assert detach_write.code == "out_detach.detach().zero_()"

# %% [markdown]
# The drawing shows the saved output in red, with both versions and the line of the write.

# %% nbgrader={"grade_id": "demo-draw-detach", "locked": true} tags=["grading-skip"]
draw(loss_detach, names={"a": a, "out": out_detach})

# %% [markdown]
# The `.data` write was made in the same block, and the log did record it.
# But the counter of `out_data` did not move, so nothing ties that write to the tensor `SigmoidBackward0` saved.
# `diagnose` finds nothing, and the drawing has no red: the graph looks healthy and `backward()` will give zeros.

# %% nbgrader={"grade_id": "demo-draw-data", "locked": true} tags=["grading-skip"]
print("writes recorded:", [write.code for write in log.writes])
assert [write.code for write in log.writes] == [
    "out_detach.detach().zero_()",
    "out_data.data.zero_()",
]
assert out_data._version == 0
assert not diagnose(loss_data)
print(diagnose(loss_data, names={"a": a, "out": out_data}))
draw(loss_data, names={"a": a, "out": out_data})

# %% [markdown]
# ## 4. Changing a leaf: before it is used, and after
#
# A leaf that requires grad refuses in-place writes (notebook 02a, section 3), so old posts change its values through `.data`, `.detach()` or under `torch.no_grad()`.
# *Before* the leaf is used, all three are harmless.
# Here is an older post's example: set `a` to 10 everywhere, then `loss = mean(a²)`.
# By hand, $\partial\,\text{loss} / \partial a_i = 2 a_i / 4 = a_i / 2 = 5$.


# %%
a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    a.fill_(10.0)


def set_to_ten(a: torch.Tensor, how: str) -> None:
    """Writes 10 into every element of the leaf a, in one of four ways."""
    if how == ".data":
        a.data.fill_(10.0)
    elif how == ".detach()":
        a.detach().fill_(10.0)
    elif how == "no_grad":
        with torch.no_grad():
            a[:] = 10.0
    elif how == "numpy":
        a.detach().numpy()[:] = 10.0  # the array shares the tensor's memory


for how in [".data", ".detach()", "no_grad"]:
    a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
    set_to_ten(a, how)  # before use
    (a * a).mean().backward()
    print(f"{how:10} a.grad: {a.grad} | still a leaf: {a.is_leaf} | version: {a._version}")
    assert torch.equal(a.grad, torch.full((4,), 5.0)) and a.is_leaf

# %% [markdown]
# *After* the leaf is used, the same writes behave differently.
# `MulBackward0` saved `a` for `a * a`; the gradient it should give is $a/2 = [5, 2.5, 1, 1.5]$, from the values the forward pass used.
# A write through `.detach()` or under `no_grad` is counted, and `backward()` raises.
# A write through `.data` is not counted: no error, and the gradient is computed from the new values.
# A write through numpy, to the array `.detach().numpy()` returns, is just as invisible: numpy writes the memory directly.
# An older post warns that changing a leaf after it is used makes backward raise: true of the `.detach()` and `no_grad` writes, not of the `.data` and numpy ones.

# %%
outcome = {}
for how in [".data", ".detach()", "no_grad", "numpy"]:
    a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
    intended = a.detach() / 2  # by hand, from the values the forward pass uses
    loss = (a * a).mean()
    set_to_ten(a, how)  # after use
    try:
        loss.backward()
        outcome[how] = "no error, " + ("correct" if torch.equal(a.grad, intended) else "WRONG")
        print(f"{how:10} version {a._version} | {outcome[how]:17} | a.grad: {a.grad}")
    except RuntimeError as error:
        outcome[how] = "raises"
        print(f"{how:10} version {a._version} | raises: {str(error)[:70]}...")
assert outcome == {
    ".data": "no error, WRONG",
    ".detach()": "raises",
    "no_grad": "raises",
    "numpy": "no error, WRONG",
}

# %% [markdown]
# Each of those outcomes comes from `MulBackward0` having saved `a`.
# When no node saved a tensor sharing its memory (its version counter included: notebook 02a, section 5), a write after use is harmless whichever way, counted or not.
# `a.sum()` saves nothing (notebook 02a, section 5): by hand its gradient is 1 for every element, whatever `a` holds.

# %%
for how in [".data", ".detach()", "no_grad", "numpy"]:
    a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
    loss = a.sum()  # SumBackward0 saves no tensor
    set_to_ten(a, how)  # after use
    loss.backward()
    print(f"{how:10} version {a._version} | a.grad: {a.grad}")
    assert torch.equal(a.grad, torch.ones(4))

# %% [markdown]
# So, plainly: **"no error" does not mean "correct gradient"**.
# One older post concludes the opposite ("if an in-place operation raised no error, the gradient is correct").
# That holds only for writes autograd can see, or to tensors no node saved (above); `.data` and numpy writes to a saved tensor are exactly the ones it cannot see.
#
# Even `numpy()` knows this: on a tensor that requires grad it refuses, and asks for `.detach()` first.
# The detached array still shares the memory (writes through it are the numpy case above).

# %%
a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
with expect_error(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
    a.numpy()
array = a.detach().numpy()
print(type(array).__name__, array, "| on the tensor's memory:", array.ctypes.data == a.data_ptr())
assert array.ctypes.data == a.data_ptr()

# %% [markdown]
# ### Exercise 1 — predict the outcome (2 points)
#
# Each snippet starts from `w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)` and ends with `loss.backward()`.
# Read them without running them:
#
# ```python
# # A
# loss = (w * w).sum()
# w.data.mul_(2)
#
# # B
# loss = (w * w).sum()
# with torch.no_grad():
#     w.mul_(2)
#
# # C
# w.detach().mul_(2)
# loss = (w * w).sum()
#
# # D
# loss = (w * 3).sum()
# w.detach().mul_(2)
#
# # E
# e = w.exp()
# loss = e.sum()
# e.detach().numpy()[:] = 0.0
#
# # F
# loss = (w + 1).pow(2).sum()
# w.data.mul_(2)
# ```
#
# For each, predict what `loss.backward()` does: `"raises"` (a `RuntimeError`), `"wrong"` (no error, but `w.grad` differs from the gradient of `loss` at the values the forward pass used), or `"correct"`.
# Return them from `predict_outcomes()` as a dict, for example `{"A": "correct", "B": "correct", ...}` with the six keys `"A"` to `"F"`.
# Ask of each write: did it happen before or after the use, does autograd see it (section 2), and did any node save the tensor it wrote (notebook 02a, section 5)?
# Nothing in this notebook runs the six snippets for you: predict them.
# The visible test checks the form of your answer and snippet B, which section 4 shows.
# The grader runs all six in its own process and compares.


# %% nbgrader={"grade_id": "q1-answer", "solution": true}
def predict_outcomes() -> dict[str, str]:
    """Returns your prediction for each snippet of Exercise 1.

    Returns:
        A dict from "A", ..., "F" to "raises", "wrong" or "correct".
    """
    ### BEGIN SOLUTION
    return {
        "A": "wrong",  # MulBackward0 saved w; the .data write is not counted
        "B": "raises",  # the no_grad write is counted: version 1, expected 0
        "C": "correct",  # before use: the forward pass uses the new values
        "D": "correct",  # w * 3 saves no tensor of w: nothing to go stale
        "E": "wrong",  # exp saves its output e; numpy zeroed it unseen
        "F": "correct",  # pow saved w + 1, a new tensor; w itself is not saved
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "q1-tests", "grade": true, "locked": true, "points": 2}
"""Checks predict_outcomes(): visible, its form and snippet B; the grader runs all six."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
predictions = predict_outcomes()
assert isinstance(predictions, dict), "predict_outcomes() should return a dict"
assert set(predictions) == set("ABCDEF"), f"expected the keys A to F, got {sorted(predictions)}"
for key, value in predictions.items():
    assert value in ("raises", "wrong", "correct"), (
        f"predictions[{key!r}] is {value!r}: use 'raises', 'wrong' or 'correct'"
    )
# Snippet B is section 4's no_grad write after use: backward() raises.
assert predictions["B"] == "raises", (
    f"snippet B raises, you predicted {predictions['B']!r}: a write under no_grad "
    "moves the version counter, and w was saved by w * w (section 4)."
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """One case: predict_outcomes() takes no input, and the six snippets are fixed."""
    return [{}]


def observe(case):
    """Calls predict_outcomes(); sends the dict's own entries, not what a subclass answers."""
    predictions = predict_outcomes()
    is_dict = isinstance(predictions, dict)
    return {
        "type": type(predictions).__name__,
        "is_dict": is_dict,
        "entries": [[key, value] for key, value in dict.items(predictions)] if is_dict else None,
    }


### BEGIN JUDGE
def run_snippet(key: str) -> str:
    """Runs snippet `key`; returns what backward() did: raises, wrong or correct."""
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    if key == "A":
        used = w.detach().clone()
        loss = (w * w).sum()
        w.data.mul_(2)
        intended = 2 * used
    elif key == "B":
        used = w.detach().clone()
        loss = (w * w).sum()
        with torch.no_grad():
            w.mul_(2)
        intended = 2 * used
    elif key == "C":
        w.detach().mul_(2)
        used = w.detach().clone()
        loss = (w * w).sum()
        intended = 2 * used
    elif key == "D":
        loss = (w * 3).sum()
        w.detach().mul_(2)
        intended = torch.full((3,), 3.0)
    elif key == "E":
        used = w.detach().clone()
        e = w.exp()
        loss = e.sum()
        e.detach().numpy()[:] = 0.0
        intended = used.exp()
    else:
        used = w.detach().clone()
        loss = (w + 1).pow(2).sum()
        w.data.mul_(2)
        intended = 2 * (used + 1)
    try:
        loss.backward()
    except RuntimeError:
        return "raises"
    return "correct" if torch.allclose(w.grad, intended) else "wrong"


def judge(seen, case):
    """The visible checks, then every snippet against run_snippet, run in this process."""
    assert seen["is_dict"], f"predict_outcomes() should return a dict, got {seen['type']}"
    predictions = dict(seen["entries"])
    assert set(predictions) == set("ABCDEF"), (
        f"expected the keys A to F, got {sorted(str(key) for key in predictions)}"
    )
    for key, value in predictions.items():
        assert value in ("raises", "wrong", "correct"), (
            f"predictions[{key!r}] is {value!r}: use 'raises', 'wrong' or 'correct'"
        )
    truth = {key: run_snippet(key) for key in "ABCDEF"}
    assert predictions["B"] == truth["B"], (
        f"snippet B {truth['B']}, you predicted {predictions['B']!r}: a write under no_grad "
        "moves the version counter, and w was saved by w * w (section 4)."
    )
    for key in "ACDEF":
        if predictions[key] != truth[key]:
            hint = (
                "no error does not mean a correct gradient: .data and numpy writes are not "
                "counted. " + explain("hidden-write")
                if truth[key] == "wrong"
                else "check whether a node saved the tensor that was written, and when."
            )
            raise AssertionError(
                f"snippet {key}: backward() gives {truth[key]!r}, you predicted "
                f"{predictions[key]!r}: {hint}"
            )


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Which tool for which job, today
#
# **`torch.no_grad()`** turns recording off for a block.
# Use it where you change parameters in place (initialisation, an optimiser step written by hand) and where you only evaluate.
# Inside it nothing builds a graph, and in-place writes to leaves are allowed *and counted*.
# By hand, one step of `w ← w − 0.1 · ∂ sum(w²)/∂w` from `w = [1, 1]` gives `1 − 0.1 · 2 = 0.8`.

# %%
w = torch.ones(2, requires_grad=True)
(w * w).sum().backward()
with torch.no_grad():
    w -= 0.1 * w.grad  # allowed: nothing is recorded; counted: version 0 -> 1
    evaluated = (w * w).sum()  # no graph
print(f"w: {w} | version: {w._version} | evaluated.grad_fn: {evaluated.grad_fn}")
assert torch.allclose(w.detach(), torch.full((2,), 0.8)) and w._version == 1 and w.is_leaf
assert evaluated.grad_fn is None and not evaluated.requires_grad

# %% [markdown]
# Without `torch.no_grad()`, `w -= 0.1 * w.grad` is refused: `w` is a leaf that requires grad (notebook 02a, section 3).
# `w = w - 0.1 * w.grad` runs, but it records the subtraction and rebinds the name `w` to its result, a non-leaf (notebook 01a, section 4).
# The next `backward()` then fills the `.grad` of the old leaf, and the new `w.grad` stays `None`.

# %%
w = torch.ones(2, requires_grad=True)
(w * w).sum().backward()
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    w -= 0.1 * w.grad
old = w
w = w - 0.1 * w.grad  # no error: a new tensor, made by a recorded operation
print(f"w: is_leaf={w.is_leaf}, grad_fn={w.grad_fn.name()}")
(w * w).sum().backward()
with expect_warning(UserWarning, match="not a leaf"):
    w_grad = w.grad
print("w.grad after the next backward():", w_grad)
print("the old leaf's .grad (2 from the first backward, plus 1.6):", old.grad)
assert not w.is_leaf and w.grad_fn.name() == "SubBackward0" and w_grad is None
assert torch.allclose(old.grad, torch.full((2,), 3.6))

# %% [markdown]
# `model.eval()` is not a replacement: it only switches layers such as dropout and batch norm to their evaluation behaviour.
# Autograd still records everything.

# %%
model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
model.eval()
output = model(torch.ones(1, 2))
print("after model.eval(): output.grad_fn =", output.grad_fn)
assert output.grad_fn is not None
with torch.no_grad():
    output = model(torch.ones(1, 2))
print("under torch.no_grad(): output.grad_fn =", output.grad_fn)
assert output.grad_fn is None

# %% [markdown]
# **`torch.inference_mode()`** is `no_grad` made stricter for pure inference: the tensors its ops create inside it (views of other tensors aside) do not even keep a version counter.
# The price, for these *inference tensors*: autograd cannot save one for backward, and it cannot be changed in place outside inference mode.
# Where no node needs to save it, it can still enter a graph: `w + features` saves nothing (notebook 02a, section 5), and `w.grad` comes out right.
# By hand, $\partial \sum (w + f) / \partial w = 1$, and $\partial \sum w f / \partial w = f = 3$.

# %%
w = torch.ones(2, requires_grad=True)
with torch.inference_mode():
    features = torch.ones(2) * 3
print("features.is_inference():", features.is_inference())
with expect_error(RuntimeError, match="Inference tensors do not track version counter"):
    version = features._version
(w + features).sum().backward()  # nothing saved: works
print("w + features: w.grad =", w.grad)
assert torch.equal(w.grad, torch.ones(2))
with expect_error(RuntimeError, match="Inference tensors cannot be saved for backward"):
    w * features  # MulBackward0 would save features
with expect_error(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
    features.add_(1)
w.grad = None
with torch.no_grad():
    features = torch.ones(2) * 3  # a normal tensor
(w * features).sum().backward()
print("made under no_grad instead: w * features: w.grad =", w.grad)
assert torch.equal(w.grad, torch.full((2,), 3.0))

# %% [markdown]
# **`.detach()`** cuts *one* tensor out of a graph that is still being built: for logging a value, for a target that must be treated as a constant, for a branch you do not want to differentiate through.
# Take $y = x \cdot \text{stop}(x)$ with $x = 3$: the detached factor is a constant $c = 3$, so $\partial y / \partial x = c = 3$, not $2x = 6$.

# %%
x = torch.tensor(3.0, requires_grad=True)
(x * x.detach()).backward()
print(compare("x.grad", x.grad, torch.tensor(3.0)))
assert x.grad.item() == 3.0

# %% [markdown]
# **`.data`**: nothing in new code needs it.
# To read values, `.detach()` gives the same tensor with the counter kept honest.
# To write values, `torch.no_grad()` keeps the tensor's identity and lets autograd see the write.
#
# | job | today |
# |---|---|
# | update or initialise parameters in place | `with torch.no_grad():` |
# | evaluate, no gradients needed | `with torch.no_grad():` or `torch.inference_mode()` (plus `model.eval()` for dropout and batch norm) |
# | log a value, use a value as a constant | `.detach()` (or `.item()` for one number) |
# | anything | never `.data` |

# %% [markdown]
# ## Summary
#
# - `.data` and `.detach()` share memory with the tensor, do not require grad and have no history; `.detach()` shares the version counter, `.data` does not.
# - A write through `.detach()` or under `no_grad` to a tensor autograd saved raises at `backward()`; the same write through `.data` or numpy gives a wrong gradient with no error. PyTorch's promise, no error means correct gradients, holds for a saved tensor only when every write to it moves its counter.
# - Before a leaf is used, changing it is harmless whichever way; a tensor that the node making it saved (the output of `exp`, notebook 02a section 5) counts as used from the start. After use, it depends on whether a node saved it or a tensor sharing its memory: if one did, a counted write raises and a hidden one gives a wrong gradient; if none did, the gradient stays right. To keep the old values and have new ones, write to a copy.
# - `draw` and `diagnose` see what the version counter sees: the `.detach()` write in red, the `.data` write not at all.
# - Today: `torch.no_grad()` for optimiser steps, initialisation and evaluation (`torch.inference_mode()` for pure inference); `.detach()` to log or to treat a value as a constant; `.data` never. `model.eval()` does not turn autograd off.
#
# Part 2, `03b_data_vs_detach`, goes on with section 6 (the legacy idioms of old repositories) and section 7 (`total_loss += loss`), and Exercises 2–4.
