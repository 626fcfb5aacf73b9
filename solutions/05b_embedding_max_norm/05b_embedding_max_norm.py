# %% [markdown]
# # 05b · `nn.Embedding(max_norm=...)` rewrites its weight during the forward pass (part 2 of 2)
#
# This notebook continues `05a_embedding_max_norm` (sections 1–3: which rows `max_norm` rescales and the write it makes at every call, the error when the weight is used before the lookup, and three fixes).
# Sections and exercises keep their numbers, so this part starts at section 4 and Exercise 2.
#
# **What you will learn**
#
# - the same failure in a tied-weight language model, even when no row is too long, and in `F.embedding` on a tensor you pass;
# - what gradient a row gets through `max_norm`, and how to look up rescaled rows without writing the weight;
# - where the renormalisation does harm with no error at all.
#
# *The seed* below is the older Chinese notebook this notebook grew from: its code is reused, its words are quoted, and where it is wrong on today's PyTorch the notebook says so and shows what happens.
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.

# %% nbgrader={"grade_id": "setup", "locked": true}
import inspect

import torch
from torch import nn

from autograd_pitfalls import (
    KeptInputs,
    TensorSeen,
    assert_grad_close,
    assert_inputs_left_alone,
    compare,
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
# ## 4. A real case: a tied-weight language model
#
# Language models often *tie* the input embedding and the output layer: the logits are `h @ embedding.weight.T`, one score per vocabulary row.
# With `max_norm`, a model that embeds one token at a time (a recurrent decoder, step by step) breaks: one step's logits save the weight, and the next step's lookup writes to it.
# Here is such a model; the vocabulary has 6 tokens of dimension 4.


# %%
class TiedRNNLM(nn.Module):
    """A tiny recurrent language model whose output layer is its input embedding."""

    def __init__(self, vocab: int, dim: int, max_norm: float = 1.0) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, max_norm=max_norm)
        self.recurrent = nn.Linear(dim, dim, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Returns the logits, shape (batch, seq, vocab), for tokens of shape (batch, seq)."""
        h = self.embedding.weight.new_zeros(tokens.shape[0], self.embedding.embedding_dim)
        logits = []
        for t in range(tokens.shape[1]):
            x = self.embedding(tokens[:, t])  # renormalises this step's rows, in place
            h = torch.tanh(x + self.recurrent(h))
            logits.append(h @ self.embedding.weight.T)  # MmBackward0 saves the weight
        return torch.stack(logits, dim=1)


torch.manual_seed(0)
model = TiedRNNLM(vocab=6, dim=4, max_norm=1.0)
tokens = torch.tensor([[0, 1, 2], [3, 4, 5]])
with track_inplace() as log:
    logits = model(tokens)
report = diagnose(logits.sum(), names={"weight": model.embedding.weight})
print("writes:", [(write.op, write.code) for write in log.writes])
print(
    "stale saved weights:", [(f.node, f.saved_version, f.current_version) for f in report.findings]
)
with expect_error(
    RuntimeError,
    match=r"\[4, 6\]\].* is at version \d; expected version \d",  # shape, versions
):
    logits.sum().backward()
assert len(log.writes) == 3 and all(write.op == "embedding_renorm_" for write in log.writes)
assert len(report.findings) == 2  # steps 0 and 1 saved a weight that a later step rewrote

# %% [markdown]
# The graph of three steps is too large to read, so here is the same model on the first two tokens of each sequence, with only the saved tensors named `mat2`, the second factor of each matrix product.
# Each step's `MmBackward0` of the output layer saved `weight.T` (shape `(4, 6)`) as `mat2`: step 0 at version 2, step 1 at version 3 (the weight started at 1, and each step's lookup wrote once).
# Step 0's is red: step 1's lookup wrote to the weight after it was saved.
# Step 1's, saved after the last lookup, is not.
# (The `(4, 4)` box is the recurrent layer's weight, which nothing writes.)

# %%
torch.manual_seed(0)
model = TiedRNNLM(vocab=6, dim=4, max_norm=1.0)
with track_inplace():
    logits = model(tokens[:, :2])
names = {"weight": model.embedding.weight, "recurrent.weight": model.recurrent.weight}
draw(logits.sum(), names=names, saved={"mat2"})

# %% [markdown]
# The error shows a `[4, 6]` tensor, the transposed weight `weight.T` (a view of the weight, with its counter), saved by step 0 or 1.
# Surprise: it fails even when no row is too long.
# With `max_norm = 100` nothing is rescaled, but every call still writes (section 1, in `05a_embedding_max_norm`), so the saved versions are still stale.

# %%
torch.manual_seed(0)
roomy = TiedRNNLM(vocab=6, dim=4, max_norm=100.0)
weight_before = roomy.embedding.weight.detach().clone()
logits = roomy(tokens)
print("values changed:", not torch.equal(weight_before, roomy.embedding.weight.detach()))
with expect_error(RuntimeError, match="is at version 4; expected version 3"):
    logits.sum().backward()
assert torch.equal(weight_before, roomy.embedding.weight.detach())

# %% [markdown]
# A second everyday case, with no recurrence at all: a regulariser on the weights written before the model call in one expression.
# Python evaluates `reg + model(...)` left to right, so `pow` saves the weight first and the lookup writes it second.
# Swapping the two terms is the reorder fix.

# %%
torch.manual_seed(0)
embedding = nn.Embedding(5, 3, max_norm=1.0)
batch = torch.tensor([1, 3])
loss = 0.01 * embedding.weight.pow(2).sum() + embedding(batch).sum()
with expect_error(RuntimeError, match="is at version 2; expected version 1"):
    loss.backward()

loss = embedding(batch).sum() + 0.01 * embedding.weight.pow(2).sum()  # lookup first
loss.backward()
print("reordered: weight.grad row 0 (only the regulariser):", embedding.weight.grad[0].tolist())
assert torch.allclose(embedding.weight.grad[0], 0.02 * embedding.weight.detach()[0])

# %% [markdown]
# Back to the language model.
# The `clone()` fix of section 3 (in `05a_embedding_max_norm`) works here too: at every step, `h @ self.embedding.weight.clone().T`.
# Each step's `MmBackward0` then saves its own copy, and the gradient still reaches the weight through `CloneBackward0`.
# But each step scores against the weight *as it is at that step*: step 0 uses rows that steps 1 and 2 rescale afterwards.


# %%
def cloned_forward(
    model: TiedRNNLM, tokens: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """TiedRNNLM.forward with a clone of the weight at every step; also returns the clones."""
    h = model.embedding.weight.new_zeros(tokens.shape[0], model.embedding.embedding_dim)
    logits, clones = [], []
    for t in range(tokens.shape[1]):
        h = torch.tanh(model.embedding(tokens[:, t]) + model.recurrent(h))
        weight_now = model.embedding.weight.clone()  # a copy for this step's output layer
        clones.append(weight_now.detach())
        logits.append(h @ weight_now.T)
    return torch.stack(logits, dim=1), clones


torch.manual_seed(0)
model = TiedRNNLM(vocab=6, dim=4, max_norm=1.0)
logits, clones = cloned_forward(model, tokens)
logits.sum().backward()  # no error
print(
    "gradients reach the embedding and the recurrent layer:",
    model.embedding.weight.grad is not None and model.recurrent.weight.grad is not None,
)
final_weight = model.embedding.weight.detach()
rescaled_later = []
for t, weight_then in enumerate(clones):
    rescaled_later.append((weight_then != final_weight).any(dim=1).nonzero().flatten().tolist())
    print(f"step {t} scored against rows {rescaled_later[t]} before a later step rescaled them")
assert rescaled_later[0] and not rescaled_later[2]

# %% [markdown]
# Whether that is what you want is a modelling choice.
# Exercise 2 asks for the other one: every step scores against the weight with the rows of the whole sequence already rescaled, which is what the reorder of section 3 (part 1) gives when you apply it to this loop.
#
# ## 5. `F.embedding(..., max_norm=...)` writes to the tensor you pass
#
# The functional form, `F.embedding` (`F` is `torch.nn.functional`), does the same to any tensor you give it.
# Its source shows how: `torch.embedding_renorm_` on `weight.detach()`, a leaf that does not require grad, on the weight's memory.
# That escapes one check: on a leaf that requires grad the write is allowed, where `leaf.mul_(0.2)` is refused (notebook 02a, section 3).
# It does not escape the version counter, which `.detach()` shares: the version moves, and a node that saved the leaf before the lookup makes `backward()` fail, as in section 2 (part 1).

# %%
print(inspect.getsource(nn.functional._no_grad_embedding_renorm_))
table = torch.tensor([[3.0, 4.0], [0.3, 0.4]])
vectors = nn.functional.embedding(torch.tensor([0, 1]), table, max_norm=1.0)
print("your table after the lookup:", table.tolist(), "| version:", table._version)
assert table._version == 1 and torch.allclose(table[0], torch.tensor([0.6, 0.8]))

leaf = torch.tensor([[3.0, 4.0]], requires_grad=True)
with expect_error(RuntimeError, match="a leaf Variable that requires grad is being used"):
    leaf.mul_(0.2)
squares = (leaf * leaf).sum()  # MulBackward0 saves leaf at version 0
nn.functional.embedding(torch.tensor([0]), leaf, max_norm=1.0)  # the same rescaling, allowed
print(
    "leaf after nn.functional.embedding:",
    leaf.detach().tolist(),
    "| is_leaf:",
    leaf.is_leaf,
    "| version:",
    leaf._version,
)
assert leaf._version == 1 and leaf.is_leaf
with expect_error(RuntimeError, match="is at version 1; expected version 0 instead"):
    squares.backward()

# %% [markdown]
# ### Exercise 2 — fix the tied-weight language model (3 points)
#
# Write `tied_rnn_logits(model, tokens)`: the logits of `TiedRNNLM.forward`, shape `(batch, seq, vocab)`, computed so that `backward()` works.
# Use the same recurrence, `h = tanh(x_t + model.recurrent(h))` from `h = 0`, and `logits_t = h @ weight.T` with the tied weight, and keep `max_norm`: every logit must use the weight with the rows of **all** of `tokens` already rescaled, and only those rows, as `nn.Embedding` rescales them (the per-step `clone()` of section 4 gives other values: for the example below, its step-0 logits are printed under the model).
# The simplest is to look the rows up with `model.embedding` itself (or `F.embedding`), whose lookup gives `nn.Embedding`'s gradients.
# The gradients must reach both `model.embedding.weight` (through the lookup and through the output layer) and `model.recurrent.weight`.
# For the model of the cell below and `tokens = [[1, 0, 2]]`, the logits of step 0 are `≈ [[0.4787, 0.2394, 0.3799, 0.9575]]`, in float32 and in float64; row 3 of the weight, which `tokens` does not look up, gets its gradient only through the output layer.
# The model is the caller's: leave its settings (`max_norm`), `model.recurrent` and `tokens` as you found them; `model.embedding.weight` may end with the rows of `tokens` rescaled, as `model(tokens)` leaves it, or as it was.
# The tests run your function on models with other sizes, tokens, `max_norm` and dtypes, and on the course's stand-in for a GPU.


# %%
def q2_example_model(device: torch.device) -> TiedRNNLM:
    """The model of Exercise 2's example: rows of norm 5, 0.5, 2 and 2; max_norm 1."""
    model = TiedRNNLM(vocab=4, dim=2, max_norm=1.0).to(device)
    with torch.no_grad():
        model.embedding.weight.copy_(torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 2.0], [1.2, 1.6]]))
        model.recurrent.weight.copy_(torch.tensor([[0.5, 0.0], [0.0, 0.5]]))
    return model


