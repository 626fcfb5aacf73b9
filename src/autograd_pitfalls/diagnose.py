"""Say what ``backward()`` will hit, and why, before calling it.

``diagnose(loss)`` reads the graph below ``loss`` with ``walk_graph`` (the analysis that
``draw`` shows) and reports, in plain words:

- a saved tensor modified in place since it was saved (``backward()`` would raise "...
  is at version 1; expected version 0 instead"), with the line that modified it when the
  forward pass ran inside ``track_inplace()``;
- a saved tensor already freed by an earlier ``backward()`` ("backward twice");
- an output cut off from any graph (``torch.tensor([...])``, ``.item()``, ``.detach()``);
- parameters the outputs do not reach, when given (``params=``).

It never calls ``backward()`` and never changes a tensor. What version counters cannot see
it cannot see either: a write through ``.data`` or numpy leaves no trace, and a gradient
computed from such a modified value is silently wrong.
"""

from __future__ import annotations

import html
import numbers
import re
import textwrap
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch

from autograd_pitfalls.graph import GraphDrawing, draw_graph
from autograd_pitfalls.pitfalls import explain
from autograd_pitfalls.track import InplaceLog, latest_log
from autograd_pitfalls.walk import AutogradGraph, NodeInfo, SavedTensorInfo, walk_graph

__all__ = ["Finding", "FindingKind", "Report", "diagnose"]

FindingKind = Literal[
    "stale-saved-tensor",
    "freed-saved-tensor",
    "graph-cut",
    "unreachable-parameter",
    "unrecognised-error",
]

_SHOWN_IN_FULL = 10  # findings printed with their whole message; the rest are counted
_MAX_DRAWN_NODES = 400  # beyond this, dot takes long and the picture is unreadable
_WIDTH = 88

# Why a node needs the value it saved, by grad_fn class without its trailing number.
_WHY_SAVED = {
    "MulBackward": "the gradient of a * b with respect to one factor is the other factor",
    "DivBackward": "the gradient of a / b is computed from b (and from a, for b's gradient)",
    "MmBackward": "the gradient of a @ b with respect to one side is computed from the other",
    "MvBackward": "the gradient of a @ b with respect to one side is computed from the other",
    "BmmBackward": "the gradient of a @ b with respect to one side is computed from the other",
    "AddmmBackward": "the gradient of a @ b with respect to one side is computed from the other",
    "DotBackward": "the gradient of a dot product with respect to one side is the other side",
    "SigmoidBackward": "sigmoid's gradient is computed from its output s, as s * (1 - s)",
    "TanhBackward": "tanh's gradient is computed from its output t, as 1 - t * t",
    "ExpBackward": "exp's gradient is its own output",
    "PowBackward": "the gradient of x ** p is p * x ** (p - 1), computed from x",
    "LogBackward": "log's gradient is 1 / x, computed from x",
    "SqrtBackward": "sqrt's gradient is 1 / (2 * sqrt(x)), computed from its output",
}
# What to do instead, by the op that wrote (as track_inplace records it).
_FIX_FOR_OP = {
    "embedding_renorm_": (
        "nn.Embedding(max_norm=...) rescales the rows it looks up in its weight, in place, "
        "each time it is called. Use `embedding.weight.clone()` where you use the weight "
        "directly, or call the embedding before using its weight."
    ),
    "copy_": (
        "If you are building a tensor from pieces that need gradients, assemble it with "
        "torch.stack([...]) or torch.cat([...]) instead of filling it by index."
    ),
}
_FIX_FOR_OP["index_put_"] = _FIX_FOR_OP["copy_"]  # x[mask] = values, x[[0, 2]] = values


