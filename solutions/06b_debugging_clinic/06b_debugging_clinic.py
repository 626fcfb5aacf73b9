# %% [markdown]
# # 06b · A debugging clinic: autograd errors in real training code (part 2 of 2)
#
# This notebook continues `06a_debugging_clinic` (sections 1–5: a loss that is not one number, a cut graph, `param.grad is None`, a missing `zero_grad()`, and what `.to(device)` leaves behind), with more training scripts broken, run, read and fixed.
# Sections and exercises keep their numbers, so this part starts at section 6 and Exercise 3.
#
# **What you will learn**
#
# - `Trying to backward through the graph a second time`: a recurrent state carried across batches, what `retain_graph=True` does then, and the memory it holds (plotted);
# - NaN in backward from `sqrt` at 0 and `log` of 0, found with anomaly mode and a gradient hook; `gradcheck` on a hand-written `autograd.Function`;
# - two scripts where pitfalls of notebooks 02a, 04a–04b and 05a–05b come together, found with `diagnose`, `track_inplace` and the course's linter.
#
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.

# %% nbgrader={"grade_id": "setup", "locked": true}
import copy
import inspect
import re
import warnings
import weakref
from typing import ClassVar

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 (the name every training script uses)

from autograd_pitfalls import (
    KeptInputs,
    TensorSeen,
    assert_inputs_left_alone,
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
from autograd_pitfalls.lint import lint_source
from autograd_pitfalls.walk import walk_graph

print(f"torch {torch.__version__}")


# %% [markdown]
# ## 6. A recurrent state carried across batches
#
# A character-level language model reads a long stream in chunks of a few steps (truncated backpropagation through time).
# To remember across chunks, it carries its hidden state `h` from one chunk into the next.


# %%
class CharRNN(nn.Module):
    """An embedding, an RNN cell and a linear head: logits for the next token at every step."""

    def __init__(self, vocab: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.cell = nn.RNNCell(hidden, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(
        self, tokens: torch.Tensor, h: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns the logits, shape (batch, steps, vocab), and the last hidden state."""
        logits = []
        for t in range(tokens.shape[1]):
            h = self.cell(self.embedding(tokens[:, t]), h)
            logits.append(self.head(h))
        return torch.stack(logits, dim=1), h


def stream_chunks(stream: torch.Tensor, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Cuts token streams (batch, n) into (inputs, targets) chunks; targets are the next tokens."""
    return [
        (stream[:, i : i + length], stream[:, i + 1 : i + length + 1])
        for i in range(0, stream.shape[1] - length, length)
    ]


stream = torch.tensor([[0, 1, 2, 3, 4] * 8, [4, 3, 2, 1, 0] * 8])  # two streams of 40 tokens
chunks = stream_chunks(stream, 4)


def train_lm_buggy(model: CharRNN, chunks: list, lr: float) -> list[float]:
    """Buggy: one pass of SGD over the chunks, the hidden state carried from chunk to chunk."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    h = torch.zeros(chunks[0][0].shape[0], model.cell.hidden_size)
    losses = []
    for inputs, targets in chunks:
        optimizer.zero_grad()
        logits, h = model(inputs, h)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
with expect_error(RuntimeError, match="Trying to backward through the graph a second time"):
    train_lm_buggy(CharRNN(5, 4), chunks, lr=0.5)

# %% [markdown]
# The first chunk's `backward()` works (the cell below does it again); the second's fails.
# `h` came out of the first chunk's graph, so the second chunk's graph goes on below it, into the first chunk's nodes, whose saved tensors the first `backward()` freed.
# The graph of the second chunk's loss (one step per chunk, and only the saved tensors named `result`, each `tanh`'s output and the log-softmax's, to fit the page) shows them: the grey dashed box is a saved tensor already freed, below the first chunk's `TanhBackward0`.

# %%
torch.manual_seed(0)
rnn = CharRNN(5, 4)
h = torch.zeros(2, 4)
for number, (chunk_tokens, next_tokens) in enumerate(chunks[:2]):
    logits, h = rnn(chunk_tokens[:, :1], h)
    loss = F.cross_entropy(logits.flatten(0, 1), next_tokens[:, :1].flatten())
    if number == 0:
        loss.backward()
freed = [saved for node in walk_graph(loss).nodes for saved in node.saved if saved.state == "freed"]
print("saved tensors already freed below the second loss:", len(freed))
assert freed
draw(loss, names={"loss": loss}, saved={"result"})

# %% [markdown]
# The error's own advice, `retain_graph=True`, is the wrong fix here.
# The next chunk's `backward()` would then go back through every earlier chunk, but the optimiser has changed the weights in place since those chunks saved them, so it fails with notebook 02a's error (section 4):


# %%
def train_lm_retained(model: CharRNN, chunks: list, lr: float) -> list[float]:
    """train_lm_buggy with retain_graph=True."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    h = torch.zeros(chunks[0][0].shape[0], model.cell.hidden_size)
    losses = []
    for inputs, targets in chunks:
        optimizer.zero_grad()
        logits, h = model(inputs, h)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward(retain_graph=True)
        optimizer.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
with expect_error(RuntimeError, match="modified by an inplace operation"):
    train_lm_retained(CharRNN(5, 4), chunks, lr=0.5)

# %% [markdown]
# Where no step comes between the chunks (gradients accumulated over the whole stream, one step at the end, or a loop that only evaluates gradients), `retain_graph=True` raises nothing, and every chunk's graph stays alive: each `backward()` goes back through all the earlier chunks again, and the memory held by saved tensors grows with every chunk.
# Below, that memory is measured with `torch.autograd.graph.saved_tensors_hooks`, which sees every tensor a node saves: the distinct storages still alive, after each chunk's `backward()`, on a longer stream.


# %% nbgrader={"grade_id": "demo-saved-memory", "locked": true} tags=["grading-skip"]
class Saved:
    """What a pack hook keeps for each tensor a node saves: alive exactly as long as the graph."""

    alive: ClassVar[weakref.WeakSet] = weakref.WeakSet()

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach()  # no grad_fn: keeping it creates no reference cycle
        Saved.alive.add(self)

    def unpack(self) -> torch.Tensor:
        return self.tensor


def saved_memory_per_chunk(carry, n_chunks: int = 12) -> list[float]:
    """KiB held by tensors saved for backward after each chunk's backward(); carry(h) goes on."""
    torch.manual_seed(0)
    model = CharRNN(5, 32)
    long_stream = torch.randint(5, (8, n_chunks * 8 + 1))
    h = torch.zeros(8, 32)
    held = []
    with torch.autograd.graph.saved_tensors_hooks(Saved, Saved.unpack):
        for inputs, targets in stream_chunks(long_stream, 8):
            logits, h = model(inputs, carry(h))
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            loss.backward(retain_graph=True)
            storages = {
                saved.tensor.untyped_storage().data_ptr(): saved.tensor.untyped_storage().nbytes()
                for saved in list(Saved.alive)
            }
            held.append(sum(storages.values()) / 1024)
    return held


carried = saved_memory_per_chunk(lambda h: h)
detached = saved_memory_per_chunk(lambda h: h.detach())

figure, axes = plt.subplots(figsize=(6, 2.6))
axes.plot(
    range(1, len(carried) + 1), carried, label="h carried, retain_graph=True", color="tab:red"
)
axes.plot(range(1, len(detached) + 1), detached, label="h.detach() carried", color="tab:blue")
axes.set_xlabel("chunks trained")
axes.set_ylabel("saved tensors alive (KiB)")
axes.legend(fontsize=8)
figure.tight_layout()
plt.show()

print(
    f"after {len(carried)} chunks: {carried[-1]:.0f} KiB carried, {detached[-1]:.0f} KiB detached"
)
assert carried[-1] > 5 * detached[-1] and max(detached) - min(detached) < 1  # KiB

# %% [markdown]
# The fix is one line: carry the state's *value* into the next chunk and cut its history, `h = h.detach()`.
# The gradient then stops at the chunk's start (that is what "truncated" means), and each `backward()` frees its chunk's graph.
#
# ### Exercise 3 — carry the state, not its graph (3 points)
#
# Write `train_lm(model, chunks, lr)`, a fixed `train_lm_buggy`: one pass of SGD (`torch.optim.SGD(model.parameters(), lr=lr)`) over `chunks`, a list of `(inputs, targets)` pairs of token ids, each of shape `(batch, steps)`, in order.
# The hidden state starts at zeros, shape `(batch, model.cell.hidden_size)`, on the model's device and in its dtype, and each chunk starts from the state the previous chunk ended with, without its graph.
# For each chunk: fresh gradients, `logits, h = model(inputs, h)`, the loss `F.cross_entropy(logits.flatten(0, 1), targets.flatten())`, `backward()`, one step.
# Return the chunks' losses as Python floats, and leave `chunks` as they were.
# For `CharRNN(5, 4)` made after `torch.manual_seed(0)`, trained with `lr = 0.5` on the chunks of section 6, the first three losses are `≈ [1.5539, 1.5626, 1.4634]`, in float32 and in float64.
# The tests train `CharRNN` models of other sizes and dtypes on streams you have not seen, compare every loss and parameter with this computation, and run your function on the GPU stand-in.


# %% nbgrader={"grade_id": "q3-answer", "solution": true}
def train_lm(model: CharRNN, chunks: list, lr: float) -> list[float]:
    """Trains model with truncated backpropagation through time over chunks, in order.

    Args:
        model: A CharRNN, trained in place.
        chunks: (inputs, targets) pairs of token ids, each of shape (batch, steps).
        lr: The learning rate of SGD.

    Returns:
        The loss of each chunk, as Python floats.
    """
    ### BEGIN SOLUTION
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    weight = model.head.weight
    h = weight.new_zeros(chunks[0][0].shape[0], model.cell.hidden_size)
    losses = []
    for inputs, targets in chunks:
        optimizer.zero_grad()
        logits, h = model(inputs, h.detach())
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
    ### END SOLUTION


# %% nbgrader={"grade_id": "q3-tests", "grade": true, "locked": true, "points": 3}
"""Checks train_lm on the stream of section 6: it runs, returns floats, and the loss falls.

Visible: CharRNN(5, 4) after torch.manual_seed(0), in float32 and float64 (chunks left as they
were): the first three losses, by the text's numbers; and on a GPU stand-in. Hidden: section 6's
stream with other parameters, other streams, sizes and dtypes, every loss and parameter.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
for dtype in (torch.float32, torch.float64):
    torch.manual_seed(0)
    lm = CharRNN(5, 4).to(dtype)
    kept = KeptInputs(chunks=chunks)
    try:
        lm_losses = train_lm(lm, chunks, lr=0.5)
    except RuntimeError as error:
        if dtype == torch.float32:
            raise
        raise AssertionError(
            f"train_lm failed on a float64 model: {str(error).splitlines()[0][:200]}. The "
            "state starts at zeros in the model's dtype, on its device. " + explain("wrong-dtype")
        ) from None
    assert_inputs_left_alone(kept.changes(), "train_lm(model, chunks, lr)")
    assert isinstance(lm_losses, list) and all(type(value) is float for value in lm_losses), (
        f"train_lm should return a list of Python floats, got {lm_losses!r}"
    )
    assert len(lm_losses) == len(chunks), f"one loss per chunk: {len(chunks)}, got {len(lm_losses)}"
    for number, truth in enumerate([1.5539, 1.5626, 1.4634]):
        assert abs(lm_losses[number] - truth) < 1e-4, (
            f"the loss of chunk {number} should be {truth}, got {lm_losses[number]:.4f}: each "
            "chunk starts from the state the previous one ended with, after the previous "
            "chunk's step. " + explain("hidden-state-carried")
        )
    assert sum(lm_losses[-3:]) < sum(lm_losses[:3]), (
        f"the loss should fall over the stream: {[round(value, 3) for value in lm_losses]}"
    )
torch.manual_seed(0)
on_gpu(train_lm, CharRNN(5, 4).double(), chunks, 0.5, name="train_lm(...)")


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """Section 6's stream with the visible model in both dtypes, then with random parameters,
    then random streams, sizes, chunk lengths and dtypes."""
    section_6 = torch.tensor([[0, 1, 2, 3, 4] * 8, [4, 3, 2, 1, 0] * 8])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # CharRNN(5, 4)'s layers, made in its order: the visible model
        layers = {
            "embedding": nn.Embedding(5, 4),
            "cell": nn.RNNCell(4, 4),
            "head": nn.Linear(4, 5),
        }
    visible = {
        f"{layer}.{name}": value.detach()
        for layer, module in layers.items()
        for name, value in module.state_dict().items()
    }
    cases = [{"vocab": 5, "hidden": 4, "stream": section_6, "length": 4, "lr": 0.5,
              "dtype": dtype, "parameters": visible}
             for dtype in (torch.float32, torch.float64)]  # fmt: skip
    cases.append({"vocab": 5, "hidden": 4, "stream": section_6, "length": 4, "lr": 0.5,
                  "dtype": torch.float32})  # fmt: skip
    for vocab, hidden, batch, n, length, lr, dtype in [
        (6, 5, 3, 19, 3, 0.3, torch.float64),
        (4, 3, 1, 13, 4, 0.5, torch.float32),
    ]:
        cases.append({"vocab": vocab, "hidden": hidden, "stream": torch.randint(vocab, (batch, n), generator=rng),
                      "length": length, "lr": lr, "dtype": dtype})  # fmt: skip
    for case in cases[2:]:  # after the visible model's
        shapes = {"embedding.weight": (case["vocab"], case["hidden"]),
                  "cell.weight_ih": (case["hidden"], case["hidden"]), "cell.weight_hh": (case["hidden"], case["hidden"]),
                  "cell.bias_ih": (case["hidden"],), "cell.bias_hh": (case["hidden"],),
                  "head.weight": (case["vocab"], case["hidden"]), "head.bias": (case["vocab"],)}  # fmt: skip
        case["parameters"] = {
            name: torch.randn(shape, generator=rng) * 0.5 for name, shape in shapes.items()
        }
    return cases


def observe(case):
    """Runs train_lm on a CharRNN with the case's parameters, on every device and the stand-in."""
    seen = {}

    def run(model, chunks):
        kept = KeptInputs(chunks=chunks)
        losses = train_lm(model, chunks, case["lr"])
        losses = list(losses) if isinstance(losses, list | tuple) else losses
        return {
            "losses": losses, "parameters": dict(model.named_parameters()),
            "inputs_changed": kept.changes(),
        }  # fmt: skip

    model = CharRNN(case["vocab"], case["hidden"])
    model.load_state_dict(case["parameters"])
    model.to(case["dtype"])
    chunks = chunk_stream(case["stream"], case["length"])
    for device in devices():
        moved = [(inputs.to(device), targets.to(device)) for inputs, targets in chunks]
        seen[device.type] = run(copy.deepcopy(model).to(device), moved)
    if case["dtype"] == torch.float64:  # one case on the stand-in: it runs op by op in Python
        try:
            seen["gpu"] = on_gpu(run, model, chunks, name="train_lm(...)")
        except AssertionError as error:
            seen["gpu"] = str(error)
    return seen


def chunk_stream(stream, length):
    """Section 6's chunks of a stream: (inputs, targets) pairs, targets the next tokens."""
    return [
        (stream[:, i : i + length], stream[:, i + 1 : i + length + 1])
        for i in range(0, stream.shape[1] - length, length)
    ]


### BEGIN JUDGE
def reference_lm_losses(parameters, chunks, lr):
    """CharRNN trained the intended way, written out, in the grader's process."""
    p = {name: value.clone().requires_grad_() for name, value in parameters.items()}
    h = torch.zeros(
        chunks[0][0].shape[0], p["cell.weight_hh"].shape[0], dtype=p["head.weight"].dtype
    )
    losses = []
    for inputs, targets in chunks:
        logits = []
        for t in range(inputs.shape[1]):
            x = p["embedding.weight"][inputs[:, t]]
            h = torch.tanh(
                x @ p["cell.weight_ih"].T
                + p["cell.bias_ih"]
                + h @ p["cell.weight_hh"].T
                + p["cell.bias_hh"]
            )
            logits.append(h @ p["head.weight"].T + p["head.bias"])
        loss = F.cross_entropy(torch.stack(logits, dim=1).flatten(0, 1), targets.flatten())
        grads = torch.autograd.grad(loss, list(p.values()))
        with torch.no_grad():
            for value, grad in zip(p.values(), grads, strict=True):
                value -= lr * grad
        h = h.detach()
        losses.append(loss.item())
    return losses, {name: value.detach() for name, value in p.items()}


def judge(seen, case):
    """Losses and parameters against reference_lm_losses, on every device and the stand-in."""
    parameters = {name: value.to(case["dtype"]) for name, value in case["parameters"].items()}
    chunks = chunk_stream(case["stream"], case["length"])
    expected_losses, expected = reference_lm_losses(parameters, chunks, case["lr"])
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        where = "on the GPU stand-in" if device == "gpu" else "on the CPU"
        assert not isinstance(run, str), run
        assert_inputs_left_alone(run["inputs_changed"], "train_lm(model, chunks, lr)")
        losses = run["losses"]
        assert isinstance(losses, list) and all(type(value) is float for value in losses), (
            "train_lm should return a list of Python floats (loss.item())"
        )
        assert len(losses) == len(chunks), f"one loss per chunk: {len(chunks)}, got {len(losses)}"
        for number, (value, truth) in enumerate(zip(losses, expected_losses, strict=True)):
            assert abs(value - truth) <= 1e-4 * abs(truth) + 1e-5, (
                f"the loss of chunk {number} {where} should be {truth:.6f}, got {value:.6f}: "
                "each chunk starts from the state the previous one ended with. "
                + explain("hidden-state-carried")
            )
        for name, value in expected.items():
            seen_value = run["parameters"].get(name)
            assert isinstance(seen_value, TensorSeen) and seen_value.dtype == case["dtype"], (
                f"{name} should stay a {case['dtype']} parameter"
            )
            assert torch.allclose(seen_value.values, value, rtol=1e-4, atol=1e-5), (
                f"{name} after training {where} differs from truncated backpropagation through "
                "time. " + explain("hidden-state-carried")
            )


### END JUDGE
probe_and_judge("q3", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. NaN in backward: `sqrt` at 0, `log` of 0
#
# A loss that asks points to sit at distance 1 from each other.
# The learner computes all pairwise distances, a point with itself included (its distance, 0, is harmless in the loss).
# The loss is finite; every gradient is NaN, and one step of SGD turns every point into NaN.


# %%
def pairwise_distances(points: torch.Tensor) -> torch.Tensor:
    """The distance between every two rows of points, each row with itself included."""
    differences = points[:, None, :] - points[None, :, :]
    return torch.sqrt((differences**2).sum(-1))


torch.manual_seed(0)
points = torch.randn(4, 2, requires_grad=True)
loss = (pairwise_distances(points) - 1).pow(2).mean()
loss.backward()
print(f"loss: {loss.item():.4f}")
print("points.grad:", points.grad.tolist())
with torch.no_grad():
    after_one_step = points - 0.1 * points.grad  # what SGD would write
print("after one SGD step:", after_one_step.tolist())
assert torch.isfinite(loss) and points.grad.isnan().all() and after_one_step.isnan().all()

# %% [markdown]
# **Anomaly mode** checks every node's output during `backward()` and, at the first NaN, raises and shows where the node was created in the forward pass (the second warning below, with its traceback).
# As its first warning says, it slows everything down: switch it on to find the line, then off.

# %%
points.grad = None
with (
    expect_warning(
        UserWarning, match="Anomaly Detection has been enabled|Error detected in"
    ) as caught,
    torch.autograd.detect_anomaly(),
):
    loss = (pairwise_distances(points) - 1).pow(2).mean()
    with expect_error(RuntimeError, match="returned nan values"):
        loss.backward()
messages = [str(warning.message) for warning in caught]
assert any("increase the runtime" in message for message in messages)
named = re.search(r"Error detected in (\w+)", "\n".join(messages)).group(1)
print("the node anomaly mode names:", named)
assert named.startswith("Pow")  # the node of `differences**2` (a node's exact name is torch's)

# %% [markdown]
# It names `PowBackward0`, the node of `differences**2`, not the `sqrt` on the same line.
# Anomaly mode looks for NaN, and the backward of `sqrt` at 0 gives an infinite gradient (its derivative, `1 / (2 √x)`, at `x = 0`).
# The NaN appears two nodes later: `SumBackward1`, the node of `.sum(-1)`, passes the infinity on, and the backward of `**2` multiplies it by `2 · difference = 0`.
# The nodes below the `sqrt`, in the order `backward()` meets them:

# %%
node = pairwise_distances(points).grad_fn
chain = [node.name()]
for _ in range(2):
    node = node.next_functions[0][0]  # the node that made this one's input
    chain.append(node.name())
print(" -> ".join(chain))
assert chain[0].startswith("Sqrt") and chain[1].startswith("Sum") and chain[2] == named

# %% [markdown]
# A **gradient hook** shows the infinity itself: `tensor.register_hook(function)` calls the function with the gradient that reaches the tensor during `backward()`.

# %%
differences = points[:, None, :] - points[None, :, :]
squared = (differences**2).sum(-1)
reaching_squared = []
squared.register_hook(
    lambda grad: print("gradient reaching squared:\n", grad) or reaching_squared.append(grad)
)
(torch.sqrt(squared) - 1).pow(2).mean().backward()
assert (
    reaching_squared[0].diagonal().isinf().all()
    and reaching_squared[0].fill_diagonal_(0).isfinite().all()
)

# %% [markdown]
# The diagonal, the distances of points to themselves, gets `-inf`.
# Fixes: `torch.linalg.vector_norm`, whose backward gives 0 at a zero vector by convention, or leave the diagonal out (each pair once, `i < j`).

# %%
points.grad = None
differences = points[:, None, :] - points[None, :, :]
distances = torch.linalg.vector_norm(differences, dim=-1)
(distances - 1).pow(2).mean().backward()
print("with vector_norm, finite gradients:", points.grad.isfinite().all().item())
assert points.grad.isfinite().all() and torch.allclose(distances, pairwise_distances(points))

zero = torch.zeros(2, requires_grad=True)
torch.linalg.vector_norm(zero).backward()
print("gradient of vector_norm at a zero vector:", zero.grad.tolist())
assert torch.equal(zero.grad, torch.zeros(2))

points.grad = None
first, second = torch.triu_indices(4, 4, offset=1)  # the pairs i < j: no point with itself
pair_distances = torch.sqrt(((points[first] - points[second]) ** 2).sum(-1))
(pair_distances - 1).pow(2).mean().backward()
print("without the diagonal, finite gradients:", points.grad.isfinite().all().item())
assert points.grad.isfinite().all()

# %% [markdown]
# **`log` of 0.** Writing cross-entropy by hand as `-log(softmax(logits))` underflows: `e^-120 ≈ 8e-53` is below the smallest float32 above 0 (about `1.4e-45`), so the probability is 0, its log `-inf`, and the gradient NaN.
# `F.log_softmax` (and `F.cross_entropy`, which uses it) computes the same quantity without forming the probability.

# %%
logits = torch.tensor([[0.0, 120.0]], requires_grad=True)
probability = torch.softmax(logits, dim=1)[0, 0]
smallest = torch.finfo(torch.float32).smallest_normal * 2.0**-23  # the smallest subnormal
print(f"softmax: {probability.item()} | smallest float32 above 0: {smallest:.2g}")
assert probability.item() == 0.0 and smallest > 1e-46
by_hand = -torch.log(torch.softmax(logits, dim=1))[0, 0]
by_hand.backward()
print(f"-log(softmax): {by_hand.item()}, gradient {logits.grad.tolist()}")
logits.grad = None
stable = F.cross_entropy(logits, torch.tensor([0]))
stable.backward()
print(f"F.cross_entropy: {stable.item()}, gradient {logits.grad.tolist()}")
assert by_hand.isinf() and abs(stable.item() - 120.0) < 1e-4 and logits.grad.isfinite().all()

# %% [markdown]
# **A hand-written `autograd.Function`** has a backward that nothing checks.
# This one was written to give `sqrt` a zero gradient at 0; it forgot the 2 of `1 / (2 √x)`.
# `torch.autograd.gradcheck` compares the backward with finite differences at the inputs you give it (use float64, and points away from the kink, as here), and prints both Jacobians when they differ.


# %%
class SafeSqrt(torch.autograd.Function):
    """sqrt(x), with gradient 0 where x is 0 (instead of inf)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        result = x.sqrt()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (result,) = ctx.saved_tensors
        return torch.where(result > 0, grad / result, torch.zeros_like(grad))  # forgot the 2


x64 = torch.rand(3, dtype=torch.float64, requires_grad=True) + 0.5
with expect_error(
    RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"
):  # GradcheckError
    torch.autograd.gradcheck(SafeSqrt.apply, (x64,))


class FixedSafeSqrt(SafeSqrt):
    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (result,) = ctx.saved_tensors
        return torch.where(result > 0, grad / (2 * result), torch.zeros_like(grad))


print("gradcheck of the fixed backward:", torch.autograd.gradcheck(FixedSafeSqrt.apply, (x64,)))

# %% [markdown]
# ## 8. Two pitfalls at once
#
# **A tied embedding with `max_norm`, and a buffer filled in.**
# A small language model ties its output layer to its embedding (notebook 05b, section 4) and writes each step's logits into a buffer made with `torch.zeros` (notebook 04a, section 2).
# It fails at `backward()`; under `track_inplace()`, `diagnose` says why and where.


# %%
class TinyLM(nn.Module):
    """Buggy: a recurrent language model whose output layer is its max_norm embedding."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, max_norm=1.0)
        self.mix = nn.Linear(dim, dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch, steps = tokens.shape
        logits = torch.zeros(batch, steps, self.embedding.num_embeddings)  # filled in below
        h = torch.zeros(batch, self.embedding.embedding_dim)
        for t in range(steps):
            h = torch.tanh(self.mix(h) + self.embedding(tokens[:, t]))
            logits[:, t] = h @ self.embedding.weight.T
        return logits


torch.manual_seed(0)
tiny = TinyLM(5, 4)
with track_inplace() as log:
    logits = tiny(stream[:, :3])
loss = F.cross_entropy(logits.flatten(0, 1), stream[:, 1:4].flatten())
report = diagnose(loss, names={"embedding.weight": tiny.embedding.weight})
for finding in report.findings:
    print(
        f"{finding.kind}: {finding.node} saved `{finding.saved}` at version "
        f"{finding.saved_version}, now {finding.current_version}"
    )
print("writes recorded:", sorted({(write.op, write.code) for write in log.writes}))
with expect_error(RuntimeError, match="modified by an inplace operation"):
    loss.backward()
assert any(write.op == "embedding_renorm_" for write in log.writes) and report.findings

# %% [markdown]
# Two in-place ops are at work: `embedding_renorm_` rewrites the weight that the earlier steps' output layer saved (notebook 05a, section 2; notebook 05b, section 4), and `logits[:, t] = ...` writes into the buffer (`copy_` into a slice, allowed, since nothing saved the buffer).
# The error is the first one's; the two `torch.zeros(...)` without `device=` are bugs of their own, which the stand-in shows once the model is on a GPU.
# The hidden state `h` is on the CPU, so `self.mix(h)` fails at the first step (the last lines of the cell after the fix show it); the logits buffer, made the same way, would bring GPU pieces back to the CPU (notebook 04b, section 6).
# The course's linter finds the tied weight before anything runs.
# `lint` below checks the source of what you give it, with this notebook's imports, and prints each finding with its line.
# (`source_of` below puts a class back together from its methods' sources.)


# %%
def source_of(item) -> str:
    """The source of a function, or of a class rebuilt from its methods' sources."""
    if not inspect.isclass(item):
        return inspect.getsource(item)
    bases = ", ".join(
        "nn.Module" if base is nn.Module else base.__qualname__ for base in item.__bases__
    )
    methods = [
        inspect.getsource(value) for value in vars(item).values() if inspect.isfunction(value)
    ]
    return f"class {item.__name__}({bases}):\n" + "\n".join(methods)


def lint(*items) -> list:
    """Lints the source of functions and classes with this notebook's imports; prints the findings."""
    imports = "import torch\nfrom torch import nn\nfrom torch.nn import functional as F\n"
    source = imports + "\n".join(source_of(item) for item in items)
    lines = source.splitlines()
    findings = lint_source(source)
    for finding in findings:
        print(f"{finding.code} [{finding.pitfall}] at `{lines[finding.line - 1].strip()}`")
        print(f"    {finding.message}")
    return findings


assert [finding.code for finding in lint(TinyLM)] == ["AGP150"]


# %% [markdown]
# The fix for both: look every token up first (one write, before any use of the weight), and assemble the logits with `torch.stack` instead of a CPU buffer; the hidden state starts from the embedding's device and dtype.


# %% nbgrader={"grade_id": "demo-fixed-tiny-lm", "locked": true} tags=["grading-skip"]
class FixedTinyLM(TinyLM):
    """TinyLM with the lookup first and the logits stacked."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embedded = self.embedding(tokens)  # every row rescaled, once, before any other use
        h = embedded.new_zeros(tokens.shape[0], self.embedding.embedding_dim)
        logits = []
        for t in range(tokens.shape[1]):
            h = torch.tanh(self.mix(h) + embedded[:, t])
            logits.append(h @ self.embedding.weight.T)
        return torch.stack(logits, dim=1)


def lm_losses(model: nn.Module, steps: int = 30) -> list[float]:
    """Trains model on the stream of section 6 (next token of the first 12); returns the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    inputs, targets = stream[:, :12], stream[:, 1:13]
    history = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


torch.manual_seed(0)
fixed_lm = FixedTinyLM(5, 4)
history = lm_losses(fixed_lm)
print(f"fixed: loss {history[0]:.3f} -> {history[-1]:.3f}")
on_stand_in = on_gpu(
    lambda model, tokens: model(tokens), fixed_lm, stream[:, :3], name="FixedTinyLM"
)
print("on the GPU stand-in:", on_stand_in.device, tuple(on_stand_in.shape))
assert history[-1] < history[0] - 0.3
with expect_error(AssertionError, match="Expected all tensors to be on the same device"):
    on_gpu(lambda model, tokens: model(tokens), TinyLM(5, 4), stream[:, :3], name="TinyLM")

# %% [markdown]
# **An in-place normalisation, and a penalty assembled with `torch.tensor`.**
# This network normalises its hidden activations in place, and its loss adds a weight penalty built from a list.
# The first bug raises; the second only warns (the warning of notebook 04a, once per process unless asked for every time) and raises nothing.
# The data are those of section 1 (in `06a_debugging_clinic`), rebuilt here: 64 points, 3 features, targets from a known line plus noise.


# %%
def regression_data(n: int = 64, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (inputs, targets): n points of 3 features and targets from a fixed line, plus noise."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(n, 3, generator=generator)
    targets = inputs @ torch.tensor([[1.5], [-2.0], [0.5]]) + 0.3
    return inputs, targets + 0.1 * torch.randn(n, 1, generator=generator)


inputs, targets = regression_data()  # the data of section 1 (in 06a_debugging_clinic)


class NormedNet(nn.Module):
    """Buggy: a hidden layer whose activations are scaled to unit norm in place."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(3, 8)
        self.out = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.hidden(x))
        h /= h.norm(dim=1, keepdim=True) + 1e-6
        return self.out(h)


def penalised_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    penalty = torch.tensor([model.hidden.weight.norm(), model.out.weight.norm()]).sum()
    return F.mse_loss(model(inputs), targets) + 0.1 * penalty


torch.manual_seed(0)
net = NormedNet()
torch.set_warn_always(True)  # the penalty's warning, every time this cell runs
try:
    with (
        expect_warning(UserWarning, match="Converting a tensor with requires_grad=True"),
        track_inplace() as log,
    ):
        loss = penalised_loss(net, inputs, targets)
finally:
    torch.set_warn_always(False)
report = diagnose(loss, names=dict(net.named_parameters()))
print("\n".join(report.findings[0].message.splitlines()[:2]))  # the first, with its line
for finding in report.findings:
    print(
        f"{finding.kind}: {finding.node} saved `{finding.saved}` at version "
        f"{finding.saved_version}, now {finding.current_version}"
    )
print("writes recorded:", [(write.op, write.code) for write in log.writes])
normed_graph = draw(loss, names=dict(net.named_parameters()), saved={"result"})
with expect_error(
    RuntimeError,
    match=r"\[64, 8\]\], which is output 0 of \w+, is at version 1; expected version 0",
):
    loss.backward()
assert [write.op for write in log.writes] == ["div_"]
assert sorted(finding.node.split("Backward")[0] for finding in report.findings) == [
    "LinalgVectorNorm",
    "Relu",
]

# %% [markdown]
# The graph, drawn before that `backward()` with only the saved tensors named `result`, shows the saved activation in red, with the line that wrote it.

# %% nbgrader={"grade_id": "demo-normed-graph", "locked": true} tags=["grading-skip"]
normed_graph

# %% [markdown]
# The error calls the tensor "output 0 of Div": after `h /= ...`, the division is its history.
# `diagnose` names the two nodes that saved it before `h /= ...` wrote to it (notebook 02a, sections 4 and 5): `ReluBackward0` keeps its output to compute its gradient, and the norm's node keeps its input; `h = h / ...` fixes it.
# Then `backward()` works, and the penalty does nothing: `torch.tensor([...])` copied its values (notebook 04a), so the gradient with the penalty equals the gradient without it.
# The linter finds the second (the first needs `diagnose`: whether `h /= ...` breaks anything depends on what saved `h`, which only the graph knows):

# %% nbgrader={"grade_id": "demo-out-of-place-penalty", "locked": true} tags=["grading-skip"]
assert [finding.code for finding in lint(NormedNet, penalised_loss)] == ["AGP120"]


class OutOfPlaceNet(NormedNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.hidden(x))
        h = h / (h.norm(dim=1, keepdim=True) + 1e-6)
        return self.out(h)


def penalty_gradient(loss_function) -> torch.Tensor:
    torch.manual_seed(0)
    net = OutOfPlaceNet()
    loss_function(net).backward()
    return net.out.weight.grad


with warnings.catch_warnings():  # the penalty's warning, shown above
    warnings.filterwarnings("ignore", "Converting a tensor with requires_grad=True")
    with_list_penalty = penalty_gradient(lambda net: penalised_loss(net, inputs, targets))
without_penalty = penalty_gradient(lambda net: F.mse_loss(net(inputs), targets))
stacked = penalty_gradient(
    lambda net: (
        F.mse_loss(net(inputs), targets)
        + 0.1 * torch.stack([net.hidden.weight.norm(), net.out.weight.norm()]).sum()
    )
)
print(
    "penalty with torch.tensor changes the gradient:",
    not torch.equal(with_list_penalty, without_penalty),
)
print("penalty with torch.stack changes the gradient: ", not torch.equal(stacked, without_penalty))
assert torch.equal(with_list_penalty, without_penalty) and not torch.allclose(
    stacked, without_penalty
)

# %% [markdown]
# ### Exercise 4 — triage (2 points)
#
# For each symptom, name its cause, one of: `"loss_not_reduced"`, `"graph_cut"`, `"parameter_not_reached"`, `"gradients_accumulate"`, `"layer_in_forward"`, `"unregistered_tensor"`, `"hidden_state_carried"`, `"sqrt_at_zero"`, `"log_of_zero"`.
#
# - `"A"`: `loss.backward()` raises `grad can be implicitly created only for scalar outputs`.
# - `"B"`: `loss.requires_grad_()` was added to silence `element 0 of tensors does not require grad and does not have a grad_fn`; now the loss is exactly the same at every step.
# - `"C"`: a recurrent model keeps its hidden state from batch to batch; the second batch's `loss.backward()` raises `Trying to backward through the graph a second time`.
# - `"D"`: after `model.to("cuda")`, `model(x)` raises `Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!` at `return self.net(x) * self.weights`, where `__init__` set `self.weights = torch.ones(n)`.
# - `"E"`: no error; the loss falls for a few steps, then overshoots and keeps swinging up and down; the script never calls `zero_grad()`.
# - `"F"`: no error; after `backward()`, `model.decoder.weight.grad` is None, and the loss is computed from `model.encoder(x)` alone.
# - `"G"`: the loss is finite and every gradient is NaN; under `torch.autograd.detect_anomaly()`, the error names `PowBackward0`, created on the line `d = torch.sqrt(((a[:, None] - a[None]) ** 2).sum(-1))`.
#
# Symptoms A, B, D, E and F are those of sections 1–5 (in `06a_debugging_clinic`); C and G those of sections 6 and 7.
# Return a dict `{"A": ..., "B": ..., ..., "G": ...}` from `triage()`.


# %% nbgrader={"grade_id": "q4-answer", "solution": true}
def triage() -> dict[str, str]:
    """Returns the cause of each symptom of Exercise 4.

    Returns:
        A dict mapping "A" to "G" to one of the causes listed in Exercise 4.
    """
    ### BEGIN SOLUTION
    return {
        "A": "loss_not_reduced",
        "B": "graph_cut",
        "C": "hidden_state_carried",
        "D": "unregistered_tensor",
        "E": "gradients_accumulate",
        "F": "parameter_not_reached",
        "G": "sqrt_at_zero",
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "q4-tests", "grade": true, "locked": true, "points": 2}
"""Checks triage() for the seven symptoms of Exercise 4."""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
causes = triage()
options = {
    "loss_not_reduced", "graph_cut", "parameter_not_reached", "gradients_accumulate",
    "layer_in_forward", "unregistered_tensor", "hidden_state_carried", "sqrt_at_zero", "log_of_zero",
}  # fmt: skip
assert isinstance(causes, dict) and set(causes) == set("ABCDEFG"), (
    "triage() should return a dict with the keys A to G"
)
assert set(causes.values()) <= options, f"each cause should be one of {sorted(options)}"
assert causes["A"] == "loss_not_reduced", (
    "A: backward() with no argument needs a loss of one value (section 1, in 06a). "
    + explain("loss-not-reduced")
)


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """One case: the seven symptoms are fixed."""
    return [{}]


def observe(case):
    """Calls triage(); returns a plain copy of the dict (or its type's name)."""
    causes = triage()
    if not isinstance(causes, dict):
        return {"type": type(causes).__name__}
    return {"type": "dict", "causes": {str(key): value for key, value in dict(causes).items()}}


### BEGIN JUDGE
def judge(seen, case):
    """The keys, the options, and the cause of each symptom."""
    options = {
        "loss_not_reduced", "graph_cut", "parameter_not_reached", "gradients_accumulate",
        "layer_in_forward", "unregistered_tensor", "hidden_state_carried", "sqrt_at_zero",
        "log_of_zero",
    }  # fmt: skip
    causes = seen.get("causes")
    assert isinstance(causes, dict) and set(causes) == set("ABCDEFG"), (
        "triage() should return a dict with the keys A to G"
    )
    assert (
        all(isinstance(cause, str) for cause in causes.values()) and set(causes.values()) <= options
    ), f"each cause should be one of {sorted(options)}"
    reasons = {
        "A": ("loss_not_reduced", "backward() with no argument needs a loss of one value (section 1, in 06a)", "loss-not-reduced"),
        "B": ("graph_cut", "requires_grad_() on the loss makes a new leaf, and the cut that caused the error is still there (section 2, in 06a)", "grad-never-reached"),
        "C": ("hidden_state_carried", "the state carries the previous batch's freed graph (section 6)", "hidden-state-carried"),
        "D": ("unregistered_tensor", "a tensor kept as a plain attribute is not moved by .to() (section 5, in 06a)", "module-state-unregistered"),
        "E": ("gradients_accumulate", "backward() adds to .grad, so each step carries every earlier gradient (section 4, in 06a)", "grad-accumulates"),
        "F": ("parameter_not_reached", "a parameter the loss does not use gets no gradient (section 3, in 06a)", "grad-never-reached"),
        "G": ("sqrt_at_zero", "sqrt's backward is infinite at 0, and the pow node two steps later turns it into NaN (section 7)", None),
    }  # fmt: skip
    for key, (cause, why, pitfall) in reasons.items():
        assert causes[key] == cause, f"{key}: {why}. " + (explain(pitfall) if pitfall else "")


### END JUDGE
probe_and_judge("q4", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Read the message, then look for the cause where the message cannot see it: in the model's code, in what the loop carries from step to step, in a line written to silence an earlier error.
# - Part 1 (`06a_debugging_clinic`): a loss that is not one number, a cut graph, `param.grad is None`, a missing `zero_grad()`, and a tensor or layer the module does not register.
# - `Trying to backward through the graph a second time` in a recurrent loop: carry `h.detach()`. `retain_graph=True` then fails on the optimiser's writes (notebook 02a, section 4), or, with no step in between, holds every chunk's graph in memory.
# - NaN gradients: anomaly mode names the first node that *returned* NaN, which may come after the cause (two nodes after the `sqrt` here); a gradient hook shows the `inf` before it. Use `torch.linalg.vector_norm` for distances and `F.log_softmax` / `F.cross_entropy` for log-probabilities; check a hand-written backward with `gradcheck` in float64.
# - Several pitfalls at once: `track_inplace()` and `diagnose` find what `backward()` will hit and the line; the linter (`python -m autograd_pitfalls.lint`) finds the patterns before anything runs.
