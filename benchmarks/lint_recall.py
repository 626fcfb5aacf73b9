"""The linter's recall and precision on a sample of pitfalls and clean look-alikes.

Run: ``.venv/bin/python benchmarks/lint_recall.py`` (``--select ALL`` for every rule).

Written after the rules were done, from the pitfalls the course teaches and the ways
learners write them, not from the rules' fixtures: each case is a small program with one
line marked ``# <-``. A pitfall case's marked line is the pitfall; a clean case's marked
line looks like one and is not. Each program is first run on the installed torch (2.13.0
pinned), to confirm what the case claims: the error a pitfall raises, or a check that
shows its effect (a gradient that accumulated, a graph kept alive, a cut graph); a clean
case runs and its check holds. Then it is linted.

- recall: the pitfall lines with a finding on them, of all pitfall lines;
- precision: findings on pitfall lines, of all findings on the marked lines of both kinds
  (a clean case is written clean throughout, so any finding in it counts against).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import warnings
from dataclasses import dataclass

from autograd_pitfalls.lint import lint_source


@dataclass(frozen=True)
class Case:
    """A small program, its marked line, and what running it shows."""

    name: str
    pitfall: bool
    code: str
    raises: str = ""  # a regex the error's message matches, for a case that raises
    check: str = ""  # an expression true after the run (the effect, or its absence)


SETUP = """import torch
import numpy as np
import torch.nn.functional as F
from torch import nn
torch.manual_seed(0)
"""

PITFALLS = [
    Case(
        "write into a product's saved factor",
        True,
        """x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)
d = x @ w1
f = d @ w2
d[:] = 0  # <-
f.backward()
""",
        raises="is at version 1; expected version 0",
    ),
    Case(
        "write into exp's output",
        True,
        """a = torch.tensor([0.0, 1.0], requires_grad=True)
e = (a * 1).exp()
e.mul_(2)  # <-
e.sum().backward()
""",
        raises="is at version 1; expected version 0",
    ),
    Case(
        "+= on sigmoid's output in a step function",
        True,
        """lin = nn.Linear(3, 3)
def step(x):
    h = torch.sigmoid(lin(x))
    out = (h * 2).sum()
    h += 1  # <-
    out.backward()
step(torch.randn(2, 3))
""",
        raises="is at version 1; expected version 0",
    ),
    Case(
        "write through a view of a saved tensor",
        True,
        """a = torch.tensor([1.0, 3.0], requires_grad=True)
b = a + 2
loss = (b * b).mean()
head = b[:1]
head.mul_(3)  # <-
loss.backward()
""",
        raises="is at version 1; expected version 0",
    ),
    Case(
        "clamp_ on relu's output that pow saved",
        True,
        """lin = nn.Linear(4, 4)
h = F.relu(lin(torch.randn(2, 4)))
loss = (h**2).sum()
h.clamp_(max=1.0)  # <-
loss.backward()
""",
        raises="is at version 1; expected version 0",
    ),
    Case(
        "in-place normalisation inside forward()",
        True,
        """class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(3, 8)
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        h /= h.norm(dim=1, keepdim=True)  # <-
        return h.sum()
Normed()(torch.randn(4, 3)).backward()
""",
        raises="is at version 1; expected version 0",
    ),
    Case(
        "training loop without zero_grad",
        True,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
x, y = torch.randn(8, 3), torch.randn(8, 1)
for _ in range(3):
    loss = F.mse_loss(model(x), y)
    loss.backward()  # <-
    optimizer.step()
one = torch.autograd.grad(F.mse_loss(model(x), y), model.weight)[0]
""",
        check="torch.allclose(model.weight.grad, 3 * one)",
    ),
    Case(
        "manual SGD without zeroing",
        True,
        """w = torch.zeros(3, 1, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8, 1)
grads = []
for _ in range(2):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()  # <-
    grads.append(w.grad.clone())
    with torch.no_grad():
        w -= 0.0 * w.grad
""",
        check="torch.allclose(grads[1], 2 * grads[0])",
    ),
    Case(
        "zero_grad between backward and step",
        True,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
before = model.weight.detach().clone()
for _ in range(3):
    F.mse_loss(model(x), y).backward()
    optimizer.zero_grad()  # <-
    optimizer.step()
""",
        check="torch.equal(before, model.weight.detach())",
    ),
    Case(
        "retain_graph=True on a hidden state carried across chunks",
        True,
        """cell = nn.RNNCell(3, 4)
head = nn.Linear(4, 1)
optimizer = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.1)
h = torch.zeros(2, 4)
for _ in range(3):
    optimizer.zero_grad()
    h = cell(torch.randn(2, 3), h)
    loss = F.mse_loss(head(h), torch.randn(2, 1))
    loss.backward(retain_graph=True)  # <-
    optimizer.step()
