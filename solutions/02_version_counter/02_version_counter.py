# %% [markdown]
# # 02 · In-place operations and the version counter
#
# ## What you will learn
# - What an in-place operation is, and how PyTorch counts them in `tensor._version`.
# - The two in-place writes autograd forbids: on a leaf that requires grad while autograd records, and on a tensor saved for backward (besides `out=` arguments of differentiable ops, refused while autograd records when an input or the output requires grad, and two writes to views it refuses: to the pieces of `unbind`, `split` or `chunk`, and to a view made under `no_grad`).
# - How to tell, by looking at what each node saved, when an in-place write is harmless.
# - Why the order of the lines matters, three ways to fix a version error, and the way to write to a leaf (`torch.no_grad()`).
# - How to initialise a parameter in place (`torch.no_grad()`, `nn.init`), and why `.data` is the wrong tool.
# - How `diagnose` and `track_inplace` name the node, the saved tensor and the line behind a version error, and what they cannot see.
# - How anomaly mode names the forward line behind a backward error.
# - What `Trying to backward through the graph a second time` means, and how to get two gradients right.
#
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.

# %% nbgrader={"grade_id": "setup", "locked": true}
import inspect
import time

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 (torch's documentation spells it so)

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
# ## 1. What an in-place operation is
#
# An in-place operation writes its result into the memory of an existing tensor instead of allocating a new one.
# The common spellings in PyTorch are: augmented assignment (`x += 1`), index assignment (`x[0] = 0`), methods ending in an underscore (`x.add_(1)`), and `out=` arguments.
# Some functions also write in place when asked (`F.relu(x, inplace=True)`) or on their own (notebook 05's `nn.Embedding(max_norm=...)`).
# `x = x + 1` is *not* one: it computes a new tensor and rebinds the name `x` to it.
# Just run this cell: `data_ptr()` is the address of the first element.

# %%
x = torch.zeros(3)
start = x.data_ptr()

x += 1  # augmented assignment
x[0] = 0  # index assignment
x.add_(1)  # trailing underscore
torch.mul(x, 2, out=x)  # out= argument
print("after four in-place writes:", x, "| same memory:", x.data_ptr() == start)
assert x.data_ptr() == start

x = x + 1  # out of place: a new tensor, the name x now points to it
print("after x = x + 1:           ", x, "| same memory:", x.data_ptr() == start)
assert x.data_ptr() != start

y = torch.tensor([-1.0, 2.0])
y_start = y.data_ptr()
F.relu(y, inplace=True)  # a function asked to write in place
print("after F.relu(y, inplace=True):", y, "| same memory:", y.data_ptr() == y_start)
assert y.tolist() == [0.0, 2.0] and y.data_ptr() == y_start

# %% [markdown]
# ## 2. The version counter
#
# Every tensor carries a counter, `t._version`, except *inference tensors*: those that ops allocate inside `torch.inference_mode()` (notebook 03 section 5).
# It starts at 0 and goes up by one with every in-place op; out-of-place operations leave it alone.
# One line can hold two: `t[0] += 1` is an `add_` into the view `t[0]`, then the assignment back (the cell shows it).
# It counts writes, not changes: a write that leaves every value as it was still counts.

# %%
t = torch.ones(4)
print("new tensor:          ", t._version)
t.add_(1)
print("after t.add_(1):     ", t._version)
t[0] = 5.0
print("after t[0] = 5.0:    ", t._version)
t.clamp_(min=0)  # every value is already >= 0: nothing changes, the write still counts
print("after t.clamp_(min=0):", t._version)
u = t * 2  # out of place: u is new (version 0), t is untouched
print("after u = t * 2:      t", t._version, "| u", u._version)
assert (t._version, u._version) == (3, 0)
t[0] += 1  # t[0].add_(1), then t[0] = that result: two in-place ops
print("after t[0] += 1:     ", t._version)
assert t._version == 5

# %% [markdown]
# A view (`t[:2]`, `t.view(...)`) shares memory with its base, and it also shares the base's version counter.
# A write through the view bumps the base's version, and a write to the base bumps the view's.
# `t.detach()` is not a view (`_is_view()` is False: it has no base), but it shares both too, the memory and the counter.
# That is how autograd notices a write to a saved tensor even when it is made through another name.

# %%
base = torch.zeros(4)
head = base[:2]  # a view: same memory, same counter
grid = base.view(2, 2)  # another view
alias = base.detach()  # not a view, but the same memory and the same counter
print("_is_view(): head", head._is_view(), "| grid", grid._is_view(), "| alias", alias._is_view())
assert head._is_view() and grid._is_view() and not alias._is_view() and alias._base is None
assert alias.data_ptr() == base.data_ptr()
print("start:              base", base._version, "head", head._version, "grid", grid._version)
head.add_(1)
print("after head.add_(1): base", base._version, "head", head._version, "grid", grid._version)
base.mul_(3)
print("after base.mul_(3): base", base._version, "head", head._version, "grid", grid._version)
alias.zero_()
print("after alias.zero_(): base", base._version, "| base is now", base)
assert base._version == head._version == grid._version == alias._version == 3

# %% [markdown]
# Some writes escape the counter: here, writing through `.data` (sections 5 and 7 show writes through numpy).
# `.data` is a legacy attribute that gives a tensor with the same memory but a counter of its own.
# Keep that in mind; sections 7 and 8 show why it matters, and notebook 03 compares `.data` and `.detach()` in depth.

# %%
base = torch.zeros(4)
base.data.add_(1)  # the values change ...
print(base, "| version:", base._version)  # ... but the counter does not move
assert base._version == 0 and base.sum().item() == 4.0

# %% [markdown]
# ## 3. Forbidden kind 1: an in-place write to a leaf that requires grad
#
# A leaf that requires grad (every `nn.Parameter` not frozen with `requires_grad=False`) is where `backward()` delivers a gradient.
# While grad mode is on, autograd records every differentiable op on a tensor that requires grad, in-place ones included, and an in-place op rewrites the history of the tensor it writes: the tensor becomes that op's output, with the op as its `grad_fn`.
# A leaf has no history to rewrite: it is the end of the graph, where `.grad` is filled.
# So, while grad mode records, autograd refuses an in-place write to such a leaf the moment it happens, not at `backward()`.
# First the rewrite, on a non-leaf `b`: after `b.add_(1)` its `grad_fn` is the add.

# %%
b = torch.ones(2, requires_grad=True) * 1
print("b.grad_fn before:", type(b.grad_fn).__name__)
b.add_(1)  # allowed: b is not a leaf; autograd records the write as b's new history
print("b.grad_fn after b.add_(1):", type(b.grad_fn).__name__)
assert b.grad_fn.name().startswith("Add")  # the node of the add (its exact name is torch's)

# %% [markdown]
# Now a fresh leaf, which has no `.grad` yet: each of the four spellings of section 1 that write into `a` in place is refused.
# (One older post quotes "has been used in an in-place operation"; torch 2.13 says "is being used".)

# %%
a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
print("a.grad before any write:", a.grad)
assert a.grad is None
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    a.add_(10.0)
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    a += 10.0
with expect_error(RuntimeError, match="a view of a leaf Variable that requires grad is being used"):
    a[0] = 0.0  # a[0] is a view of a
with expect_error(RuntimeError, match="out=... arguments don't support automatic differentiation"):
    torch.add(a, 1.0, out=a)
# out= of a differentiable op is refused for any tensor that requires grad, as an input or as the output:
with expect_error(RuntimeError, match="out=... arguments don't support automatic differentiation"):
    torch.add(a, 1.0, out=torch.zeros(4))  # the input requires grad
with expect_error(RuntimeError, match="out=... arguments don't support automatic differentiation"):
    torch.add(torch.ones(4), 1.0, out=a * 1)  # the output, a non-leaf, requires grad
# An op with no derivative takes it: argmax's result is an index, which no gradient flows through.
index = torch.argmax(a, out=torch.zeros((), dtype=torch.long))
print("torch.argmax(a, out=...):", index)
assert index.item() == 0 and not index.requires_grad

# %% [markdown]
# Two ways of writing are not refused, because they write through another tensor on `a`'s memory: `a.detach()` and `a.data`.
# Both are leaves that do not require grad, so the leaf check does not apply to them.
# The `.detach()` write still moves `a`'s counter (section 2); the `.data` write moves nothing.
# Notebook 03 is about the harm they do.
# (An older post offers both as one way to fill a leaf, beside `torch.no_grad()`; section 8 shows why `torch.no_grad()` is the one to use.)

# %%
a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)  # the a above, afresh
a.detach().add_(1.0)  # allowed: counted on a
print(a, "| version:", a._version)
a.data.add_(1.0)  # allowed: not counted
print(a, "| version:", a._version, "| is_leaf:", a.is_leaf)
assert a.tolist() == [12.0, 7.0, 4.0, 5.0] and a._version == 1 and a.is_leaf