@dataclass(frozen=True)
class Finding:
    """One thing ``backward()`` will hit.

    Attributes:
        kind: ``"stale-saved-tensor"``, ``"freed-saved-tensor"``, ``"graph-cut"``,
            ``"unreachable-parameter"``, or ``"unrecognised-error"`` (torch refused to
            unpack a saved tensor with a message diagnose does not know).
        node: The class name of the ``grad_fn`` concerned, for example ``"MvBackward0"``
            (for a parameter that is not a leaf, its own ``grad_fn``); else None.
        saved: The saved attribute, for example ``"self"``, ``"result"``, ``"mat2"``;
            else None.
        shape: The shape of the tensor concerned, when known.
        saved_version: The version a stale tensor was saved at; else None.
        current_version: The version it has now; else None.
        line: ``"file:line"`` of the in-place write, when ``track_inplace()`` recorded it;
            else None.
        message: What happened, why backward() minds, how to fix it, and the notebook
            that teaches it, one sentence group per line.
        name: The tensor's name (from ``params`` or ``names``), or the output's position
            (``"output 0"``) for a cut graph; else None.
        node_id: The node's id in ``Report.graph``, for a saved tensor; else None.
    """

    kind: FindingKind
    node: str | None
    saved: str | None
    shape: tuple[int, ...] | None
    saved_version: int | None
    current_version: int | None
    line: str | None
    message: str
    name: str | None = None
    node_id: str | None = None


