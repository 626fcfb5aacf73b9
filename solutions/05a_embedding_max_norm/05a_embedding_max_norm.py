# %% [markdown]
# # 05a · `nn.Embedding(max_norm=...)` rewrites its weight during the forward pass (part 1 of 2)
#
# An embedding with `max_norm` rescales the rows it looks up, in place, every time it is called.
# Any other use of `embedding.weight` in the same graph (a tied output layer, a regulariser, a similarity against all rows) can then fail at `backward()`, or quietly use values that changed under it.
#
# **What you will learn**
#
# - which rows `max_norm` rescales, to what norm, with which `norm_type`, and what it does to `weight._version` (and why a fresh module's weight starts at version 1);
# - why `embedding.weight` used before `embedding(idx)` breaks `backward()`, read from the error's two versions, `draw` and `diagnose`;
# - three fixes (reorder, `clone()`, renormalise yourself first) and which of them change the values the model computes; why `.detach()` is not one.
#
# *The seed* below is the older Chinese notebook this notebook grew from: its code is reused, its words are quoted, and where it is wrong on today's PyTorch the notebook says so and shows what happens.
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.
#
# Part 2, `05b_embedding_max_norm` (sections 4–7), takes the failure to a tied-weight language model and `F.embedding`, and shows the gradient through `max_norm` and where it does harm with no error.

# %% nbgrader={"grade_id": "setup", "locked": true}
import inspect
import textwrap

import matplotlib.pyplot as plt
import torch
from torch import nn

from autograd_pitfalls import (
    TensorSeen,
    compare,
    diagnose,
    draw,
    expect_error,
    explain,
    probe_and_judge,
    reset_torch_settings,
    track_inplace,
)

print(f"torch {torch.__version__}")

# %% [markdown]
# ## 1. What `max_norm` does
#
# A fresh `nn.Embedding` is a table of `num_embeddings` rows, each a vector of `embedding_dim` numbers, drawn from a standard normal.
# Its weight is already at version 1, not 0: the constructor calls `reset_parameters()`, which fills the weight with `init.normal_`, an in-place write under `torch.no_grad()` (notebook 02b, section 8).

# %%
embedding = nn.Embedding(4, 2, max_norm=1.0)
print("fresh nn.Embedding: weight._version =", embedding.weight._version)
print(inspect.getsource(nn.Embedding.reset_parameters))
assert embedding.weight._version == 1
assert "init.normal_(self.weight)" in inspect.getsource(nn.Embedding.reset_parameters)

with_padding = nn.Embedding(4, 2, padding_idx=0)  # normal_, then the padding row is zeroed
pretrained = nn.Embedding.from_pretrained(torch.ones(4, 2))  # wraps your tensor: no init
print(
    "with padding_idx:",
    with_padding.weight._version,
    "| from_pretrained:",
    pretrained.weight._version,
)
assert (with_padding.weight._version, pretrained.weight._version) == (2, 0)

# %% [markdown]
# Now give the rows norms we can follow: 5, 0.5, 2 and 2.
# The write under `no_grad` counts too: version 2.
# Then look up rows 0, 2 and 0 again.
# Predict before you run: which rows change, to what norm, and what is the version afterwards?

# %%
embedding = nn.Embedding(4, 2, max_norm=1.0)  # afresh: version 1, after its init (above)
with torch.no_grad():
    embedding.weight.copy_(torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 2.0], [1.2, 1.6]]))
norms_before = embedding.weight.detach().norm(dim=1)
print("norms before:", norms_before.tolist(), "| version:", embedding.weight._version)

out = embedding(torch.tensor([0, 2, 0]))
norms_after = embedding.weight.detach().norm(dim=1)
print(
    "norms after: ",
    [round(n, 7) for n in norms_after.tolist()],
    "| version:",
    embedding.weight._version,
)
print("weight after:", embedding.weight.detach().tolist())
print("output:      ", out.detach().tolist())
assert embedding.weight._version == 3  # one write for the call, though row 0 is looked up twice
assert torch.allclose(norms_after, torch.tensor([1.0, 0.5, 1.0, 2.0]))
assert torch.equal(out.detach(), embedding.weight.detach()[[0, 2, 0]])  # the output is the new rows