# %% [markdown]
# Older posts also show `a[:] = 0` going through: `a` becomes a non-leaf with `grad_fn=<CopySlices>`, and `backward()` later fails with `leaf variable has been moved into the graph interior`.
# That is no longer true.
# On torch 2.13 `a[:] = 0` is refused on the spot with the same message as `a.add_()`, and `a` is left as it was: still a leaf, values and version unchanged.
# `backward()` through it then works and fills `a.grad`.

# %%
a = torch.tensor([10.0, 5.0, 2.0, 3.0], requires_grad=True)
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    a[:] = 0
print(a, "| is_leaf:", a.is_leaf, "| version:", a._version)
assert a.is_leaf and a._version == 0 and a.tolist() == [10.0, 5.0, 2.0, 3.0]

loss = (a * a).mean()  # d loss / d a = 2a / 4 = a / 2
loss.backward()
print("a.grad:", a.grad)
assert torch.equal(a.grad, a.detach() / 2)

# %% [markdown]
# The refusal is about recording, not about `.grad`.
# Under `torch.no_grad()` autograd records nothing, so the same write is allowed, even right after `backward()` filled `a.grad`.
# `a` stays a leaf, its version goes up, and `a.grad` keeps the gradient of the old values: that is exactly what an optimiser step does.

# %%
version, values = a._version, a.detach().clone()  # before the write (0 and [10, 5, 2, 3])
with torch.no_grad():
    a.add_(10.0)  # the write refused above, now under no_grad