""",
        raises="modified by an inplace operation",
    ),
    Case(
        "losses appended for a plot",
        True,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
history = []
for _ in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    history.append(loss)  # <-
""",
        check="history[0].grad_fn is not None",
    ),
    Case(
        "running total of losses",
        True,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
total = 0
for _ in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss  # <-
print(total)
""",
        check="total.grad_fn is not None",
    ),
    Case(
        "validation loss summed outside no_grad",
        True,
        """model = nn.Linear(4, 3)
batches = [(torch.randn(2, 4), torch.tensor([0, 2]))]
val_loss = 0
for data, target in batches:
    val_loss += F.cross_entropy(model(data), target)  # <-
val_loss /= len(batches)
print(f"validation loss {val_loss}")
""",
        check="val_loss.requires_grad",
    ),
    Case(
        "penalty of parameters' norms through torch.tensor",
        True,
        """class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(3))
        self.w2 = nn.Parameter(torch.randn(3))
    def penalty(self):
        return torch.tensor([self.w1.norm(), self.w2.norm()]).sum()  # <-
penalty = Net().penalty()
""",
        check="not penalty.requires_grad",
    ),
    Case(
        "torch.tensor of a comprehension over parameters",
        True,
        """model = nn.Linear(3, 2)
norms = torch.tensor([p.norm() for p in model.parameters()])  # <-
""",
        check="not norms.requires_grad",
    ),
    Case(
        "torch.as_tensor of a list of graph pieces",
        True,
        """a = torch.tensor(2.0, requires_grad=True)
pair = torch.as_tensor([a * 2, a * 3])  # <-
""",
        check="not pair.requires_grad",
    ),
    Case(
        "losses of a model passed in, joined with torch.tensor",
        True,
        """def loss_of_halves(model, x, y):
    per_half = [F.mse_loss(model(p), t) for p, t in zip(x.chunk(2), y.chunk(2))]
    return torch.tensor(per_half).mean()  # <-
joined = loss_of_halves(nn.Linear(3, 1), torch.randn(4, 3), torch.randn(4, 1))
""",
        check="not joined.requires_grad",
    ),
    Case(
        ".numpy() on a Parameter",
        True,
        """weight = nn.Parameter(torch.randn(3))
print(weight.numpy())  # <-
""",
        raises="Can't call numpy\\(\\) on Tensor that requires grad",
    ),
    Case(
        ".numpy() on a layer's weight",
        True,
        """layer = nn.Linear(3, 2)
table = layer.weight.cpu().numpy()  # <-
""",
        raises="Can't call numpy\\(\\) on Tensor that requires grad",
    ),
    Case(
        ".numpy() on a model's output in a helper",
        True,
        """def predict(model, x):
    return model(x).numpy()  # <-
predict(nn.Linear(3, 1), torch.randn(2, 3))
""",
        raises="Can't call numpy\\(\\) on Tensor that requires grad",
    ),
    Case(
        "volatile=True through a Variable lambda",
        True,
        """Variable = lambda *args, **kwargs: torch.autograd.Variable(*args, **kwargs)
w = torch.ones(2, requires_grad=True)
x = Variable(torch.ones(2), volatile=True)  # <-
recorded = (x * w).requires_grad
""",
        check="recorded",
    ),
    Case(
        "volatile=True through a to_var helper",
        True,
        """from torch.autograd import Variable