# %% [markdown]
# Rows 0 and 2 were looked up and above the limit: they now have norm 1 (the direction is kept: `[3, 4]` became `[0.6, 0.8]`).
# Row 1 was not looked up; row 3 is above the limit but was not looked up either: both unchanged.
# Row 0 appears twice in the indices, and was rescaled once (norm 1, not 0.2).
# The output holds the rescaled rows, and the weight itself was written: one in-place write per call, version 2 to 3.
#
# To what norm exactly?
# The kernel multiplies a row by `max_norm / (norm + 1e-7)`, so the new norm is a hair below `max_norm`.
# In float32 the difference is in the last bit and may or may not show (above, row 0 prints 1.0 and row 2 0.9999999); in float64 you can see it.

# %%
table = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
nn.functional.embedding(torch.tensor([0]), table, max_norm=1.0)
print(f"new norm: {table.norm().item():.10f} | max_norm * 5 / (5 + 1e-7): {5 / (5 + 1e-7):.10f}")
assert abs(table.norm().item() - 5 / (5 + 1e-7)) < 1e-12

# %% [markdown]
# The version goes up on every call, whether or not a row was too long, and also under `torch.no_grad()` (as in an evaluation loop).
# The counter counts writes, not changes (notebook 02a, section 2).

# %%
version = embedding.weight._version
embedding(torch.tensor([1]))  # row 1 has norm 0.5: nothing to rescale
print(f"lookup of a short row: version {version} -> {embedding.weight._version}")
assert embedding.weight._version == version + 1
with torch.no_grad():
    embedding(torch.tensor([3]))  # row 3 (norm 2) is rescaled, even under no_grad
print(
    f"under no_grad:         version {version + 1} -> {embedding.weight._version}",
    f"| row 3 norm: {embedding.weight[3].norm().item():.4f}",
)
assert embedding.weight._version == version + 2
assert abs(embedding.weight[3].norm().item() - 1.0) < 1e-6

# %% [markdown]
# `norm_type` picks the norm, `p` of the p-norm (2 by default).
# With `norm_type=1.0` the sum of absolute values is capped: `[3, 4]` (L1 norm 7) becomes `[3/7, 4/7]`, whose L2 norm is `5/7 ≈ 0.714`.

# %%
l1 = nn.Embedding.from_pretrained(torch.tensor([[3.0, 4.0]]), max_norm=1.0, norm_type=1.0)
l1(torch.tensor([0]))
row = l1.weight.detach()[0]
print("row:", row.tolist(), "| L1:", row.abs().sum().item(), "| L2:", row.norm().item())
assert torch.allclose(row, torch.tensor([3 / 7, 4 / 7]))

# %% [markdown]
# The picture: eight rows with random norms, a lookup of rows 1, 3, 4 and 6, the limit `max_norm = 1.5` in red.
# Only the rows both looked up and above the line come down to it.

# %% nbgrader={"grade_id": "demo-renorm-bars", "locked": true} tags=["grading-skip"]
torch.manual_seed(0)
demo = nn.Embedding(8, 16, max_norm=1.5)
with torch.no_grad():
    demo.weight.mul_(torch.rand(8, 1) * 0.6)  # norms spread between about 0 and 2.4
looked_up = torch.tensor([1, 3, 4, 6])
before = demo.weight.detach().norm(dim=1).clone()
demo(looked_up)
after = demo.weight.detach().norm(dim=1)

figure, axes = plt.subplots(figsize=(6, 2.6))
rows = torch.arange(8)
axes.bar(rows - 0.2, before, width=0.4, label="before", color="lightgray")
axes.bar(rows + 0.2, after, width=0.4, label="after", color="tab:blue")
axes.axhline(1.5, color="tab:red", linestyle="--", label="max_norm")
axes.set_xticks(rows, [f"{i}*" if i in looked_up else str(i) for i in range(8)])
axes.set_xlabel("row (* = looked up)")
axes.set_ylabel("L2 norm")
axes.legend(fontsize=8, loc="upper left")
figure.tight_layout()
plt.show()

changed = (before != after).nonzero().flatten().tolist()
expected = [i for i in looked_up.tolist() if before[i] > 1.5]
print("rows changed:", changed, "| rows looked up and above 1.5:", expected)
assert changed == expected and len(changed) >= 1

# %% [markdown]
# ## 2. The failure: the weight used before the lookup
#
# The seed of this notebook takes its code from the note in `nn.Embedding`'s own docstring, printed here from your PyTorch.
# There, `a` is computed from `embedding.weight.clone()`, and the comment says why.

