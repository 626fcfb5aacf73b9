"""Draw the backward graph of some tensors, with saved tensors and their versions.

Like torchviz's ``make_dot(..., show_saved=True)``, but it also draws the graphs torchviz
crashes on: a saved tensor modified in place (stale) is drawn red with the version it was
saved at and the version it has now, with the line that modified it when
``track_inplace()`` recorded it, and one released by a previous ``backward()`` is drawn as
freed. The drawing is made from ``walk_graph``'s analysis, the one ``diagnose`` reports
from. Node names follow traversal order, so the DOT text is the same every time and can be
snapshot-tested.

Arrows follow the gradient: from the output at the top, through each ``grad_fn``, down to
the ``AccumulateGrad`` nodes that write the leaves' ``.grad``.

Every drawing carries a text alternative made from the same analysis (:func:`describe`):
the SVG names itself with it (``role="img"``, ``aria-label`` and ``<title>``, what a screen
reader reads and a web page's ``alt`` text is taken from), and a text-only front end shows it.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import graphviz
import torch

from autograd_pitfalls.track import InplaceLog, InplaceWrite, _cell_name, latest_log
from autograd_pitfalls.walk import (
    AutogradGraph,
    LeafInfo,
    NodeInfo,
    OutputInfo,
    SavedTensorInfo,
    walk_graph,
)

__all__ = ["GraphDrawing", "describe", "draw", "draw_graph", "to_dot"]

# torchviz's look, so pictures in the course match the ones learners find online.
_NODE_ATTR = {
    "style": "filled",
    "shape": "box",
    "fontsize": "10",
    "height": "0.2",
    "fontname": "monospace",
}
_OUTPUT = {"fillcolor": "darkolivegreen1"}
_CUT = {"fillcolor": "lightyellow", "color": "darkorange3", "style": "filled,dashed"}
_OP = {"fillcolor": "lightgrey"}
_OP_STALE = {"fillcolor": "lightgrey", "color": "red", "penwidth": "2"}  # backward() stops here
_LEAF = {"fillcolor": "lightblue"}
_SAVED = {"fillcolor": "orange"}
_STALE = {"fillcolor": "#ffcccc", "color": "red", "fontcolor": "red", "penwidth": "2"}
_FREED = {"fillcolor": "grey95", "color": "grey50", "fontcolor": "grey40", "style": "filled,dashed"}
_UNCHECKED = {"fillcolor": "orange", "style": "filled,dashed"}
_SAVED_EDGE = {"style": "dashed", "dir": "none"}
_CODE_WIDTH = 48  # characters of the modifying line shown in a box

_NO_DOT = (
    "Cannot draw the graph: the graphviz program `dot` is not installed "
    "(apt install graphviz / conda install graphviz)."
)


class GraphDrawing(graphviz.Digraph):
    """A ``graphviz.Digraph`` that explains itself when Jupyter cannot render it.

    Jupyter displays a Digraph by running the ``dot`` program; when ``dot`` is missing or
    fails, this shows a message and the DOT text instead of a traceback.

    Attributes:
        description: The graph in words (:func:`describe`), its text alternative.
    """

    description: str = ""

    def _repr_mimebundle_(
        self,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, bytes | str]:
        try:
            bundle = super()._repr_mimebundle_(include, exclude, **kwargs)
        except (graphviz.ExecutableNotFound, graphviz.CalledProcessError) as error:
            reason = _why_not_drawn(error)
        else:
            if "image/svg+xml" in bundle:
                bundle["image/svg+xml"] = self._named(bundle["image/svg+xml"])
            if self.description:
                bundle.setdefault("text/plain", self.description)
            return bundle
        return {
            "text/plain": f"{reason}\nThe graph in DOT:\n{self.source}",
            "text/markdown": f"{reason}\n\nThe graph in DOT:\n\n```dot\n{self.source}```\n",
        }

    def svg_html(self) -> str:
        """The drawing as an ``<svg>`` element to put in HTML, or a paragraph saying why not.

        Returns:
            The SVG without its XML prolog, or ``<p><i>reason</i></p>`` when the ``dot``
            program is missing or fails.
        """
        try:
            svg = self.pipe(format="svg", encoding="utf-8")
        except (graphviz.ExecutableNotFound, graphviz.CalledProcessError) as error:
            return f"<p><i>{html.escape(_why_not_drawn(error))}</i></p>"
        return self._named(svg[svg.find("<svg") :])

    def _named(self, svg: str) -> str:
        """``svg`` with :attr:`description` as its accessible name (unchanged without one).

        ``role="img"`` and ``aria-label`` on the ``<svg>`` element name it where it is
        inline; a ``<title>`` as its first child names it in a file (a web page's ``<img>``
        takes its ``alt`` text from there) and shows as a tooltip.
        """
        if not self.description:
            return svg
        tag = _SVG_TAG.search(svg)
        if tag is None:
            return svg
        label = html.escape(self.description)
        opening = f'{tag.group(1)} role="img" aria-label="{label}">'
        named = f"{opening}\n<title>{label}</title>"
        return svg[: tag.start()] + named + svg[tag.end() :]


_SVG_TAG = re.compile(r"(<svg\b[^>]*?)\s*>")


def _why_not_drawn(error: Exception) -> str:
    if isinstance(error, graphviz.ExecutableNotFound):
        return _NO_DOT
    return f"Cannot draw the graph: the graphviz program `dot` failed ({error})."


def draw(
    *tensors: torch.Tensor,
    names: Mapping[str, torch.Tensor] | None = None,
    writes: InplaceLog | None = None,
    saved: Collection[str] | None = None,
) -> GraphDrawing:
    """Draws the backward graph below ``tensors``, with the tensors saved for backward.

    Green: the outputs. Grey: the ``grad_fn`` nodes. Light blue: the leaves, under the
    ``AccumulateGrad`` node that fills their ``.grad``. Orange, on a dashed line: the
    tensors each node saved for backward, with the version they were saved at and the
    version they have now. Red: a saved tensor modified in place since, with the line
    that did it when ``track_inplace()`` recorded it, and the node that saved it
    (backward() will raise there). Grey dashed: a saved tensor freed by a previous
    backward(). Yellow dashed: an output with no ``grad_fn``, cut off from any graph.

    Drawing changes nothing: no tensor is modified and backward() is not called.

    Args:
        *tensors: The outputs to draw from, usually the loss.
        names: Optional names for the boxes, for example ``{"w": w, "loss": loss}``.
        writes: The in-place writes to name lines from; by default those of the latest
            ``track_inplace()`` block.
        saved: Draw only the saved tensors of these names (for example ``{"mat2"}``), to
            keep a large graph to the part that matters; all of them when None. A node
            that saved a stale tensor keeps its red border when the box is left out.

    Returns:
        The graph; a notebook cell that ends with it displays it. Without the ``dot``
        program it still returns, and the notebook shows a message and the DOT text.

    Example:
        >>> a = torch.ones(2, requires_grad=True)
        >>> draw((a * a).sum(), names={"a": a})  # doctest: +SKIP
    """
    log = writes if writes is not None else latest_log()
    return draw_graph(walk_graph(*tensors, names=names, writes=log), saved=saved)


def draw_graph(graph: AutogradGraph, saved: Collection[str] | None = None) -> GraphDrawing:
    """Draws a graph already described by ``walk_graph`` (see :func:`draw` for the colours).

    Args:
        graph: The result of ``walk_graph``.
        saved: The names of the saved tensors to draw (``"self"``, ``"mat2"``...); all
            when None.

    Returns:
        The drawing.
    """
    drawing = GraphDrawing(node_attr=_NODE_ATTR)
    for output in graph.outputs:
        _add_output(drawing, output)
    for node in graph.nodes:
        _add_node(drawing, node, saved)
    drawing.description = describe(graph, saved=saved)
    return drawing


def describe(graph: AutogradGraph, saved: Collection[str] | None = None) -> str:
    """The graph in words, from the outputs down to the leaves: a drawing's text alternative.

    One sentence per box, in the drawing's order: each output and the node its gradient
    goes to, then each node (breadth first) with the tensors it saved and the nodes it
    sends gradients on to, and each ``AccumulateGrad`` with its leaf. Boxes say what the
    drawing's boxes say (shapes, versions, stale or freed); a name used twice gets a number.

    Args:
        graph: The result of ``walk_graph``.
        saved: The saved tensors to mention, as :func:`draw_graph` draws them; all when None.

    Returns:
        For example ``"Autograd graph, from the output down to the leaves. loss () →
        SumBackward0. SumBackward0: → MulBackward0. MulBackward0: saved other = a (3,),
        saved v0 · now v0; self = a (3,), saved v0 · now v0; → AccumulateGrad.
        AccumulateGrad: fills the .grad of leaf a (3,), requires_grad=True."``
    """
    names = _distinct_names(graph)
    sentences = ["Autograd graph, from the output down to the leaves"]
    for output in graph.outputs:
        title = f"{output.name or 'output'} {_shape(output.shape, output.dtype)}"
        if output.grad_fn is not None:
            sentences.append(f"{title} → {names[output.grad_fn]}")
        elif output.requires_grad:
            sentences.append(f"{title}, a leaf: no grad_fn")
        else:
            sentences.append(f"{title}, no grad_fn: not connected to any graph")
    for node in graph.nodes:
        head = names[node.id] + (" (backward() raises here)" if _is_stale(node) else "")
        parts = []
        kept = [s for s in node.saved if saved is None or s.attribute in saved]
        if kept:
            parts.append("saved " + "; ".join(_saved_words(s) for s in kept))
        if node.edges:
            parts.append("→ " + ", ".join(names[edge] for edge in node.edges))
        if node.leaf is not None:
            leaf = node.leaf
            title = " ".join(filter(None, ["leaf", leaf.name, _shape(leaf.shape, leaf.dtype)]))
            parts.append(f"fills the .grad of {title}, requires_grad={leaf.requires_grad}")
        sentences.append(f"{head}: {'; '.join(parts)}" if parts else head)
    return ". ".join(sentences) + "."


def _distinct_names(graph: AutogradGraph) -> dict[str, str]:
    """Each node's class name, numbered where the same words name more than one node.

    An ``AccumulateGrad`` node is named with its leaf's name where it has one:
    ``AccumulateGrad (w)``.
    """
    words = {
        node.id: f"{node.name} ({node.leaf.name})" if node.leaf and node.leaf.name else node.name
        for node in graph.nodes
    }
    counts = Counter(words.values())
    seen: Counter[str] = Counter()
    names = {}
    for node_id, name in words.items():
        seen[name] += 1
        names[node_id] = name if counts[name] == 1 else f"{name} #{seen[name]}"
    return names


def _is_stale(node: NodeInfo) -> bool:
    return any(saved.state == "stale" for saved in node.saved)


def _saved_words(saved: SavedTensorInfo) -> str:
    """A saved tensor's box in words: its title, shape and versions, and why it is red."""
    title = _saved_title(saved)
    if saved.state != "freed":
        title += f" {_shape(saved.shape or (), saved.dtype)}"
    words = [title, _versions(saved)]
    if saved.state == "stale":
        words.append(" ".join(_modified(saved.write)))
    return ", ".join(words)


