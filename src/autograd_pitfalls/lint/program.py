"""The program the analysis reads: its text, its scopes and loops, and what it found.

Plain records shared by the analysis (``analyzer.py``, ``expressions.py``) and the rules:
a unit's text with ``ast``'s positions turned into offsets, a function body or module
being read (:class:`Scope`), a loop being read (:class:`LoopFrame`) and the training-loop
events in it, a call as the rules see it (:class:`CallSite`), and the state a program's top
level leaves for its next cell (:class:`ProgramState`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from autograd_pitfalls.lint.base import Edit, Rule
from autograd_pitfalls.lint.values import ClassInfo, Value

__all__ = [
    "ATTRIBUTE",
    "AUG_STORE",
    "LOAD",
    "METHOD",
    "STORE",
    "SUBSCRIPT_LOAD",
    "SUBSCRIPT_STORE",
    "VOLATILE_WRAPPER",
    "CallSite",
    "Event",
    "LoopFrame",
    "PendingFunction",
    "ProgramState",
    "RawFinding",
    "Scope",
    "SourceText",
    "dotted",
    "keyword",
    "literal",
    "names_in",
    "terminal_name",
]

# How an attribute (or a subscript's base) is used by the expression around it.
LOAD, STORE, METHOD, ATTRIBUTE, SUBSCRIPT_LOAD, SUBSCRIPT_STORE, AUG_STORE = range(7)

# How a call of a function that hands its keyword on as Variable(volatile=...) is dispatched.
VOLATILE_WRAPPER = "<volatile wrapper>"


class SourceText:
    """A unit's text, and character offsets from ``ast``'s (line, UTF-8 byte column)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True) or [""]
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def line(self, lineno: int) -> str:
        """Line ``lineno`` (1-based), with its ending; "" past the end."""
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def column(self, lineno: int, byte_column: int) -> int:
        """The 0-based character column of a byte column (ast counts UTF-8 bytes)."""
        line = self.line(lineno)
        if line.isascii():
            return byte_column
        return len(line.encode()[:byte_column].decode(errors="replace"))

    def offset(self, lineno: int, byte_column: int) -> int:
        """The character offset in the text of (line, byte column)."""
        if lineno > len(self.lines):
            return len(self.text)
        return self.starts[lineno - 1] + self.column(lineno, byte_column)

    def segment(self, node: ast.AST) -> str:
        """The text of ``node``."""
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return self.text[start:end]


def dotted(node: ast.AST) -> str | None:
    """``a``, ``a.b.c`` as text; None for anything else (a call, a subscript)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def terminal_name(node: ast.AST) -> str | None:
    """The last name of ``a``, ``a.b`` or ``self.b``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@dataclass
class RawFinding:
    """A finding as the analysis records it: the rule, the node, and the unit it is in."""

    rule: Rule
    node: ast.AST
    unit: str | None
    detail: str = ""
    edits: tuple[Edit, ...] = ()


class CallSite:
    """A call, with the values the analysis found for its parts."""

    __slots__ = ("aliased", "args", "func", "keywords", "method", "node", "qual", "receiver")

    def __init__(self, node, func, qual, aliased, receiver, method, args, keywords) -> None:
        self.node: ast.Call = node
        self.func: Value = func
        self.qual: str | None = qual  # torch's name for the callee, through aliases
        self.aliased: bool = aliased  # the callee is an alias of qual (a lambda, a wrapper)
        self.receiver: Value | None = receiver  # for a method call, the object's value
        self.method: str | None = method
        self.args: list[Value] = args
        self.keywords: dict[str | None, Value] = keywords


class Event:
    """Something a training loop does: backward, an optimiser step, zeroing gradients."""

    __slots__ = (
        "fresh", "handled", "kind", "module", "node", "receiver", "retain", "roots", "unit"
    )  # fmt: skip

    def __init__(
        self, kind: str, node: ast.AST, receiver: str | None, unit: str | None = None
    ) -> None:
        self.kind = kind  # "backward", "step", "update", "zero"
        self.node = node
        self.unit = unit  # the cell of node: a scope's events are judged after its last cell
        self.receiver = receiver  # the dotted receiver (`optimizer`), or None
        self.retain = False  # backward(retain_graph=True)
        self.fresh = False  # the backward's tensor was computed in this iteration
        self.handled = False  # a loop already judged it
        self.module = False  # zero_grad() on a module (model.zero_grad())
        self.roots: set[str] = set()  # for a backward, the names its tensor is read from


@dataclass(eq=False)
class LoopFrame:
    """The loop being read: what its body bound so far, and what it did."""

    node: ast.AST
    parent: LoopFrame | None
    assigned: set[str] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    # Names read before this iteration bound them: how many reads kept the graph
    # (a read as the receiver of `.detach()` does not).
    carried_reads: dict[str, int] = field(default_factory=dict)

    def carried(self) -> set[str]:
        """Names whose value one iteration hands to the next with its graph (``h``)."""
        return {
            name for name, reads in self.carried_reads.items() if reads and name in self.assigned
        }


@dataclass(eq=False)
class Scope:
    """A function body (or the module) being read, and what the rules note about it."""

    node: ast.AST
    deps: dict[str, set[str]] = field(default_factory=dict)  # name -> names it was made from
    backward_roots: set[str] = field(default_factory=set)  # names read by backward() calls
    returned: set[str] = field(default_factory=set)
    attribute_reads: set[str] = field(default_factory=set)  # names read as `name.attr`
    events: list[Event] = field(default_factory=list)
    calls_backward: bool = False
    notes: dict[str, list] = field(default_factory=dict)  # per rule family, for scope end

    def flows_to_backward(self, name: str) -> bool:
        """True when ``name`` was used (through assignments) to make what backward() ran on."""
        return any(self.depends_on(root, {name}) for root in self.backward_roots)

    def depends_on(self, name: str, sources: set[str]) -> bool:
        """True when ``name`` is one of ``sources`` or was made (through assignments) from one."""
        seen: set[str] = set()
        stack = [name]
        while stack:
            current = stack.pop()
            if current in sources:
                return True
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self.deps.get(current, ()))
        return False


@dataclass
class ProgramState:
    """What a program's top level holds after the code read so far (a notebook's cells).

    Attributes:
        names: The module-level names and their values.
        no_grad: ``torch.set_grad_enabled(False)`` was called at the top level.
        scope: What the rules noted about the top level.
        reported: The findings made so far (rule, line, column, unit): each is made once.
    """

    names: dict[str, Value] = field(default_factory=dict)
    no_grad: int = 0
    scope: Scope = field(default_factory=lambda: Scope(node=ast.Module(body=[], type_ignores=[])))
    reported: set[tuple[str, int, int, str | None]] = field(default_factory=set)


@dataclass(eq=False)
class PendingFunction:
    """A function body to read once the code around it has been read."""

    node: ast.AST
    outer: tuple[dict[str, Value], ...]
    cls: ClassInfo | None
    no_grad: int
    unit: str | None = None
    source: SourceText | None = None


def names_in(node: ast.AST) -> set[str]:
    """The names ``node`` reads."""
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def keyword(node: ast.Call, name: str) -> ast.expr | None:
    """The value given as ``name=`` to a call, or None."""
    for given in node.keywords:
        if given.arg == name:
            return given.value
    return None


def literal(node: ast.AST | None) -> object:
    """The value of a constant (None for anything else)."""
    return node.value if isinstance(node, ast.Constant) else None
