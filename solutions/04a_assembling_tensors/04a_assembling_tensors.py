# %% [markdown]
# # 04a · Assembling a tensor from pieces that need gradients (part 1 of 2)
#
# You often compute a few numbers separately (a ratio, a softplus, an angle's cosine) and need them side by side in one tensor, to feed a network or build a matrix.
# There are three ways to write that, and only some of them keep the gradient.
#
# **What you will learn**
#
# - why `torch.tensor([a0, a1, ...])` of tensors that need gradients cuts the graph, and what torch says while it does it;
# - that filling a fresh buffer by index (`A = torch.zeros(5); A[0] = ...`) works, and gives exactly the gradient of `torch.stack`;
# - why the same fill-in breaks in a real modelling pattern (learnable `R1`, `R2` and their ratio `k`), which saved tensor it overwrites, and how `diagnose` names the line;
# - why the popular "fix" with `.detach()` runs but learns the wrong thing;
# - the real rule for when a fill-in is safe, instead of "never fill in".
#
# *The seed* below is the older Chinese blog post this notebook grew from: its code is reused, its words are quoted, and where it is wrong on today's PyTorch the notebook says so and shows what happens.
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.
#
# Part 2 is `04b_assembling_tensors` (sections 6–7: building on the right device and dtype, and what a fill-in costs).

# %% nbgrader={"grade_id": "setup", "locked": true}
import warnings

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

print(f"torch {torch.__version__}")

# %% [markdown]
# ## 1. `torch.tensor([...])` cuts the graph
#
# Five pieces, each computed from one entry of a learnable vector `a` (the seed's example, with fixed values so that we can derive gradients by hand).
# Each piece is a 0-d tensor with a `grad_fn`: it remembers how it was made.

# %%
a = torch.tensor([0.5, 1.0, 2.0, -1.0, 3.0], requires_grad=True)


def pieces_of(a: torch.Tensor) -> list[torch.Tensor]:
    """Returns the seed's five pieces: 2·a0, log(a1 + 1), a2², softplus(2·a3), a4."""
    return [a[0] * 2, torch.log(a[1] + 1), a[2] ** 2, nn.functional.softplus(a[3] * 2), a[4]]


pieces = pieces_of(a)
for piece in pieces:
    print(piece)
assert all(piece.grad_fn is not None for piece in pieces)

# %% [markdown]
# Predict: what does `torch.tensor(pieces)` return, and what happens at `backward()`?
#
# `torch.tensor` builds a *new* tensor from *data*: it reads each piece's number and forgets where it came from.
# The result has no `grad_fn` and does not require grad.
# While doing it, torch warns; by default it gives this warning only once per process, so we ask it to repeat warnings (`torch.set_warn_always(True)`) for this section, and each run of the cell shows it.

# %%
torch.set_warn_always(True)
with expect_warning(UserWarning, match="Converting a tensor with requires_grad=True to a scalar"):
    A1 = torch.tensor(pieces)
print(A1, "| requires_grad:", A1.requires_grad, "| grad_fn:", A1.grad_fn)
assert not A1.requires_grad and A1.grad_fn is None

# %% [markdown]
# One warning per piece: the warning comes from converting each piece to a Python number, and it is easy to miss in a long log.
# The error comes later, at `backward()`, far from the line that caused it:

# %%
with expect_error(RuntimeError, match="element 0 of tensors does not require grad"):
    A1.sum().backward()

# %% [markdown]
# The same happens when you go through Python numbers yourself.
# `float(piece)` gives the same warning; `piece.item()` gives none, because asking for the number is what `.item()` is for.
# Either way the result is data, not graph.

# %%
with expect_warning(UserWarning, match="Converting a tensor with requires_grad=True"):
    from_float = torch.tensor([float(piece) for piece in pieces])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from_item = torch.tensor([piece.item() for piece in pieces])
print(f".item(): {len(caught)} warnings | values equal: {torch.equal(from_item, A1)}")
assert not caught and torch.equal(from_float, A1) and torch.equal(from_item, A1)
with expect_error(RuntimeError, match="element 0 of tensors does not require grad"):
    from_item.sum().backward()
torch.set_warn_always(False)

# %% [markdown]
# By default the warning is given once per process, and those given under `set_warn_always(True)` do not use it up: three more conversions now give one warning between them (none when this cell runs again: the one is used up).

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(3):
        torch.tensor(pieces)
print("warnings from three conversions:", len(caught))
assert len(caught) <= 1

# %% [markdown]
# "Fixing" the error with `requires_grad=True` makes it worse: the error goes away and nothing reaches `a`.
# The result is a brand-new leaf; `backward()` fills *its* `.grad`, and `a.grad` stays `None`.

# %%
A1 = torch.tensor([piece.item() for piece in pieces], requires_grad=True)
A1.sum().backward()
print("A1.is_leaf:", A1.is_leaf, "| A1.grad:", A1.grad, "| a.grad:", a.grad)
assert A1.is_leaf and a.grad is None

# %% [markdown]
# ## 2. Filling a fresh buffer by index works
#
# The seed's second attempt: make a buffer of zeros, then assign each piece to its place.
# An index assignment `A[i] = piece` is an in-place write into `A`.
# Autograd records it: `A` gets `grad_fn=<CopySlices>` and its version counter goes up by one per write.

# %%
a = torch.tensor([0.5, 1.0, 2.0, -1.0, 3.0], requires_grad=True)

# %% nbgrader={"grade_id": "demo-fill-in-graph", "locked": true} tags=["grading-skip"]
A = torch.zeros(5)
print("before: requires_grad", A.requires_grad, "| grad_fn", A.grad_fn, "| _version", A._version)
for i, piece in enumerate(pieces_of(a)):
    A[i] = piece