# %%
note = nn.Embedding.__doc__
example = note[
    note.index("n, d, m = 3, 5, 7") : note.index("loss.backward()") + len("loss.backward()")
]
print(textwrap.dedent("            " + example))
assert "embedding.weight.clone() @ W.t()" in example and "modifies weight in-place" in example

# %% [markdown]
# The seed then leaves the `.clone()` out, to see what goes wrong, and so does the cell below.
# `a` uses the whole weight directly, `b` looks up two rows; the loss combines them.

# %%
torch.manual_seed(0)
n, d, m = 3, 5, 7
embedding = nn.Embedding(n, d, max_norm=1)
W = torch.randn((m, d), requires_grad=True)
idx = torch.tensor([1, 2])
print("weight._version at the start:", embedding.weight._version)
a = embedding.weight @ W.t()  # MmBackward0 saves the weight (to compute W.grad)
print("after a = embedding.weight @ W.t():", embedding.weight._version)
b = embedding(idx) @ W.t()  # renormalises rows 1 and 2 of the weight, in place
print("after b = embedding(idx) @ W.t(): ", embedding.weight._version)
out = a.unsqueeze(0) + b.unsqueeze(1)
loss = out.sigmoid().prod()
seed_graph = draw(  # for below: only the saved tensors named self
    loss, names={"weight": embedding.weight, "W": W, "loss": loss}, saved={"self"}
)
with expect_error(
    RuntimeError,
    match=r"\[3, 5\]\].*is at version 2; expected version 1",  # shape, versions
):
    loss.backward()

# %% [markdown]
# Read the error with section 1.
# The `[3, 5]` tensor is the weight.
# It was at version 1 when `a` was computed (the `normal_` of the constructor), and `a`'s node saved it, because `d a / d W` needs the weight's values.
# `embedding(idx)` wrote to it (version 2), so the saved values are gone.
# The graph, drawn before that `backward()`, shows the saved weight in red, with both versions.
# To fit the page it shows only the saved tensors named `self` (each node's first input; `MmBackward0` saved the weight as `self`).

# %% nbgrader={"grade_id": "demo-seed-graph", "locked": true} tags=["grading-skip"]
seed_graph

# %% [markdown]
# `diagnose` says the same before `backward()`, and under `track_inplace()` names the op and the line.
# The op is `embedding_renorm_`: the in-place kernel `nn.Embedding` calls.

# %%
embedding = nn.Embedding(n, d, max_norm=1)
with track_inplace() as log:
    a = embedding.weight @ W.t()
    b = embedding(idx) @ W.t()
loss = (a.unsqueeze(0) + b.unsqueeze(1)).sigmoid().prod()
report = diagnose(loss, names={"weight": embedding.weight, "W": W})
print(report)

[finding] = report.findings
[write] = log.writes
print(
    "recorded write:",
    write.op,
    "|",
    write.code,
    "| version",
    write.version_before,
    "->",
    write.version,
)
assert finding.node.startswith("Mm") and (finding.saved, finding.name) == ("self", "weight")
assert (finding.saved_version, finding.current_version) == (1, 2)
assert write.op == "embedding_renorm_" and write.code == "b = embedding(idx) @ W.t()"
assert finding.line == write.location

# %% [markdown]
# The seed also says this line "modifies weight in-place": true, live above.
# Its comment on `a`, "weight must be cloned for this to be differentiable", is loose: without the clone, `a` is differentiable; what fails is the backward of `a` after the weight changed.
#
# The seed's explanation of the error is right, and you can test it: the weight is saved *because* `W` requires grad.
# With a `W` that does not, `MmBackward0` needs only `W` (for the weight's gradient), saves no weight, and the same lines run.

# %%
embedding = nn.Embedding(n, d, max_norm=1)
W_constant = W.detach()  # requires_grad=False
a = embedding.weight @ W_constant.t()
b = embedding(idx) @ W_constant.t()
print("a's MmBackward0 saved the weight:", a.grad_fn._saved_self is not None)
(a.unsqueeze(0) + b.unsqueeze(1)).sigmoid().prod().backward()
print("backward() ran; weight.grad shape:", tuple(embedding.weight.grad.shape))
assert a.grad_fn._saved_self is None and embedding.weight.grad is not None