@dataclass(frozen=True, eq=False)
class Report:
    """What :func:`diagnose` found; true when it found something.

    Prints as plain text; Jupyter shows it as HTML with the graph drawn and the culprit
    in red.

    Attributes:
        findings: The findings: cut outputs first, then saved tensors in graph order,
            then parameters in the order given.
        graph: The analysis the findings come from (``walk_graph``'s result).
    """

    findings: list[Finding]
    graph: AutogradGraph

    def __bool__(self) -> bool:
        return bool(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __str__(self) -> str:
        lines = [self._title()]
        for number, finding in enumerate(self.findings[:_SHOWN_IN_FULL], start=1):
            lines += ["", f"{number}. [{finding.kind}]"]
            lines += [_wrap(part) for part in finding.message.split("\n")]
        lines += self._rest()
        return "\n".join(lines)

    def __repr__(self) -> str:
        kinds = ", ".join(f"{kind}: {n}" for kind, n in self._counts().items())
        return f"<Report: {len(self.findings)} finding(s){': ' + kinds if kinds else ''}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))  # IPython's terminal shows the text, not the repr

    def _repr_html_(self) -> str:
        parts = [f"<p><b>{html.escape(self._title())}</b></p>"]
        if self.findings:
            parts.append("<ol>")
            for finding in self.findings[:_SHOWN_IN_FULL]:
                paragraphs = "".join(
                    f"<p style='margin:0.2em 0'>{_html_text(part)}</p>"
                    for part in finding.message.split("\n")
                )
                parts.append(f"<li><b>{finding.kind}</b>{paragraphs}</li>")
            parts.append("</ol>")
            parts += [f"<p>{html.escape(line)}</p>" for line in self._rest() if line]
        parts.append(self._svg())
        return "<div>" + "".join(parts) + "</div>"

    def drawing(self) -> GraphDrawing:
        """The graph drawn from the same analysis, culprits in red (see ``draw``)."""
        return draw_graph(self.graph)

    def _title(self) -> str:
        count = len(self.findings)
        if count == 0:
            return (
                "diagnose: nothing found. No saved tensor is stale or freed and no output is "
                "cut off (writes through .data or numpy cannot be seen)."
            )
        return f"diagnose: {count} problem{'s' if count > 1 else ''} backward() will hit"

    def _counts(self) -> dict[str, int]:
        return dict(Counter(finding.kind for finding in self.findings))

    def _rest(self) -> list[str]:
        """One line counting the findings not printed in full, by kind."""
        rest = self.findings[_SHOWN_IN_FULL:]
        if not rest:
            return []
        counts = Counter(finding.kind for finding in rest)
        listed = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        return ["", f"... and {len(rest)} more ({listed}): see report.findings."]

    def _svg(self) -> str:
        """The graph as inline SVG, or a sentence saying why it is not drawn."""
        if len(self.graph.nodes) > _MAX_DRAWN_NODES:
            reason = (
                f"The graph has {len(self.graph.nodes)} nodes, too many to draw here; "
                "draw part of it, or write to_dot(...) to a file."
            )
            return f"<p><i>{html.escape(reason)}</i></p>"
        return self.drawing().svg_html()


def diagnose(
    *outputs: torch.Tensor | float,
    params: Mapping[str, torch.Tensor] | torch.nn.Module | None = None,
    names: Mapping[str, torch.Tensor] | None = None,
    writes: InplaceLog | None = None,
) -> Report:
    """Finds what ``backward()`` from ``outputs`` will hit, without calling it.

    Nothing is changed: no tensor is written, no graph is freed, backward() is not called,
    so gradients computed afterwards are the same as without diagnosing.

    Args:
        *outputs: What you would call backward() on, usually the loss. A Python number
            (what ``.item()`` returns) is reported as a cut graph.
        params: The tensors that should receive a gradient, as a dict of names to tensors
            or an ``nn.Module`` (its ``named_parameters()``). Each one the outputs do not
            reach, that is not a leaf, or that does not require grad is reported.
        names: Optional names for other tensors, used in the messages and the drawing,
            for example ``{"d": d}``.
        writes: The in-place writes to name lines from; by default those of the latest
            ``track_inplace()`` block.

    Returns:
        The report; ``bool(report)`` is True when something was found.

    Raises:
        TypeError: If no output is given, an output is neither a tensor nor a number, or
            ``params`` holds something else than tensors.

    Example:
        >>> a = torch.tensor([1.0, 3.0], requires_grad=True)
        >>> b = a + 2
        >>> loss = (b * b).mean()
        >>> b[0] = 1000
        >>> report = diagnose(loss)
        >>> [(finding.node, finding.saved) for finding in report.findings]
        [('MulBackward0', 'other'), ('MulBackward0', 'self')]
    """
    if not outputs:
        raise TypeError("diagnose needs at least one output, usually the loss")
    for output in outputs:
        if not isinstance(output, torch.Tensor | numbers.Number):
            raise TypeError(f"diagnose expects tensors, got {type(output).__name__}")
    wanted = _params_dict(params)
    named = {**wanted, **{k: v for k, v in (names or {}).items() if k not in wanted}}
    tensors = [output for output in outputs if isinstance(output, torch.Tensor)]
    log = writes if writes is not None else latest_log()
    graph = walk_graph(*tensors, names=named, writes=log)

    findings = _cut_outputs(outputs, graph)
    for node in graph.nodes:
        for saved in node.saved:
            if saved.state == "stale":
                findings.append(_stale(node, saved, tracked=log is not None))
            elif saved.state == "freed":
                findings.append(_freed(node, saved))
            elif saved.state == "unrecognised":
                findings.append(_unrecognised(node, saved))
    # A number output (.item()) is cut too: it is not among the graph's outputs.
    findings += _unreachable(wanted, graph, cut=all(info.is_cut for info in graph.outputs))
    return Report(findings, graph)


def _params_dict(
    params: Mapping[str, torch.Tensor] | torch.nn.Module | None,
) -> dict[str, torch.Tensor]:
    if params is None:
        return {}
    if isinstance(params, torch.nn.Module):
        return dict(params.named_parameters())
    if not isinstance(params, Mapping):
        raise TypeError(
            f"params should be a dict of names to tensors or an nn.Module, "
            f"got {type(params).__name__}"
        )
    for name, tensor in params.items():
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"params[{name!r}] should be a tensor, got {type(tensor).__name__}")
    return dict(params)