print("after:  requires_grad", A.requires_grad, "| grad_fn", A.grad_fn, "| _version", A._version)
assert type(A.grad_fn).__name__ == "CopySlices" and A._version == 5
draw(A, names={"a": a, "A": A})

# %% [markdown]
# Each write left one `CopySlices` node: it passes the gradient of the written slot to the piece, and the rest to the previous state of `A`.
# The first state of `A`, the zeros, needs no gradient, so the chain ends there.
# The saved tensors (orange) are the pieces' inputs, never `A`: that is why five writes into `A` leave every one of them at the version it was saved with.
#
# Now the gradient, by hand, for `A.sum()`: each entry depends on one entry of `a`.
# - `d(2·a0)/da0 = 2`
# - `d log(a1 + 1)/da1 = 1 / (a1 + 1) = 0.5`
# - `d a2²/da2 = 2·a2 = 4`
# - `d softplus(2·a3)/da3 = 2·σ(2·a3) = 2·σ(-2) ≈ 0.2384`
# - `d a4/da4 = 1`

# %%
A = torch.zeros(5)  # the fill-in drawn above, afresh
for i, piece in enumerate(pieces_of(a)):
    A[i] = piece
a.grad = None  # backward() adds into .grad: start empty, as on the first run
A.sum().backward()
fill_grad = a.grad.clone()
by_hand = torch.tensor([2.0, 0.5, 4.0, 2 * torch.sigmoid(torch.tensor(-2.0)).item(), 1.0])
print("a.grad: ", fill_grad)
print(compare("fill-in", fill_grad, by_hand))
assert torch.allclose(fill_grad, by_hand)

# %% [markdown]
# `torch.stack` puts 0-d pieces side by side along a new dimension, `torch.cat` joins 1-d pieces along an existing one.
# Both are single out-of-place operations: one node, no buffer, no write.
# Their gradient is *exactly* the fill-in's, bit for bit: the pieces' own backward functions do the work in all three cases.

# %%
a.grad = None
B = torch.stack(pieces_of(a))
B.sum().backward()
stack_grad = a.grad.clone()

a.grad = None
C = torch.cat([piece.reshape(1) for piece in pieces_of(a)])
C.sum().backward()
cat_grad = a.grad.clone()

print(
    "grad_fn:",
    B.grad_fn.name(),
    C.grad_fn.name(),
    "| forward equal:",
    torch.equal(A, B) and torch.equal(B, C),
)
print(compare("stack", stack_grad, fill_grad))
print(compare("cat", cat_grad, fill_grad))
assert torch.equal(stack_grad, fill_grad) and torch.equal(cat_grad, fill_grad)

# %% [markdown]
# The graph of `B`, drawn without its saved tensors (the pieces' inputs, as above): one `StackBackward0` where the fill-in had a chain of five `CopySlices`.

# %% nbgrader={"grade_id": "demo-draw-stacked", "locked": true} tags=["grading-skip"]
draw(B, names={"a": a, "B": B}, saved=())

# %% [markdown]
# So the fill-in is not wrong in itself.
# It fails in the next example, and it is worth understanding why, rather than learning "never fill in".

# %% [markdown]
# ## 3. The R1/R2/k example
#
# A real pattern from the seed: a model learns two quantities `R1` and `R2`, kept normalised to `[0, 1]` (`R1n`, `R2n`).
# A small network turns `[R1, R2, k]`, with the ratio `k = R1 / R2` as an extra feature, into `eta`.
# Each feature is normalised with its own bounds, so `kn` is *not* `R1n / R2n`: the code denormalises, computes `k`, and normalises again.
# The seed writes `k` into the third slot of the tensor by index.
# Here is that model, with the seed's three ways of building the features: `fill-in` (the seed's first), `stack` (its fix) and `detach` (its other fix).
# Apart from the marked lines, this is the seed's code.


# %%
class Example(nn.Module):
    """The seed's model: learnable normalised R1, R2; features [R1n, R2n, kn] -> Linear -> eta."""

    def __init__(self, variant: str) -> None:
        super().__init__()
        self.variant = variant  # "fill-in", "stack" or "detach"
        self.paramn_ = nn.Parameter(torch.rand(2))  # learnable R1n and R2n
        self.eta_estimator = nn.Sequential(nn.Linear(3, 1))  # [R1n, R2n, kn] -> eta
        self.eta_estimator.train(False)
        self.param_max = torch.tensor([2, 4, 2])  # bounds of [R1, R2, k]; integers, as in the seed
        self.param_min = torch.tensor([1, 2, 0])

    @property
    def Param(self) -> torch.Tensor:  # noqa: N802 (the seed's name)
        paramn = torch.zeros([3])
        paramn[0] = self.paramn_[0]  # R1n
        paramn[1] = self.paramn_[1]  # R2n
        param = paramn * (self.param_max - self.param_min) + self.param_min  # denormalise
        if self.variant == "fill-in":
            param[2] = param[0] / param[1]  # k = R1 / R2, written into param
        elif self.variant == "stack":
            param = torch.stack([param[0], param[1], param[0] / param[1]])
        elif self.variant == "detach":
            param[2] = (param[0] / param[1]).detach()
        return (param - self.param_min) / (self.param_max - self.param_min)  # normalise

    @property
    def eta(self) -> torch.Tensor:
        return self.eta_estimator(self.Param)