with expect_error(RuntimeError, match="expected version"):
    q2_example_model(torch.device("cpu"))(torch.tensor([[1, 0, 2]])).sum().backward()
clone_logits, _ = cloned_forward(q2_example_model(torch.device("cpu")), torch.tensor([[1, 0, 2]]))
print("step 0 with the per-step clone() fix:", [round(v, 4) for v in clone_logits[0, 0].tolist()])
# Step 0 by hand: the rows of tokens rescaled first (the kernel nn.Embedding calls), h from 0.
weight = q2_example_model(torch.device("cpu")).embedding.weight.detach().clone()
torch.embedding_renorm_(weight, torch.tensor([1, 0, 2]), 1.0, 2.0)
asked = torch.tanh(weight[1]) @ weight.T
print("step 0 that Exercise 2 asks for:     ", [round(v, 4) for v in asked.tolist()])
assert torch.allclose(asked, torch.tensor([0.4787, 0.2394, 0.3799, 0.9575]), atol=1e-4)


# %% nbgrader={"grade_id": "q2-answer", "solution": true}
def tied_rnn_logits(model: TiedRNNLM, tokens: torch.Tensor) -> torch.Tensor:
    """Returns TiedRNNLM's logits with every row of tokens rescaled before any use of the weight.

    Args:
        model: A TiedRNNLM (its embedding has max_norm set).
        tokens: Token ids, shape (batch, seq).

    Returns:
        The logits, shape (batch, seq, vocab), from which backward() reaches
        model.embedding.weight and model.recurrent.weight.
    """
    ### BEGIN SOLUTION
    embedded = model.embedding(tokens)  # the only write, before any use of the weight
    h = embedded.new_zeros(tokens.shape[0], embedded.shape[-1])
    logits = []
    for t in range(tokens.shape[1]):
        h = torch.tanh(embedded[:, t] + model.recurrent(h))
        logits.append(h @ model.embedding.weight.T)
    return torch.stack(logits, dim=1)
    ### END SOLUTION