# %% [markdown]
# ## 3. The fixes, and what each computes
#
# Three fixes make `backward()` work.
# They do not compute the same thing.
# `a` is the part that uses the whole weight; the rows 1 and 2 are the ones `embedding(idx)` rescales.
#
# 1. **Reorder**: call the embedding first, then use the weight. `a` sees the rescaled rows.
# 2. **`clone()`**: `a = embedding.weight.clone() @ W.t()`. `a` sees the rows as they were before the rescaling.
# 3. **Renormalise yourself first**, under `no_grad`, then look up with `max_norm=None`. Both parts see the rescaled rows, as with the reorder.
#
# We build the same start for each and compare `a` and the gradients.
# The seed's loss is the product of 2 × 3 × 7 = 42 sigmoids, whose gradients are too small to read (below); `combine` takes their mean instead.


# %%
def seed_setup() -> tuple[nn.Embedding, torch.Tensor]:
    """Returns a fresh max_norm embedding and W, always with the same values."""
    torch.manual_seed(0)
    embedding = nn.Embedding(3, 5, max_norm=1)
    w_out = torch.randn((7, 5), requires_grad=True)  # the seed's W
    return embedding, w_out


def combine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The seed's loss from its two parts, with mean() in place of prod()."""
    return (a.unsqueeze(0) + b.unsqueeze(1)).sigmoid().mean()


embedding, W = seed_setup()
b = embedding(idx) @ W.t()
a = embedding.weight @ W.t()
(a.unsqueeze(0) + b.unsqueeze(1)).sigmoid().prod().backward()
print(f"largest |weight.grad| with the seed's prod(): {embedding.weight.grad.abs().max():.1e}")
assert embedding.weight.grad.abs().max() < 1e-15

results = {}

embedding, W = seed_setup()
b = embedding(idx) @ W.t()  # 1. reorder: the lookup first
a = embedding.weight @ W.t()
combine(a, b).backward()
results["reorder"] = (a.detach(), embedding.weight.grad, W.grad)

embedding, W = seed_setup()
a = embedding.weight.clone() @ W.t()  # 2. clone: MmBackward0 saves the clone
b = embedding(idx) @ W.t()
loss_with_clone = combine(a, b)
graph_with_clone = draw(loss_with_clone, names={"weight": embedding.weight, "W": W}, saved={"self"})
loss_with_clone.backward()
results["clone"] = (a.detach(), embedding.weight.grad, W.grad)

embedding, W = seed_setup()
with torch.no_grad():  # 3. renormalise first, with nn.Embedding's kernel (named in section 2)
    torch.embedding_renorm_(embedding.weight, idx, max_norm=1.0, norm_type=2.0)
a = embedding.weight @ W.t()
b = nn.functional.embedding(idx, embedding.weight) @ W.t()  # max_norm=None: no write
combine(a, b).backward()
results["renorm first"] = (a.detach(), embedding.weight.grad, W.grad)

for name, (a_value, _, _) in results.items():
    print(f"{name:13} a[1:] = {a_value[1:, :3].flatten().tolist()} ...")
reorder, cloned, renormed = results.values()
print(compare("a", cloned[0], reorder[0]))
print(compare("weight.grad", cloned[1], reorder[1]))
print(compare("renorm a", renormed[0], reorder[0]))
print(compare("renorm W.grad", renormed[2], reorder[2]))
assert torch.allclose(renormed[0], reorder[0]) and torch.allclose(renormed[2], reorder[2])
assert torch.equal(cloned[0][0], reorder[0][0])  # row 0 is never rescaled
assert not torch.allclose(cloned[0][1:], reorder[0][1:])  # rows 1 and 2: before vs after

# %% [markdown]
# The graph of the `clone()` fix, drawn before its `backward()`, again with only the saved tensors named `self`: the first `MmBackward0` now saves the clone (a tensor of its own, never written) instead of the weight.
# Nothing is red; the gradient still reaches the weight through `CloneBackward0`.

# %% nbgrader={"grade_id": "demo-clone-graph", "locked": true} tags=["grading-skip"]
graph_with_clone

# %% [markdown]
# Reorder and renormalise-first agree: every use of the weight sees the rescaled rows.
# `clone()` gives another `a` (rows 1 and 2 as they were before the rescaling) and so other gradients.
# Which is right depends on what you mean; the seed's `clone()` keeps the values its buggy order intended, and the reorder changes them.
# What each fix costs: `clone()` copies the whole weight at every forward pass (for a 50,000 × 512 vocabulary, 50,000 × 512 × 4 bytes ≈ 100 MB in float32); the reorder costs nothing; renormalising yourself is one more call, and you must keep `max_norm` out of the lookup.
#
# What is *not* a fix: `.detach()`.
# A detached tensor shares the weight's memory and its version counter (notebook 02a, section 2), and `MmBackward0` still saves it to compute `W.grad`.
# The same error, the same versions:

# %%
embedding, W = seed_setup()
a = embedding.weight.detach() @ W.t()
b = embedding(idx) @ W.t()
with expect_error(RuntimeError, match="is at version 2; expected version 1"):
    combine(a, b).backward()

# %% [markdown]
# `.detach().clone()` does silence the error, and costs you a gradient path: no gradient reaches the weight through `a`.
# Only the two looked-up rows get a gradient (through `b`); row 0 gets none.

# %%
embedding, W = seed_setup()
a = embedding.weight.detach().clone() @ W.t()
b = embedding(idx) @ W.t()
combine(a, b).backward()
print("weight.grad with .detach().clone():", embedding.weight.grad[:, :3].tolist())
print("weight.grad with clone():          ", cloned[1][:, :3].tolist())
assert torch.equal(embedding.weight.grad[0], torch.zeros(5)) and cloned[1][0].abs().sum() > 0

# %% [markdown]
# ### Exercise 1 — predict norms and versions (2 points)
#
# Read this code without running it:
#
# ```python
# embedding = nn.Embedding(5, 2, max_norm=2.0)
# with torch.no_grad():
#     embedding.weight.copy_(
#         torch.tensor([[6.0, 8.0], [0.9, 1.2], [0.0, 3.0], [4.0, 0.0], [0.6, 0.8]])
#     )
# first = embedding(torch.tensor([[0, 1], [0, 4]]))
# with torch.no_grad():
#     second = embedding(torch.tensor([2]))
# ```
#
# Predict `embedding.weight._version` right after the first line (`"version_at_start"`), `embedding.weight._version` after the last line (`"version_at_end"`), and the L2 norm of each of the five rows after the last line (`"norms"`, a list of five floats; 1e-3 is close enough).
# Return them from `predict_norms_and_versions()` as a dict, for example `{"version_at_start": 0, "version_at_end": 0, "norms": [10.0, 1.5, 3.0, 4.0, 1.0]}`.
# The visible test checks the form of your answer and `version_at_start`; the grader runs the code in its own process and compares all three.


# %% nbgrader={"grade_id": "q1-answer", "solution": true}
def predict_norms_and_versions() -> dict[str, object]:
    """Returns your predictions for the code of Exercise 1.

    Returns:
        A dict with keys "version_at_start" (int), "version_at_end" (int) and
        "norms" (a list of five floats, the rows' L2 norms after the last line).
    """
    ### BEGIN SOLUTION
    return {
        "version_at_start": 1,  # reset_parameters: normal_ under no_grad
        "version_at_end": 4,  # copy_, then one write per call, no_grad or not
        "norms": [2.0, 1.5, 2.0, 4.0, 1.0],  # only rows looked up and above 2 come down
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "q1-tests", "grade": true, "locked": true, "points": 2}
"""Checks the predictions of predict_norms_and_versions() against Exercise 1's code, run live."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
predictions = predict_norms_and_versions()
assert isinstance(predictions, dict), "predict_norms_and_versions() should return a dict"
assert set(predictions) == {"version_at_start", "version_at_end", "norms"}, (
    f"expected the keys version_at_start, version_at_end, norms; got {sorted(predictions)}"
)

embedding_q1 = nn.Embedding(5, 2, max_norm=2.0)
truth = {"version_at_start": embedding_q1.weight._version}
with torch.no_grad():
    embedding_q1.weight.copy_(
        torch.tensor([[6.0, 8.0], [0.9, 1.2], [0.0, 3.0], [4.0, 0.0], [0.6, 0.8]])
    )
first = embedding_q1(torch.tensor([[0, 1], [0, 4]]))
with torch.no_grad():
    second = embedding_q1(torch.tensor([2]))
truth["version_at_end"] = embedding_q1.weight._version
truth["norms"] = embedding_q1.weight.detach().norm(dim=1).tolist()

assert predictions["version_at_start"] == truth["version_at_start"], (
    f"a fresh nn.Embedding's weight is at version {truth['version_at_start']}, you predicted "
    f"{predictions['version_at_start']}: the constructor initialises it in place (section 1)."
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """One case: Exercise 1's code is fixed, so the predictions are of that code alone."""
    return [{}]


