# %% [markdown]
# # 06a · A debugging clinic: autograd errors in real training code (part 1 of 2)
#
# Notebooks 01a to 05b took one pitfall at a time, in a few lines each.
# In real code they come inside training scripts, mixed with other autograd errors, and a quick fix can silence the error and train nothing (section 2 shows one).
# Each section here is a short training script as a learner would write it, broken; we run it, read the live error (or the silent symptom), find the cause, and fix it.
#
# **What you will learn**
#
# - `grad can be implicitly created only for scalar outputs`: a loss that is not one number, what `backward(gradient=...)` computes, and why `torch.ones_like(loss)` is not the fix;
# - `element 0 of tensors does not require grad and does not have a grad_fn`: five ways to cut the graph, and why `loss.requires_grad_()` silences the error and trains nothing (plotted);
# - `param.grad is None` after `backward()`, and an optimiser that updates nothing;
# - a missing `zero_grad()` (plotted), the gradient accumulation that does it on purpose, and the `None` that `zero_grad()` leaves;
# - `Expected all tensors to be on the same device`: a layer built inside `forward`, a tensor attribute that `.to(device)` leaves behind.
#
# Run the cells from top to bottom.
# In every exercise, leave the tensors your function is handed (unless the exercise asks you to write into one) and PyTorch's settings for the whole process (grad mode, the default dtype and device, anomaly mode) as you found them: the tests check both, and each test starts from PyTorch's defaults for these settings.
# The code next to each claim prints it or checks it with `assert`, on your PyTorch.
#
# Part 2, `06b_debugging_clinic` (sections 6–8), goes on with a recurrent state carried across batches, NaN in backward, and scripts where two pitfalls come together.

# %% nbgrader={"grade_id": "setup", "locked": true}
import inspect
import itertools

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 (the name every training script uses)

from autograd_pitfalls import (
    GPU,
    KeptInputs,
    TensorSeen,
    assert_inputs_left_alone,
    devices,
    diagnose,
    draw,
    expect_error,
    expect_warning,
    explain,
    gpu_standin,
    on_gpu,
    probe_and_judge,
    reset_torch_settings,
    to_host,
)
from autograd_pitfalls.lint import lint_source

print(f"torch {torch.__version__}")


# %% [markdown]
# ## 1. A loss that is not one number
#
# The data for the first scripts: 64 points, 3 features, targets from a known line plus noise.
# A learner writes the squared error and calls `backward()`.