# %% nbgrader={"grade_id": "q2-tests", "grade": true, "locked": true, "points": 3}
"""Checks tied_rnn_logits: backward works, the logits and both weights' gradients, any device.

Visible: the example in float32 and float64 (the model's max_norm, model.recurrent and tokens
as they were; a gradient through the output layer), and on a GPU stand-in. Hidden: models of
other sizes, tokens, max_norm and dtypes, against the intended logits and gradients.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
for device in devices():
    for dtype in (torch.float32, torch.float64):
        model_q2 = q2_example_model(device).to(dtype)
        tokens_q2 = torch.tensor([[1, 0, 2]], device=device)
        kept = KeptInputs(tokens=tokens_q2, recurrent=model_q2.recurrent)
        try:
            logits_q2 = tied_rnn_logits(model_q2, tokens_q2)
        except RuntimeError as error:
            if dtype == torch.float32:
                raise
            raise AssertionError(
                f"tied_rnn_logits failed on a float64 model: {str(error).splitlines()[0][:200]}"
                ". Build the tensors you make (the first h, for one) in the model's dtype. "
                + explain("wrong-dtype")
            ) from None
        settings = (model_q2.embedding.max_norm, model_q2.embedding.norm_type)
        assert settings == (1.0, 2.0), (
            f"tied_rnn_logits changed the model's max_norm/norm_type for good (now "
            f"{settings[0]}, {settings[1]}): the model is the caller's"
        )
        assert_inputs_left_alone(kept.changes(), "tied_rnn_logits(model, tokens)")
        assert tuple(logits_q2.shape) == (1, 3, 4), (
            f"logits should have shape (1, 3, 4), got {tuple(logits_q2.shape)}"
        )
        assert logits_q2.dtype == dtype, (
            f"the logits should be {dtype}, like the model, got {logits_q2.dtype}"
        )
        expected_step0 = torch.tensor([[0.4787, 0.2394, 0.3799, 0.9575]], device=device)
        assert torch.allclose(logits_q2[:, 0].detach(), expected_step0.to(dtype), atol=1e-4), (
            f"the logits of step 0 should be {[round(v, 4) for v in expected_step0[0].tolist()]}, "
            f"got {[round(v, 4) for v in logits_q2[0, 0].tolist()]}: use the weight with every "
            "row of tokens rescaled before any use of it. " + explain("embedding-renorm-in-forward")
        )
        try:
            logits_q2.sum().backward()
        except RuntimeError as error:
            raise AssertionError(
                f"backward() through your logits failed: {str(error).splitlines()[0][:200]} "
                + explain("embedding-renorm-in-forward")
            ) from None
        embedding_grad = model_q2.embedding.weight.grad
        assert embedding_grad is not None, "no gradient reached the embedding"
        assert model_q2.recurrent.weight.grad is not None, "no gradient reached model.recurrent"
        assert embedding_grad[3].abs().sum() > 0, (
            "no gradient reached the embedding through the output layer: row 3, which tokens "
            "does not look up, gets its gradient only there (was the tied weight detached?). "
            + explain("grad-never-reached")
        )
on_gpu(tied_rnn_logits, q2_example_model(torch.device("cpu")), torch.tensor([[1, 0, 2]]))


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The example (weights of the sum) in both dtypes, then models of other sizes, max_norm
    and dtypes."""
    cases = [
        {"weight": torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 2.0], [1.2, 1.6]]),
         "recurrent": torch.tensor([[0.5, 0.0], [0.0, 0.5]]), "max_norm": 1.0,
         "tokens": torch.tensor([[1, 0, 2]]), "probe": torch.ones(1, 3, 4), "dtype": dtype}
        for dtype in ("float32", "float64")
    ]  # fmt: skip
    for vocab, dim, batch, seq, max_norm, dtype in [
        (7, 3, 2, 4, 1.0, "float32"),
        (9, 5, 3, 3, 1.5, "float64"),
        (5, 4, 1, 5, 0.8, "float32"),
        (6, 3, 2, 3, 1.2, "float64"),
    ]:
        bound = dim**-0.5  # nn.Linear's initial range
        cases.append(
            {"weight": torch.randn(vocab, dim, generator=rng, dtype=torch.float64) * 1.5,
             "recurrent": (torch.rand(dim, dim, generator=rng, dtype=torch.float64) * 2 - 1)
             * bound, "max_norm": max_norm,
             "tokens": torch.randint(vocab, (batch, seq), generator=rng),
             "probe": torch.randn(batch, seq, vocab, generator=rng, dtype=torch.float64),
             "dtype": dtype}
        )  # fmt: skip
    return cases