print(a, "| is_leaf:", a.is_leaf, "| version:", version, "->", a._version, "| a.grad:", a.grad)
assert a.is_leaf and a._version == version + 1 and torch.equal(a.detach(), values + 10.0)
# still the gradient at the values backward() used, [10, 5, 2, 3]
assert torch.equal(a.grad, torch.tensor([5.0, 2.5, 1.0, 1.5]))

# %% [markdown]
# So, to initialise or update a parameter, write under `torch.no_grad()`: section 8 shows how.
#
# Two writes to views of a tensor that requires grad, leaf or not, are refused on the spot too.
# The pieces that `unbind`, `split` and `chunk` return are views of one base made by one call, and autograd refuses to record a write to any of them.
# Index the base instead (`b[0]` is a view of its own) or write to a clone of the piece.
# By hand, `loss = Σ b` with row 0 of `b = a · 1` doubled, so `a.grad` is 2 in row 0 and 1 in row 1.

# %%
a = torch.ones(2, 3, requires_grad=True)
b = a * 1  # a non-leaf
for first, _ in (b.unbind(0), b.split(1), b.chunk(2)):  # each returns two views of b
    with expect_error(
        RuntimeError, match="is the output of a function that returns multiple views"
    ):
        first.mul_(2)  # a write to the first piece
b[0].mul_(2)  # one view from indexing: allowed and recorded
b.sum().backward()
print("a.grad:", a.grad)
assert torch.equal(a.grad, torch.tensor([[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]]))

# %% [markdown]
# A view made under `torch.no_grad()` and written with grad mode on is refused as well: autograd cannot tell whether the write should be recorded.
# The message says the two fixes: view and write both inside the block (nothing recorded, as for the parameter above), or both outside (recorded).

# %%
b = torch.ones(3, requires_grad=True) * 1
with torch.no_grad():
    head = b[:2]  # a view, made while autograd records nothing
with expect_error(RuntimeError, match="A view was created in no_grad mode and is being modified"):
    head.mul_(2)
with torch.no_grad():
    head = b[:2]
    head.mul_(2)  # both inside: allowed, not recorded
print("b:", b.detach(), "| grad_fn:", b.grad_fn.name())
assert b.tolist() == [2.0, 2.0, 1.0] and b.grad_fn.name().startswith("Mul")

# %% [markdown]
# ## 4. Forbidden kind 2: modifying a tensor saved for backward
#
# To compute gradients, many operations keep some of their inputs or outputs: the *saved tensors*.
# Take `f = d @ w2` with `d` of shape (1, 1): by hand, `df/dw2 = d` and `df/dd = w2`, so the node keeps both `d` and `w2`.
# With `x = [[1, 2]]`, `w1 = [[2], [1]]`, `w2 = [3]`: `d = 1·2 + 2·1 = 4`, so `w2.grad` should be 4.
# The drawing shows each saved tensor in orange, with the version it had when saved and the version it has now.

# %%
x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)

d = x @ w1  # (1, 1): [[4.]]
f = d @ w2  # (1,): [12.]
names = {"x": x, "w1": w1, "w2": w2, "d": d, "f": f}
print("d =", d.item(), "| f =", f.item(), "| d._version =", d._version)
draw(f, names=names)

# %% [markdown]
# Now write to `d` in place after `f` was computed.
# The node that saved `d` recorded version 0; `d` is now at version 1.
# The saved tensor turns red: `backward()` would have to use a value that is gone.

# %%
d = x @ w1  # d and f as above, afresh: each run of this cell writes once to a new d
f = d @ w2
d[:] = 0
names = {"x": x, "w1": w1, "w2": w2, "d": d, "f": f}
print("d =", d.item(), "| d._version =", d._version)
draw(f, names=names)

# %% [markdown]
# `backward()` checks every saved tensor's version before using it, and refuses (unless saved-tensor hooks such as `torch.autograd.graph.save_on_cpu()` are on: autograd then checks no version, as the end of section 5 shows).
# The `[...]` part describes the stale tensor: its type and shape, and the node autograd now holds for it, the record of `d[:] = 0`.
# The message names that node without `Backward`: `Fill3` for `d.grad_fn.name()`, `FillBackward3`.