def to_var(t, volatile=False):
    return Variable(t, volatile=volatile)
w = torch.ones(2, requires_grad=True)
x = to_var(torch.ones(2), volatile=True)  # <-
recorded = (x * w).requires_grad
""",
        check="recorded",
    ),
    Case(
        "asking x.volatile",
        True,
        """x = torch.ones(2)
evaluating = x.volatile  # <-
""",
        check="evaluating is False",
    ),
    Case(
        ".data[0] on a criterion's result",
        True,
        """criterion = nn.BCELoss()
error_d = criterion(torch.rand(4, requires_grad=True), torch.ones(4))
print(error_d.data[0])  # <-
""",
        raises="invalid index of a 0-dim tensor",
    ),
    Case(
        ".data[0] on a full reduction",
        True,
        """correct = (torch.randn(5) > 0).sum()
accuracy = correct.data[0] / 5  # <-
""",
        raises="invalid index of a 0-dim tensor",
    ),
    Case(
        "moving a leaf after making it",
        True,
        """y = torch.ones(3, requires_grad=True)
y = y.double()  # <-
y.sum().backward()
""",
        check="y.grad is None and not y.is_leaf",
    ),
    Case(
        "Parameter moved after wrapping",
        True,
        """p = nn.Parameter(torch.randn(3)).double()  # <-
""",
        check="not isinstance(p, nn.Parameter) and not p.is_leaf",
    ),
    Case(
        "+= on a Parameter outside no_grad",
        True,
        """w = nn.Parameter(torch.ones(3))
w += 1  # <-
""",
        raises="a leaf Variable that requires grad is being used in an in-place operation",
    ),
    Case(
        "requires_grad_() on a cut loss",
        True,
        """model = nn.Linear(3, 1)
loss = torch.tensor(F.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).item())
loss.requires_grad_()  # <-
loss.backward()
""",
        check="model.weight.grad is None",
    ),
    Case(
        "write through .data into exp's output",
        True,
        """a = torch.tensor([0.0, 1.0], requires_grad=True)
e = (a * 1).exp()
e.data.mul_(2)  # <-
e.sum().backward()
""",
        check="torch.allclose(a.grad, 2 * a.detach().exp())",
    ),
]

CLEAN = [
    Case(
        "write before the product uses it",
        False,
        """x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)
d = x @ w1
d[:] = 0  # <-
f = d @ w2
f.backward()
""",
        check="w2.grad.item() == 0.0",
    ),
    Case(
        "write after backward",
        False,
        """x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)
d = x @ w1
f = d @ w2
f.backward()
d *= 10  # <-
""",
        check="w2.grad.item() == 4.0",
    ),
    Case(
        "write into a clone",
        False,
        """x = torch.tensor([[1.0, 2.0]])
w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
w2 = torch.tensor([3.0], requires_grad=True)
d = x @ w1
f = d @ w2
scaled = d.clone()
scaled *= 10  # <-
f.backward()
""",
        check="w2.grad.item() == 4.0",
    ),
    Case(
        "write into exp's input",
        False,
        """a = torch.tensor([0.0, 1.0], requires_grad=True)
b = a * 1
e = b.exp()
b.add_(100.0)  # <-
e.sum().backward()
""",
        check="torch.allclose(a.grad, a.detach().exp())",
    ),
    Case(
        "write into a sum's input",
        False,
        """a = torch.tensor([1.0, 3.0], requires_grad=True)
c = a + 1
loss = c.sum()
c[0] = 1000.0  # <-
loss.backward()
""",
        check="torch.equal(a.grad, torch.ones(2))",
    ),
    Case(
        "out-of-place normalisation in forward()",
        False,
        """class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(3, 8)
    def forward(self, x):
        h = torch.relu(self.hidden(x))
        h = h / h.norm(dim=1, keepdim=True)  # <-
        return h.sum()