def _cut_outputs(outputs: tuple[torch.Tensor | float, ...], graph: AutogradGraph) -> list[Finding]:
    """A graph-cut finding for each output with no graph below it."""
    infos = iter(graph.outputs)
    findings = []
    for position, output in enumerate(outputs):
        if not isinstance(output, torch.Tensor):
            findings.append(
                _finding(
                    "graph-cut",
                    name=f"output {position}",
                    message=[
                        f"Output {position} is a Python {type(output).__name__} "
                        f"({output!r}), not a tensor: .item(), .tolist() or float() turned it "
                        "into a number, and a number carries no graph.",
                        "Keep the computation in tensors up to the loss, and call .item() "
                        "only to print or log.",
                        explain("grad-never-reached"),
                    ],
                )
            )
            continue
        info = next(infos)
        if not info.is_cut:
            continue
        what = f"Output {position}" + (f" ({info.name})" if info.name else "")
        findings.append(
            _finding(
                "graph-cut",
                shape=info.shape,
                name=info.name or f"output {position}",
                message=[
                    f"{what}, shape {info.shape}, has no grad_fn and does not require grad: "
                    "it is not connected to any graph, so backward() will raise "
                    '"element 0 of tensors does not require grad and does not have a '
                    'grad_fn".',
                    "A graph is cut when a tensor is rebuilt from values "
                    "(torch.tensor([a0, a1]) of tensors that require grad, .item(), "
                    ".tolist(), .numpy()), taken out with .detach() or .data, or computed "
                    "under torch.no_grad().",
                    "Assemble tensors with torch.stack([...]) or torch.cat([...]), and keep "
                    "values as tensors until the loss.",
                    explain("grad-never-reached"),
                ],
            )
        )
    return findings


def _stale(node: NodeInfo, saved: SavedTensorInfo, *, tracked: bool) -> Finding:
    """The finding for a saved tensor modified in place since it was saved."""
    what = f"`{saved.attribute}`" + (f" ({saved.name})" if saved.name else "")
    message = [
        f"{node.name} saved its {what}, shape {saved.shape}, for backward() at version "
        f"{saved.saved_version}; it is now at version {saved.current_version}: it was "
        "modified in place after being used."
    ]
    write = saved.write
    if write is not None:
        code = f": `{write.code}`" if write.code else ""
        message.append(f"Modified in place by {write.op} at {write.location}{code}")
    elif tracked:
        message.append(
            "No recorded write explains it: the write ran outside the track_inplace() "
            "block whose writes were used (by default, the latest block)."
        )
    else:
        message.append(
            "To see which line modified it, run the code that built the graph inside "
            "`with track_inplace():` and diagnose again."
        )
    reason = _WHY_SAVED.get(re.sub(r"\d+$", "", node.name))
    message.append(
        f"{node.name} computes its gradient from the value it saved"
        + (f" ({reason})" if reason else "")
        + ', so backward() will raise "one of the variables needed for gradient computation '
        f"has been modified by an inplace operation ... is at version {saved.current_version}; "
        f'expected version {saved.saved_version} instead".'
    )
    if write is not None and write.op in _FIX_FOR_OP:
        message.append(_FIX_FOR_OP[write.op])
    message.append(explain("stale-saved-tensor"))
    return _finding(
        "stale-saved-tensor",
        node=node.name,
        saved=saved.attribute,
        shape=saved.shape,
        saved_version=saved.saved_version,
        current_version=saved.current_version,
        line=write.location if write is not None else None,
        name=saved.name,
        node_id=node.id,
        message=message,
    )


def _freed(node: NodeInfo, saved: SavedTensorInfo) -> Finding:
    """The finding for a saved tensor released by an earlier backward()."""
    return _finding(
        "freed-saved-tensor",
        node=node.name,
        saved=saved.attribute,
        node_id=node.id,
        message=[
            f"{node.name}'s saved `{saved.attribute}` was freed by an earlier backward(): "
            "backward() frees what a graph saved once it has used it, so going through this "
            'graph again will raise "Trying to backward through the graph a second time".',
            "A tensor kept from an earlier iteration (a running total such as "
            "`total = total + loss`, or a view computed once in __init__) drags its old "
            "graph along: .detach() it, or compute it again in each forward pass.",
            explain("backward-twice"),
        ],
    )


