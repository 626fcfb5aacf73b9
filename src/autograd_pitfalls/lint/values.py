"""What the analysis knows about a value: its kind, whether it requires grad, its history.

The analysis runs the code abstractly, statement by statement (``analyzer.py``), and binds
each name to a :class:`Value`. A value says what the rules need and nothing more: a
tensor's requires-grad state (known yes, known no, or maybe), whether it is a leaf or a
Parameter, whether it holds one number (a 0-dim loss), which storage it shares with its
views (for the version counter), and which saved tensors its graph holds.

What the code does not show (a function's parameter, an unknown call) is ``UNKNOWN``: the
rules only report what they know, so they prefer a missed pitfall to a false alarm.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

__all__ = [
    "MAYBE",
    "NO",
    "NONE",
    "NUMBER",
    "OBJECT",
    "STRING",
    "UNKNOWN",
    "YES",
    "ClassInfo",
    "FunctionInfo",
    "Save",
    "Storage",
    "Value",
    "join",
    "list_of",
    "ref",
    "saves_behind",
    "tensor",
]

# Requires grad: known no, unknown, known yes (ordered, so max() combines operands).
NO, MAYBE, YES = 0, 1, 2

# Value.flags
PARAMS = 1  # a module with parameters (its output requires grad)
LOSS_FN = 2  # a loss module or function (its output is a 0-dim loss)
RENORM = 4  # an nn.Embedding with max_norm (its lookups rewrite its weight)
RNN = 8  # a recurrent module (returns output and hidden state)
PACKED = 16  # a PackedSequence (its .data is a documented field)
MODEL_OUTPUT = 32  # what a call of something named like a model returned
OPTIMIZER = 64  # an optimiser (its step() updates the parameters)
SHAPED = 128  # a tensor made with dimensions (torch.zeros(2)): not one number


class Storage:
    """A tensor's memory as the version counter sees it, shared by the tensor's views.

    Attributes:
        version: How many in-place writes the analysis saw so far.
        writes: ``(version after, node, unit)`` of each write, in order.
    """

    __slots__ = ("version", "writes")

    def __init__(self) -> None:
        self.version = 0
        self.writes: list[tuple[int, ast.AST, str | None]] = []


class Save:
    """A tensor an op saved for backward: its storage and version then, and the op."""

    __slots__ = ("node", "op", "storage", "unit", "version")

    def __init__(self, storage: Storage, node: ast.AST, op: str, unit: str | None) -> None:
        self.storage = storage
        self.version = storage.version
        self.node = node
        self.op = op
        self.unit = unit


@dataclass(eq=False)
class FunctionInfo:
    """A function or lambda of the checked code.

    Attributes:
        node: Its definition.
        alias_of: The torch callable it forwards to (``Variable = lambda *a: Variable(*a)``).
        volatile_keyword: The keyword it passes on as ``Variable(..., volatile=...)``.
        returns_tensor_list: Annotated ``-> list[Tensor]`` (or tuple, Sequence).
    """

    node: ast.AST
    alias_of: str | None = None
    volatile_keyword: str | None = None
    returns_tensor_list: bool = False


@dataclass(eq=False)
class ClassInfo:
    """A class of the checked code, and what its methods assign to ``self``.

    Attributes:
        node: Its definition.
        is_module: A subclass of ``nn.Module`` (its instances are models).
        attributes: ``self.<name>`` as ``__init__`` leaves it.
    """

    node: ast.ClassDef
    is_module: bool = False
    attributes: dict[str, Value] = field(default_factory=dict)


class Value:
    """What the analysis knows about one value (see the module's docstring).

    Attributes:
        kind: ``"tensor"``, ``"number"``, ``"str"``, ``"none"``, ``"tuple"``, ``"list"``,
            ``"module"``, ``"object"`` (something known not to be a tensor), ``"ref"``
            (an imported name, ``qual`` says which), ``"function"``, ``"class"``,
            ``"instance"`` (of a class of the checked code), or ``"unknown"``.
        qual: For a ref, the qualified name (``"torch.nn.functional.relu"``).
        grad: For a tensor: NO, MAYBE or YES.
        leaf: A leaf made to require grad (a Parameter, ``requires_grad=True``).
        param: An ``nn.Parameter``.
        zero_dim: Holds one number (a reduced loss, a full reduction, a scalar tensor).
        loss: Computed by a loss function or criterion.
        storage: The memory it shares with its views (None: not tracked).
        saves: The tensors that the op which made this value saved for backward.
        inputs: The values it was computed from that may require grad (its graph's
            history: :func:`saves_behind` walks it when a backward() needs it).
        items: For a tuple of known length, its elements.
        item: For a list, tuple or iterable, what its elements are.
        info: A FunctionInfo or ClassInfo.
        flags: Bits from this module (PARAMS, LOSS_FN, ...).
    """

    __slots__ = (
        "flags",
        "grad",
        "info",
        "inputs",
        "item",
        "items",
        "kind",
        "leaf",
        "loss",
        "param",
        "qual",
        "saves",
        "storage",
        "zero_dim",
    )

    def __init__(
        self,
        kind: str,
        *,
        qual: str | None = None,
        grad: int = NO,
        leaf: bool = False,
        param: bool = False,
        zero_dim: bool = False,
        loss: bool = False,
        storage: Storage | None = None,
        saves: tuple[Save, ...] = (),
        inputs: tuple[Value, ...] = (),
        items: tuple[Value, ...] | None = None,
        item: Value | None = None,
        info: FunctionInfo | ClassInfo | None = None,
        flags: int = 0,
    ) -> None:
        self.kind = kind
        self.qual = qual
        self.grad = grad
        self.leaf = leaf
        self.param = param
        self.zero_dim = zero_dim
        self.loss = loss
        self.storage = storage
        self.saves = saves
        self.inputs = inputs
        self.items = items
        self.item = item
        self.info = info
        self.flags = flags

    def __repr__(self) -> str:
        grad = ("no", "maybe", "yes")[self.grad]
        return f"<{self.kind} {self.qual or ''} grad={grad} leaf={self.leaf} flags={self.flags}>"

    @property
    def is_tensor(self) -> bool:
        """Known to be a tensor."""
        return self.kind == "tensor"

    @property
    def not_a_tensor(self) -> bool:
        """Known not to be a tensor (a number, a module, a dataset, a PackedSequence...)."""
        return self.kind not in ("tensor", "unknown")

    def element(self) -> Value:
        """What iterating over this value gives."""
        if self.item is not None:
            return self.item
        if self.kind == "tensor":  # rows of a tensor: views
            return tensor(self.grad, storage=self.storage, saves=self.saves)
        return UNKNOWN


UNKNOWN = Value("unknown", grad=MAYBE)
NUMBER = Value("number")
STRING = Value("str")
NONE = Value("none")
OBJECT = Value("object")


def ref(qual: str) -> Value:
    """An imported name (a module, a class, a function), by its qualified name."""
    return Value("ref", qual=qual)


def tensor(
    grad: int,
    *,
    leaf: bool = False,
    param: bool = False,
    zero_dim: bool = False,
    loss: bool = False,
    storage: Storage | None = None,
    saves: tuple[Save, ...] = (),
    inputs: tuple[Value, ...] = (),
    flags: int = 0,
) -> Value:
    """A tensor; its own new storage unless it is a view of ``storage``."""
    return Value(
        "tensor",
        grad=grad,
        leaf=leaf,
        param=param,
        zero_dim=zero_dim,
        loss=loss,
        storage=storage if storage is not None else Storage(),
        saves=saves,
        inputs=inputs,
        flags=flags,
    )


def list_of(item: Value, kind: str = "list") -> Value:
    """A list (or other iterable) whose elements are ``item``."""
    return Value(kind, item=item)


def join(a: Value, b: Value) -> Value:
    """What a name holds after two branches that bound it to ``a`` and ``b``."""
    if a is b:
        return a
    if a.kind != b.kind:
        return UNKNOWN
    if a.kind == "tensor":
        return Value(
            "tensor",
            grad=a.grad if a.grad == b.grad else MAYBE,
            leaf=a.leaf and b.leaf,
            param=a.param and b.param,
            zero_dim=a.zero_dim and b.zero_dim,
            loss=a.loss and b.loss,
            storage=a.storage if a.storage is b.storage else None,
            inputs=(a, b),
            flags=a.flags & b.flags,
        )
    if a.kind in ("list", "tuple"):
        item_a = a.item or (join_all(a.items) if a.items else None)
        item_b = b.item or (join_all(b.items) if b.items else None)
        if item_a is None or item_b is None:
            return Value(a.kind, item=item_a or item_b)
        return Value(a.kind, item=join(item_a, item_b))
    if a.kind == "ref":
        return a if a.qual == b.qual else UNKNOWN
    if a.info is not b.info:
        return Value(a.kind, flags=a.flags & b.flags) if a.kind != "function" else UNKNOWN
    return Value(a.kind, info=a.info, flags=a.flags & b.flags)


def join_all(values: tuple[Value, ...] | list[Value]) -> Value:
    """The join of several values (a list's elements)."""
    result = values[0]
    for value in values[1:]:
        result = join(result, value)
    return result


def saves_behind(value: Value) -> list[Save]:
    """Every tensor saved in ``value``'s history: what a backward() from it checks."""
    found: list[Save] = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.extend(current.saves)
        stack.extend(current.inputs)
    return found