def to_dot(
    *tensors: torch.Tensor,
    names: Mapping[str, torch.Tensor] | None = None,
    writes: InplaceLog | None = None,
    saved: Collection[str] | None = None,
) -> str:
    """Returns the DOT text of :func:`draw`'s graph; needs no ``dot`` program.

    Args:
        *tensors: The outputs to draw from, usually the loss.
        names: Optional names for the boxes, for example ``{"w": w, "loss": loss}``.
        writes: The in-place writes to name lines from; by default those of the latest
            ``track_inplace()`` block.
        saved: Draw only the saved tensors of these names; all of them when None.

    Returns:
        The graph in the DOT language, the same text for the same graph every time.
    """
    return draw(*tensors, names=names, writes=writes, saved=saved).source


def _add_output(drawing: graphviz.Digraph, output: OutputInfo) -> None:
    title = output.name or "output"
    if output.grad_fn is not None:
        drawing.node(output.id, _label(title, _shape(output.shape, output.dtype)), **_OUTPUT)
        drawing.edge(output.id, output.grad_fn)
    elif output.requires_grad:
        # A leaf passed as an output: backward() from it only fills its own .grad.
        label = _label(title, _shape(output.shape, output.dtype), "leaf: no grad_fn")
        drawing.node(output.id, label, **_OUTPUT)
    else:
        label = _label(
            title,
            _shape(output.shape, output.dtype),
            "no grad_fn: not connected to any graph",
        )
        drawing.node(output.id, label, **_CUT)