def _case_model(case, device, dtype):
    """A TiedRNNLM holding the case's weights, on device, with dtype."""
    vocab, dim = case["weight"].shape
    model = TiedRNNLM(vocab, dim, max_norm=case["max_norm"]).to(device, dtype)
    with torch.no_grad():
        model.embedding.weight.copy_(case["weight"])
        model.recurrent.weight.copy_(case["recurrent"])
    return model


def observe(case):
    """Calls tied_rnn_logits on every device and on a GPU stand-in; backpropagates the weighted logits."""
    dtype = getattr(torch, case["dtype"])
    seen = {}
    for device in devices():
        model = _case_model(case, device, dtype)
        tokens = case["tokens"].to(device, copy=True)
        kept = KeptInputs(tokens=tokens, recurrent=model.recurrent)
        logits = tied_rnn_logits(model, tokens)
        inputs_changed = kept.changes()
        backward_error = None
        try:
            (logits * case["probe"].to(device, dtype)).sum().backward()
        except RuntimeError as error:
            backward_error = str(error).splitlines()[0][:200]
        seen[device.type] = {
            "logits": logits, "backward_error": backward_error,
            "embedding_grad": model.embedding.weight.grad,
            "recurrent_grad": model.recurrent.weight.grad,
            "max_norm_after": model.embedding.max_norm,
            "norm_type_after": model.embedding.norm_type,
            "weight_after": model.embedding.weight, "recurrent_after": model.recurrent.weight,
            "inputs_changed": inputs_changed,
        }  # fmt: skip
    try:
        logits = on_gpu(
            tied_rnn_logits, _case_model(case, torch.device("cpu"), dtype), case["tokens"]
        )
        seen["gpu"] = {"failure": None, "logits": logits}
    except AssertionError as error:
        seen["gpu"] = {"failure": str(error)}
    return seen


### BEGIN JUDGE
def _intended_logits(case):
    """The logits and both gradients, here: renormalise the rows of tokens, then no max_norm."""
    dtype = getattr(torch, case["dtype"])
    weight = case["weight"].to(dtype).clone().requires_grad_(True)  # a copy: the case stays
    recurrent = case["recurrent"].to(dtype).clone().requires_grad_(True)
    tokens = case["tokens"]
    with torch.no_grad():
        torch.embedding_renorm_(weight, tokens, case["max_norm"], 2.0)
    embedded = nn.functional.embedding(tokens, weight)
    h = embedded.new_zeros(tokens.shape[0], embedded.shape[-1])
    steps = []
    for t in range(tokens.shape[1]):
        h = torch.tanh(embedded[:, t] + h @ recurrent.T)
        steps.append(h @ weight.T)
    logits = torch.stack(steps, dim=1)
    (logits * case["probe"].to(dtype)).sum().backward()
    return logits.detach(), weight.grad, recurrent.grad


def _assert_grad_seen(seen, expected, name, atol):
    """assert_grad_close on a gradient as the probe saw it (None, or a plain tensor)."""
    if isinstance(seen, TensorSeen):
        assert seen.cls in ("Tensor", "Parameter"), f"{name} is a {seen.cls}, not a plain tensor."
        seen = seen.values
    assert_grad_close(seen, expected, name=name, atol=atol)


def judge(seen, case):
    """Logits (shape, dtype, values), backward, both gradients; on a GPU stand-in, no device error."""
    dtype = getattr(torch, case["dtype"])
    logits, embedding_grad, recurrent_grad = _intended_logits(case)
    shape = tuple(logits.shape)
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        assert run["max_norm_after"] == case["max_norm"] and run["norm_type_after"] == 2.0, (
            f"tied_rnn_logits changed the model's max_norm/norm_type for good (now "
            f"{run['max_norm_after']}, {run['norm_type_after']}): the model is the caller's"
        )
        renormalised = case["weight"].to(dtype).clone()
        torch.embedding_renorm_(renormalised, case["tokens"], case["max_norm"], 2.0)
        weight_after = run["weight_after"].values
        assert torch.allclose(weight_after, renormalised, atol=1e-6) or torch.equal(
            weight_after, case["weight"].to(dtype)
        ), (
            "after the call, model.embedding.weight should be as it was, or hold the rows of "
            "tokens rescaled as model(tokens) leaves it: the model is the caller's"
        )
        assert torch.equal(run["recurrent_after"].values, case["recurrent"].to(dtype)), (
            "tied_rnn_logits changed model.recurrent.weight: the model is the caller's"
        )
        assert_inputs_left_alone(run["inputs_changed"], "tied_rnn_logits(model, tokens)")
        got = run["logits"]
        assert isinstance(got, TensorSeen) and got.cls in ("Tensor", "Parameter"), (
            "tied_rnn_logits should return a tensor"
        )
        assert got.shape == shape, f"logits should have shape {shape}, got {got.shape}"
        assert got.is_on(device), explain("wrong-device")
        assert got.dtype == dtype, f"the logits should be {dtype}, like the model, got {got.dtype}"
        assert torch.allclose(got.values, logits, atol=1e-5), (
            f"the logits of step 0 should be {[round(v, 4) for v in logits[0, 0].tolist()]}, "
            f"got {[round(v, 4) for v in got.values[0, 0].tolist()]}: the logits differ from "
            "those of the model with every row of tokens rescaled before any use of the weight. "
            + explain("embedding-renorm-in-forward")
        )
        assert run["backward_error"] is None, (
            f"backward() through your logits failed: {run['backward_error']} "
            + explain("embedding-renorm-in-forward")
        )
        _assert_grad_seen(run["embedding_grad"], embedding_grad, "embedding.weight.grad", 1e-5)
        _assert_grad_seen(run["recurrent_grad"], recurrent_grad, "recurrent.weight.grad", 1e-5)
    gpu = seen["gpu"]
    assert gpu["failure"] is None, gpu["failure"]
    got = gpu["logits"]
    assert got.is_on("gpu") and got.dtype == dtype, explain("wrong-device")
    assert torch.allclose(got.values, logits, atol=1e-5), (
        "on a GPU, the logits differ from those on the CPU"
    )


