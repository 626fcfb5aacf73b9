"""Walk the backward graph of some tensors and describe what ``backward()`` will meet.

The description is plain data (frozen dataclasses), so that drawing (``graph.py``) and
diagnosis build on the same facts: the nodes, the leaves that will receive ``.grad``, and
every tensor saved for backward with the version it had when saved and the version it has
now. A saved tensor whose version moved on is *stale*: ``backward()`` will refuse it. Given
the log of a ``track_inplace()`` block, the walk also names the write that made it stale.

Reading the graph never changes it: no tensor is modified, nothing is unpacked with side
effects, and ``backward()`` is never called. Node ids follow traversal order (outputs
first, then breadth first), so the same graph always gets the same ids.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import torch

from autograd_pitfalls.compat import CHECKED_SAVED_PREFIX, RAW_SAVED_PREFIX
from autograd_pitfalls.track import InplaceLog, InplaceWrite

__all__ = [
    "AutogradGraph",
    "LeafInfo",
    "NodeInfo",
    "OutputInfo",
    "SavedTensorInfo",
    "walk_graph",
]

SavedState = Literal["ok", "stale", "freed", "unchecked", "unrecognised"]
NodeKind = Literal["op", "custom", "accumulate-grad"]

# The version check's message, e.g. "... is at version 1; expected version 0 instead."
_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+) instead")


@dataclass(frozen=True)
class OutputInfo:
    """One of the tensors the walk started from.

    Attributes:
        id: Node id in the walk, for example ``"n0"``.
        name: Its name in ``names``, or None.
        shape: Its shape, for example ``(1,)``.
        dtype: Its dtype.
        device: Its device, for example ``"cpu"``.
        requires_grad: Whether it requires grad.
        grad_fn: Id of its ``grad_fn`` node, or None when it has no ``grad_fn``.
    """

    id: str
    name: str | None
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: str
    requires_grad: bool
    grad_fn: str | None

    @property
    def is_cut(self) -> bool:
        """True when no graph hangs below it (no ``grad_fn``, no ``requires_grad``).

        This is what ``torch.tensor([...])``, ``.item()``, ``.detach()`` or ``.data`` leave
        behind: ``backward()`` from here fails, or reaches no leaf.
        """
        return self.grad_fn is None and not self.requires_grad


@dataclass(frozen=True)
class LeafInfo:
    """A leaf tensor, reached through the ``AccumulateGrad`` node that fills its ``.grad``.

    Attributes:
        id: Node id in the walk, for example ``"n4_leaf"``.
        node_id: Id of its ``AccumulateGrad`` node.
        name: Its name in ``names``, or None.
        shape: Its shape.
        dtype: Its dtype.
        device: Its device.
        version: Its ``_version`` now (above 0: it was written in place).
        requires_grad: Whether it requires grad.
    """

    id: str
    node_id: str
    name: str | None
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: str
    version: int
    requires_grad: bool


@dataclass(frozen=True)
class SavedTensorInfo:
    """A tensor that a node saved for backward, with its version then and now.

    Attributes:
        id: Node id in the walk, for example ``"n2_saved_self"``.
        node_id: Id of the node that saved it.
        attribute: The saved attribute without prefix: ``"self"``, ``"other"``,
            ``"result"``, ``"mat2"``; ``"tensors[0]"`` for an element of a saved list.
        name: Its name in ``names``, or None.
        shape: Its shape, or None when it was freed.
        dtype: Its dtype, or None when it was freed.
        saved_version: Its ``_version`` when it was saved, or None when unknown.
        current_version: Its ``_version`` now, or None when it was freed.
        state: ``"ok"``; ``"stale"`` (modified in place since it was saved, backward()
            will raise); ``"freed"`` (a previous backward() released it); ``"unchecked"``
            (no check possible, for example because an earlier tensor of the same saved
            list is stale); ``"unrecognised"`` (reading it raised an error this module
            does not recognise, kept in ``error``: a torch version it was not written for).
        write: For a stale tensor, the in-place write that made it stale (the one that
            gave it version ``saved_version + 1``), when ``track_inplace()`` recorded it;
            else None.
        error: For an unrecognised state, torch's error message; else empty.
    """

    id: str
    node_id: str
    attribute: str
    name: str | None
    shape: tuple[int, ...] | None
    dtype: torch.dtype | None
    saved_version: int | None
    current_version: int | None
    state: SavedState
    write: InplaceWrite | None = None
    error: str = ""


@dataclass(frozen=True)
class NodeInfo:
    """A node of the backward graph (a ``grad_fn``).

    Attributes:
        id: Node id in the walk, for example ``"n1"``.
        kind: ``"op"`` for a built-in op, ``"custom"`` for a Python
            ``torch.autograd.Function``, ``"accumulate-grad"`` for the node that writes
            a leaf's ``.grad``.
        name: Its class name, for example ``"MulBackward0"``.
        edges: Ids of the nodes backward() sends gradients on to, in
            ``next_functions`` order (an input used twice appears twice).
        saved: The tensors it saved for backward, sorted by attribute.
        leaf: The leaf of an ``AccumulateGrad`` node, else None.
    """

    id: str
    kind: NodeKind
    name: str
    edges: tuple[str, ...]
    saved: tuple[SavedTensorInfo, ...]
    leaf: LeafInfo | None


@dataclass(frozen=True)
class AutogradGraph:
    """The backward graph below some output tensors.

    Attributes:
        outputs: The tensors the walk started from, in the order given.
        nodes: Every node reached, in traversal order (breadth first).
    """

    outputs: tuple[OutputInfo, ...]
    nodes: tuple[NodeInfo, ...]

    @property
    def leaves(self) -> list[LeafInfo]:
        """The leaves that backward() will give a ``.grad``, in traversal order."""
        return [node.leaf for node in self.nodes if node.leaf is not None]

    @property
    def saved(self) -> list[SavedTensorInfo]:
        """Every tensor saved for backward, in traversal order."""
        return [saved for node in self.nodes for saved in node.saved]

    def node(self, node_id: str) -> NodeInfo:
        """Returns the node with id ``node_id``.

        Raises:
            KeyError: If no node has that id.
        """
        return self._index[node_id]

    @cached_property
    def _index(self) -> dict[str, NodeInfo]:
        # Built once, so that looking nodes up in a loop stays linear in the graph's size.
        return {node.id: node for node in self.nodes}

    def stale(self) -> list[SavedTensorInfo]:
        """The saved tensors modified in place since they were saved."""
        return [saved for saved in self.saved if saved.state == "stale"]

    def freed(self) -> list[SavedTensorInfo]:
        """The saved tensors a previous backward() already released."""
        return [saved for saved in self.saved if saved.state == "freed"]


def walk_graph(
    *tensors: torch.Tensor,
    names: Mapping[str, torch.Tensor] | None = None,
    writes: InplaceLog | None = None,
) -> AutogradGraph:
    """Describes the backward graph below ``tensors``, without changing anything.

    The walk is iterative, so a chain of 100,000 ops is no problem.

    Args:
        *tensors: The outputs to start from, usually the loss.
        names: Optional names for tensors, for example ``{"w": w, "loss": loss}``; a
            leaf, saved tensor or output is named when it is one of these tensors (or a
            tensor that shares its storage, shape and strides, such as its ``.detach()``).
            A leaf is only named after itself or a tensor that does not require grad: a
            second leaf on the same memory is another leaf.
        writes: The log of a ``track_inplace()`` block, to find the write that made each
            stale saved tensor stale; None to skip that.

    Returns:
        The outputs, and every node reached with its saved tensors and leaf.

    Raises:
        TypeError: If an argument is not a tensor.

    Example:
        >>> a = torch.ones(2, requires_grad=True)
        >>> y = (a * 2).sum()
        >>> [node.name for node in walk_graph(y).nodes]
        ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"walk_graph expects tensors, got {type(tensor).__name__}")
    named = _Names(names or {})

    counter = itertools.count()
    output_ids = [f"n{next(counter)}" for _ in tensors]
    # Keyed by the node object itself: the dict keeps every node alive, so identity is
    # stable during the walk, and ids never come from id() or addresses.
    node_ids: dict[Any, str] = {}
    queue: deque[Any] = deque()

    def id_of(fn: Any) -> str:
        if fn not in node_ids:
            node_ids[fn] = f"n{next(counter)}"
            queue.append(fn)
        return node_ids[fn]

    outputs = tuple(
        OutputInfo(
            id=output_id,
            name=named.find(tensor),
            shape=tuple(tensor.shape),
            dtype=tensor.dtype,
            device=str(tensor.device),
            requires_grad=tensor.requires_grad,
            grad_fn=id_of(tensor.grad_fn) if tensor.grad_fn is not None else None,
        )
        for output_id, tensor in zip(output_ids, tensors, strict=True)
    )

    nodes = []
    while queue:
        fn = queue.popleft()
        node_id = node_ids[fn]
        edges = tuple(
            id_of(next_fn)
            for next_fn, _ in getattr(fn, "next_functions", ())
            if next_fn is not None  # None: an input that does not require grad
        )
        leaf = _leaf_of(fn, node_id, named)
        if leaf is not None:
            kind: NodeKind = "accumulate-grad"
        elif isinstance(fn, torch.autograd.function.BackwardCFunction):
            kind = "custom"
        else:
            kind = "op"
        saved = tuple(_saved_tensors_of(fn, node_id, named, writes))
        nodes.append(NodeInfo(node_id, kind, type(fn).__name__, edges, saved, leaf))
    return AutogradGraph(outputs, tuple(nodes))