models = {}
for variant in ("fill-in", "stack", "detach"):
    torch.manual_seed(0)  # as in the seed: the same parameters for the three variants
    models[variant] = Example(variant)
    print(f"{variant:8} Param: {models[variant].Param} | eta: {models[variant].eta}")

values = [model.Param for model in models.values()]
assert torch.equal(values[0], values[1]) and torch.equal(values[1], values[2])
assert torch.allclose(models["stack"].paramn_, torch.tensor([0.4963, 0.7682]), atol=1e-4)
assert torch.allclose(values[0][2], torch.tensor(0.2115), atol=1e-4)
assert torch.allclose(models["stack"].eta, torch.tensor([-0.4544]), atol=1e-4)
# The node nn.Linear records last for a 1-d input: a view (its exact name moves with torch).
assert models["stack"].eta.grad_fn.name().endswith("ViewBackward0")

# %% [markdown]
# The three forward passes agree to the last bit, and with the seed's printed numbers (`0.4963, 0.7682, 0.2115`, `eta ≈ -0.4544`).
# Only `eta`'s `grad_fn` is named differently: the seed's torch printed `AddBackward0`, torch 2.13 prints `ViewBackward0` (the last op recorded inside `nn.Linear` for a 1-d input); the value is the same.
# A node's name is how one torch implements an op, not part of its meaning: read the graph for what it computes.
# The backward passes differ: the fill-in raises:

# %%
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    models["fill-in"].Param.sum().backward()

# %% [markdown]
# The stack fix gives a gradient, and the detach fix gives another one.
# By hand, with `R1 = R1n·(2 - 1) + 1`, `R2 = R2n·(4 - 2) + 2` and `kn = (R1/R2 - 0) / (2 - 0)`:
# the sum of the features is `R1n + R2n + R1 / (2·R2)`, so
# `d/dR1n = 1 + 1 / (2·R2)` and `d/dR2n = 1 - R1 / R2²` (the `2` of `dR2/dR2n` cancels the `1/2`).
# With `R1n = 0.4963`, `R2n = 0.7682`, that is `≈ [1.1414, 0.8804]`, the seed's numbers.
# The detach fix gives `[1, 1]`: the terms through `k` are gone.

# %%
for model in models.values():
    model.paramn_.grad = None
models["stack"].Param.sum().backward()
models["detach"].Param.sum().backward()

r1n, r2n = models["stack"].paramn_.detach()
r1, r2 = r1n * 1 + 1, r2n * 2 + 2
by_hand = torch.stack([1 + 1 / (2 * r2), 1 - r1 / r2**2])
print("stack  :", models["stack"].paramn_.grad, "| by hand:", by_hand)
print("detach :", models["detach"].paramn_.grad)
print(compare("stack", models["stack"].paramn_.grad, by_hand))
assert torch.allclose(models["stack"].paramn_.grad, by_hand)
assert torch.allclose(by_hand, torch.tensor([1.1414, 0.8804]), atol=1e-4)  # the seed's numbers
assert torch.equal(models["detach"].paramn_.grad, torch.ones(2))

# %% [markdown]
# ### What the detach fix loses
#
# The seed calls the detach fix "not recommended, it loses the detached branch".
# Concretely: `eta` can depend on `R1` and `R2` only through `k`, and then the detach fix sees no gradient at all.
# Give the network the weights `[0, 0, 1]` (so `eta = kn`), and ask both models to reach `eta = 0.3` by gradient descent.


# %% nbgrader={"grade_id": "demo-fit-eta", "locked": true} tags=["grading-skip"]
def fit_eta(variant: str, target: float = 0.3, steps: int = 100) -> tuple[float, torch.Tensor]:
    """Fits paramn_ so that eta = kn reaches target; returns the final eta and paramn_."""
    torch.manual_seed(0)
    model = Example(variant)
    with torch.no_grad():  # eta = kn: only the ratio matters
        model.eta_estimator[0].weight.copy_(torch.tensor([[0.0, 0.0, 1.0]]))
        model.eta_estimator[0].bias.zero_()
    for _ in range(steps):  # plain gradient descent, learning rate 0.5
        model.paramn_.grad = None
        loss = (model.eta - target).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            model.paramn_ -= 0.5 * model.paramn_.grad
    return model.eta.item(), model.paramn_.detach()


for variant in ("stack", "detach"):
    eta, paramn_ = fit_eta(variant)
    print(f"{variant:6}: eta after 100 steps = {eta:.4f} | paramn_ = {paramn_}")
    if variant == "stack":
        assert abs(eta - 0.3) < 1e-3
    else:
        assert torch.allclose(paramn_, torch.tensor([0.4963, 0.7682]), atol=1e-4)  # never moved

# %% [markdown]
# The stack version reaches the target; the detach version never moves, because every gradient it computes for `paramn_` is zero.
# With a real network the detach version still learns *something*, through the `R1n`, `R2n` inputs: the gradient of `eta` is exactly the network's first two weights, with nothing from `k`.
# It never learns how `k` reacts to `R1` and `R2`, which is why `k` was added as a feature.
# The forward pass is identical, so no test on the outputs catches this: compare the gradient with one derived by hand.

# %%
for variant in ("stack", "detach"):
    model = models[variant]
    model.paramn_.grad = None
    model.eta.sum().backward()
    weight = model.eta_estimator[0].weight.detach()[0]  # [w_R1n, w_R2n, w_kn]
    print(
        f"{variant:6}: d eta / d paramn_ = {model.paramn_.grad} | first two weights = {weight[:2]}"
    )
assert torch.equal(models["detach"].paramn_.grad, weight[:2])
assert not torch.allclose(models["stack"].paramn_.grad, weight[:2])