# %%
fill_node = d.grad_fn.name()  # the record of d[:] = 0
print("d.grad_fn.name():", fill_node)
stale = f"{fill_node.replace('Backward', '')}, is at version 1; expected version 0 instead"
with expect_error(RuntimeError, match=stale):
    f.backward()

# %% [markdown]
# Without this check, `w2.grad` would silently come out from the new `d` instead of 4: section 7 shows it with a ×10 write autograd cannot see (`w2.grad = 40`).
# That is the whole point of the version counter: a wrong gradient becomes a loud error.

# %% [markdown]
# ### Diagnosing it
#
# The error gives a shape and two versions, but not which tensor of your code it is, nor which line wrote to it.
# `diagnose(f)` reads the graph below `f`, without calling `backward()`, and says in words what `backward()` will hit.
# It also names the line of the write when that write ran inside `with track_inplace() as log:`, a block that records every in-place write with its line.
# It looks at every op that runs inside it, and so slows each one down (measured below): wrap the code you are debugging, not a training run.
# So run the three lines again, inside that block.

# %%
with track_inplace() as log:  # records every in-place write, with its line
    d = x @ w1
    f = d @ w2
    d[:] = 0
names = {"x": x, "w1": w1, "w2": w2, "d": d, "f": f}
report = diagnose(f, names=names)  # reads the graph; backward() is not called
print(report)

[finding] = report.findings
[write] = log.writes
assert (finding.kind, finding.node, finding.saved, finding.name) == (
    "stale-saved-tensor",
    f.grad_fn.name(),  # the node of f = d @ w2, read live
    "self",
    "d",
)
assert (finding.saved_version, finding.current_version) == (0, 1)
assert finding.line == write.location and write.code == "d[:] = 0"

# %% [markdown]
# What the block costs: the same 601 small ops (301 multiplications and 300 additions), timed outside it and inside it (the fastest of five runs each).
# The cell only prints the figures of the machine it runs on: a timing is measured, never asserted.


# %% nbgrader={"grade_id": "demo-tracking-cost", "locked": true} tags=["grading-skip"]
def small_ops() -> torch.Tensor:
    y = x * 1
    for _ in range(300):
        y = y * 1.0001 + 0.0
    return y


def fastest_of_five(run) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


plain = fastest_of_five(small_ops)
with track_inplace():
    tracked = fastest_of_five(small_ops)
print(f"per op: {plain / 601 * 1e6:.1f} µs, inside track_inplace(): {tracked / 601 * 1e6:.1f} µs")

# %% [markdown]
# Read it against the error.
# `MvBackward0` is the node of `f = d @ w2` (a matrix times a vector), and `self` is its first input, `d`.
# It was saved at version 0 and is now at version 1, the two numbers of the error message.
# The write is `d[:] = 0`, recorded as `fill_`, the op it runs.
# In a notebook the file name is a temporary file Jupyter made for the cell; the code after it is your line.
#
# The fix: leave the saved `d` alone and write to a copy (section 7 shows three fixes).
# `diagnose` then finds nothing, and `backward()` gives `w2.grad = 4`.

# %%
d = x @ w1
f = d @ w2
d = d.clone()  # a new tensor with its own memory and counter; f's graph keeps the old d
d[:] = 0
assert not diagnose(f)
w2.grad = None  # backward() adds into .grad (section 10): start empty, as on the first run
f.backward()
print("w2.grad:", w2.grad)
assert torch.equal(w2.grad, torch.tensor([4.0]))

# %% [markdown]
# ## 5. When an in-place write is harmless
#
# Autograd only checks the tensors that some node saved.
# For built-in ops, and custom `autograd.Function`s that keep their tensors with `ctx.save_for_backward`, a write to a tensor that shares no version counter with a saved tensor raises nothing, and the gradient stays correct. Sharing a counter (section 2) means being the saved tensor, its base, another view of that base, or a `.detach()` of one of them: an example below shows a write to an unsaved view that still raises.
# (A custom Function that keeps a tensor another way is not checked: the end of this section shows it.)
# To predict which case you are in, ask of every op the tensor fed: does its backward need that value?
# Which values a node saves is a fact about each op, and one you can check: a node keeps its saved tensors in its `_saved_*` attributes, and `draw` shows them in orange.
# Some common ones:
#
# | op | by hand | saves |
# |---|---|---|
# | `b + c`, `b - c`, `b.sum()` | derivative 1, no value needed | nothing |
# | `b * c` | `d/db = c`, `d/dc = b` | `c` if `b` requires grad, `b` if `c` does (both, when both do) |
# | `b ** 2` | `2b` | its input |
# | `b.exp()`, `b.sigmoid()`, `b.relu()` | expressed with the output | its **output** |
#
# Check the table:

# %%
b = torch.ones(2, requires_grad=True) * 1  # two non-leaf tensors
c = torch.ones(2, requires_grad=True) * 1
ops = {
    "b + c": b + c,
    "b - c": b - c,
    "b.sum()": b.sum(),
    "b * c": b * c,
    "b ** 2": b**2,
    "b.exp()": b.exp(),
    "b.sigmoid()": b.sigmoid(),
    "b.relu()": b.relu(),
}
saved_by = {}
for text, out in ops.items():
    node = out.grad_fn
    attributes = [name for name in dir(node) if name.startswith("_saved_")]
    saved_by[text] = [
        name.removeprefix("_saved_")
        for name in attributes
        if isinstance(getattr(node, name), torch.Tensor)  # skip sizes, scalars, alpha
    ]
    print(f"{text:12} {type(node).__name__:18} saves: {saved_by[text] or 'nothing'}")
assert saved_by["b + c"] == saved_by["b - c"] == saved_by["b.sum()"] == []
assert saved_by["b * c"] == ["other", "self"] and saved_by["b ** 2"] == ["self"]
assert saved_by["b.exp()"] == saved_by["b.sigmoid()"] == saved_by["b.relu()"] == ["result"]

# %% [markdown]
# Above, `b` and `c` both require grad, so `b * c` saved both.
# When `c` does not, `d/dc` is never computed, so `b` is not saved (`_saved_self` is `None`): writing to `b` after `b * c` is then harmless.
# By hand, `loss = Σ a·c`, so `a.grad = c = [3, 3]`.

# %%
a = torch.ones(2, requires_grad=True)
b = a * 1  # requires grad
c = torch.full((2,), 3.0)  # does not
product = b * c
node = product.grad_fn
print(
    type(node).__name__,
    "| _saved_self (b):",
    node._saved_self,
    "| _saved_other (c):",
    node._saved_other,
)
assert node._saved_self is None and torch.equal(node._saved_other, c)
loss = product.sum()
b.add_(100.0)  # b is at version 1, but no node saved it
assert not diagnose(loss)
loss.backward()
print("a.grad:", a.grad)
assert torch.equal(a.grad, torch.full((2,), 3.0))

# %% [markdown]
# "No node saved it" has to hold for the counter, not only for the tensor.
# Below, the node of `head * head` saves the view `head = b[:1]` alone; the write goes to `b[1:]`, which no node saved and whose values `head` does not even hold.
# But `b[1:]` shares `b`'s counter, and so does `head`: the write moves the version the node checks, and `backward()` raises.

# %%
a = torch.ones(3, requires_grad=True)
b = a * 1
head = b[:1]
loss = (head * head).sum()  # saves head, a view of b
b[1:].mul_(2)  # not saved, not head's values, but head's counter
print("head._version after the write to b[1:]:", head._version)
assert head._version == 1
with expect_error(RuntimeError, match="modified by an inplace operation"):
    loss.backward()

# %% [markdown]
# Not every op leaves out what it will not need, so check the op rather than reason it out.
# A convolution with a frozen weight needs only the weight for its input's gradient, and still saves its input too: writing to that input after the convolution makes `backward()` raise.

# %%
a = torch.randn(1, 1, 5, requires_grad=True)
signal = a * 1  # requires grad
kernel = torch.randn(1, 1, 3)  # frozen: no gradient for it is ever computed
out = F.conv1d(signal, kernel)
node = out.grad_fn
saved = [name for name in dir(node) if isinstance(getattr(node, name, None), torch.Tensor)]
print(type(node).__name__, "saves:", [name.removeprefix("_saved_") for name in saved])
assert node._saved_input is not None and "_saved_input" in saved
signal.add_(1.0)  # the input, written after the convolution
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    out.sum().backward()

# %% [markdown]
# First the failing case, from an older post: `(b * b).mean()` saves `b`, so writing to `b` afterwards breaks `backward()`.
# The code runs inside `track_inplace()`, so the drawing also names the line of the write.

# %%
a = torch.tensor([1.0, 3.0], requires_grad=True)
with track_inplace() as log:
    b = a + 2
    loss = (b * b).mean()
    b[0] = 1000.0
draw(loss, names={"a": a, "b": b, "loss": loss})

# %%
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    loss.backward()

# %% [markdown]
# `diagnose` finds `b` twice: `MulBackward0` saved both factors, `self` and `other`, and both are `b`.
# As the last expression of a cell, a report shows as HTML: the findings, then the graph with the culprit in red.

# %%
report = diagnose(loss, names={"a": a, "b": b, "loss": loss})
[write] = log.writes
mul_node = loss.grad_fn.next_functions[0][0].name()  # the node of b * b, read live
assert [(finding.node, finding.saved) for finding in report.findings] == [
    (mul_node, "other"),
    (mul_node, "self"),
]
assert all(finding.line == write.location for finding in report.findings)
assert write.code == "b[0] = 1000.0"
report

# %% [markdown]
# The report's advice fits: build the new `b` out of place, here with `torch.cat`, and the graph keeps the old one.
# By hand, `loss = mean(b²)` with `b = a + 2`, so `a.grad = 2b / 2 = b = [3, 5]`.