def _leaf_of(fn: Any, node_id: str, named: _Names) -> LeafInfo | None:
    """Describes the leaf of an ``AccumulateGrad`` node, or returns None for other nodes."""
    variable = getattr(fn, "variable", None)
    if not isinstance(variable, torch.Tensor):
        return None
    return LeafInfo(
        id=f"{node_id}_leaf",
        node_id=node_id,
        name=named.find(variable, leaf=True),
        shape=tuple(variable.shape),
        dtype=variable.dtype,
        device=str(variable.device),
        version=variable._version,
        requires_grad=variable.requires_grad,
    )


# The saved-tensor accessors of each grad_fn class, as (attribute, raw accessor, checked
# accessor) sorted by attribute. They are class-level properties, so dir() is needed once
# per class, not once per node: on a graph of 10,000 nodes that is most of the walk.
_ACCESSORS: dict[type, tuple[tuple[str, str, str | None], ...]] = {}


def _accessors_of(fn: Any) -> tuple[tuple[str, str, str | None], ...]:
    """The (attribute, raw accessor, checked accessor) triples of ``fn``'s class."""
    cls = type(fn)
    if cls not in _ACCESSORS:
        attributes = dir(fn)  # sorted, so the saved tensors come in a stable order
        _ACCESSORS[cls] = tuple(
            (
                name[len(RAW_SAVED_PREFIX) :],
                name,
                _checked_accessor(name[len(RAW_SAVED_PREFIX) :], attributes),
            )
            for name in attributes
            if name.startswith(RAW_SAVED_PREFIX)
        )
    return _ACCESSORS[cls]