### END JUDGE
probe_and_judge("q2", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. The gradient through `max_norm`
#
# The rescaling writes into `weight.detach()` (section 5 printed the code that does it), with grad mode as it was: autograd records nothing of it, and does not differentiate it.
# For autograd, the rescaled rows are simply the rows of the weight, and the lookup copies the output's gradient into them.
#
# By hand, with the row `w = [3, 4]`, `max_norm = 1`, a lookup of `[0, 0]` and `loss = Σ out · v` for `v = [1, 2]`: each of the two looked-up copies passes `v` back, so `weight.grad[0] = 2v = [2, 4]`, whatever the rescaling did.
# A *differentiable* rescaling, `out = w · max_norm / ‖w‖`, has another gradient: `2 (v / ‖w‖ − (v·w) w / ‖w‖³) = 2 ([0.2, 0.4] − 11 · [3, 4] / 125) = [−0.128, 0.096]`.

# %%
v = torch.tensor([1.0, 2.0])
embedding = nn.Embedding.from_pretrained(torch.tensor([[3.0, 4.0]]), freeze=False, max_norm=1.0)
(embedding(torch.tensor([0, 0])) * v).sum().backward()
print(compare("weight.grad", embedding.weight.grad[0], torch.tensor([2.0, 4.0])))
assert_grad_close(embedding.weight.grad[0], torch.tensor([2.0, 4.0]), name="weight.grad[0]")

w = torch.tensor([3.0, 4.0], requires_grad=True)
rescaled = w * (1.0 / w.norm())
(2 * rescaled * v).sum().backward()
print(compare("differentiable", w.grad, torch.tensor([-0.128, 0.096])))
assert torch.allclose(w.grad, torch.tensor([-0.128, 0.096]))

# %% [markdown]
# So `max_norm` acts like a projection step between updates, not like a normalisation layer.
# Exercise 3 asks for the lookup values without the write; the test accepts either gradient, as long as one reaches the weight.
#
# ### Exercise 3 — a max-norm lookup that never writes the weight (3 points)
#
# Write `max_norm_lookup(weight, indices, max_norm, norm_type=2.0)`: the values `nn.Embedding(max_norm=max_norm, norm_type=norm_type)` would return for `indices` (any shape; the result has shape `indices.shape + (dim,)`), **without writing to `weight`** (its values and its `_version` stay as they were).
# A row whose `norm_type`-norm is above `max_norm` comes back rescaled to that norm; the others come back as they are (1e-5 is close enough, so the `1e-7` of section 1, in part 1, does not matter).
# A gradient must reach `weight` from the result, for the looked-up rows only, and be finite on every row: a row of norm 0 comes back as it is, with a gradient.
# Leave `indices` as they were too.
# For `weight = [[3, 4], [0.3, 0.4], [0, 0]]`, `indices = [0, 1, 0, 2]` and `max_norm = 1`: `[[0.6, 0.8], [0.3, 0.4], [0.6, 0.8], [0, 0]]`, the weight still holds `[3, 4]`, and the gradient of the result's sum is finite and nonzero on every row, the row of norm 0 included.
# With `norm_type = 1`, the row `[3, 4]` has norm 7 and comes back as `[3/7, 4/7]`.
# The result has the weight's dtype and device.


# %% nbgrader={"grade_id": "q3-answer", "solution": true}
def max_norm_lookup(
    weight: torch.Tensor, indices: torch.Tensor, max_norm: float, norm_type: float = 2.0
) -> torch.Tensor:
    """Returns nn.Embedding(max_norm=...)'s lookup of indices, without writing to weight.

    Args:
        weight: The table, shape (num_embeddings, dim); may require grad.
        indices: Row ids, any shape, int64.
        max_norm: The largest norm a returned row may have.
        norm_type: The p of the p-norm.

    Returns:
        The rows, shape indices.shape + (dim,), rescaled where their norm is above max_norm.
    """
    ### BEGIN SOLUTION
    rows = weight[indices]  # a new tensor: gathering copies
    norms = torch.linalg.vector_norm(rows, ord=norm_type, dim=-1, keepdim=True)
    scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
    return rows * scale
    ### END SOLUTION


# %% nbgrader={"grade_id": "q3-tests", "grade": true, "locked": true, "points": 3}
"""Checks max_norm_lookup: the values of nn.Embedding(max_norm), weight never written, gradient.

Visible: the example (a row of norm 0 included: a finite gradient on every row), and the row
[3, 4] with norm_type 1; weight and indices left as they were. Hidden: tables with a zero, a
short and a long row, several p-norms, shapes and dtypes.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
for device in devices():
    weight_q3 = torch.tensor(
        [[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], device=device, requires_grad=True
    )
    indices_q3 = torch.tensor([0, 1, 0, 2], device=device)
    kept = KeptInputs(weight=weight_q3, indices=indices_q3)
    rows_q3 = max_norm_lookup(weight_q3, indices_q3, 1.0)
    expected_rows = torch.tensor([[0.6, 0.8], [0.3, 0.4], [0.6, 0.8], [0.0, 0.0]], device=device)
    assert torch.allclose(rows_q3.detach(), expected_rows, atol=1e-5), (
        f"expected {expected_rows.tolist()}, got {rows_q3.tolist()}: rescale only the rows "
        "above max_norm, to max_norm. " + explain("embedding-renorm-in-forward")
    )
    assert weight_q3._version == 0 and weight_q3.detach()[0].tolist() == [3.0, 4.0], (
        "weight was written. " + explain("embedding-renorm-wrote-weight")
    )
    assert_inputs_left_alone(kept.changes(), "max_norm_lookup(weight, indices, ...)")
    assert rows_q3.requires_grad, (
        "the result does not require grad: no gradient can reach weight. "
        + explain("grad-never-reached")
    )
    rows_q3.sum().backward()
    assert weight_q3.grad is not None, (  # a NaN gradient is told apart just below
        "no gradient reached weight. " + explain("grad-never-reached")
    )
    finite = weight_q3.grad.isfinite().all(dim=1)
    assert finite.all(), (
        f"weight.grad is not finite on rows {finite.logical_not().nonzero().flatten().tolist()}"
        " (row 2 has norm 0: a division by the norm gives inf or NaN there, even where "
        "torch.where keeps the row as it is). Divide by something that cannot be 0."
    )
    reached = weight_q3.grad.abs().sum(dim=1) > 0
    assert reached.all(), (
        f"no gradient reached rows {reached.logical_not().nonzero().flatten().tolist()}, which "
        "the example looks up (row 2, of norm 0, comes back as it is, with a gradient). "
        + explain("grad-never-reached")
    )
    rows_l1 = max_norm_lookup(
        torch.tensor([[3.0, 4.0]], device=device), torch.tensor([0], device=device), 1.0, 1.0
    )
    expected_l1 = torch.tensor([[3 / 7, 4 / 7]], device=device)
    assert torch.allclose(rows_l1, expected_l1, atol=1e-5), (
        f"with norm_type=1, expected {expected_l1.tolist()}, got {rows_l1.tolist()}: rescale "
        "the rows whose norm_type-norm is above max_norm. " + explain("embedding-renorm-in-forward")
    )
on_gpu(max_norm_lookup, torch.randn(4, 3, requires_grad=True), torch.tensor([0, 2]), 1.0)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The examples, then tables with a zero row, a short row and a long row, several p-norms."""
    cases = [
        {"weight": torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]]),
         "indices": torch.tensor([0, 1, 0, 2]), "max_norm": 1.0, "norm_type": 2.0,
         "probe": torch.ones(4, 2)},
        {"weight": torch.tensor([[3.0, 4.0]]), "indices": torch.tensor([0]), "max_norm": 1.0,
         "norm_type": 1.0, "probe": torch.tensor([[1.0, 2.0]])},  # the sum's gradient is 0
    ]  # fmt: skip
    for rows_count, dim, shape, max_norm, norm_type, dtype in [
        (10, 4, (6,), 1.0, 2.0, torch.float32),
        (8, 3, (2, 5), 1.5, 1.0, torch.float64),
        (12, 6, (3, 4), 0.7, 3.0, torch.float32),
        (9, 5, (2, 2, 3), 1.2, 2.0, torch.float64),
    ]:
        weight = torch.randn(rows_count, dim, generator=rng, dtype=dtype) * 1.2
        norms = torch.linalg.vector_norm(weight, ord=norm_type, dim=1, keepdim=True)
        weight[0] = 0.0  # a zero row: must come back as zeros
        weight[1:3] *= torch.tensor([[0.5], [2.0]], dtype=dtype) * max_norm / norms[1:3]
        indices = torch.randint(rows_count, shape, generator=rng)
        indices[..., :3] = torch.tensor([0, 1, 2])  # the zero, the short and the long row
        probe = torch.randn(*shape, dim, generator=rng, dtype=dtype)
        cases.append(
            {"weight": weight, "indices": indices, "max_norm": max_norm,
             "norm_type": norm_type, "probe": probe}
        )  # fmt: skip
    return cases