# %%
a = torch.tensor([1.0, 3.0], requires_grad=True)
b = a + 2
loss = (b * b).mean()
b = torch.cat([torch.tensor([1000.0]), b[1:]])  # a new tensor; the saved b stays at version 0
assert not diagnose(loss)
loss.backward()
print("a.grad:", a.grad, "| b:", b)
assert torch.equal(a.grad, torch.tensor([3.0, 5.0]))

# %% [markdown]
# Now the harmless case: `c = b + 1` and `loss = c.sum()`.
# Neither `+` nor `sum` needs a value for its backward, so nothing is saved, nothing can turn red, and writing to `c` is harmless.
# `diagnose` agrees: it reports nothing.
# By hand, `loss = Σ (a + 3)`, so `a.grad = [1, 1]` whatever `c` holds afterwards.

# %%
a = torch.tensor([1.0, 3.0], requires_grad=True)
b = a + 2
c = b + 1
loss = c.sum()
c[0] = 1000.0  # c is at version 1, but no node saved it
print("c._version:", c._version, "| loss:", loss.item())
assert not diagnose(loss)
draw(loss, names={"a": a, "b": b, "c": c, "loss": loss})

# %%
a.grad = None  # backward() adds into .grad (section 10): start empty, as on the first run
loss.backward()
print("a.grad:", a.grad)
assert torch.equal(a.grad, torch.ones(2))

# %% [markdown]
# The last row of the table is the subtle one: `exp` saves its output, not its input.
# Writing to the input of `exp` after the call is harmless; writing to its output is not.

# %%
a = torch.tensor([0.0, 1.0], requires_grad=True)
b = a * 1  # a non-leaf copy of a, so that we may write to it
e = b.exp()  # ExpBackward0 keeps e (d exp(b)/db = exp(b) = e), not b
b.add_(100.0)  # harmless: nobody saved b
e.sum().backward()
print("a.grad:", a.grad, "| exp(a):", a.detach().exp())
assert torch.allclose(a.grad, a.detach().exp())

e = (a * 1).exp()
e.mul_(2)  # e is saved by its own node
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    e.sum().backward()

# %% [markdown]
# No error means the gradient is right for the values the forward pass used, provided every write moved the saved tensor's version counter and every node kept its tensors through autograd (built-in ops, `save_for_backward`, and no saved-tensor hooks).
# A write through `.data` (section 2) moves none: `backward()` raises nothing and the gradient is silently wrong.
# Here is the failing `exp` case again, with the write made through `.data`: by hand `a.grad` should be `exp(a)`; it comes out as `2 exp(a)`.

# %%
a = torch.tensor([0.0, 1.0], requires_grad=True)
e = (a * 1).exp()
e.data.mul_(2)  # the same write, hidden from the counter
e.sum().backward()  # no error ...
print("a.grad:", a.grad, "| exp(a):", a.detach().exp(), "<- wrong, and no error")
assert torch.allclose(a.grad, 2 * a.detach().exp())

# %% [markdown]
# A write through a tensor that shares the memory but not the counter (`.data`, `torch.from_numpy(t.numpy())`) moves only its own counter, not the saved one's.
# `torch.from_numpy` of the saved tensor's numpy array is such a tensor: a counter moves, and the gradient is just as silently wrong.

# %%
a = torch.tensor([0.0, 1.0], requires_grad=True)
e = (a * 1).exp()
alias = torch.from_numpy(e.detach().numpy())  # the same memory, with a counter of its own
alias.mul_(2)
print("alias._version:", alias._version, "| e._version (the saved one):", e._version)
e.sum().backward()  # no error ...
print("a.grad:", a.grad, "| exp(a):", a.detach().exp(), "<- wrong, and no error")
assert alias._version == 1 and e._version == 0
assert torch.allclose(a.grad, 2 * a.detach().exp())

# %% [markdown]
# A custom `autograd.Function` that keeps its input as a plain attribute (`ctx.x = x`) instead of `ctx.save_for_backward(x)` escapes the check even when the write moves the counter: autograd recorded no version for `ctx.x`.
# By hand `a.grad` should be `2a`; after a ×10 write to the input it comes out as `20a`.