def _saved_tensors_of(
    fn: Any, node_id: str, named: _Names, writes: InplaceLog | None
) -> list[SavedTensorInfo]:
    """Describes every tensor ``fn`` saved for backward, checking each one's version.

    Each saved tensor has two accessors: ``_raw_saved_<x>`` gives a ``SavedTensor`` whose
    ``.data`` is the tensor without any check, and ``_saved_<x>`` unpacks it with the
    version check that backward() does. The raw one tells what the tensor is now; the
    checked one, through its error message, tells whether it is stale or freed.
    """
    found = []
    for attribute, raw_attribute, checked_attribute in _accessors_of(fn):
        try:
            raw = getattr(fn, raw_attribute)
        except RuntimeError as error:
            # A custom Function's saved list is gone as a whole after backward().
            state, _ = _classify(error)
            found.append(_unreadable(node_id, attribute, state, _unrecognised(state, error)))
            continue
        if isinstance(raw, list | tuple):
            found.extend(_saved_list(fn, node_id, attribute, raw, checked_attribute, named, writes))
        else:
            info = _saved_one(fn, node_id, attribute, raw, checked_attribute, named, writes)
            if info is not None:
                found.append(info)
    return found


def _checked_accessor(attribute: str, attributes: list[str]) -> str | None:
    """Names the accessor that unpacks ``attribute`` with the version check, if any."""
    if CHECKED_SAVED_PREFIX + attribute in attributes:
        return CHECKED_SAVED_PREFIX + attribute
    if attribute == "tensors" and "saved_tensors" in attributes:
        return "saved_tensors"  # a custom Function's ctx.save_for_backward(...)
    return None