def _add_node(drawing: graphviz.Digraph, node: NodeInfo, shown: Collection[str] | None) -> None:
    drawing.node(node.id, _label(node.name), **(_OP_STALE if _is_stale(node) else _OP))
    if node.leaf is not None:
        _add_leaf(drawing, node.leaf)
    for saved in node.saved:
        if shown is None or saved.attribute in shown:
            _add_saved(drawing, saved)
    for next_id in node.edges:
        drawing.edge(node.id, next_id)


def _add_leaf(drawing: graphviz.Digraph, leaf: LeafInfo) -> None:
    label = _label(
        leaf.name or "leaf",
        _shape(leaf.shape, leaf.dtype),
        f"requires_grad={leaf.requires_grad}",
    )
    drawing.node(leaf.id, label, **_LEAF)
    drawing.edge(leaf.node_id, leaf.id)  # AccumulateGrad writes the leaf's .grad


def _add_saved(drawing: graphviz.Digraph, saved: SavedTensorInfo) -> None:
    title = _saved_title(saved)
    if saved.state == "freed":
        drawing.node(saved.id, _label(title, _versions(saved)), **_FREED)
        drawing.edge(saved.node_id, saved.id, color="grey50", **_SAVED_EDGE)
        return
    shape = _shape(saved.shape or (), saved.dtype)
    if saved.state == "stale":
        lines = [title, shape, _versions(saved), *_modified(saved.write)]
        drawing.node(saved.id, _label(*lines), **_STALE)
        drawing.edge(saved.node_id, saved.id, color="red", **_SAVED_EDGE)
        return
    attributes = _SAVED if saved.state == "ok" else _UNCHECKED
    drawing.node(saved.id, _label(title, shape, _versions(saved)), **attributes)
    drawing.edge(saved.node_id, saved.id, **_SAVED_EDGE)


