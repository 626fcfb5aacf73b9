"""The pitfalls the course teaches, and the one sentence each failure message uses for it.

Every failure message in the course names its pitfall with these words, so a learner meets
the same explanation in notebook 01, in notebook 05 and in the grader's feedback.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PITFALLS", "Pitfall", "explain", "named_in"]


@dataclass(frozen=True)
class Pitfall:
    """One pitfall: a short title, what to look at, and the notebook that teaches it.

    Attributes:
        key: Stable identifier, for example ``"not-a-leaf"``.
        title: A few words naming the pitfall.
        advice: What to look at to fix it, in one or two sentences.
        notebook: The assignment id of the notebook that teaches it.
    """

    key: str
    title: str
    advice: str
    notebook: str

    @property
    def marker(self) -> str:
        """The tag that ends every message naming this pitfall, for example ``[not-a-leaf]``.

        Tools read the key from it (see :func:`named_in`), never the wording around it,
        which may change.
        """
        return f"[{self.key}]"

    def describe(self) -> str:
        """Returns the pitfall as one paragraph: title, advice, where it is taught, marker."""
        return f"Pitfall: {self.title}. {self.advice} (taught in {self.notebook}) {self.marker}"


_ALL = (
    Pitfall(
        "not-a-leaf",
        "this tensor is not a leaf",
        "It was produced by an operation (it has a grad_fn), so backward() does not keep its "
        ".grad. Did you rebind a name (`x = x * 2`), or make the Parameter before reshaping "
        "or moving it? Create the final tensor first, then mark it as requiring grad.",
        "01a_leaf_tensors",
    ),
    Pitfall(
        "no-requires-grad",
        "this leaf does not require grad",
        "Autograd only records operations on tensors with requires_grad=True; "
        "create it with requires_grad=True or wrap it in nn.Parameter.",
        "01a_leaf_tensors",
    ),
    Pitfall(
        "grad-never-reached",
        "no gradient reached this tensor",
        "Its .grad is None. Either backward() was not called, the tensor is not a leaf, "
        "or the graph was cut between it and the loss (torch.tensor([...]), .item(), "
        ".detach() or .data in the middle).",
        "01a_leaf_tensors",
    ),
    Pitfall(
        "wrong-device",
        "a tensor was built on the CPU whatever the input's device",
        "torch.zeros(n), torch.tensor(x.tolist()) or nn.Parameter(cpu_values).to(device) "
        "work on a CPU and break on a GPU. Build on the input's device (device=x.device, "
        "x.new_zeros, torch.zeros_like, torch.stack), and do not go through Python numbers "
        "(.item(), .tolist()).",
        "01b_leaf_tensors",
    ),
    Pitfall(
        "wrong-gradient",
        "the gradient has the wrong values",
        "If you silenced an in-place error by writing through .data (or a numpy array), "
        "autograd used the modified values and computed a wrong gradient without any "
        "error. Derive the expected gradient by hand and compare.",
        "02a_version_counter",
    ),
    Pitfall(
        "leaf-inplace",
        "an in-place write to a leaf that requires grad",
        "Write to a parameter in place only under `with torch.no_grad():` "
        "(initialisation, optimiser steps), never while building the graph.",
        "02a_version_counter",
    ),
    Pitfall(
        "changed-input",
        "the function changed a tensor it was handed",
        "The caller still uses its tensors: `x -= m` or `x.sub_(m)` writes into the "
        "caller's x (and a tensor that `.to()` returned unchanged is the caller's too), "
        "where `x = x - m` makes a new one. Leave every input as it was; compute into new "
        "tensors, or write into a clone().",
        "02a_version_counter",
    ),
    Pitfall(
        "global-state-changed",
        "the function changed PyTorch's settings for the whole process",
        "torch.set_grad_enabled(False), torch.set_default_dtype(...), "
        "torch.set_default_device(...), anomaly mode or deterministic algorithms left on stay "
        "on for every later line, other people's code included. Change them for a block only "
        "(`with torch.no_grad():`, `with torch.autograd.detect_anomaly():`), or put back what "
        "was there.",
        "02a_version_counter",
    ),
    Pitfall(
        "stale-saved-tensor",
        "a tensor saved for backward was modified in place",
        "backward() needs the value it saw in the forward pass. Use the out-of-place op "
        "(`x = x + 1` rather than `x += 1`), clone before modifying, or modify before use.",
        "02a_version_counter",
    ),
    Pitfall(
        "hidden-write",
        "an in-place write was hidden from autograd",
        "Writes through .data (or numpy) do not bump the version counter, so autograd "
        "cannot warn you when they corrupt a gradient. Use torch.no_grad() or .detach().",
        "02b_version_counter",
    ),
    Pitfall(
        "backward-twice",
        "backward() through a graph that was already freed",
        "backward() frees the tensors it saved. Rebuild the graph with a fresh forward pass "
        "each time, or pass retain_graph=True when you really need two backward passes.",
        "02b_version_counter",
    ),
    Pitfall(
        "graph-cut-assembly",
        "the graph was cut when the pieces were put together",
        "torch.tensor([a, b]) and anything built from .item(), float() or .tolist() copy "
        "the values and forget where they came from (requires_grad=True then only makes a "
        "new leaf). Assemble with torch.stack([...]) or torch.cat([...]).",
        "04a_assembling_tensors",
    ),
    Pitfall(
        "wrong-dtype",
        "the result does not have the input's dtype",
        "torch.zeros(n) is float32 whatever the input, and zeros_like of an integer tensor "
        "is integer (it truncates what you write into it). Build from the input: "
        "x.new_zeros(n), torch.zeros_like(x), or torch.stack/torch.cat of the pieces.",
        "04b_assembling_tensors",
    ),
    Pitfall(
        "embedding-renorm-in-forward",
        "an embedding with max_norm rewrites its weight in every forward pass",
        "nn.Embedding(max_norm=m) rescales the rows it looks up whose norm is above m, in "
        "place, and bumps weight._version at every call, even under no_grad. A use of "
        "embedding.weight saved before the lookup goes stale: call the embedding first, use "
        "embedding.weight.clone() there, or rescale under torch.no_grad() and look up with "
        "max_norm=None.",
        "05a_embedding_max_norm",
    ),
    Pitfall(
        "embedding-renorm-wrote-weight",
        "a max_norm lookup wrote to the weight it should only read",
        "F.embedding(..., max_norm=...) rescales rows of the tensor you pass, in place (and "
        "a write through .data only hides it from _version). Rescale the gathered rows "
        "weight[indices] out of place, or renormalise a clone.",
        "05b_embedding_max_norm",
    ),
    Pitfall(
        "graph-kept-alive",
        "a value kept after its step still holds its graph",
        "`total_loss += loss`, `losses.append(loss)` or a result that still requires grad "
        "keeps the whole graph behind it alive (and, where no backward() freed them, its "
        "saved activations). Keep `loss.item()` or `loss.detach()` instead.",
        "03b_data_vs_detach",
    ),
    Pitfall(
        "autograd-on-in-evaluation",
        "autograd was on while evaluating",
        "model.eval() only switches dropout and batch norm, and Variable(..., volatile=True) "
        "does nothing since PyTorch 0.4: run the model under `with torch.no_grad():` or "
        "`with torch.inference_mode():`.",
        "03a_data_vs_detach",
    ),
    Pitfall(
        "data-not-detach",
        "`.data` used where `.detach()` belongs",
        "`.data` gives the same memory with autograd's version counter cut off, so a later "
        "in-place write through either name gives a wrong gradient without any error. Read "
        "with `.detach()`; write under `with torch.no_grad():`.",
        "03a_data_vs_detach",
    ),
    Pitfall(
        "legacy-variable",
        "a legacy `Variable` wrapper",
        "Since PyTorch 0.4 `Variable(t)` returns a plain tensor: it is `t.detach()`, which cuts "
        "the graph when `t` requires grad. Use the tensor itself, or `t.requires_grad_()`.",
        "03b_data_vs_detach",
    ),
    Pitfall(
        "zero-dim-indexed",
        "a 0-dim loss read with `[0]`",
        "Since PyTorch 0.4 a reduced loss has no dimensions, so `loss[0]` and `loss.data[0]` "
        "raise IndexError. Read its value with `loss.item()`.",
        "03b_data_vs_detach",
    ),
    Pitfall(
        "numpy-needs-detach",
        "`.numpy()` on a tensor that requires grad",
        "`.numpy()` raises on a tensor that requires grad, and `.data.numpy()` hides the "
        "array's writes from autograd. Use `t.detach().cpu().numpy()` (or `t.numpy(force=True)`).",
        "03a_data_vs_detach",
    ),
    Pitfall(
        "loss-not-reduced",
        "backward() on a loss that is not one number",
        "backward() with no argument needs a loss of one value. Reduce it as you mean it "
        "(`.mean()`, as F.mse_loss does); backward(torch.ones_like(loss)) is the sum, a "
        "gradient as many times larger as the loss has values.",
        "06a_debugging_clinic",
    ),
    Pitfall(
        "grad-accumulates",
        "gradients added up across steps",
        "backward() adds to .grad. Call optimizer.zero_grad() (or model.zero_grad()) once "
        "per step, before backward(); to accumulate on purpose, divide each part's loss by "
        "the number of parts and zero once per step.",
        "06a_debugging_clinic",
    ),
    Pitfall(
        "module-state-unregistered",
        "a layer or tensor the module does not register",
        "A layer built in forward() is new at every call: random, on the CPU, and never in "
        "model.parameters(), so it never trains. A tensor kept as a plain attribute (or "
        "layers in a plain list) stays behind when model.to(device) moves the module. Build "
        "layers in __init__ (nn.ModuleList for lists) and keep tensors with "
        "self.register_buffer(name, tensor).",
        "06a_debugging_clinic",
    ),
    Pitfall(
        "hidden-state-carried",
        "a hidden state carried across batches with its graph",
        "The state computed in one batch still holds that batch's graph, which backward() "
        "freed: backward() through it again fails, and retain_graph=True keeps every "
        "batch's graph alive (and fails once the optimiser has changed the weights). Carry "
        "h.detach() into the next batch.",
        "06b_debugging_clinic",
    ),
)

PITFALLS: dict[str, Pitfall] = {pitfall.key: pitfall for pitfall in _ALL}


def explain(key: str) -> str:
    """Returns the shared description of a pitfall.

    Args:
        key: A key of :data:`PITFALLS`, for example ``"stale-saved-tensor"``.

    Returns:
        One paragraph naming the pitfall, what to look at and the notebook that teaches it.

    Raises:
        KeyError: If ``key`` names no pitfall.
    """
    return PITFALLS[key].describe()


def named_in(text: str) -> list[str]:
    """Returns the keys of the pitfalls whose marker appears in ``text``, in key order.

    The grader's class report counts, per exercise, the pitfalls its failing tests named:
    it reads the markers that :func:`explain` writes, so a reworded title or advice, or a
    student's own text that quotes a title, changes nothing.

    Args:
        text: A failure message, or several.
    """
    return [key for key, pitfall in PITFALLS.items() if pitfall.marker in text]