def _check(
    fn: Any, checked_attribute: str | None
) -> tuple[SavedState, tuple[int, int] | None, Any, str]:
    """Unpacks a saved attribute as backward() would.

    Returns:
        The state (``"ok"``, ``"stale"``, ``"freed"``, ``"unchecked"`` or
        ``"unrecognised"``), the pair (saved version, current version) read from a stale
        error, the unpacked value when the check passed, and torch's message when the
        state is unrecognised.
    """
    if checked_attribute is None:
        return "unchecked", None, None, ""
    try:
        return "ok", None, getattr(fn, checked_attribute), ""
    except RuntimeError as error:
        state, versions = _classify(error)
        return state, versions, None, _unrecognised(state, error)


def _classify(error: RuntimeError) -> tuple[SavedState, tuple[int, int] | None]:
    """Reads the state, and for a stale tensor (saved, current) versions, from an error."""
    message = str(error)
    versions = _VERSIONS.search(message)
    if versions is not None:
        return "stale", (int(versions.group(2)), int(versions.group(1)))
    if "freed" in message or "second time" in message:
        return "freed", None
    # torch says why only in words: a reworded message must show, never pass as fine.
    return "unrecognised", None


def _unrecognised(state: SavedState, error: BaseException) -> str:
    """Torch's message when ``state`` is unrecognised, else empty."""
    return f"{type(error).__name__}: {error}" if state == "unrecognised" else ""


def _live(raw: Any) -> torch.Tensor | None:
    """The saved tensor as it is now, without the version check (None once freed)."""
    try:
        data = raw.data
    except RuntimeError:
        return None
    # With saved-tensor hooks the packed value may be anything; only tensors describe.
    return data if isinstance(data, torch.Tensor) else None


def _saved_one(
    fn: Any,
    node_id: str,
    attribute: str,
    raw: Any,
    checked_attribute: str | None,
    named: _Names,
    writes: InplaceLog | None,
) -> SavedTensorInfo | None:
    """Describes one saved tensor; returns None for an optional one that was not saved."""
    state, versions, value, error = _check(fn, checked_attribute)
    live = _live(raw)
    if state == "ok" and live is None and not isinstance(value, torch.Tensor):
        return None  # an optional saved tensor left undefined, e.g. a missing bias
    tensor = live if live is not None else value
    return _describe_saved(node_id, attribute, tensor, state, versions, named, writes, error)


def _saved_list(
    fn: Any,
    node_id: str,
    attribute: str,
    raws: list[Any] | tuple[Any, ...],
    checked_attribute: str | None,
    named: _Names,
    writes: InplaceLog | None,
) -> list[SavedTensorInfo]:
    """Describes a saved list, such as a custom Function's ``ctx.save_for_backward``.

    The check unpacks the list in order and stops at the first stale tensor, whose error
    gives its shape and versions; the tensors before it passed, those after it were not
    checked.
    """
    state, versions, values, error = _check(fn, checked_attribute)
    lives = [_live(raw) for raw in raws]
    if state == "ok":  # saved-tensor hooks can hide the tensor from .data; use the check's
        lives = [
            live if live is not None else value for live, value in zip(lives, values, strict=True)
        ]
    stale_index = _find_stale(lives, versions) if state == "stale" else None
    found = []
    for index, live in enumerate(lives):
        if state != "stale":
            element_state: SavedState = state
        elif stale_index is None or index > stale_index:
            element_state = "unchecked"
        else:
            element_state = "stale" if index == stale_index else "ok"
        found.append(
            _describe_saved(
                node_id,
                f"{attribute}[{index}]",
                live,
                element_state,
                versions if element_state == "stale" else None,
                named,
                writes,
                error,
            )
        )
    return found