def _saved_title(saved: SavedTensorInfo) -> str:
    """``"self"``, or ``"self = d"`` when the saved tensor is one of the named tensors."""
    return saved.attribute if saved.name is None else f"{saved.attribute} = {saved.name}"


def _versions(saved: SavedTensorInfo) -> str:
    """What a saved tensor's box says about its versions, e.g. ``"saved v0 · now v0"``."""
    if saved.state == "freed":
        return "freed by backward()"
    if saved.state == "stale":
        return f"saved at v{saved.saved_version}, now v{saved.current_version}"
    if saved.state == "unchecked":
        return f"not checked · now v{saved.current_version}"
    if saved.state == "unrecognised":
        return "unknown error when unpacked"
    return f"saved v{saved.saved_version} · now v{saved.current_version}"


def _modified(write: InplaceWrite | None) -> list[str]:
    """How a stale box names the write: the op, file:line, then the code on its own line.

    The code gets a line of its own so that the box stays narrow: a wide box pushes the
    whole drawing past a notebook's width.
    """
    if write is None:
        return ["modified in place"]
    code = write.code
    if len(code) > _CODE_WIDTH:
        code = code[: _CODE_WIDTH - 1] + "…"
    cell = _cell_name(write.filename)  # "Cell In[16]" in a notebook, as diagnose says
    in_file = f"{Path(write.filename).name}:{write.lineno}"
    where = f"{cell}, line {write.lineno}" if cell else in_file
    lines = [f"modified in place by {write.op}", f"at {where}:" if code else f"at {where}"]
    return [*lines, code] if code else lines


def _shape(shape: tuple[int, ...], dtype: torch.dtype | None) -> str:
    """``"(2, 1)"``; the dtype is added when it is not the default float32."""
    text = str(tuple(shape))
    if dtype is not None and dtype != torch.float32:
        text += f" {str(dtype).removeprefix('torch.')}"
    return text


def _label(*lines: str) -> str:
    """Joins lines with DOT's line break, keeping backslashes in names literal."""
    return graphviz.nohtml("\\n".join(line.replace("\\", "\\\\") for line in lines))