def _floats(values):
    """The predicted norms as float() reads them, or the type's name when it cannot."""
    try:
        return [float(value) for value in values]
    except (TypeError, ValueError):
        return type(values).__name__


def observe(case):
    """Calls predict_norms_and_versions(); returns its keys and values as plain data."""
    predictions = predict_norms_and_versions()
    if not isinstance(predictions, dict):
        return {"type": type(predictions).__name__}
    predictions = dict(predictions)  # a plain copy: later lookups read nothing of ours
    return {
        "type": "dict",
        "keys": [key if isinstance(key, str) else repr(key) for key in predictions],
        "version_at_start": predictions.get("version_at_start"),
        "version_at_end": predictions.get("version_at_end"),
        "norms": _floats(predictions.get("norms")),
    }


### BEGIN JUDGE
def _run_exercise_1():
    """Runs Exercise 1's code here, in the grader; returns the versions and the norms."""
    embedding = nn.Embedding(5, 2, max_norm=2.0)
    truth = {"version_at_start": embedding.weight._version}
    with torch.no_grad():
        embedding.weight.copy_(
            torch.tensor([[6.0, 8.0], [0.9, 1.2], [0.0, 3.0], [4.0, 0.0], [0.6, 0.8]])
        )
    embedding(torch.tensor([[0, 1], [0, 4]]))
    with torch.no_grad():
        embedding(torch.tensor([2]))
    truth["version_at_end"] = embedding.weight._version
    truth["norms"] = embedding.weight.detach().norm(dim=1).tolist()
    return truth


def _number(seen):
    """A prediction as == compares it: a one-value tensor counts as its value."""
    if isinstance(seen, TensorSeen) and seen.values is not None and seen.values.numel() == 1:
        return seen.values.item()
    return seen


def judge(seen, case):
    """The keys, both versions (version_at_end an int) and the five norms, to 1e-3."""
    truth = _run_exercise_1()
    assert seen["type"] == "dict", "predict_norms_and_versions() should return a dict"
    assert set(seen["keys"]) == {"version_at_start", "version_at_end", "norms"}, (
        f"expected the keys version_at_start, version_at_end, norms; got {sorted(seen['keys'])}"
    )
    start = _number(seen["version_at_start"])
    assert start == truth["version_at_start"], (
        f"a fresh nn.Embedding's weight is at version {truth['version_at_start']}, you predicted "
        f"{start}: the constructor initialises it in place (section 1)."
    )
    assert type(seen["version_at_end"]) is int, "version_at_end should be an int"
    assert seen["version_at_end"] == truth["version_at_end"], (
        f"the weight ends at version {truth['version_at_end']}, you predicted "
        f"{seen['version_at_end']}: count one write for copy_ and one per call of the "
        "embedding, under no_grad too, however many rows it rescales (section 1). "
        + explain("embedding-renorm-in-forward")
    )
    predicted_norms = seen["norms"]
    assert isinstance(predicted_norms, list) and len(predicted_norms) == 5, (
        "norms should list the five rows' norms"
    )
    for row, (guess, real) in enumerate(zip(predicted_norms, truth["norms"], strict=True)):
        assert abs(guess - real) < 1e-3, (
            f"row {row} ends with norm {real:.4f}, you predicted {guess}: only the rows looked up "
            "and above max_norm are rescaled, to max_norm (section 1). "
            + explain("embedding-renorm-in-forward")
        )


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - `nn.Embedding(max_norm=m)` rescales, in place, the rows it looks up whose `norm_type`-norm is above `m`, to just under `m`; other rows stay as they are.
# - Every call bumps `weight._version` by one, even when no row changes, even under `no_grad`; a fresh `nn.Embedding(n, d)` starts at version 1 (its `normal_` init; 2 with `padding_idx`, 0 from `from_pretrained`).
# - Any use of the weight saved for backward *before* a lookup (a tied output layer, a regulariser, a similarity) then fails at `backward()`; `diagnose` under `track_inplace()` names `embedding_renorm_` and the line.
# - Fixes: reorder (free, uses the rescaled rows), `clone()` (a copy, uses the old rows), renormalise yourself under `no_grad` then `max_norm=None` (the rescaled rows). `.detach()` is no fix; `.detach().clone()` loses the gradient.
#
# Part 2, `05b_embedding_max_norm`, goes on at section 4 with a tied-weight language model.