def _unrecognised(node: NodeInfo, saved: SavedTensorInfo) -> Finding:
    """The finding for a saved tensor torch refused to unpack for a reason not known here."""
    return _finding(
        "unrecognised-error",
        node=node.name,
        saved=saved.attribute,
        node_id=node.id,
        message=[
            f"Reading {node.name}'s saved `{saved.attribute}` the way backward() does raised "
            f"an error diagnose does not recognise: {saved.error}",
            "backward() will probably raise it too. diagnose knows torch's messages for a "
            "stale and for a freed saved tensor; this torch may word them differently: "
            "please report it to the course.",
        ],
    )


def _unreachable(
    wanted: dict[str, torch.Tensor], graph: AutogradGraph, *, cut: bool
) -> list[Finding]:
    """A finding for each wanted parameter backward() will not give a ``.grad``."""
    # walk_graph names a leaf after a parameter only when it is that very tensor, and
    # the first name given to a tensor wins: compare against that first name.
    first_name: dict[int, str] = {}
    for name, tensor in wanted.items():
        first_name.setdefault(id(tensor), name)
    reached = {leaf.name for leaf in graph.leaves}
    findings = []
    for name, tensor in wanted.items():
        shape = tuple(tensor.shape)
        if tensor.grad_fn is not None:
            findings.append(
                _finding(
                    "unreachable-parameter",
                    node=type(tensor.grad_fn).__name__,
                    shape=shape,
                    name=name,
                    message=[
                        f"{name} is not a leaf: it has grad_fn={type(tensor.grad_fn).__name__}, "
                        f"so backward() will not fill {name}.grad (it stays None).",
                        "This happens when a name is rebound (`eta = eta * 2`) or a Parameter "
                        "is reshaped, viewed or moved after it was created (`t.view(3, 4)`).",
                        explain("not-a-leaf"),
                    ],
                )
            )
        elif not tensor.requires_grad:
            findings.append(
                _finding(
                    "unreachable-parameter",
                    shape=shape,
                    name=name,
                    message=[
                        f"{name} does not require grad: backward() will not fill {name}.grad.",
                        explain("no-requires-grad"),
                    ],
                )
            )
        elif first_name[id(tensor)] not in reached:
            why = (
                "none of the outputs is connected to a graph"
                if cut
                else "the outputs were computed without it, or the graph between them was cut"
            )
            findings.append(
                _finding(
                    "unreachable-parameter",
                    shape=shape,
                    name=name,
                    message=[
                        f"The outputs do not reach {name}: {why}, so backward() will leave "
                        f"{name}.grad as it is (None) and an optimiser will not update it.",
                        "Look for a rebuilt tensor (torch.tensor([...]), .item(), .detach(), "
                        ".data), a copy used in its place (a new Parameter made from it, a "
                        "rebound name), or a view of it computed once and stored.",
                        explain("grad-never-reached"),
                    ],
                )
            )
    return findings


def _finding(kind: FindingKind, *, message: list[str], **fields: Any) -> Finding:
    """Builds a finding; fields not given are None."""
    values = dict.fromkeys(
        ("node", "saved", "shape", "saved_version", "current_version", "line", "name", "node_id")
    )
    values.update(fields)
    return Finding(kind=kind, message="\n".join(message), **values)


def _wrap(text: str) -> str:
    """Wraps one line of a message, indented, never inside a `code` span."""
    glued = re.sub(r"`[^`]+`", lambda span: span.group().replace(" ", "\0"), text)
    wrapped = textwrap.fill(
        glued,
        _WIDTH,
        initial_indent="   ",
        subsequent_indent="   ",
        break_on_hyphens=False,  # a pitfall's marker, [stale-saved-tensor], stays whole
    )
    return wrapped.replace("\0", " ")


def _html_text(text: str) -> str:
    """Escapes ``text`` and shows `code` spans as <code>."""
    escaped = html.escape(text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