def observe(case):
    """Calls max_norm_lookup on every device and on a GPU stand-in; the weight after, its gradient."""
    seen = {}
    for device in devices():
        weight = case["weight"].clone().to(device).requires_grad_(True)
        indices = case["indices"].to(device, copy=True)
        kept = KeptInputs(weight=weight, indices=indices)
        rows = max_norm_lookup(weight, indices, case["max_norm"], case["norm_type"])
        weight_version, weight_after = weight._version, weight.detach().clone()
        inputs_changed = kept.changes()
        backward_error = None
        if isinstance(rows, torch.Tensor) and rows.requires_grad:
            try:
                (rows * case["probe"].to(device)).sum().backward()
            except RuntimeError as error:
                backward_error = str(error).splitlines()[0][:200]
        seen[device.type] = {
            "rows": rows, "weight_version": weight_version, "weight_after": weight_after,
            "backward_error": backward_error, "grad": weight.grad,
            "inputs_changed": inputs_changed,
        }  # fmt: skip
    try:
        on_gpu(
            max_norm_lookup,
            case["weight"].clone().requires_grad_(True),
            case["indices"],
            case["max_norm"],
            case["norm_type"],
        )
        seen["gpu"] = None
    except AssertionError as error:
        seen["gpu"] = str(error)
    return seen