# %% [markdown]
# ## 4. Why the fill-in fails
#
# The seed says "the third element is a combination of the first two, and that causes the problem".
# That is the symptom; here is the mechanism.
#
# - `param = paramn * (...) + ...` is a new tensor.
# - `param[0]` and `param[1]` are *views* of `param`: same memory, and the *same version counter* (notebook 02a, section 2).
# - `param[0] / param[1]` is recorded as `DivBackward0`, which saves both operands (the gradient of `x / y` needs `y` for `x`, and `x` and `y` for `y`).
#   They are saved at version 0.
# - `param[2] = ...` writes into `param`: its version goes to 1, and with it the version of every view, including the two that `DivBackward0` saved.
#
# The write touches slot 2 only, and the saved values (slots 0 and 1) are actually unchanged.
# Autograd does not track which elements a write touched: a counter shared by the whole memory went up, and that is enough to refuse.
# Run the seed's lines inside `track_inplace()`, and `diagnose` names the node, both saved operands and the line.

# %%
paramn_ = nn.Parameter(torch.tensor([0.4963, 0.7682]))
param_max, param_min = torch.tensor([2, 4, 2]), torch.tensor([1, 2, 0])


def seed_lines() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The seed's lines, from paramn_: returns paramn, param and features."""
    paramn = torch.zeros([3])
    paramn[0] = paramn_[0]
    paramn[1] = paramn_[1]
    param = paramn * (param_max - param_min) + param_min
    param[2] = param[0] / param[1]
    features = (param - param_min) / (param_max - param_min)
    return paramn, param, features


with track_inplace() as log:
    paramn, param, features = seed_lines()
names = {"paramn_": paramn_, "paramn": paramn, "param": param, "features": features}
report = diagnose(features, names=names)
# Node names are how this torch implements an op: checked by their stable start.
assert [(finding.node.startswith("Div"), finding.saved) for finding in report.findings] == [
    (True, "other"),
    (True, "self"),
]
assert all(finding.line == log.writes[-1].location for finding in report.findings)
assert log.writes[-1].code == "param[2] = param[0] / param[1]"
assert (param._version, paramn._version) == (1, 2)
report

# %%
# What MulBackward0 keeps for the gradient of paramn * (param_max - param_min):
node = (paramn * (param_max - param_min)).grad_fn
print("MulBackward0 saved self:", node._saved_self, "| other:", node._saved_other)
assert node._saved_self is None and torch.equal(node._saved_other, param_max - param_min)

# %% [markdown]
# The writes into `paramn` (versions 0 → 2) are harmless: nothing had saved `paramn` yet when they ran.
# `MulBackward0` saved only `param_max - param_min`, a new integer tensor that nobody writes (not `paramn`: the bounds do not require grad).
#
# Now the error message itself:

# %%
with expect_error(
    # Matched on its stable parts: the shape, and the versions (the type and node names move).
    RuntimeError,
    match=r"\[\]\], which is output 0 of \w+, is at version 1; expected version 0",
):
    paramn, param, features = seed_lines()  # afresh: a failed backward() frees what it ran through
    features.sum().backward()

# %% [markdown]
# It names a 0-d float tensor that is "output 0 of AsStrided", a name nowhere in our code (the seed's torch printed `AsStridedBackward0`, torch 2.13 prints `AsStrided`).
# The reason: after a write into a base, autograd rewrites the record of each of its views as an `as_strided` of the base, so that gradients through the view see the write.
# You can watch it happen to a view we keep:

# %%
param = torch.zeros(3) * paramn_.sum()  # any non-leaf of shape (3,)
first = param[0]
print("before the write:", first.grad_fn.name())
param[2] = 1.0
print("after the write: ", first.grad_fn.name(), "| first._version:", first._version)
assert first.grad_fn.name().startswith("AsStrided") and first._version == 1

# %% [markdown]
# So the message names the rewritten record of a view, not the `DivBackward0` that will fail nor the line that wrote.
# `diagnose` under `track_inplace()` names all three: the node, its saved operands and the line of the write.

# %% [markdown]
# ## 5. The real rule for fill-ins
#
# The seed concludes: "when learnable parameters are combined, you cannot fill in, you can only use cat/stack".
# That overgeneralises.
# A fill-in is an in-place write, and notebook 02a's rule applies unchanged:
# **a write is refused at `backward()` (with no saved-tensor hooks on: notebook 02a, section 5) when a node that this `backward()` runs through, recorded before the write, saved a tensor that shares the written tensor's version counter: the tensor itself, its base or another view of that base, or a `.detach()` of one of them** (and a leaf that requires grad refuses writes at once).
# Whether the pieces "combine" parameters does not matter; whether an op *saved the buffer* does.
#
# Each line below starts from `p = [1.5, 3.5]` (leaf) and builds `out`; the table shows what `diagnose` finds and what `backward()` does.
# Before running the cell, predict each line with the rule (notebook 02a's table of what each op saves, in section 5, helps).

# %%
FILL_INS = {
    "pieces from p": "out = torch.zeros(3); out[0] = p[0]; out[1] = p[1]; out[2] = p[0] / p[1]",
    "entry from entries, /": "out = torch.cat([p, p[:1]]); out[2] = out[0] / out[1]",
    "entry from entries, +": "out = torch.cat([p, p[:1]]); out[2] = out[0] + out[1]",
    "entry from entry, exp": "out = torch.cat([p, p[:1]]); out[2] = out[0].exp()",
    "entry from entry, **2": "out = torch.cat([p, p[:1]]); out[2] = out[0] ** 2",
    "compute k, then clone": (
        "out = torch.cat([p, p[:1]]); k = out[0] / out[1]; out = out.clone(); out[2] = k"
    ),
    "write after use": "buf = torch.cat([p, p[:1]]); out = buf * buf; buf[2] = 0.0",
    "buffer is a leaf": "out = torch.zeros(3, requires_grad=True); out[0] = p[0]",
}