def _find_stale(lives: list[torch.Tensor | None], versions: tuple[int, int] | None) -> int | None:
    """Guesses which tensor of a saved list failed the check: the first now at its version."""
    if versions is None:
        return None
    for index, live in enumerate(lives):
        if live is not None and live._version == versions[1]:
            return index
    return None


def _describe_saved(
    node_id: str,
    attribute: str,
    tensor: torch.Tensor | None,
    state: SavedState,
    versions: tuple[int, int] | None,
    named: _Names,
    writes: InplaceLog | None,
    error: str = "",
) -> SavedTensorInfo:
    """Builds the record of one saved tensor from what the checks found."""
    if state == "freed" or tensor is None:
        return _unreadable(node_id, attribute, state, error)
    current = tensor._version
    if state == "ok":
        saved_version: int | None = current
    elif versions is not None:
        saved_version = versions[0]
    else:
        saved_version = None
    write = None
    if state == "stale" and saved_version is not None and writes is not None:
        write = writes.find(tensor, saved_version + 1)  # the first write after saving
    return SavedTensorInfo(
        id=_saved_id(node_id, attribute),
        node_id=node_id,
        attribute=attribute,
        name=named.find(tensor),
        shape=tuple(tensor.shape),
        dtype=tensor.dtype,
        saved_version=saved_version,
        current_version=current,
        state=state,
        write=write,
        error=error,
    )


def _unreadable(
    node_id: str, attribute: str, state: SavedState, error: str = ""
) -> SavedTensorInfo:
    """The record of a saved tensor that cannot be read any more (freed)."""
    return SavedTensorInfo(
        id=_saved_id(node_id, attribute),
        node_id=node_id,
        attribute=attribute,
        name=None,
        shape=None,
        dtype=None,
        saved_version=None,
        current_version=None,
        state=state,
        error=error,
    )


def _saved_id(node_id: str, attribute: str) -> str:
    """A DOT-friendly id: ``("n3", "tensors[0]")`` gives ``"n3_saved_tensors_0"``."""
    return f"{node_id}_saved_" + attribute.replace("[", "_").replace("]", "")


class _Names:
    """Finds a tensor's name in ``names``: the same object, else the same view of its memory.

    Autograd often hands back a new tensor object for a saved one (a non-leaf, or an op's
    own result), so identity alone would miss most names. Both lookups go through dicts
    built once, so naming every tensor of a large graph stays linear.
    """

    def __init__(self, names: Mapping[str, torch.Tensor]) -> None:
        self._by_id: dict[int, str] = {}
        self._by_memory: dict[tuple[Any, ...], list[tuple[str, torch.Tensor]]] = {}
        for name, tensor in names.items():
            if not isinstance(tensor, torch.Tensor):
                continue
            self._by_id.setdefault(id(tensor), name)  # the mapping keeps the tensor alive
            key = _memory_key(tensor)
            if key is not None:
                self._by_memory.setdefault(key, []).append((name, tensor))

    def find(self, tensor: torch.Tensor, *, leaf: bool = False) -> str | None:
        """The name of ``tensor``, or None.

        Args:
            tensor: The tensor to name.
            leaf: True when ``tensor`` is a leaf of the graph: it is then not named after
                another tensor that requires grad (a second leaf on the same memory, such
                as ``w.detach().requires_grad_()``, is a different leaf).
        """
        name = self._by_id.get(id(tensor))
        if name is not None or not self._by_memory:
            return name
        key = _memory_key(tensor)
        for name, candidate in self._by_memory.get(key, ()) if key is not None else ():
            if not (leaf and candidate.requires_grad):
                return name
        return None


def _memory_key(tensor: torch.Tensor) -> tuple[Any, ...] | None:
    """What two tensors reading the same elements of the same memory share, or None."""
    try:
        pointer = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None  # sparse and other layouts without a plain storage
    if pointer == 0:
        return None  # empty and meta tensors all sit at 0
    return (
        pointer,
        str(tensor.device),
        tensor.dtype,
        tuple(tensor.shape),
        tensor.stride(),
        tensor.storage_offset(),
    )