### BEGIN JUDGE
def judge(seen, case):
    """Shape, dtype, nn.Embedding's values; weight unwritten; a gradient to the rows looked up."""
    weight, indices = case["weight"], case["indices"]
    max_norm, norm_type = case["max_norm"], case["norm_type"]
    embedding_rows = nn.functional.embedding(
        indices, weight.clone(), max_norm=max_norm, norm_type=norm_type
    )
    shape = (*indices.shape, weight.shape[1])
    wrote_weight = explain("embedding-renorm-wrote-weight")
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        if device == "gpu":
            continue
        rows = run["rows"]
        assert isinstance(rows, TensorSeen) and rows.cls in ("Tensor", "Parameter"), (
            "max_norm_lookup should return a tensor"
        )
        assert rows.shape == shape, f"the result should have shape {shape}"
        assert rows.is_on(device), explain("wrong-device")
        assert rows.dtype == weight.dtype, (
            f"the result should be {weight.dtype}, like weight, got {rows.dtype}"
        )
        assert torch.allclose(rows.values, embedding_rows, atol=1e-5), (
            f"the values differ from nn.Embedding(max_norm={max_norm}, norm_type={norm_type})'s: "
            "rescale only the rows whose norm_type-norm is above max_norm. "
            + explain("embedding-renorm-in-forward")
        )
        assert run["weight_version"] == 0, (
            f"weight._version moved: weight was written. {wrote_weight}"
        )
        assert torch.equal(run["weight_after"].values, weight), (
            f"weight's values changed (a write hidden from _version?). {wrote_weight}"
        )
        assert_inputs_left_alone(run["inputs_changed"], "max_norm_lookup(weight, indices, ...)")
        assert rows.requires_grad is True, (
            f"the result of max_norm_lookup(weight, indices of shape {tuple(indices.shape)}, ...) "
            "does not require grad, so no gradient reaches weight. " + explain("grad-never-reached")
        )
        assert run["backward_error"] is None, f"backward() raised: {run['backward_error']}"
        grad = run["grad"]
        assert isinstance(grad, TensorSeen) and grad.cls in ("Tensor", "Parameter"), (
            "no gradient reached weight. " + explain("grad-never-reached")
        )
        looked_up = torch.zeros(weight.shape[0], dtype=torch.bool)
        looked_up[indices.flatten()] = True
        finite = grad.values.isfinite().all(dim=1)
        assert finite.all(), (
            f"weight.grad is not finite on rows {finite.logical_not().nonzero().flatten().tolist()}"
            " (row 0 has norm 0 here: a division by the norm gives inf or NaN there, even where "
            "torch.where keeps the row as it is). Divide by something that cannot be 0."
        )
        reached = grad.values.abs().sum(dim=1) > 0
        assert torch.equal(reached, looked_up), (
            f"the gradient should reach exactly the looked-up rows: rows "
            f"{looked_up.nonzero().flatten().tolist()}, it reached "
            f"{reached.nonzero().flatten().tolist()}. " + explain("grad-never-reached")
        )
    assert seen["gpu"] is None, seen["gpu"]