# %%
class SquareKeptOnCtx(torch.autograd.Function):
    """x ** 2, with x kept for backward as ctx.x: the pitfall, not the way to write one."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.x = x  # not ctx.save_for_backward(x): no version is recorded
        return x * x

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return 2 * ctx.x * grad


a = torch.tensor([1.0, 2.0], requires_grad=True)
b = a * 1
loss = SquareKeptOnCtx.apply(b).sum()
b.mul_(10)  # b's counter moves: 0 -> 1
loss.backward()  # no error ...
print("b._version:", b._version, "| a.grad:", a.grad, "| 2a:", 2 * a.detach(), "<- wrong")
assert b._version == 1 and torch.equal(a.grad, 20 * a.detach())

# %% [markdown]
# Saved-tensor hooks escape the check too: under `torch.autograd.graph.saved_tensors_hooks` (and `save_on_cpu()`, built on them) a node keeps what your pack function returns, and autograd checks no version.
# On the CPU, `save_on_cpu()` keeps the tensor itself, so a write after the forward pass raises nothing and the gradient is wrong.

# %%
a = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.autograd.graph.save_on_cpu():
    b = a * 1
    loss = (b * b).sum()  # the node of b * b saves b, through the hooks
b.mul_(10)  # b's counter moves: 0 -> 1
loss.backward()  # no error ...
print("b._version:", b._version, "| a.grad:", a.grad, "| 2a:", 2 * a.detach(), "<- wrong")
assert b._version == 1 and torch.equal(a.grad, 20 * a.detach())

# %% [markdown]
# Sections 7 and 8 come back to such hidden writes.
# Even without them, "no error" says nothing about whether the values you keep using afterwards are the ones you meant: `loss` above was computed before `c[0] = 1000.0` and does not change with it.

# %% [markdown]
# ### Exercise 1 — predict the versions (2 points)
#
# Read this code without running it:
#
# ```python
# x = torch.ones(3, requires_grad=True)
# a = x * 2
# head = a[:2]
# head.mul_(3)
# b = a.exp()
# c = a + 1
# c.mul_(2)
# loss = (b * c).sum()
# a.add_(1)
# ```
#
# Predict `a._version`, `head._version`, `b._version` and `c._version` after the last line, and whether `loss.backward()` would then raise.
# Return them from `predict_versions()` as a dict, for example `{"a": 0, "head": 0, "b": 0, "c": 0, "backward_raises": False}` (ints and a bool).
# Use the section 2 rule for views and the table of section 5 for what each node saved.
# The test runs the code live and compares.


# %% nbgrader={"grade_id": "q1-answer", "solution": true}
def predict_versions() -> dict[str, int | bool]:
    """Returns your predictions for the code of Exercise 1.

    Returns:
        A dict with keys "a", "head", "b", "c" (each tensor's ``_version`` after the
        last line, an int) and "backward_raises" (a bool: would ``loss.backward()`` raise).
    """
    ### BEGIN SOLUTION
    return {
        "a": 2,  # head.mul_(3) writes through a view of a, then a.add_(1)
        "head": 2,  # a view shares its base's counter
        "b": 0,  # never written
        "c": 1,  # c.mul_(2), before loss used it
        "backward_raises": False,  # a is saved by nobody: exp saved its output b
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "q1-tests", "grade": true, "locked": true, "points": 2}
"""Checks the predictions of predict_versions() against the code of Exercise 1, run live."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
predictions = predict_versions()
assert isinstance(predictions, dict), "predict_versions() should return a dict"
assert set(predictions) == {"a", "head", "b", "c", "backward_raises"}, (
    f"expected the keys a, head, b, c, backward_raises; got {sorted(predictions)}"
)

x = torch.ones(3, requires_grad=True)
a = x * 2
head = a[:2]
head.mul_(3)
b = a.exp()
c = a + 1
c.mul_(2)
loss = (b * c).sum()
a.add_(1)
truth = {"a": a._version, "head": head._version, "b": b._version, "c": c._version}
try:
    loss.backward()
    truth["backward_raises"] = False
except RuntimeError:
    truth["backward_raises"] = True