Normed()(torch.randn(4, 3)).backward()
""",
        check="True",
    ),
    Case(
        "zero_grad at the top of the loop",
        False,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
x, y = torch.randn(8, 3), torch.randn(8, 1)
for _ in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()  # <-
    optimizer.step()
one = torch.autograd.grad(F.mse_loss(model(x), y), model.weight)[0]
""",
        check="torch.allclose(model.weight.grad, one)",
    ),
    Case(
        "zero_grad after the step",
        False,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
before = model.weight.detach().clone()
for _ in range(3):
    F.mse_loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()  # <-
""",
        check="not torch.equal(before, model.weight.detach())",
    ),
    Case(
        "gradient accumulation, zeroed every other step",
        False,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
for step in range(4):
    (F.mse_loss(model(x), y) / 2).backward()  # <-
    if step % 2 == 1:
        optimizer.step()
        optimizer.zero_grad()
""",
        check="model.weight.grad is None",
    ),
    Case(
        "retain_graph for a second loss on one graph",
        False,
        """model = nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    out = model(torch.randn(4, 3))
    out.pow(2).mean().backward(retain_graph=True)  # <-
    out.abs().mean().backward()
    optimizer.step()
""",
        check="True",
    ),
    Case(
        "retain_graph for one output after another",
        False,
        """x = torch.randn(3, requires_grad=True)
y = x.exp()
rows = []
for i in range(3):
    y[i].backward(retain_graph=True)  # <-
    rows.append(x.grad.clone())
    x.grad = None
""",
        check="torch.allclose(torch.stack(rows), torch.diag(x.detach().exp()))",
    ),
    Case(
        "hidden state detached between chunks",
        False,
        """cell = nn.RNNCell(3, 4)
head = nn.Linear(4, 1)
optimizer = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.1)
h = torch.zeros(2, 4)
for _ in range(3):
    optimizer.zero_grad()
    h = cell(torch.randn(2, 3), h.detach())  # <-
    F.mse_loss(head(h), torch.randn(2, 1)).backward()
    optimizer.step()
""",
        check="True",
    ),
    Case(
        "loss values appended",
        False,
        """model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
history = []
for _ in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    history.append(loss.item())  # <-
""",
        check="isinstance(history[0], float)",
    ),
    Case(
        "running total of loss values",
        False,
        """model = nn.Linear(3, 1)
x, y = torch.randn(8, 3), torch.randn(8, 1)
total = 0.0
for _ in range(3):
    loss = F.mse_loss(model(x), y)
    total += loss.item()  # <-
""",
        check="isinstance(total, float)",
    ),
    Case(
        "losses summed for one backward",
        False,
        """model = nn.Linear(3, 1)
losses = []
for _ in range(3):
    losses.append(F.mse_loss(model(torch.randn(2, 3)), torch.randn(2, 1)))  # <-
torch.stack(losses).sum().backward()
""",
        check="model.weight.grad is not None",
    ),
    Case(
        "validation loss summed under no_grad",
        False,
        """model = nn.Linear(4, 3)
batches = [(torch.randn(2, 4), torch.tensor([0, 2]))]
val_loss = 0
with torch.no_grad():
    for data, target in batches:
        val_loss += F.cross_entropy(model(data), target)  # <-
""",
        check="not val_loss.requires_grad",
    ),
    Case(
        "pieces stacked",
        False,
        """a = torch.tensor(2.0, requires_grad=True)
pair = torch.stack([a * 2, a * 3])  # <-
""",
        check="pair.requires_grad",
    ),
    Case(
        "torch.as_tensor of one tensor",
        False,
        """w = nn.Parameter(torch.ones(3))
same = torch.as_tensor(w)  # <-
""",
        check="same is w",
    ),
    Case(
        "torch.tensor of sizes",
        False,
        """model = nn.Linear(3, 2)
sizes = torch.tensor([p.numel() for p in model.parameters()])  # <-
""",
        check="sizes.tolist() == [6, 2]",
    ),
    Case(
        "numpy after detach",
        False,
        """weight = nn.Parameter(torch.randn(3))
array = weight.detach().numpy()  # <-
""",
        check="array.shape == (3,)",
    ),
    Case(
        "numpy(force=True)",
        False,
        """weight = nn.Parameter(torch.randn(3))
array = weight.numpy(force=True)  # <-
""",
        check="array.shape == (3,)",
    ),
    Case(
        "a PackedSequence's data",
        False,
        """from torch.nn.utils.rnn import pack_padded_sequence
packed = pack_padded_sequence(torch.randn(5, 2, 4), [5, 3])
steps = packed.data  # <-
""",
        check="steps.shape == (8, 4)",
    ),
    Case(
        "loss.item() for the log",
        False,
        """criterion = nn.BCELoss()
error_d = criterion(torch.rand(4, requires_grad=True), torch.ones(4))
print(error_d.item())  # <-
""",
        check="True",
    ),
    Case(
        "reshaping a tensor that is no longer the leaf",
        False,
        """x = torch.arange(3.0, requires_grad=True)
x.sum().backward()
x = torch.ones(6)
x = x.view(2, 3)  # <-
""",
        check="x.shape == (2, 3)",
    ),
    Case(
        "a leaf re-made from its own value, detached",
        False,
        """w = torch.randn(3, requires_grad=True)
init = torch.zeros(3)
w = (w - init).detach() + init  # <-
""",
        check="not w.requires_grad",
    ),
    Case(
        "moved first, then wrapped",
        False,
        """p = nn.Parameter(torch.randn(3).double())  # <-
""",
        check="isinstance(p, nn.Parameter) and p.is_leaf",
    ),
    Case(
        "in-place update under no_grad",
        False,
        """w = nn.Parameter(torch.ones(3))
with torch.no_grad():
    w += 1  # <-
""",
        check="w.is_leaf and torch.equal(w.detach(), torch.full((3,), 2.0))",
    ),
    Case(
        "an option named volatile",
        False,
        """import argparse
args = argparse.Namespace(volatile=True)
evaluating = args.volatile  # <-
""",
        check="evaluating",
    ),
]