# %%
def regression_data(n: int = 64, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (inputs, targets): n points of 3 features and targets from a fixed line, plus noise."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(n, 3, generator=generator)
    targets = inputs @ torch.tensor([[1.5], [-2.0], [0.5]]) + 0.3
    return inputs, targets + 0.1 * torch.randn(n, 1, generator=generator)


inputs, targets = regression_data()
torch.manual_seed(0)
model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
optimizer.zero_grad()
loss = (model(inputs) - targets) ** 2  # one squared error per point
print("loss.shape:", tuple(loss.shape))
with expect_error(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
    loss.backward()

# %% [markdown]
# `backward()` with no argument starts from `d loss / d loss = 1`, which only makes sense for a loss of one value.
# For a tensor of 64 values, `loss.backward(gradient=g)` computes the gradient of `(g * loss).sum()`: a weighted sum of the 64 per-point gradients (a vector-Jacobian product).
# So `loss.backward(torch.ones_like(loss))`, which makes the error go away, is `loss.sum().backward()`: 64 times the gradient of the mean squared error, which is what `F.mse_loss` (and the exercises below) use.


# %%
def weight_grad(backward) -> torch.Tensor:
    """The weight's gradient after backward(loss) on the per-point squared errors of a fresh model."""
    torch.manual_seed(0)
    fresh = nn.Linear(3, 1)
    backward((fresh(inputs) - targets) ** 2)
    return fresh.weight.grad


with_ones = weight_grad(lambda loss: loss.backward(torch.ones_like(loss)))
of_sum = weight_grad(lambda loss: loss.sum().backward())
of_mean = weight_grad(lambda loss: loss.mean().backward())
of_mse = weight_grad(lambda loss: F.mse_loss(loss.sqrt(), torch.zeros_like(loss)).backward())
print("ones_like:", with_ones.tolist())
print("sum:      ", of_sum.tolist())
print("mean x 64:", (64 * of_mean).tolist())
assert torch.allclose(with_ones, of_sum) and torch.allclose(with_ones, 64 * of_mean)
assert torch.allclose(of_mse, of_mean)  # F.mse_loss is the mean

# %% [markdown]
# With plain SGD, a gradient 64 times larger is a learning rate 64 times larger: with the same `lr = 0.1`, the mean converges and the sum blows up.
# Adam divides each step by a running estimate of the gradient's size, so a constant factor cancels out: with Adam, the sum and the mean train the same (up to Adam's tiny `eps`).


# %% nbgrader={"grade_id": "demo-mean-vs-sum", "locked": true} tags=["grading-skip"]
def final_loss(reduce, optimizer_class=torch.optim.SGD, steps: int = 20, lr: float = 0.1) -> float:
    """Trains a fresh model on the data with reduce(per-point losses); returns the last mean loss."""
    torch.manual_seed(0)
    fresh = nn.Linear(3, 1)
    optimizer = optimizer_class(fresh.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        per_point = (fresh(inputs) - targets) ** 2
        reduce(per_point).backward()
        optimizer.step()
    return F.mse_loss(fresh(inputs), targets).item()


sgd_mean, sgd_sum = final_loss(torch.mean), final_loss(torch.sum)
adam_mean = final_loss(torch.mean, torch.optim.Adam)
adam_sum = final_loss(torch.sum, torch.optim.Adam)
print(f"SGD,  after 20 steps: with mean() {sgd_mean:.4f}, with sum() {sgd_sum:.3g}")
print(f"Adam, after 20 steps: with mean() {adam_mean:.4f}, with sum() {adam_sum:.4f}")
assert sgd_mean < 0.1 and not sgd_sum < 1e6
assert abs(adam_mean - adam_sum) < 1e-3 * adam_mean

# %% [markdown]
# `backward(gradient=...)` is right when you mean a weighted sum, or when the tensor is an intermediate result whose gradient you already have (`torch.autograd.backward(h, grad_h)`).
# Weights of `1 / n` give the mean's gradient exactly:

# %%
weighted = weight_grad(lambda loss: loss.backward(torch.full_like(loss, 1 / loss.numel())))
assert torch.allclose(weighted, of_mean)
print("gradient=1/n everywhere is the mean's gradient:", torch.allclose(weighted, of_mean))

# %% [markdown]
# The same error meets people who train on several GPUs with `nn.DataParallel` and return the loss from `forward`: each GPU's copy returns a 0-dim loss, and `DataParallel` gathers them into a vector, one value per GPU (with the warning below).
# `backward()` on that vector raises the error of this section; `loss.mean().backward()` is the fix.
# That paragraph is read from torch's code, not run: the gather works on GPU tensors only (it refuses CPU ones, below).
# Here is the code of `DataParallel`'s gather that makes the vector, from your PyTorch:

# %%
with expect_error(AssertionError, match="Gather function not implemented for CPU tensors"):
    torch.nn.parallel.gather([torch.tensor(1.0), torch.tensor(2.0)], "cpu")
gather_lines = inspect.getsource(torch.nn.parallel._functions.Gather.forward).splitlines()
start = next(i for i, line in enumerate(gather_lines) if "t.dim() == 0" in line)
end = next(i for i, line in enumerate(gather_lines) if "unsqueezed_scalar = True" in line)
print("\n".join(gather_lines[start : end + 1]))
assert "t.view(1)" in gather_lines[start + 1] and "will instead unsqueeze" in "".join(gather_lines)

# %% [markdown]
# ## 2. `element 0 of tensors does not require grad`: the graph was cut
#
# This error says that the loss has no `grad_fn`: nothing connects it to a tensor that requires grad.
# Five ways learners cut the graph between the parameters and the loss, each live.
# For the first four, the script is the same and only the line that computes the loss changes.


# %%
def cut_losses(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> dict:
    """Four ways of computing the mean squared error that cut the graph (the fifth is below)."""
    losses = {}
    with torch.no_grad():  # code copied from an evaluation loop
        losses["no_grad"] = F.mse_loss(model(inputs), targets)
    losses["item"] = torch.tensor(F.mse_loss(model(inputs), targets).item())  # a Python float
    predictions = model(inputs).detach().numpy()  # .numpy() needs .detach() first
    losses["numpy"] = torch.from_numpy(((predictions - targets.numpy()) ** 2).mean(keepdims=True))
    per_half = [
        F.mse_loss(model(part), target)
        for part, target in zip(inputs.chunk(2), targets.chunk(2), strict=True)
    ]
    losses["torch.tensor"] = torch.tensor(
        per_half
    ).mean()  # notebook 04a, section 1: copies the values
    return losses


torch.manual_seed(0)
model = nn.Linear(3, 1)
# torch.tensor(per_half) warns; torch gives that warning once per process, every time here.
torch.set_warn_always(True)
try:
    with expect_warning(
        UserWarning, match="Converting a tensor with requires_grad=True to a scalar"
    ):
        losses = cut_losses(model, inputs, targets)
finally:
    torch.set_warn_always(False)
for name, loss in losses.items():
    print(
        f"{name:13} loss = {loss.item():.4f}, requires_grad={loss.requires_grad}, grad_fn={loss.grad_fn}"
    )
    with expect_error(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        loss.backward()

# %% [markdown]
# The fifth way leaves the loss line alone: every parameter is frozen (say, to fine-tune a head that was never unfrozen).
# Then no tensor in the graph requires grad, and the error is the same.

# %%
frozen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
for parameter in frozen.parameters():
    parameter.requires_grad_(False)
with expect_error(
    RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
):
    F.mse_loss(frozen(inputs), targets).backward()

# %% [markdown]
# `diagnose` (notebook 02a, section 4) finds a cut before you call `backward()`, and names the parameters the loss does not reach:

# %%
report = diagnose(losses["item"], params=model)
print(report)
assert report
draw(losses["item"], names={"loss": losses["item"]})  # one box: an output cut off from any graph

# %% [markdown]
# ### The wrong fix: `loss.requires_grad_()`
#
# A tempting answer to this error is to make the loss require grad.
# The error goes away: `loss` becomes a leaf of its own, `backward()` fills `loss.grad` and reaches nothing else.
# The parameters get no gradient, `optimizer.step()` skips them, and the loss stays flat.


# %%
def train_losses(compute_loss, steps: int = 30, lr: float = 0.1) -> tuple[list[float], nn.Module]:
    """Trains a fresh nn.Linear(3, 1) with compute_loss(model); returns the losses and the model."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    history = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = compute_loss(model)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history, model


def silenced_loss(model: nn.Module) -> torch.Tensor:
    loss = torch.tensor(F.mse_loss(model(inputs), targets).item())  # the cut of "item"
    loss.requires_grad_()  # the error is gone
    return loss


# %% nbgrader={"grade_id": "demo-silenced-training", "locked": true} tags=["grading-skip"]
silenced, silenced_model = train_losses(silenced_loss)
fixed, fixed_model = train_losses(lambda model: F.mse_loss(model(inputs), targets))

figure, axes = plt.subplots(figsize=(6, 2.6))
axes.plot(silenced, label="loss.requires_grad_()", color="tab:red")
axes.plot(fixed, label="F.mse_loss(model(inputs), targets)", color="tab:blue")
axes.set_xlabel("step")
axes.set_ylabel("training loss")
axes.set_yscale("log")
axes.legend(fontsize=8)
figure.tight_layout()
plt.show()

print(
    f"silenced: first loss {silenced[0]:.4f}, last {silenced[-1]:.4f}, weight.grad = {silenced_model.weight.grad}"
)
print(f"fixed:    first loss {fixed[0]:.4f}, last {fixed[-1]:.4f}")
assert len(set(silenced)) == 1 and silenced_model.weight.grad is None
assert fixed[-1] < fixed[0] / 10

# %% [markdown]
# The course's linter (`python -m autograd_pitfalls.lint`, or `%load_ext autograd_pitfalls.lint` in a notebook) flags the silencing line, and names the pitfall:

# %%
findings = lint_source(inspect.getsource(silenced_loss))
for finding in findings:
    print(f"line {finding.line}: {finding.code} {finding.message} [{finding.pitfall}]")
assert [finding.code for finding in findings] == ["AGP160"]

# %% [markdown]
# The fix is never on the loss: find the line that cut the graph (`diagnose` names the parameters it cannot reach) and compute the loss from the model's output with tensor ops.
# For the numpy version, compute the same thing with torch (`((predictions - targets) ** 2).mean()`); for a list of losses, `torch.stack(per_half).mean()` (notebook 04a); unfreeze what must train.
#
# ## 3. `param.grad is None` after `backward()`
#
# `backward()` ran, no error, and a parameter has no gradient.
# Three causes, each live.
#
# **A parameter the loss does not reach.** This model has a second head that the loss never uses (it was for another task).
# Its parameters keep `grad = None`; `diagnose` names them before any `backward()`.


# %%
class TwoHeads(nn.Module):
    """A shared body with two heads; the training loss below uses only the first."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(3, 8)
        self.main_head = nn.Linear(8, 1)
        self.aux_head = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.tanh(self.body(x))
        return self.main_head(h), self.aux_head(h)


torch.manual_seed(0)
two_heads = TwoHeads()
main, _ = two_heads(inputs)
loss = F.mse_loss(main, targets)
print(diagnose(loss, params=two_heads))
loss.backward()
no_grad_names = [name for name, p in two_heads.named_parameters() if p.grad is None]
print("grad is None for:", no_grad_names)
assert no_grad_names == ["aux_head.weight", "aux_head.bias"]

# %% [markdown]
# Harmless if you meant it (`optimizer.step()` skips a parameter whose `.grad` is None); a bug if the other head was meant to train.
#
# **An optimiser built before the model was rebuilt.** The optimiser keeps the Parameter objects it was given.
# A script that builds the model again afterwards (after reading a config, or to restart a run) trains a model nobody uses:


# %%
def rebuilt_after_optimiser() -> tuple[torch.Tensor, torch.Tensor, bool]:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = nn.Linear(3, 1)  # rebuilt: the optimiser still holds the first one's parameters
    weight_before = model.weight.detach().clone()
    for _ in range(5):
        optimizer.zero_grad()
        F.mse_loss(model(inputs), targets).backward()
        optimizer.step()
    trained = any(p.grad is not None for group in optimizer.param_groups for p in group["params"])
    return weight_before, model.weight.detach(), trained


weight_before, weight_after, optimizer_saw_a_gradient = rebuilt_after_optimiser()
print("weight changed by 5 steps:", not torch.equal(weight_before, weight_after))
print("the optimiser's parameters got a gradient:", optimizer_saw_a_gradient)
assert torch.equal(weight_before, weight_after) and not optimizer_saw_a_gradient

# %% [markdown]
# **A Parameter rebound after the optimiser was built** (notebook 01a): `model.weight = nn.Parameter(...)` puts a new leaf in the model; the optimiser updates the old one.
# The new weight gets its gradient at every step, and never moves.

# %%
torch.manual_seed(0)
model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.weight = nn.Parameter(model.weight.detach() * 0.5)  # "a smaller initialisation"
weight_before = model.weight.detach().clone()
for _ in range(5):
    optimizer.zero_grad()
    F.mse_loss(model(inputs), targets).backward()
    optimizer.step()
print(
    "model.weight.grad:",
    model.weight.grad.tolist(),
    "| changed:",
    not torch.equal(weight_before, model.weight.detach()),
)
assert model.weight.grad is not None and torch.equal(weight_before, model.weight.detach())

# %% [markdown]
# Rescale in place under `torch.no_grad()` instead (`model.weight.mul_(0.5)`), or build the optimiser after the last change to the model.
#
# The same rule holds for moving and casting, as notebook 01b (section 6) says: `model.to(...)` first, then the optimiser.
# With PyTorch's defaults, `Module.to()` keeps each Parameter object when casting (notebook 01b shows it, and shows the move to CUDA where a GPU is present), so an optimiser built before the conversion still holds the model's parameters.
# That is not enough for Adam: an optimiser that has already stepped keeps its state in the old dtype (here Adam's running averages, still float32), and Adam's next step fails (SGD goes on, its momentum buffer still float32, unless it was built with `fused=True`: the cell after this one shows both):

# %%
torch.manual_seed(0)
model = nn.Linear(3, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
weight_object = model.weight
F.mse_loss(model(inputs), targets).backward()
optimizer.step()  # Adam's state for each parameter now exists, in float32
model.to(torch.float64)
print(
    "same Parameter after .to(float64):",
    model.weight is weight_object,
    "| the optimiser holds it:",
    optimizer.param_groups[0]["params"][0] is model.weight,
    "| its state:",
    optimizer.state[model.weight]["exp_avg"].dtype,
)
assert model.weight is weight_object and optimizer.param_groups[0]["params"][0] is model.weight
optimizer.zero_grad()
F.mse_loss(model(inputs.double()), targets.double()).backward()
with expect_error(RuntimeError, match="double"):  # the stable part: Adam's state is float32
    optimizer.step()

# %%
for options in ({"momentum": 0.9}, {"momentum": 0.9, "fused": True}):
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, **options)
    F.mse_loss(model(inputs), targets).backward()
    sgd.step()  # the momentum buffer now exists, in float32
    model.to(torch.float64)
    sgd.zero_grad()
    F.mse_loss(model(inputs.double()), targets.double()).backward()
    if options.get("fused"):
        with expect_error(RuntimeError, match="Double"):
            sgd.step()
    else:
        sgd.step()
        buffer = sgd.state[model.weight]["momentum_buffer"]
        print("SGD with momentum stepped: weight", model.weight.dtype, "| buffer", buffer.dtype)
        assert model.weight.dtype == torch.float64 and buffer.dtype == torch.float32

# %% [markdown]
# And the objects are not kept everywhere: on the course's GPU stand-in, and with `torch.__future__.set_overwrite_module_params_on_conversion(True)`, `.to()` makes new Parameters (notebook 01b shows both), which an optimiser built before never updates.
# The other flag, `torch.__future__.set_swap_module_params_on_conversion(True)`, keeps each Parameter object and swaps its contents in place, so the optimiser still holds it (with its old state).
# Both flags are off by default:

# %%
print(
    "overwrite on conversion:",
    torch.__future__.get_overwrite_module_params_on_conversion(),
    "| swap on conversion:",
    torch.__future__.get_swap_module_params_on_conversion(),
)
assert not torch.__future__.get_overwrite_module_params_on_conversion()
assert not torch.__future__.get_swap_module_params_on_conversion()
layer = nn.Linear(3, 2)
weight_object = layer.weight
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
torch.__future__.set_swap_module_params_on_conversion(True)
try:
    layer.double()
finally:
    torch.__future__.set_swap_module_params_on_conversion(False)
print(
    "with the swap flag: same Parameter after .double():",
    layer.weight is weight_object,
    layer.weight.dtype,
    "| the optimiser holds it:",
    optimizer.param_groups[0]["params"][0] is layer.weight,
)
assert layer.weight is weight_object and layer.weight.dtype == torch.float64
assert optimizer.param_groups[0]["params"][0] is layer.weight

# %% [markdown]
# ## 4. A missing `zero_grad()`
#
# `backward()` *adds* to `.grad` when it holds a tensor (and sets it when it is `None`); it never resets it.
# Without `optimizer.zero_grad()` (or `model.zero_grad()`), step `k` uses the sum of the gradients of all steps so far.
# Three `backward()` calls on the same loss give three times its gradient:

# %%
torch.manual_seed(0)
model = nn.Linear(3, 1)
for call in range(1, 4):
    F.mse_loss(model(inputs), targets).backward()
    print(
        f"after backward() number {call}: weight.grad[0, 0] = {model.weight.grad[0, 0].item():.4f}"
    )
once = weight_grad(lambda loss: loss.mean().backward())
assert torch.allclose(model.weight.grad, 3 * once)

# %% [markdown]
# There is no error; the loss still falls at first, then overshoots and swings: each step uses the sum of all earlier gradients, which keeps pushing the old way after the minimum is passed.


# %% nbgrader={"grade_id": "demo-no-zero-grad", "locked": true} tags=["grading-skip"]
def losses_without_zero_grad(steps: int = 40, lr: float = 0.05) -> list[float]:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    history = []
    for _ in range(steps):
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()  # no optimizer.zero_grad() before it
        optimizer.step()
        history.append(loss.item())
    return history


forgot = losses_without_zero_grad()
zeroed, _ = train_losses(lambda model: F.mse_loss(model(inputs), targets), steps=40, lr=0.05)

figure, axes = plt.subplots(figsize=(6, 2.6))
axes.plot(forgot, label="no zero_grad()", color="tab:red")
axes.plot(zeroed, label="optimizer.zero_grad() every step", color="tab:blue")
axes.set_xlabel("step")
axes.set_ylabel("training loss")
axes.set_yscale("log")
axes.legend(fontsize=8)
figure.tight_layout()
plt.show()

print(f"last loss without zero_grad: {forgot[-1]:.3f} | with: {zeroed[-1]:.4f}")
assert forgot[-1] > 10 * zeroed[-1]
assert any(later > earlier for earlier, later in itertools.pairwise(forgot))  # it goes back up

# %% [markdown]
# Adding up gradients is also a technique: *gradient accumulation* runs several small batches, calls `backward()` on each, and steps once, to fit a large batch in memory.
# It zeroes once per step, not once per batch, and divides each small batch's loss by the number of small batches, so that, with small batches of equal size, the sum is the mean over the large batch.

# %%
torch.manual_seed(0)
model = nn.Linear(3, 1)
model.zero_grad()
for part, target in zip(inputs.chunk(4), targets.chunk(4), strict=True):
    (F.mse_loss(model(part), target) / 4).backward()  # four batches of 16
accumulated = model.weight.grad.clone()
model.zero_grad()
F.mse_loss(model(inputs), targets).backward()  # one batch of 64
print(
    "accumulated:", accumulated[0, :2].tolist(), "| full batch:", model.weight.grad[0, :2].tolist()
)
assert torch.allclose(accumulated, model.weight.grad, atol=1e-6)

# %% [markdown]
# `zero_grad()` does not fill `.grad` with zeros: by default (`set_to_none=True`) it sets it to `None`, which frees the memory, and the next `backward()` writes the gradient instead of adding it.
# Code that reads `.grad` right after `zero_grad()` must expect `None`.
# And an optimiser skips a parameter whose `.grad` is `None`, but steps one whose `.grad` is zeros: with weight decay (`p ← p - lr · (grad + decay · p)` for SGD), that step shrinks it.

# %%
torch.manual_seed(0)
model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.5)
F.mse_loss(model(inputs), targets).backward()
optimizer.zero_grad()  # set_to_none=True
print("after zero_grad():", model.weight.grad)
with expect_error(AttributeError, match="'NoneType' object has no attribute 'norm'"):
    model.weight.grad.norm()  # code that expected zeros
before = model.weight.detach().clone()
optimizer.step()  # no gradient: weight is skipped
assert model.weight.grad is None and torch.equal(model.weight.detach(), before)

F.mse_loss(model(inputs), targets).backward()
optimizer.zero_grad(set_to_none=False)  # zeros instead
optimizer.step()  # a zero gradient: the weight decay alone moves weight, by 1 - 0.1 · 0.5
print("after a step with zero gradients:", model.weight.detach() / before)
assert torch.allclose(model.weight.detach(), before * (1 - 0.1 * 0.5))

# %% [markdown]
# ### Exercise 1 — make this script train (3 points)
#
# Here is the script of sections 1, 2 and 4 as one learner wrote it.
# Its first error was `grad can be implicitly created only for scalar outputs`, its second `element 0 of tensors does not require grad`; each was "fixed" the way this notebook warned against, and a third bug never raised anything.
# Run it: no error, and no parameter moves.


# %%
def train_buggy(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, steps: int, lr: float
) -> list[float]:
    """Buggy: full-batch SGD on the mean squared error; returns the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        errors = (model(inputs) - targets) ** 2
        loss = torch.tensor(errors.mean().item())  # "backward() wants one number"
        loss.requires_grad_()  # "element 0 of tensors does not require grad"
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
buggy_model = nn.Linear(3, 1)
weight_before = buggy_model.weight.detach().clone()
buggy_losses = train_buggy(buggy_model, inputs, targets, steps=5, lr=0.1)
print("losses:", [round(value, 4) for value in buggy_losses])
print("weight moved:", not torch.equal(weight_before, buggy_model.weight.detach()))
assert len(set(buggy_losses)) == 1 and torch.equal(weight_before, buggy_model.weight.detach())

# %% [markdown]
# Write `train(model, inputs, targets, steps, lr)`, a fixed copy: `steps` steps of full-batch gradient descent with `torch.optim.SGD(model.parameters(), lr=lr)` (no momentum, no weight decay) on the mean squared error `mean((model(inputs) - targets) ** 2)`, the mean over every element.
# Each step must use that step's gradients only (not added to the previous steps').
# Train the caller's `model`, in place, and return the list of the `steps` losses as Python floats, each the loss computed before its step's update: all `steps` of them, however small the loss gets.
# Leave `inputs` and `targets` as they were.
#
# For `nn.Linear(1, 1)` with weight 1 and bias 0, `inputs = [[1]]`, `targets = [[3]]`, `steps = 2` and `lr = 0.1`: the first loss is `(1 − 3)² = 4` and the gradients are `2 · (1 − 3) = −4` for both, so `w = 1.4`, `b = 0.4`; the second loss is `(1.8 − 3)² = 1.44`, so `w = 1.64`, `b = 0.64` at the end, and the result is `[4.0, 1.44]`.
# With the row twice, `inputs = [[1], [1]]`, `targets = [[3], [3]]` (in float64), the mean, and so every loss and parameter, is the same.
# With the one row, `steps = 3` and `lr = 0.25`, the first step lands on the target (`w = 2`, `b = 1`, `2 + 1 = 3`), and the result is `[4.0, 0.0, 0.0]`.
# The tests train models you have not seen (several layers, sizes, float32 and float64, learning rates) on data you have not seen, compare every loss and parameter with what this computation gives, and run your function on the course's stand-in for a GPU.


# %% nbgrader={"grade_id": "q1-answer", "solution": true}
def train(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, steps: int, lr: float
) -> list[float]:
    """Trains model in place with full-batch SGD on the mean squared error.

    Args:
        model: The model to train (its parameters are updated in place).
        inputs: The inputs, one row per example.
        targets: The targets, the shape of model(inputs).
        steps: The number of steps.
        lr: The learning rate.

    Returns:
        The loss of each step, before its update, as Python floats.
    """
    ### BEGIN SOLUTION
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((model(inputs) - targets) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
    ### END SOLUTION


# %% nbgrader={"grade_id": "q1-tests", "grade": true, "locked": true, "points": 3}
"""Checks train on the examples: the losses, the parameters, on every device.

Visible: the example, the example with its row twice (float64), the example until the loss is
0, each with inputs and targets left as they were; and on a GPU stand-in. Hidden: small networks
on data you have not seen, float32 and float64, and losses that fall to 0.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests


def check_training(rows: int, steps: int, lr: float, dtype, device, losses, weight, bias):
    """Trains nn.Linear(1, 1) (weight 1, bias 0) on the row [1] -> [3], `rows` times."""
    model = nn.Linear(1, 1).to(device, dtype)
    with torch.no_grad():
        model.weight.fill_(1.0)
        model.bias.zero_()
    inputs = torch.ones(rows, 1, device=device, dtype=dtype)
    targets = torch.full((rows, 1), 3.0, device=device, dtype=dtype)
    kept = KeptInputs(inputs=inputs, targets=targets)
    result = train(model, inputs, targets, steps=steps, lr=lr)
    assert_inputs_left_alone(kept.changes(), "train(model, inputs, targets, ...)")
    assert isinstance(result, list) and all(type(value) is float for value in result), (
        f"train should return a list of Python floats, got {result!r}"
    )
    assert len(result) == steps, (
        f"train should return {steps} losses, got {len(result)}: run every step, even once "
        "the loss is small"
    )
    assert all(abs(value - loss) < 1e-5 for value, loss in zip(result, losses, strict=True)), (
        f"the losses should be {losses}, got {result}: the mean of the squared errors, each "
        "computed before its step's update."
        + (f" {explain('loss-not-reduced')}" if rows > 1 else "")
    )
    assert abs(model.weight.item() - weight) < 1e-5 and abs(model.bias.item() - bias) < 1e-5, (
        f"after {steps} steps on {rows} rows the weight should be {weight} and the bias {bias}, "
        f"got {model.weight.item():.4f} and {model.bias.item():.4f}. "
        + (explain("loss-not-reduced") if rows > 1 else explain("grad-accumulates"))
    )


for device in devices():
    check_training(1, 2, 0.1, torch.float32, device, [4.0, 1.44], weight=1.64, bias=0.64)
    check_training(2, 2, 0.1, torch.float64, device, [4.0, 1.44], weight=1.64, bias=0.64)
    check_training(1, 3, 0.25, torch.float32, device, [4.0, 0.0, 0.0], weight=2.0, bias=1.0)
line = nn.Linear(1, 1, dtype=torch.float64)  # the second example, on a GPU stand-in
with torch.no_grad():
    line.weight.fill_(1.0)
    line.bias.zero_()
two_rows = torch.ones(2, 1, dtype=torch.float64)
on_gpu(train, line, two_rows, 3 * two_rows, 2, 0.1, name="train(...)")


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible examples, then small networks (Linear, Tanh, Linear) on data drawn from rng,
    then a line whose loss falls to 0 after one step (lr 0.25) or towards it (lr 0.2)."""
    line = [(torch.tensor([[1.0]]), torch.tensor([0.0]))]
    cases = [
        {"layers": line, "inputs": torch.ones(rows, 1), "targets": torch.full((rows, 1), 3.0),
         "steps": steps, "lr": lr, "dtype": dtype}
        for rows, steps, lr, dtype in [
            (1, 2, 0.1, torch.float32), (2, 2, 0.1, torch.float64), (1, 3, 0.25, torch.float32)
        ]
    ]  # fmt: skip
    for n_in, hidden, n_out, rows, steps, lr, dtype in [
        (3, 5, 1, 16, 4, 0.1, torch.float32),
        (4, 6, 2, 9, 6, 0.05, torch.float64),
        (2, 3, 3, 25, 3, 0.2, torch.float32),
    ]:
        layers = [
            (torch.randn(hidden, n_in, generator=rng) / n_in**0.5, torch.randn(hidden, generator=rng) * 0.1),
            (torch.randn(n_out, hidden, generator=rng) / hidden**0.5, torch.randn(n_out, generator=rng) * 0.1),
        ]  # fmt: skip
        inputs = torch.randn(rows, n_in, generator=rng)
        targets = torch.randn(rows, n_out, generator=rng)
        cases.append({"layers": layers, "inputs": inputs, "targets": targets, "steps": steps,
                      "lr": lr, "dtype": dtype})  # fmt: skip
    # Losses that fall to 0, or below any tolerance, within the steps: every step still counts.
    for lr, steps, dtype in [(0.25, 5, torch.float32), (0.2, 14, torch.float64)]:
        data = {"inputs": torch.tensor([[1.0]]), "targets": torch.tensor([[3.0]])}
        cases.append({"layers": line, **data, "steps": steps, "lr": lr, "dtype": dtype})
    return cases


def case_model(case) -> nn.Module:
    """The case's network with its parameters: one Linear, or Linear, Tanh, Linear."""
    linears = [nn.Linear(weight.shape[1], weight.shape[0]) for weight, _ in case["layers"]]
    with torch.no_grad():
        for linear, (weight, bias) in zip(linears, case["layers"], strict=True):
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
    model = linears[0] if len(linears) == 1 else nn.Sequential(linears[0], nn.Tanh(), linears[1])
    return model.to(case["dtype"])


def train_and_report(model, inputs, targets, steps, lr):
    """Calls train; returns what it returned, the model's parameters and whether they are the same objects."""
    parameters = list(model.parameters())
    kept = KeptInputs(inputs=inputs, targets=targets)
    result = train(model, inputs, targets, steps, lr)
    now = list(model.parameters())
    same = len(now) == len(parameters) and all(p is q for p, q in zip(now, parameters, strict=True))
    result = list(result) if isinstance(result, list | tuple) else result
    return {
        "result": result, "parameters": dict(model.named_parameters()), "same_parameters": same,
        "inputs_changed": kept.changes(),
    }  # fmt: skip


def observe(case):
    """Runs train on every device and on the GPU stand-in; the losses and parameters after."""
    seen = {}
    data = (case["inputs"].to(case["dtype"]), case["targets"].to(case["dtype"]))
    for device in devices():
        seen[device.type] = train_and_report(
            case_model(case).to(device), *(t.to(device) for t in data), case["steps"], case["lr"]
        )
    try:
        seen["gpu"] = on_gpu(
            train_and_report, case_model(case), *data, case["steps"], case["lr"], name="train(...)"
        )
    except AssertionError as error:
        seen["gpu"] = str(error)
    return seen


### BEGIN JUDGE
def sgd_variant(case, reduce="mean", accumulate=False):
    """Full-batch SGD on the case, in the grader's process: the intended run with the defaults,
    else a known wrong one (the sum of the squared errors; gradients never zeroed).

    Returns:
        The losses (before each update) and the parameters at the end, by name.
    """
    model = case_model(case)
    inputs, targets = case["inputs"].to(case["dtype"]), case["targets"].to(case["dtype"])
    parameters = list(model.parameters())
    running = [torch.zeros_like(p) for p in parameters]
    losses = []
    for _ in range(case["steps"]):
        errors = (model(inputs) - targets) ** 2
        loss = errors.mean() if reduce == "mean" else errors.sum()
        grads = torch.autograd.grad(loss, parameters)
        running = [r + g for r, g in zip(running, grads, strict=True)] if accumulate else grads
        with torch.no_grad():
            for p, g in zip(parameters, running, strict=True):
                p -= case["lr"] * g
        losses.append(errors.mean().item())
    return losses, {name: p.detach() for name, p in model.named_parameters()}


def why_parameters_differ(parameters, case) -> str:
    """Names the known mistake the parameters match, if any."""
    for variant, reason in [
        ({"accumulate": True}, explain("grad-accumulates")),
        ({"reduce": "sum"}, explain("loss-not-reduced")),
    ]:
        _, wrong = sgd_variant(case, **variant)
        if all(torch.allclose(parameters[name].values, wrong[name], rtol=1e-4, atol=1e-5)
               for name in wrong):  # fmt: skip
            return reason
    return "Each step: zero the gradients, then backward() of the mean, then step()."


def judge(seen, case):
    """Losses and parameters against the intended SGD, on every device and the stand-in."""
    initial = {name: p.detach().clone() for name, p in case_model(case).named_parameters()}
    expected, reference = sgd_variant(case)
    assert "cpu" in seen, "the tests saw no CPU run"
    for device, run in seen.items():
        where = "on the GPU stand-in" if device == "gpu" else "on the CPU"
        assert not isinstance(run, str), run  # on_gpu's message: the wrong-device pitfall
        assert_inputs_left_alone(run["inputs_changed"], "train(model, inputs, targets, ...)")
        result = run["result"]
        assert isinstance(result, list) and all(type(value) is float for value in result), (
            "train should return a list of Python floats (loss.item())"
        )
        assert len(result) == case["steps"], (
            f"train should return {case['steps']} losses, got {len(result)}: run every step, "
            f"even once the loss is small (here it falls to {min(expected):.3g})"
        )
        assert run["same_parameters"], "train the caller's model in place: keep its parameters"
        parameters = run["parameters"]
        assert set(parameters) == set(initial), "train should not add or remove parameters"
        assert all(
            isinstance(p, TensorSeen) and p.values is not None for p in parameters.values()
        ), "the model's parameters should stay tensors"
        assert any(
            not torch.equal(parameters[name].values, initial[name].to(parameters[name].dtype))
            for name in initial
        ), f"no parameter moved {where}. " + explain("grad-never-reached")
        for name, value in reference.items():
            p = parameters[name]
            assert p.dtype == case["dtype"], f"{name} should stay {case['dtype']}, is {p.dtype}"
            assert torch.allclose(p.values, value, rtol=1e-4, atol=1e-5), (
                f"{name} after training {where} differs from full-batch SGD on the mean squared "
                "error. " + why_parameters_differ(parameters, case)
            )
        for step, (value, truth) in enumerate(zip(result, expected, strict=True)):
            assert abs(value - truth) <= 1e-4 * abs(truth) + 1e-5, (
                f"the loss of step {step} should be {truth:.6f}, got {value:.6f}: the mean of the "
                "squared errors, computed before that step's update"
            )


### END JUDGE
probe_and_judge("q1", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## 5. A layer built inside `forward`, and a tensor that `.to(device)` leaves behind
#
# `Expected all tensors to be on the same device` can come from the model's code rather than the training loop: something the module does not register.
# Here is a scorer as a learner wrote it: a hidden layer, a fixed scale per hidden unit, and an output layer whose input size is "only known in `forward`".


# %%
class Scorer(nn.Module):
    """Buggy: scores each row of x with a hidden layer, a fixed per-unit scale and a head."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.body = nn.Linear(features, hidden)
        self.scale = torch.linspace(0.5, 1.5, hidden)  # a plain attribute

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.body(x)) * self.scale
        head = nn.Linear(h.shape[1], 1)  # built at every call
        return head(h).squeeze(1)


# %% [markdown]
# On the CPU it runs, and two things are already wrong.
# The head is a new, randomly initialised layer at every call, so the same input gets another score each time; and it is not in `model.parameters()` (nor in `state_dict()`), so no optimiser ever trains it and no checkpoint saves it.

# %%
torch.manual_seed(0)
scorer = Scorer(3, 4)
x = torch.randn(5, 3)
print("two calls, same input, equal scores:", torch.equal(scorer(x), scorer(x)))
print("parameters:", [name for name, _ in scorer.named_parameters()])
print("state_dict:", list(scorer.state_dict()))
assert not torch.equal(scorer(x), scorer(x))
assert [name for name, _ in scorer.named_parameters()] == ["body.weight", "body.bias"]

# %% [markdown]
# On a GPU it fails.
# This notebook runs it on the course's stand-in for a GPU (a CPU device named `gpu` that refuses what CUDA refuses; on CUDA the message names `cuda:0`), or on the GPU where the machine has one.
# `model.to(device)` moves what the module registered: parameters, buffers and submodules.
# `self.scale` is none of them, so it stays on the CPU, and so does the head built in `forward` from `nn.Linear`'s CPU default.

# %%
with gpu_standin():
    scorer_on_gpu = Scorer(3, 4).to("cuda")  # the stand-in here (the GPU, where there is one)
    print("body.weight:", scorer_on_gpu.body.weight.device, "| scale:", scorer_on_gpu.scale.device)
    with expect_error(RuntimeError, match="Expected all tensors to be on the same device"):
        scorer_on_gpu(x.to("cuda"))
assert scorer_on_gpu.scale.device.type == "cpu"

# %% [markdown]
# The fixes that make the error go away one line at a time are not enough: `self.scale.to(x.device)` in `forward` leaves `self.scale` itself on the CPU, out of `state_dict()`, and `nn.Linear(...).to(x.device)` in `forward` runs on the GPU, still random at every call, still never trained:


# %%
class PatchedScorer(nn.Module):
    """Scorer with the two one-line fixes: the scale moved in forward, the head moved there."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.body = nn.Linear(features, 4)
        self.scale = torch.tensor(2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        head = nn.Linear(4, 1).to(x.device)
        return head(self.body(x)) * self.scale.to(x.device)


with gpu_standin():
    patched = PatchedScorer(3).to("cuda")
    first, second = patched(x.to("cuda")), patched(x.to("cuda"))
    print("runs on:", first.device, "| two calls, equal scores:", torch.equal(first, second))
    print(
        "scale:", patched.scale.device, "| parameters:", [n for n, _ in patched.named_parameters()]
    )
    print("state_dict:", list(patched.state_dict()))
assert first.device.type != "cpu" and not torch.equal(first, second)
assert patched.scale.device.type == "cpu" and "scale" not in patched.state_dict()

# %% [markdown]
# The fix is to let the module own them:
#
# - a layer goes in `__init__` (its sizes are known there: the hidden size is an argument); a list of layers goes in `nn.ModuleList`, since a plain Python list registers nothing;
# - a tensor that is state but not trained goes in a *buffer*, `self.register_buffer("scale", tensor)`: `.to()` moves it with the parameters (and, when `.to()` is given a dtype, converts it too if it is floating point), and `state_dict()` saves it (`persistent=False` leaves it out of the checkpoint).
#
# A small module with both, moved to the stand-in and converted to float64:


# %%
class Standardise(nn.Module):
    """Subtracts a fixed mean and divides by a fixed std, then applies a stack of layers."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor, sizes: list[int]) -> None:
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std, persistent=False)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))
        self.plain_list = [nn.Linear(sizes[0], sizes[0])]  # registers nothing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


standardise = Standardise(torch.zeros(3), torch.ones(3), [3, 4, 2])
print("parameters:", [name for name, _ in standardise.named_parameters()])
print(
    "buffers:",
    [name for name, _ in standardise.named_buffers()],
    "| state_dict:",
    list(standardise.state_dict()),
)
with gpu_standin():
    standardise.to("cuda", torch.float64)
    print(
        "mean:",
        standardise.mean.device,
        standardise.mean.dtype,
        "| layers.0.weight:",
        standardise.layers[0].weight.device,
    )
    print(
        "the plain list's layer:",
        standardise.plain_list[0].weight.device,
        standardise.plain_list[0].weight.dtype,
    )
    output = standardise(x.to("cuda", torch.float64))
print("output:", output.device, output.dtype, tuple(output.shape))
assert standardise.std.device == GPU and standardise.std.dtype == torch.float64
assert standardise.plain_list[0].weight.device.type == "cpu"
assert "std" not in standardise.state_dict() and "mean" in standardise.state_dict()

# %% [markdown]
# ### Exercise 2 — register what the module owns (3 points)
#
# Write `FixedScorer(features, hidden)`, the scorer of this section fixed:
#
# - `self.body = nn.Linear(features, hidden)`;
# - `self.scale`, the tensor `torch.linspace(0.5, 1.5, hidden)`, kept so that `.to()` moves it (and converts it, a floating-point tensor) with the parameters, and not trained;
# - `self.head = nn.Linear(hidden, 1)`, built once, in `__init__`;
# - `forward(x)` returns `self.head(torch.relu(self.body(x)) * self.scale).squeeze(1)`, one score per row of `x`, and leaves `x` as it was.
#
# The trainable parameters are then exactly `body.weight`, `body.bias`, `head.weight` and `head.bias`.
# The tests build your module with other sizes, move it with `.to()` to the GPU stand-in and to float64, compare its scores with this formula on inputs you have not seen, and train it a few steps with SGD: every trainable parameter must move, and `scale` must not.


# %% nbgrader={"grade_id": "q2-answer", "solution": true}
class FixedScorer(nn.Module):
    """Scores each row of x: relu(body(x)) * scale, then a linear head; all registered."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        ### BEGIN SOLUTION
        self.body = nn.Linear(features, hidden)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, hidden))
        self.head = nn.Linear(hidden, 1)
        ### END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Returns one score per row of x, shape (batch,)."""
        ### BEGIN SOLUTION
        return self.head(torch.relu(self.body(x)) * self.scale).squeeze(1)
        ### END SOLUTION


# %% nbgrader={"grade_id": "q2-tests", "grade": true, "locked": true, "points": 3}
"""Checks FixedScorer: what it registers, its scores, and that it follows .to() to the GPU stand-in.

Visible: FixedScorer(3, 4) after torch.manual_seed(0): its trainable parameters, its scores (x
left as it was), on a GPU stand-in; three SGD steps move every trainable parameter and not
scale. Hidden: other sizes, inputs and dtypes; the scores and the steps against the formula.
"""
reset_torch_settings()  # torch's defaults: what earlier cells left does not reach these tests
torch.manual_seed(0)
fixed_scorer = FixedScorer(3, 4)
trainable = sorted(name for name, p in fixed_scorer.named_parameters() if p.requires_grad)
assert trainable == ["body.bias", "body.weight", "head.bias", "head.weight"], (
    f"the trainable parameters should be body.weight, body.bias, head.weight, head.bias; got "
    f"{trainable}. " + explain("module-state-unregistered")
)
x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
kept = KeptInputs(x=x)
scores = fixed_scorer(x)
assert_inputs_left_alone(kept.changes(), "FixedScorer's forward(x)")
expected = fixed_scorer.head(torch.relu(fixed_scorer.body(x)) * torch.linspace(0.5, 1.5, 4))
assert torch.allclose(scores, expected.squeeze(1)), "the scores differ from the formula"
with gpu_standin():
    fixed_scorer.to("cuda")
    assert fixed_scorer.scale.device == GPU, "model.to(device) left scale on the CPU. " + explain(
        "module-state-unregistered"
    )
    scores = on_gpu(fixed_scorer, x, name="FixedScorer(...)(x)")
assert torch.allclose(to_host(scores), expected.squeeze(1).detach()), "the scores differ on the GPU"

torch.manual_seed(0)
trained = FixedScorer(3, 4)  # three SGD steps on the squared error, towards 0
before = {name: p.detach().clone() for name, p in trained.named_parameters()}
optimizer = torch.optim.SGD([p for p in trained.parameters() if p.requires_grad], lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    (trained(x) ** 2).mean().backward()
    optimizer.step()
for name, p in trained.named_parameters():
    if p.requires_grad:
        assert not torch.equal(p.detach(), before[name]), (
            f"{name} did not move in three SGD steps: it is not trained. "
            + explain("module-state-unregistered")
        )
trained_scale = getattr(trained, "scale", None)
assert isinstance(trained_scale, torch.Tensor) and torch.equal(
    trained_scale.detach(), torch.linspace(0.5, 1.5, 4)
), "scale should be torch.linspace(0.5, 1.5, hidden), and not trained"


### BEGIN HIDDEN TESTS
def hidden_cases(rng):
    """The visible scorer, then sizes, batches and dtypes; inputs and targets drawn from rng; a
    seed for the initialisation."""
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    cases = [
        {"features": 3, "hidden": 4, "dtype": torch.float32, "seed": 0, "x": x,
         "targets": torch.zeros(5)}
    ]  # fmt: skip
    for features, hidden, rows, dtype in [
        (3, 4, 5, torch.float32),
        (5, 7, 9, torch.float64),
        (2, 3, 1, torch.float32),
    ]:
        cases.append({
            "features": features, "hidden": hidden, "dtype": dtype,
            "seed": int(torch.randint(2**31, (1,), generator=rng)),
            "x": torch.randn(rows, features, generator=rng),
            "targets": torch.randn(rows, generator=rng),
        })  # fmt: skip
    return cases


def scorer_run(model, x, targets, steps=3, lr=0.1):
    """Scores x twice, trains model `steps` SGD steps on the squared error; reports what it saw."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    scale_before = getattr(model, "scale", None)
    scale_before = (
        scale_before.detach().clone() if isinstance(scale_before, torch.Tensor) else scale_before
    )
    kept = KeptInputs(x=x)
    scores, again = model(x), model(x)
    inputs_changed = kept.changes()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        ((model(x) - targets) ** 2).mean().backward()
        optimizer.step()
    return {
        "before": before,
        "trainable": sorted(name for name, p in model.named_parameters() if p.requires_grad),
        "scores": scores, "again": again, "scale_before": scale_before,
        "scale_after": getattr(model, "scale", None), "after": dict(model.named_parameters()),
        "buffers": [name for name, _ in model.named_buffers()],
        "inputs_changed": inputs_changed,
    }  # fmt: skip


def observe(case):
    """Builds FixedScorer; runs it on the CPU in the case's dtype, then on the GPU stand-in."""
    torch.manual_seed(case["seed"])
    model = FixedScorer(case["features"], case["hidden"]).to(case["dtype"])
    data = (case["x"].to(case["dtype"]), case["targets"].to(case["dtype"]))
    seen = {"cpu": scorer_run(model, *data)}
    torch.manual_seed(case["seed"])
    model = FixedScorer(case["features"], case["hidden"])
    try:
        with gpu_standin():
            model = model.to("cuda", case["dtype"])
            seen["moved_scale"] = getattr(model, "scale", None)
        seen["gpu"] = on_gpu(scorer_run, model, *data, name="FixedScorer")
    except AssertionError as error:
        seen["gpu"] = str(error)
    return seen


### BEGIN JUDGE
def reference_scores(parameters, scale, x):
    """The exercise's formula, from the parameters the probe saw."""
    h = torch.relu(x @ parameters["body.weight"].T + parameters["body.bias"]) * scale
    return (h @ parameters["head.weight"].T + parameters["head.bias"]).squeeze(1)


def judge(seen, case):
    """Registered parameters and scale; the scores; SGD moves every parameter, not scale."""
    dtype = case["dtype"]
    scale = torch.linspace(0.5, 1.5, case["hidden"], dtype=dtype)
    x, targets = case["x"].to(dtype), case["targets"].to(dtype)
    wanted = ["body.bias", "body.weight", "head.bias", "head.weight"]
    moved = seen["moved_scale"]
    assert isinstance(moved, TensorSeen) and moved.is_on("gpu") and moved.dtype == dtype, (
        f"after model.to(device, {dtype}), scale should be on that device and {dtype}. "
        + explain("module-state-unregistered")
    )
    for device in ("cpu", "gpu"):
        run = seen[device]
        assert not isinstance(run, str), run + "\n" + explain("module-state-unregistered")
        assert_inputs_left_alone(run["inputs_changed"], "FixedScorer's forward(x)")
        assert run["trainable"] == wanted, (
            f"the trainable parameters should be {wanted}, got {run['trainable']}. "
            + explain("module-state-unregistered")
        )
        before = {name: run["before"][name].values for name in wanted}  # not a frozen scale
        assert all(before[name].dtype == dtype for name in wanted), (
            f"the parameters should be {dtype}"
        )
        expected = reference_scores(before, scale, x)
        for key in ("scores", "again"):
            scores = run[key]
            assert isinstance(scores, TensorSeen) and scores.shape == (len(x),), (
                f"forward(x) should return one score per row, shape ({len(x)},)"
            )
            assert scores.is_on(device), explain("wrong-device")
            assert torch.allclose(scores.values, expected, rtol=1e-4, atol=1e-6), (
                "the scores differ from head(relu(body(x)) * scale).squeeze(1)"
                + (
                    " (a layer built in forward() is new at every call). "
                    if key == "again"
                    else ". "
                )
                + explain("module-state-unregistered")
            )
        for key in ("scale_before", "scale_after"):
            assert isinstance(run[key], TensorSeen) and torch.allclose(run[key].values, scale), (
                "scale should be torch.linspace(0.5, 1.5, hidden), and not trained"
            )
        reference = {name: value.clone().requires_grad_() for name, value in before.items()}
        for _ in range(3):
            loss = ((reference_scores(reference, scale, x) - targets) ** 2).mean()
            grads = torch.autograd.grad(loss, list(reference.values()))
            with torch.no_grad():
                for value, grad in zip(reference.values(), grads, strict=True):
                    value -= 0.1 * grad
        for name in wanted:
            after, expected_after = run["after"][name].values, reference[name].detach()
            if torch.equal(after, before[name]) and not torch.equal(expected_after, before[name]):
                raise AssertionError(
                    f"{name} did not move in three SGD steps: it is not trained. "
                    + explain("module-state-unregistered")
                )
            assert torch.allclose(after, expected_after, rtol=1e-4, atol=1e-6), (
                f"{name} after three SGD steps differs from the formula's. "
                + explain("module-state-unregistered")
            )


### END JUDGE
probe_and_judge("q2", hidden_cases, observe, judge)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Read the message, then look for the cause where the message cannot see it: in the model's code, in what the loop carries from step to step, in a line written to silence an earlier error.
# - `grad can be implicitly created only for scalar outputs`: reduce the loss as you mean it (`.mean()`); `backward(torch.ones_like(loss))` is the sum, a gradient as many times larger as the loss has values.
# - `element 0 of tensors does not require grad`: the graph was cut (`no_grad`, `.item()`, numpy, `torch.tensor([...])`, every parameter frozen). `loss.requires_grad_()` silences it and trains nothing; `diagnose(loss, params=model)` names what the loss cannot reach.
# - `param.grad is None`: the loss does not use it, or the optimiser holds other Parameters (the model rebuilt or a Parameter rebound after the optimiser was built). Move or cast the model first, then build the optimiser: one that has stepped keeps its state in the old dtype (Adam's next step then fails), and some conversions make new Parameters.
# - No `zero_grad()`: gradients add up across steps, with no error. Accumulate on purpose by dividing each part's loss by the number of parts and zeroing once per step. `zero_grad()` sets `.grad` to `None` (an optimiser then skips the parameter), not to zeros.
# - `Expected all tensors to be on the same device`: something the module does not register. Build layers in `__init__` (lists in `nn.ModuleList`) and keep tensors in buffers.
#
# Part 2, `06b_debugging_clinic`, goes on at section 6 with a recurrent state carried across batches.