def try_fill_in(code: str) -> tuple[str, str]:
    """Runs code (which sets `out`), then out.sum().backward(); returns (found, outcome)."""
    scope = {"torch": torch, "p": torch.tensor([1.5, 3.5], requires_grad=True)}
    try:
        exec(code, scope)
    except RuntimeError as error:
        return "-", "raises at the write: " + str(error).split(":")[0][:40]
    findings = diagnose(scope["out"]).findings
    found = ", ".join(f"{finding.node} {finding.saved}" for finding in findings) or "nothing"
    try:
        scope["out"].sum().backward()
    except RuntimeError:
        return found, "backward() raises (version error)"
    return found, f"ok, p.grad = {[round(g, 4) for g in scope['p'].grad.tolist()]}"


outcomes = {}
for label, code in FILL_INS.items():
    found, outcomes[label] = try_fill_in(code)
    print(f"{label:22} | diagnose: {found:32} | {outcomes[label]}")

safe = [label for label, outcome in outcomes.items() if outcome.startswith("ok")]
assert safe == [
    "pieces from p",
    "entry from entries, +",
    "entry from entry, exp",
    "compute k, then clone",
]

# %% [markdown]
# Read the table against the rule.
# - **pieces from p**: the division reads `p`, not the buffer; the buffer is saved by no one. Safe, even though it "combines" parameters. This is the fix closest to the seed's code: compute `k` from the parameters, not from the tensor you are filling.
# - **entry from entries, /** and **entry from entry, \*\*2**: the op reads entries of the buffer *and saves them*; the write bumps the shared counter. Refused.
# - **entry from entries, +**: addition saves nothing (its gradient is 1 whatever the values), so there is nothing to go stale. Safe.
# - **entry from entry, exp**: `exp` saves its *output*, a new tensor, not its input. Safe (notebook 02a, section 5).
# - **compute k, then clone**: the division saved views of the old tensor; the write goes into the clone, which has its own counter. Safe.
# - **write after use**: `buf * buf` saved `buf`; any later write to `buf`, wherever it lands, is refused.
# - **buffer is a leaf**: `requires_grad=True` on the buffer makes it a leaf that requires grad, and those refuse in-place writes at once.
#
# So the real rule: fill in a *fresh* buffer that does not require grad, with pieces that do not read the buffer through an op that saves it.
# `torch.stack`/`torch.cat` satisfy it by construction, which is why they are the robust default.

# %% [markdown]
# ### Exercise 1 — predict which assembly keeps the graph (2 points)
#
# Each snippet below starts from `a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)` and builds `out`; then `out.sum().backward()` runs.
#
# ```python
# snippets = {
#     "tensor_of_pieces": "out = torch.tensor([a[0] * 2, a[1] * 3])",
#     "stack": "out = torch.stack([a[0] * 2, a[1] * 3])",
#     "item_then_requires_grad": "out = torch.tensor([a[0].item() * 2, a[1].item() * 3], requires_grad=True)",
#     "fill_fresh_buffer": "out = torch.zeros(2); out[0] = a[0] * 2; out[1] = a[1] * 3",
#     "fill_product_of_entries": "out = a * 1; out[2] = out[0] * out[1]",
#     "fill_difference_of_entries": "out = a * 1; out[2] = out[0] - out[1]",
#     "write_into_sigmoid": "out = a.sigmoid(); out[0] = 0.0",
#     "cat_of_slices": "out = torch.cat([a[:1] * 2, a[1:].exp()])",
# }
# ```
#
# For each, predict what happens: `"ok"` (`backward()` runs and fills `a.grad`), `"raises"` (`backward()` raises an error), or `"silent"` (`backward()` runs but `a.grad` stays `None`).
# Return a dict from `predict_assembly()` with the same keys, for example `{"stack": "ok", ...}`.
# Nothing in this notebook runs these snippets for you: predict them.
# The visible test checks the form of your answer and `tensor_of_pieces`, which section 1 shows.
# The grader runs all eight in its own process and compares.


