# %% [markdown]
# # 02a · In-place operations and the version counter (part 1 of 2)
#
# ## What you will learn
# - What an in-place operation is, and how PyTorch counts them in `tensor._version`.
# - The two in-place writes autograd forbids: on a leaf that requires grad while autograd records, and on a tensor saved for backward (besides `out=` arguments of differentiable ops, refused while autograd records when an input or the output requires grad, and two writes to views it refuses: to the pieces of `unbind`, `split` or `chunk`, and to a view made under `no_grad`).
# - How to tell, by looking at what each node saved, when an in-place write is harmless.
# - How `diagnose` and `track_inplace` name the node, the saved tensor and the line behind a version error.
#
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
#
# Part 2 is `02b_version_counter` (sections 6–10).

# %% nbgrader={"grade_id": "setup", "locked": true}
import time

import torch
from torch.nn import functional as F  # noqa: N812 (torch's documentation spells it so)

from autograd_pitfalls import (
    diagnose,
    draw,
    expect_error,
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
# Some functions also write in place when asked (`F.relu(x, inplace=True)`) or on their own (notebook 05a's `nn.Embedding(max_norm=...)`).
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
# Every tensor carries a counter, `t._version`, except *inference tensors*: those that ops allocate inside `torch.inference_mode()` (notebook 03a, section 5).
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
# Some writes escape the counter: here, writing through `.data` (section 5, and section 7 in part 2, show writes through numpy).
# `.data` is a legacy attribute that gives a tensor with the same memory but a counter of its own.
# Keep that in mind; sections 7 and 8 (in part 2) show why it matters, and notebooks 03a and 03b compare `.data` and `.detach()` in depth.

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
# Notebooks 03a and 03b are about the harm they do.
# (An older post offers both as one way to fill a leaf, beside `torch.no_grad()`; section 8, in part 2, shows why `torch.no_grad()` is the one to use.)

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
# So, to initialise or update a parameter, write under `torch.no_grad()`: section 8, in part 2, shows how.
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
# Without this check, `w2.grad` would silently come out from the new `d` instead of 4: section 7 (in part 2) shows it with a ×10 write autograd cannot see (`w2.grad = 40`).
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
# The fix: leave the saved `d` alone and write to a copy (section 7, in part 2, shows three fixes).
# `diagnose` then finds nothing, and `backward()` gives `w2.grad = 4`.

# %%
d = x @ w1
f = d @ w2
d = d.clone()  # a new tensor with its own memory and counter; f's graph keeps the old d
d[:] = 0
assert not diagnose(f)
w2.grad = None  # backward() adds into .grad (section 10, part 2): start empty, as on the first run
f.backward()
print("w2.grad:", w2.grad)
assert torch.equal(w2.grad, torch.tensor([4.0]))

# %% [markdown]
# ## 5. When an in-place write is harmless
#
# Autograd only checks the tensors that some node saved.
# For built-in ops, and custom `autograd.Function`s that keep their tensors with `ctx.save_for_backward`, a write to a tensor that shares neither memory nor a version counter with a saved tensor raises nothing, and the gradient stays correct (a write to the saved memory through a tensor with a counter of its own, `.data` or a numpy alias, raises nothing either, and makes the gradient wrong: the end of this section). Sharing a counter (section 2) means being the saved tensor, its base, another view of that base, or a `.detach()` of one of them: an example below shows a write to an unsaved view that still raises.
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
a.grad = None  # backward() adds into .grad (section 10, part 2): start empty, as on the first run
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
# Sections 7 and 8 (in part 2) come back to such hidden writes.
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
# ## Summary
#
# - `t._version` counts in-place writes; views share it with their base, and so does `.detach()` (not a view); `.data` does not.
# - A leaf that requires grad refuses in-place writes to itself (`a[:] = 0` included) while autograd records; under `torch.no_grad()` the write is allowed. Writes through `.detach()` and `.data` are not refused.
# - A tensor some node saved for backward may not be written before a `backward()` that runs through that node: `draw()` shows it red, `backward()` raises (unless saved-tensor hooks are on: then nothing is checked).
# - `diagnose(loss)` says what `backward()` will hit without calling it; under `track_inplace()` it also names the line of the write.
# - Writes through `.data` move no counter, and a write through a tensor that shares the memory but not the counter (`torch.from_numpy`) moves its own counter, not the saved tensor's: `backward()` misses them, and the gradient is silently wrong.
# - Writes to tensors that share neither memory nor a version counter with a saved tensor are harmless, for built-in ops and custom Functions that use `save_for_backward` (one that keeps a tensor on `ctx` is not checked). Which values a node saves depends on the op: check its `_saved_*` attributes or `draw()` (the table of section 5 gives common ones; a convolution saves its input even when its weight is frozen).
#
# Part 2, `02b_version_counter`, goes on with section 6: the order of the lines, three fixes, initialising a parameter, anomaly mode, and backward twice.