### END JUDGE
probe_and_judge("q3", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Harm without an error
#
# The seed ends: "If you don't use embedding.weight outside of the normal forward pass, you don't need to worry about all this."
# True, but outside uses are easy to miss: section 4's tied decoder is one (`h @ embedding.weight.T`), and there at least an error shows it.
# Below are two that raise nothing: the tensor you built the table from, and a snapshot of the weight.
# Autograd only checks tensors a node saved.
# Tensors outside any graph can change under you with no error at all.
#
# **A "frozen" pretrained table is rewritten, and so is your tensor.**
# `from_pretrained` wraps the tensor you pass without copying it, and `freeze=True` only turns off `requires_grad`.
# With `max_norm`, every lookup rescales your pretrained vectors in place, under `no_grad` too (as below), and `model.eval()` changes nothing of it.

# %%
pretrained_vectors = torch.tensor([[3.0, 4.0], [0.3, 0.4]])  # say, loaded from a file
frozen = nn.Embedding.from_pretrained(pretrained_vectors, freeze=True, max_norm=1.0)
print(
    "same memory:",
    frozen.weight.data_ptr() == pretrained_vectors.data_ptr(),
    "| requires_grad:",
    frozen.weight.requires_grad,
)
frozen.eval()  # evaluation mode changes nothing of max_norm
with torch.no_grad():
    frozen(torch.tensor([0]))
print("your pretrained tensor now:", pretrained_vectors.tolist())
assert torch.allclose(pretrained_vectors[0], torch.tensor([0.6, 0.8]))

# %% [markdown]
# **A snapshot taken with `.detach()` moves with the weight.**
# To measure how much the lookups change the weights, a snapshot must own its memory.
# `.detach()` shares it (and the counter), so the drift reads 0 although row 0 shrank from norm 5 to 1; `.clone()` sees it.

# %%
embedding = nn.Embedding.from_pretrained(
    torch.tensor([[3.0, 4.0], [0.3, 0.4]]), freeze=False, max_norm=1.0
)
shared_snapshot = embedding.weight.detach()
own_snapshot = embedding.weight.detach().clone()
embedding(torch.tensor([0, 1]))
drift_shared = (embedding.weight.detach() - shared_snapshot).norm().item()
drift_own = (embedding.weight.detach() - own_snapshot).norm().item()
print(f"drift seen by the .detach() snapshot: {drift_shared}")
print(f"drift seen by the .clone() snapshot:  {drift_own:.3f}")
assert drift_shared == 0.0 and abs(drift_own - 4.0) < 1e-5

# %% [markdown]
# A fix for both: copy what you want to keep (`from_pretrained(vectors.clone(), ...)`, `weight.detach().clone()`), or keep `max_norm` off and renormalise where you choose to.
#
# ### Exercise 4 — choose the fix (2 points)
#
# For each situation, choose one fix: `"reorder"` (call the embedding before any other use of the weight), `"clone"` (use `embedding.weight.clone()` where you use the weight directly), `"renorm_first"` (rescale the rows under `torch.no_grad()` yourself, then look up with `max_norm=None`), `"detach"` (use `embedding.weight.detach()` there), `"detach_clone"` (use `embedding.weight.detach().clone()` there) or `"no_grad"` (compute that use of the weight under `torch.no_grad()`).
#
# - `"A"`: the output layer must score against the rescaled rows the lookup returned, the lookup keeps `max_norm`, and the weight is too large to copy at every step.
# - `"B"`: a regulariser must see the weight as it was *before* this batch's rescaling and send its gradient to the weight, and the lookup keeps `max_norm`.
# - `"C"`: a library loss you cannot edit reads `embedding.weight` (and saves it for backward) before it calls the embedding, and every use must see the rescaled rows.
# - `"D"`: before the lookup, a loss term scores the model's hidden state (which requires grad) against all rows, `hidden @ weight.T`; it must train the hidden state, send no gradient to the embedding, and `backward()` must work.
#
# Return a dict `{"A": ..., "B": ..., "C": ..., "D": ...}` from `choose_fixes()`.


# %% nbgrader={"grade_id": "q4-answer", "solution": true}
def choose_fixes() -> dict[str, str]:
    """Returns the fix for each situation of Exercise 4.

    Returns:
        A dict mapping "A", "B", "C", "D" to one of "reorder", "clone",
        "renorm_first", "detach", "detach_clone", "no_grad".
    """
    ### BEGIN SOLUTION
    return {"A": "reorder", "B": "clone", "C": "renorm_first", "D": "detach_clone"}
    ### END SOLUTION


# %% nbgrader={"grade_id": "q4-tests", "grade": true, "locked": true, "points": 2}
"""Checks choose_fixes() for the four situations of Exercise 4."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
choices = choose_fixes()
options = {"reorder", "clone", "renorm_first", "detach", "detach_clone", "no_grad"}
assert isinstance(choices, dict) and set(choices) == {"A", "B", "C", "D"}, (
    "choose_fixes() should return a dict with the keys A, B, C, D"
)
assert set(choices.values()) <= options, f"each choice should be one of {sorted(options)}"
assert choices["A"] == "reorder", (
    "A: with max_norm kept on the lookup, only the reorder gives the rescaled rows without a "
    "copy (section 3, in 05a). " + explain("embedding-renorm-in-forward")
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """One case: the four situations are fixed."""
    return [{}]


def observe(case):
    """Calls choose_fixes(); returns a plain copy of the dict (or its type's name)."""
    choices = choose_fixes()
    if not isinstance(choices, dict):
        return {"type": type(choices).__name__}
    return {"type": "dict", "choices": dict(choices)}


### BEGIN JUDGE
def judge(seen, case):
    """The keys, the options, and the fix for each of A, B, C and D."""
    options = {"reorder", "clone", "renorm_first", "detach", "detach_clone", "no_grad"}
    choices = seen.get("choices")
    assert isinstance(choices, dict) and set(choices) == {"A", "B", "C", "D"}, (
        "choose_fixes() should return a dict with the keys A, B, C, D"
    )
    assert all(isinstance(choice, str) for choice in choices.values()), (
        f"each choice should be one of {sorted(options)}"
    )
    assert set(choices.values()) <= options, f"each choice should be one of {sorted(options)}"
    assert choices["A"] == "reorder", (
        "A: with max_norm kept on the lookup, only the reorder gives the rescaled rows without a "
        "copy (section 3, in 05a). " + explain("embedding-renorm-in-forward")
    )
    assert choices["B"] == "clone", (
        "B: the values before the rescaling are only kept by a copy made before the lookup, "
        "and a copy made after .detach() sends no gradient to the weight (section 3, in 05a). "
        + explain("embedding-renorm-in-forward")
    )
    assert choices["C"] == "renorm_first", (
        "C: you cannot move the library's use, so rescale before it and keep max_norm out of "
        "the lookup (section 3, in 05a). " + explain("embedding-renorm-in-forward")
    )
    assert choices["D"] == "detach_clone", (
        "D: .detach() shares the weight's version counter and is still saved for the hidden "
        "state's gradient, so backward() still fails; no_grad cuts the hidden state's gradient "
        "too; clone() sends a gradient to the embedding (section 3, in 05a). "
        + explain("embedding-renorm-in-forward")
    )


### END JUDGE
probe_and_judge("q4", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# Situation D, live, with the four candidates that keep the term in the loss.
# `.detach()` fails; `no_grad` leaves the hidden state without a gradient from the term; `clone()` trains the embedding through it (row 0, never looked up, gets a gradient); `.detach().clone()` does what D asks.


# %%
def situation_d(score) -> tuple[torch.Tensor, torch.Tensor]:
    """Runs D's loss, its term computed by score(hidden, weight); returns (term, weight.grad)."""
    torch.manual_seed(0)
    embedding = nn.Embedding(5, 3, max_norm=1.0)
    hidden = torch.randn(2, 3, requires_grad=True)
    term = score(hidden, embedding.weight)
    loss = term + (embedding(torch.tensor([1, 2])) * hidden).sum()
    loss.backward()
    return term, embedding.weight.grad


def no_grad_score(hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return (hidden @ weight.T).logsumexp(dim=1).sum()


with expect_error(RuntimeError, match="is at version 2; expected version 1"):
    situation_d(lambda hidden, weight: (hidden @ weight.detach().T).logsumexp(dim=1).sum())
candidates = {
    "no_grad": no_grad_score,
    "clone": lambda hidden, weight: (hidden @ weight.clone().T).logsumexp(dim=1).sum(),
    "detach_clone": lambda hidden, weight: (
        (hidden @ weight.detach().clone().T).logsumexp(dim=1).sum()
    ),
}
for name, score in candidates.items():
    term, weight_grad = situation_d(score)
    trains_hidden, trains_row_0 = term.requires_grad, bool(weight_grad[0].abs().sum() > 0)
    print(
        f"{name:12} | the term trains the hidden state: {trains_hidden!s:5} "
        f"| row 0 (never looked up) gets a gradient: {trains_row_0}"
    )
    assert (trains_hidden, trains_row_0) == {
        "no_grad": (False, False),
        "clone": (True, True),
        "detach_clone": (True, False),
    }[name]

# %% [markdown]
# ## Summary
#
# - Part 1 (`05a_embedding_max_norm`): every call with `max_norm` writes the weight in place, so a use of the weight saved for backward before a lookup fails at `backward()`; the fixes are the reorder, `clone()` and renormalising yourself first.
# - The gradient through `max_norm` ignores the rescaling: it is a projection, not a layer.
# - `F.embedding(..., max_norm=...)` and `from_pretrained(..., max_norm=...)` rewrite the tensor you pass, with no error; copy what you must keep.