# %% nbgrader={"grade_id": "q1-answer", "solution": true}
def predict_assembly() -> dict[str, str]:
    """Returns your predictions for the snippets of Exercise 1.

    Returns:
        A dict from each snippet's key to "ok", "raises" or "silent".
    """
    ### BEGIN SOLUTION
    return {
        "tensor_of_pieces": "raises",  # data only: no grad_fn, backward() has nothing to do
        "stack": "ok",
        "item_then_requires_grad": "silent",  # a new leaf gets the gradient, a does not
        "fill_fresh_buffer": "ok",  # nothing saved the buffer
        "fill_product_of_entries": "raises",  # mul saved out[0], out[1]; the write bumps out
        "fill_difference_of_entries": "ok",  # sub saves nothing
        "write_into_sigmoid": "raises",  # sigmoid saved its output, out itself
        "cat_of_slices": "ok",
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "q1-tests", "grade": true, "locked": true, "points": 2}
"""Checks predict_assembly(): visible, its form and tensor_of_pieces; the grader runs all eight."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
snippets = {
    "tensor_of_pieces": "out = torch.tensor([a[0] * 2, a[1] * 3])",
    "stack": "out = torch.stack([a[0] * 2, a[1] * 3])",
    "item_then_requires_grad": (
        "out = torch.tensor([a[0].item() * 2, a[1].item() * 3], requires_grad=True)"
    ),
    "fill_fresh_buffer": "out = torch.zeros(2); out[0] = a[0] * 2; out[1] = a[1] * 3",
    "fill_product_of_entries": "out = a * 1; out[2] = out[0] * out[1]",
    "fill_difference_of_entries": "out = a * 1; out[2] = out[0] - out[1]",
    "write_into_sigmoid": "out = a.sigmoid(); out[0] = 0.0",
    "cat_of_slices": "out = torch.cat([a[:1] * 2, a[1:].exp()])",
}
predictions = predict_assembly()
assert isinstance(predictions, dict), "predict_assembly() should return a dict"
assert set(predictions) == set(snippets), (
    f"expected the keys {sorted(snippets)}; got {sorted(predictions)}"
)
# torch.tensor of pieces keeps their values only (section 1): backward() has no graph.
assert predictions["tensor_of_pieces"] == "raises", (
    f"tensor_of_pieces: backward() raises, you predicted "
    f"{predictions['tensor_of_pieces']!r}. " + explain("graph-cut-assembly")
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """One case: Exercise 1's snippets, as the exercise lists them."""
    return [
        {"snippets": {
            "tensor_of_pieces": "out = torch.tensor([a[0] * 2, a[1] * 3])",
            "stack": "out = torch.stack([a[0] * 2, a[1] * 3])",
            "item_then_requires_grad": (
                "out = torch.tensor([a[0].item() * 2, a[1].item() * 3], requires_grad=True)"
            ),
            "fill_fresh_buffer": "out = torch.zeros(2); out[0] = a[0] * 2; out[1] = a[1] * 3",
            "fill_product_of_entries": "out = a * 1; out[2] = out[0] * out[1]",
            "fill_difference_of_entries": "out = a * 1; out[2] = out[0] - out[1]",
            "write_into_sigmoid": "out = a.sigmoid(); out[0] = 0.0",
            "cat_of_slices": "out = torch.cat([a[:1] * 2, a[1:].exp()])",
        }}
    ]  # fmt: skip


def observe(case):
    """Calls predict_assembly(); returns a plain copy of the dict (or its type's name)."""
    predictions = predict_assembly()
    if not isinstance(predictions, dict):
        return {"type": type(predictions).__name__}
    return {"type": "dict", "predictions": dict(predictions)}