assert predictions["head"] == truth["head"], (
    f"head._version is {truth['head']}, you predicted {predictions['head']}: "
    "a view shares its base's version counter (section 2)."
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """One case: the code of Exercise 1 has no inputs to draw."""
    return [{"exercise": 1}]


def observe(case):
    """Calls predict_versions(); returns whether it is a dict, its keys and its values.

    The values cross as data: an int stays an int and a bool a bool (an IntEnum is its int,
    NumPy's int64 and bool_ Python's int and bool).
    """
    predictions = predict_versions()
    if not isinstance(predictions, dict):
        return {"is_dict": False}
    predictions = dict(predictions)
    return {
        "is_dict": True,
        "keys": [key if isinstance(key, str) else repr(key) for key in predictions],
        "values": {key: value for key, value in predictions.items() if isinstance(key, str)},
    }


### BEGIN JUDGE
def _versions_of_exercise_1():
    """Runs the code of Exercise 1 here: each tensor's _version, and whether backward raises."""
    x = torch.ones(3, requires_grad=True)
    a = x * 2
    head = a[:2]
    head.mul_(3)
    b = a.exp()
    c = a + 1
    c.mul_(2)
    loss = (b * c).sum()
    a.add_(1)
    truth = {"a": a._version, "head": head._version, "b": b._version, "c": c._version}
    try:
        loss.backward()
        truth["backward_raises"] = False
    except RuntimeError:
        truth["backward_raises"] = True
    return truth


def judge(seen, case):
    """The predictions against the versions of the code run here; ints and a bool."""
    truth = _versions_of_exercise_1()
    assert seen["is_dict"], "predict_versions() should return a dict"
    assert set(seen["keys"]) == set(truth), (
        f"expected the keys a, head, b, c, backward_raises; got {sorted(seen['keys'])}"
    )
    predictions = seen["values"]
    types = {key: type(value).__name__ for key, value in predictions.items()}
    for key in ("head", "a", "b", "c"):  # first: a value of another type reads oddly below
        assert types[key] == "int", f"predictions[{key!r}] should be an int"
    assert predictions["head"] == truth["head"], (
        f"head._version is {truth['head']}, you predicted {predictions['head']}: "
        "a view shares its base's version counter (section 2)."
    )
    for key in ("head", "a", "b", "c"):
        assert predictions[key] == truth[key], (
            f"{key}._version is {truth[key]}, you predicted {predictions[key]}: "
            "count the in-place writes to the tensor and to its views (section 2)."
        )
    assert types["backward_raises"] == "bool", "backward_raises should be a bool"
    # One whole sentence per outcome (not a fragment in one): each is translated whole.
    if truth["backward_raises"]:
        assert predictions["backward_raises"], (
            "loss.backward() raises: only tensors some node saved are checked; "
            "exp saves its output (section 5)."
        )
    else:
        assert not predictions["backward_raises"], (
            "loss.backward() does not raise: only tensors some node saved are checked; "
            "exp saves its output (section 5)."
        )


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Order matters
#
# The same three lines as in section 4, with the write moved before the use, run without error.
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
# `d *= 10` after `f = d @ w2` raises, as in section 4.
# Each of the three fixes below gives the intended gradients, checked against the hand-derived ones.


# %%
def fresh_forward() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Returns (w1, w2, d, f) for the example of sections 4 and 6, built from scratch."""
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
# Leaves, the case of section 3, take another way: write under `torch.no_grad()`, before the leaf is used.
# That is parameter initialisation (and the optimiser's update step), next section.
#
# Three "fixes" to avoid.
# `d.data *= 10` silences the error and gives a wrong gradient (`w2.grad = 40`), because autograd no longer sees the write.
# `diagnose` cannot see it either, even under `track_inplace()`: it reads the same version counters, and `d._version` stays 0.
# A write through numpy (`d.detach().numpy()`) is just as invisible: numpy writes the memory directly.
# Version tracking cannot see such writes, so "nothing found" never rules them out; its own message says so.
# `d.detach().mul_(10)` does not even silence the error: a detached tensor shares the counter (section 2).

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
# The tests also run your function on the course's stand-in for a GPU (notebook 01, section 6): a tensor it builds without `device=` fails there, as on a GPU; the example after the tests shows one.


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
# A parameter that is not frozen is a leaf that requires grad, so `w.normal_()` is refused (section 3).

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
# `diagnose(f)` (section 4) says more, before `backward()` is called: besides the node, the saved tensor (`self`, that is `d`), its two versions, and, under `track_inplace()`, the line of the write.
# `draw(f)` shows the same in red.

# %%
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

# %% [markdown]
# Anomaly mode checks every gradient for NaN by reading its values (notebook 06, section 7, shows it finding one).
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
print("nodes:", nodes)  # neither saves a tensor (the table of section 5)
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
# - `t._version` counts in-place writes; views share it with their base, and so does `.detach()` (not a view); `.data` does not.
# - A leaf that requires grad refuses in-place writes to itself (`a[:] = 0` included) while autograd records; under `torch.no_grad()` the write is allowed, and so is an optimiser's `step()`, which turns grad mode off. Writes through `.detach()` and `.data` are not refused.
# - A tensor some node saved for backward may not be written before a `backward()` that runs through that node: `draw()` shows it red, `backward()` raises (unless saved-tensor hooks are on: then nothing is checked).
# - `diagnose(loss)` says what `backward()` will hit without calling it; under `track_inplace()` it also names the line of the write.
# - Writes through `.data` move no counter, and a write through a tensor that shares the memory but not the counter (`torch.from_numpy`) moves its own counter, not the saved tensor's: `backward()` and `diagnose` both miss them, and the gradient is silently wrong.
# - Writes to tensors that share no version counter with a saved tensor are harmless, for built-in ops and custom Functions that use `save_for_backward` (one that keeps a tensor on `ctx` is not checked). Which values a node saves depends on the op: check its `_saved_*` attributes or `draw()` (the table of section 5 gives common ones; a convolution saves its input even when its weight is frozen).
# - Fixes: out of place, clone (or `allow_mutation_on_saved_tensors()`, which clones for you), reorder (write after backward, or before use if that is what you mean), and `torch.no_grad()` for parameters. Never `.data`.
# - `detect_anomaly()` points to the forward op that saved the tensor.
# - A second backward fails only through a graph that saved tensors; `retain_graph=True` keeps them, and gradients add up.