def confirm(case: Case) -> str:
    """Runs the case on the installed torch; returns "" when it shows what it claims."""
    namespace: dict = {}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            exec(compile(SETUP + case.code, case.name, "exec"), namespace)
        except Exception as error:  # the pitfall's own error, or a broken case
            if case.raises and re.search(case.raises, str(error)):
                return ""
            return f"raised {type(error).__name__}: {error}"
        if case.raises:
            return f"did not raise {case.raises!r}"
        if not eval(case.check, namespace):
            return f"check failed: {case.check}"
    return ""


def marked_line(case: Case) -> int:
    """The marked line's number in the linted source (the setup lines come first)."""
    lines = (SETUP + case.code).splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.endswith("# <-"))


def main() -> None:
    """Confirms every case on torch, lints it, and prints recall and precision."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--select", default=None, help="codes to run (default: the defaults)")
    args = parser.parse_args()
    select = args.select.split(",") if args.select else None
    import torch

    print(f"torch {torch.__version__}; rules: {args.select or 'on by default'}\n")
    found = missed = false_alarms = 0
    for case in PITFALLS + CLEAN:
        problem = confirm(case)
        if problem:
            raise SystemExit(f"{case.name}: not confirmed on torch: {problem}")
        findings = lint_source(SETUP + case.code, case.name, select=select)
        line = marked_line(case)
        on_line = sorted({finding.code for finding in findings if finding.line == line})
        if case.pitfall:
            found += bool(on_line)
            missed += not on_line
            verdict = "found " + ",".join(on_line) if on_line else "MISSED"
        else:
            false_alarms += len(findings)
            verdict = "false alarm " + ",".join(f.code for f in findings) if findings else "clean"
        print(f"{'pitfall' if case.pitfall else 'clean  '}  {verdict:<22} {case.name}")
    total = found + missed
    print(f"\nrecall: {found} of {total} pitfall lines ({100 * found / total:.0f}%)")
    flagged = found + false_alarms
    share = f"{100 * found / flagged:.0f}%" if flagged else "-"
    print(f"precision: {found} of {flagged} findings on marked lines ({share}); ", end="")
    print(f"{false_alarms} false alarms in {len(CLEAN)} clean look-alikes")


if __name__ == "__main__":
    main()