### BEGIN JUDGE
def _run_snippet(code: str) -> str:
    """Runs one snippet from a fresh a, then backward(): raises, ok or silent."""
    scope = {"torch": torch, "a": torch.tensor([1.0, 2.0, 3.0], requires_grad=True)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.tensor of tensors warns
        exec(code, scope)
    try:
        scope["out"].sum().backward()
    except RuntimeError:
        return "raises"
    return "ok" if scope["a"].grad is not None else "silent"


def judge(seen, case):
    """The keys, then each prediction against its snippet, run here."""
    snippets = case["snippets"]
    predictions = seen.get("predictions")
    assert isinstance(predictions, dict), "predict_assembly() should return a dict"
    assert set(predictions) == set(snippets), (
        f"expected the keys {sorted(snippets)}; got {sorted(predictions)}"
    )
    outcomes = {key: _run_snippet(code) for key, code in snippets.items()}
    for key, code in snippets.items():
        assert predictions[key] in ("ok", "raises", "silent"), (
            f"predictions[{key!r}] should be 'ok', 'raises' or 'silent'"
        )
        if key in ("tensor_of_pieces", "item_then_requires_grad"):
            pitfall = explain("graph-cut-assembly")
        elif outcomes[key] == "ok":  # the stale-tensor story would explain the opposite
            pitfall = (
                "Its graph reaches a, and no tensor saved by a node this backward() runs "
                "through is changed by a later write" + " (the rule of section 5)"
            )
        else:
            pitfall = explain("stale-saved-tensor") + " (the rule of section 5)"
        assert predictions[key] == outcomes[key], (
            f"{key}: `{code}` then backward(): the answer is {outcomes[key]!r}, you predicted "
            f"{predictions[key]!r}. " + pitfall
        )


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2 — fix the R1/R2/k features (3 points)
#
# Write `ratio_features(paramn_, param_max, param_min)`, the `Param` property of section 3 as a function, fixed:
#
# - `paramn_` holds the normalised `[R1n, R2n]`, shape `(2,)`, a leaf that requires grad;
# - `param_max` and `param_min` hold the bounds of `[R1, R2, k]`, shape `(3,)`, on `paramn_`'s device (integers, as in the seed, or floats);
# - denormalise `R1 = R1n·(max[0] - min[0]) + min[0]`, `R2 = R2n·(max[1] - min[1]) + min[1]`, compute `k = R1 / R2`, and return `[R1, R2, k]` normalised with the same bounds (`(v - min) / (max - min)`), shape `(3,)`.
#
# The result must carry the gradient through `k` to both `R1n` and `R2n` (not the detach fix), and it must be on `paramn_`'s device with `paramn_`'s dtype (float32 or float64).
# Leave `paramn_`, `param_max` and `param_min` as they were: `param_max.to(dtype)` is `param_max` itself when its dtype is already `dtype`, so write only into tensors of your own.
# The tests also run your function on the course's stand-in for a GPU (notebook 01b, section 6, shows it; section 6, in `04b_assembling_tensors`, uses it again), so a buffer made with `torch.zeros(3)` and no `device=` fails, as it would on a GPU: note that the seed's own "correct example" still builds such a buffer.
# Example: `paramn_ = [0.5, 0.75]` with the seed's bounds gives `R1 = 1.5`, `R2 = 3.5`, `k = 3/7`, so features `≈ [0.5, 0.75, 0.2143]`, and the gradient of their sum is `[1 + 1/7, 1 - 1.5/3.5²] ≈ [1.1429, 0.8776]`.
# The tests run the example in float32 and float64, with the seed's integer bounds and with the same bounds as floats of `paramn_`'s dtype.


# %% nbgrader={"grade_id": "q2-answer", "solution": true}
def ratio_features(
    paramn_: torch.Tensor, param_max: torch.Tensor, param_min: torch.Tensor
) -> torch.Tensor:
    """Returns the normalised [R1, R2, k = R1 / R2], differentiable with respect to paramn_.

    Args:
        paramn_: The normalised [R1n, R2n], shape (2,), a leaf that requires grad.
        param_max: Upper bounds of [R1, R2, k], shape (3,), on paramn_'s device.
        param_min: Lower bounds of [R1, R2, k], shape (3,), on paramn_'s device.

    Returns:
        (v - param_min) / (param_max - param_min) for v = [R1, R2, k], shape (3,), on
        paramn_'s device and with its dtype.
    """
    ### BEGIN SOLUTION
    span = param_max - param_min
    r1 = paramn_[0] * span[0] + param_min[0]  # denormalise
    r2 = paramn_[1] * span[1] + param_min[1]
    param = torch.stack([r1, r2, r1 / r2])  # one out-of-place op: nothing is overwritten
    return (param - param_min) / span
    ### END SOLUTION


# %% nbgrader={"grade_id": "q2-tests", "grade": true, "locked": true, "points": 3}
"""Checks ratio_features: values, gradient through k (by hand), device (on a GPU stand-in) and dtype.

Visible: the example in float32 and float64, with integer bounds and with float bounds of
paramn_'s dtype; paramn_ and the bounds left as they were. Hidden: random bounds and weights.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def _check_features(paramn_values, param_max, param_min, weights, device, dtype, values, grad):
    """Calls ratio_features and compares with the values and gradient worked out by hand."""
    paramn_ = nn.Parameter(paramn_values.to(device, dtype))
    param_max, param_min, weights = param_max.to(device), param_min.to(device), weights.to(device)
    kept = KeptInputs(paramn_=paramn_, param_max=param_max, param_min=param_min)
    features = ratio_features(paramn_, param_max, param_min)
    assert_inputs_left_alone(kept.changes(), "ratio_features(paramn_, max, min)")
    values, grad = values.to(device, dtype), grad.to(device, dtype)
    assert isinstance(features, torch.Tensor) and features.shape == (3,), (
        "return a tensor of shape (3,)"
    )
    assert features.device.type == device.type, explain("wrong-device")
    assert features.dtype == dtype, (
        f"features are {features.dtype}, paramn_ is {dtype}. " + explain("wrong-dtype")
    )
    assert features.grad_fn is not None, "the features have no grad_fn: " + explain(
        "graph-cut-assembly"
    )
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    assert torch.allclose(features.detach(), values, atol=tolerance), (
        f"features should be {values.tolist()}, got {features.tolist()}"
    )
    try:
        (features * weights.to(dtype)).sum().backward()
    except RuntimeError as error:
        raise AssertionError(
            f"backward() raised: {str(error).splitlines()[0][:160]}\n"
            + explain("stale-saved-tensor")
        ) from None
    assert_grad_close(paramn_.grad, grad, name="paramn_.grad", atol=tolerance)
    assert_is_leaf(paramn_, name="paramn_")


seed_max, seed_min = torch.tensor([2, 4, 2]), torch.tensor([1, 2, 0])
# R1 = 1.5, R2 = 3.5, k = 3/7: features [0.5, 0.75, (3/7) / 2]; the gradient of their sum is
# [1 + (1/R2)·1/2, 1 - (R1/R2²)·2/2] = [1 + 1/7, 1 - 1.5/12.25].
example_values = torch.tensor([0.5, 0.75, 3 / 14], dtype=torch.float64)
example_grad = torch.tensor([1 + 1 / 7, 1 - 1.5 / 12.25], dtype=torch.float64)
for device in devices():
    for dtype in (torch.float32, torch.float64):
        for bounds_dtype in (torch.int64, dtype):  # the seed's integers, or floats
            _check_features(
                torch.tensor([0.5, 0.75]), seed_max.to(bounds_dtype), seed_min.to(bounds_dtype),
                torch.ones(3), device, dtype, example_values, example_grad,
            )  # fmt: skip
paramn_ = nn.Parameter(torch.tensor([0.5, 0.75]))
features = on_gpu(ratio_features, paramn_, seed_max, seed_min)
assert features.shape == (3,) and features.requires_grad, "on a GPU too, a (3,) tensor with a graph"


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible example in both dtypes, with integer bounds and with float bounds of that
    dtype, then random bounds (integer or float) and weights."""
    cases = [
        {"values": torch.tensor([0.5, 0.75]), "high": seed_high.to(bounds_dtype),
         "low": seed_low.to(bounds_dtype), "weights": torch.ones(3), "dtype": dtype}
        for seed_high, seed_low in [(torch.tensor([2, 4, 2]), torch.tensor([1, 2, 0]))]
        for dtype in ("float32", "float64")
        for bounds_dtype in (torch.int64, getattr(torch, dtype))
    ]  # fmt: skip
    for dtype in ("float32", "float64"):
        for integer_bounds in (True, False):
            low = torch.randint(1, 4, (3,), generator=rng)
            high = low + torch.randint(1, 4, (3,), generator=rng)
            if not integer_bounds:
                low, high = (
                    low.to(getattr(torch, dtype)) + 0.25,
                    high.to(getattr(torch, dtype)) + 0.5,
                )
            values = torch.rand(2, generator=rng, dtype=torch.float64) * 0.8 + 0.1
            weights = torch.randn(3, generator=rng)
            cases.append(
                {"values": values, "high": high, "low": low, "weights": weights, "dtype": dtype}
            )
    return cases


def observe(case):
    """Calls ratio_features on every device and on a GPU stand-in; backpropagates the weighted sum."""
    dtype = getattr(torch, case["dtype"])
    seen = {}
    for device in devices():
        paramn_ = nn.Parameter(case["values"].to(device, dtype))
        high, low = case["high"].to(device, copy=True), case["low"].to(device, copy=True)
        kept = KeptInputs(paramn_=paramn_, param_max=high, param_min=low)
        features = ratio_features(paramn_, high, low)
        inputs_changed = kept.changes()
        backward_error = None
        try:
            (features * case["weights"].to(device, dtype)).sum().backward()
        except RuntimeError as error:
            backward_error = str(error).splitlines()[0][:160]
        seen[device.type] = {
            "features": features, "grad": paramn_.grad, "paramn_": paramn_,
            "backward_error": backward_error, "inputs_changed": inputs_changed,
        }  # fmt: skip
    try:
        gpu_result = on_gpu(
            ratio_features, nn.Parameter(case["values"].to(dtype)), case["high"], case["low"]
        )
        seen["gpu"] = {"features": gpu_result, "failure": None}
    except AssertionError as error:
        seen["gpu"] = {"features": None, "failure": str(error)}
    return seen


### BEGIN JUDGE
def _expected_features(paramn_, param_max, param_min, weights):
    """Returns the features and d(weights · features)/d paramn_, derived by hand."""
    lo, span = param_min.to(paramn_.dtype), (param_max - param_min).to(paramn_.dtype)
    r1 = paramn_[0] * span[0] + lo[0]
    r2 = paramn_[1] * span[1] + lo[1]
    values = (torch.stack([r1, r2, r1 / r2]) - lo) / span
    # d kn / d R1n = (1 / R2) · span[0] / span[2]; d kn / d R2n = -(R1 / R2²) · span[1] / span[2]
    grad = torch.stack(
        [
            weights[0] + weights[2] * span[0] / (r2 * span[2]),
            weights[1] - weights[2] * r1 * span[1] / (r2**2 * span[2]),
        ]
    )
    return values, grad


def judge(seen, case):
    """Values and gradient against the hand derivation; device, dtype, graph and leaf."""
    dtype = getattr(torch, case["dtype"])
    paramn_ = case["values"].to(dtype)
    values, grad = _expected_features(paramn_, case["high"], case["low"], case["weights"].to(dtype))
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        assert_inputs_left_alone(run["inputs_changed"], "ratio_features(paramn_, max, min)")
        features = run["features"]
        assert isinstance(features, TensorSeen) and features.shape == (3,), (
            "return a tensor of shape (3,)"
        )
        assert features.is_on(device), explain("wrong-device")
        assert features.dtype == dtype, (
            f"features are {features.dtype}, paramn_ is {dtype}. " + explain("wrong-dtype")
        )
        assert features.grad_fn is not None, "the features have no grad_fn: " + explain(
            "graph-cut-assembly"
        )
        assert torch.allclose(features.values, values, atol=tolerance), (
            f"features should be {values.tolist()}, got {features.values.tolist()}"
        )
        assert run["backward_error"] is None, (
            f"backward() raised: {run['backward_error']}\n" + explain("stale-saved-tensor")
        )
        assert run["grad"] is not None, "paramn_.grad is None. " + explain("grad-never-reached")
        assert torch.allclose(run["grad"].values, grad, atol=tolerance), (
            f"paramn_.grad should be {grad.tolist()}, got {run['grad'].values.tolist()}. "
            + explain("wrong-gradient")
        )
        assert run["paramn_"].is_leaf and run["paramn_"].cls == "Parameter", (
            "paramn_ is no longer a leaf Parameter. " + explain("not-a-leaf")
        )
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    assert gpu["features"].shape == (3,) and gpu["features"].requires_grad, (
        "on a GPU too, a (3,) tensor with a graph"
    )
    assert gpu["features"].dtype == dtype, f"on a GPU, {dtype} in, {dtype} out. " + explain(
        "wrong-dtype"
    )


### END JUDGE
probe_and_judge("q2", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - `torch.tensor([...])` of tensors (and anything through `.item()` or `float()`) builds data, not graph: the error waits for `backward()`, and `requires_grad=True` turns it into a silent loss.
# - A fill-in into a fresh buffer is a chain of `CopySlices` nodes, and its gradient is exactly `stack`'s.
# - A fill-in fails when an op that *saved* the buffer (or a view of it: views share the counter) ran before the write, as `param[2] = param[0] / param[1]` does; `diagnose` under `track_inplace()` names the node, the saved operands and the line, where the error names an `AsStrided` record.
# - The detach fix runs and gives the same forward pass, but drops every gradient through the detached branch.
# - The rule is not "never fill in" but "never write to what a node saved"; `torch.stack`/`torch.cat` follow it by construction.
#
# Part 2, `04b_assembling_tensors`, goes on with section 6 (building on the right device and dtype) and section 7 (what a fill-in costs), and Exercises 3–4.
