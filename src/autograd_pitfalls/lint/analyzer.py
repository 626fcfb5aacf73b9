"""Reads a program in order, as it runs, and tells the rules what each line does.

One pass over Python's ``ast``: each statement is run abstractly, names are bound to
:class:`~autograd_pitfalls.lint.values.Value`s (imports and aliases included), and the
rules are called on what they watch: calls, attributes, in-place writes, backward(),
the end of a loop, the end of a function. Branches are read each on its own copy of the
names and joined; a loop body is read once, then joined with the state before it.

A function body is read after the code around it (when it is called the module has run),
with its own names; a class's ``__init__`` is read when the class is defined, so that
``self.<name>`` is known in its other methods and on its instances. A notebook is one
program: the state one cell leaves is where the next one starts (:class:`ProgramState`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from autograd_pitfalls.lint import torch_model
from autograd_pitfalls.lint.base import Edit, Rule
from autograd_pitfalls.lint.values import (
    MAYBE,
    MODEL_OUTPUT,
    NO,
    NONE,
    NUMBER,
    OBJECT,
    OPTIMIZER,
    PARAMS,
    STRING,
    UNKNOWN,
    YES,
    ClassInfo,
    FunctionInfo,
    Value,
    join,
    list_of,
    ref,
    tensor,
)

__all__ = [
    "AUG_STORE",
    "LOAD",
    "METHOD",
    "STORE",
    "SUBSCRIPT_LOAD",
    "SUBSCRIPT_STORE",
    "VOLATILE_WRAPPER",
    "Analyzer",
    "CallSite",
    "Event",
    "LoopFrame",
    "ProgramState",
    "RawFinding",
    "Scope",
    "SourceText",
    "dotted",
]

# How an attribute (or a subscript's base) is used by the expression around it.
LOAD, STORE, METHOD, ATTRIBUTE, SUBSCRIPT_LOAD, SUBSCRIPT_STORE, AUG_STORE = range(7)

TORCH = ref("torch")
# How a call of a function that hands its keyword on as Variable(volatile=...) is dispatched.
VOLATILE_WRAPPER = "<volatile wrapper>"
_VARIABLE = ("torch.autograd.Variable", "torch.autograd.variable.Variable")
_NO_GRAD = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.inference_mode",
    }
)
_LOSS_CALLEES = frozenset({"loss_fn", "loss_func", "loss_function", "lossfn", "loss"})
_DISPLAY_CALLS = frozenset({"print", "repr", "str", "id", "len", "format"})


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

    __slots__ = ("fresh", "handled", "kind", "module", "node", "receiver", "retain", "roots")

    def __init__(self, kind: str, node: ast.AST, receiver: str | None) -> None:
        self.kind = kind  # "backward", "step", "update", "zero"
        self.node = node
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
class _Pending:
    """A function body to read once the code around it has been read."""

    node: ast.AST
    outer: tuple[dict[str, Value], ...]
    cls: ClassInfo | None
    no_grad: int
    unit: str | None = None
    source: SourceText | None = None


class Analyzer:
    """Runs a program for the rules: a file, or a notebook's cells one after the other.

    ``run_cell`` reads a unit's top level (a file, or one cell, named by ``unit``); ``finish``
    reads the functions defined so far and ends the top level's scope. A file is one
    ``run_cell`` and a ``finish``; a notebook is a ``run_cell`` per cell, then ``finish``;
    IPython runs both for each cell, on the state the earlier cells left.

    Args:
        families: The rule families to call (see ``registry.families_for``).
        state: The program state to start from; it is updated as the code runs.
    """

    def __init__(self, families: list, state: ProgramState | None = None) -> None:
        self.families = families
        self.unit: str | None = None
        self.source: SourceText | None = None
        self.state = state or ProgramState()
        self.findings: list[RawFinding] = []
        self._reported = self.state.reported
        self.env: dict[str, Value] = self.state.names
        self.outer: tuple[dict[str, Value], ...] = ()
        self.no_grad = self.state.no_grad
        self.loop: LoopFrame | None = None
        self.scope = self.state.scope
        self.cls: ClassInfo | None = None
        self.display = 0  # > 0 inside print(...), an f-string, an assert
        self.reads: set[str] | None = None
        self.grad_reads = 0  # `.grad` attributes read so far (a manual update step)
        self.branch_assigned: set[str] | None = None
        self.pending: list[_Pending] = []
        self.statement: ast.stmt | None = None
        self._hooks()
        self._statements = {
            ast.Expr: self._expr_statement,
            ast.Assign: self._assign,
            ast.AnnAssign: self._ann_assign,
            ast.AugAssign: self._aug_assign,
            ast.If: self._if,
            ast.For: self._for,
            ast.AsyncFor: self._for,
            ast.While: self._while,
            ast.With: self._with,
            ast.AsyncWith: self._with,
            ast.FunctionDef: self._function_def,
            ast.AsyncFunctionDef: self._function_def,
            ast.ClassDef: self._class_def,
            ast.Return: self._return,
            ast.Import: self._import,
            ast.ImportFrom: self._import_from,
            ast.Try: self._try,
            ast.Assert: self._assert,
            ast.Raise: self._raise,
            ast.Delete: self._delete,
        }
        if hasattr(ast, "TryStar"):
            self._statements[ast.TryStar] = self._try
        self._expressions = {
            ast.Name: self._name,
            ast.Constant: self._constant,
            ast.Attribute: self._attribute_load,
            ast.Call: self._call,
            ast.BinOp: self._bin_op,
            ast.UnaryOp: self._unary_op,
            ast.BoolOp: self._bool_op,
            ast.Compare: self._compare,
            ast.Subscript: self._subscript_load,
            ast.List: self._sequence,
            ast.Tuple: self._sequence,
            ast.Set: self._sequence,
            ast.Dict: self._dict,
            ast.ListComp: self._comprehension,
            ast.SetComp: self._comprehension,
            ast.GeneratorExp: self._comprehension,
            ast.DictComp: self._comprehension,
            ast.IfExp: self._if_exp,
            ast.Lambda: self._lambda,
            ast.JoinedStr: self._joined_str,
            ast.FormattedValue: self._formatted_value,
            ast.NamedExpr: self._named_expr,
            ast.Starred: self._starred,
            ast.Await: self._child_value,
            ast.Yield: self._yield,
            ast.YieldFrom: self._child_value,
            ast.Slice: self._slice,
        }

    # ---- rules ---------------------------------------------------------------------------

    def _hooks(self) -> None:
        self.call_quals: dict[str, list] = {}
        self.call_methods: dict[str, list] = {}
        self.attribute_hooks: dict[str, list] = {}
        self.hooks: dict[str, list] = {}
        for family in self.families:
            for qual in getattr(family, "CALLS", ()):
                self.call_quals.setdefault(qual, []).append(family)
            for method in getattr(family, "METHODS", ()):
                self.call_methods.setdefault(method, []).append(family)
            for attribute in getattr(family, "ATTRIBUTES", ()):
                self.attribute_hooks.setdefault(attribute, []).append(family)
            for event in (
                "on_assign",
                "on_aug_assign",
                "on_subscript",
                "on_write",
                "on_backward",
                "on_loop_end",
                "on_scope_end",
            ):
                handler = getattr(family, event, None)
                if handler is not None:
                    self.hooks.setdefault(event, []).append(handler)

    def report(
        self, rule: Rule, node: ast.AST, detail: str = "", edits: tuple[Edit, ...] = ()
    ) -> None:
        """Records a finding of ``rule`` at ``node`` (once per node and rule)."""
        self.report_in(rule, node, self.unit, detail, edits)

    def report_in(
        self,
        rule: Rule,
        node: ast.AST,
        unit: str | None,
        detail: str = "",
        edits: tuple[Edit, ...] = (),
    ) -> None:
        """Records a finding at a node of ``unit`` (an earlier cell's, for a stale save)."""
        key = (rule.code, node.lineno, node.col_offset, unit)
        if key in self._reported:
            return
        self._reported.add(key)
        self.findings.append(RawFinding(rule, node, unit, detail, edits))

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self.source.segment(node) if self.source is not None else ""

    def line(self, lineno: int) -> str:
        """Line ``lineno`` of the unit's text (1-based), with its line ending."""
        return self.source.line(lineno) if self.source is not None else ""

    # ---- running ----------------------------------------------------------------------

    def run_cell(self, tree: ast.Module, unit: str | None, source: SourceText) -> None:
        """Reads the top level of a file or of one cell (its functions wait for ``finish``)."""
        self.unit, self.source = unit, source
        self.env, self.outer, self.scope = self.state.names, (), self.state.scope
        self.no_grad, self.loop, self.cls = self.state.no_grad, None, None
        self.run_body(tree.body)
        self.state.names = self.env
        self.state.no_grad = self.no_grad

    def finish(self) -> list[RawFinding]:
        """Reads the functions defined so far, ends the top level; returns the findings."""
        self.scope = self.state.scope
        self._end_scope()
        while self.pending:
            self._run_function(self.pending.pop(0))
        return self.findings

    def label(self, node: ast.AST, unit: str | None, here: str | None = None) -> str:
        """Where ``node`` of ``unit`` is, seen from ``here`` (default: the unit being read).

        ``line 3`` in the same unit, ``line 3 of cell c2`` in another.
        """
        if unit is None or unit == (here if here is not None else self.unit):
            return f"line {node.lineno}"  # type: ignore[attr-defined]
        return f"line {node.lineno} of cell {unit}"  # type: ignore[attr-defined]

    def run_body(self, body: list[ast.stmt]) -> None:
        """Runs a list of statements in order."""
        statements = self._statements
        for statement in body:
            self.statement = statement
            handler = statements.get(statement.__class__)
            if handler is not None:
                handler(statement)
            elif isinstance(statement, ast.Match):
                self._match(statement)

    def _end_scope(self) -> None:
        for handler in self.hooks.get("on_scope_end", ()):
            handler(self, self.scope)

    # ---- names --------------------------------------------------------------------------

    def lookup(self, name: str) -> Value:
        """The value ``name`` holds here (locals, enclosing functions, module)."""
        value = self.env.get(name)
        if value is not None:
            return value
        for env in self.outer:
            value = env.get(name)
            if value is not None:
                return value
        if name == "torch":  # a fragment (a function's source) that uses torch unimported
            return TORCH
        return UNKNOWN

    def bind(self, name: str, value: Value) -> None:
        """Binds ``name`` in the current scope, noting it for loops and branches."""
        self.env[name] = value
        if self.loop is not None:
            self.loop.assigned.add(name)
        if self.branch_assigned is not None:
            self.branch_assigned.add(name)

    def rebind(self, target: ast.AST, value: Value) -> None:
        """Rebinds the name (or ``self.<name>``) that ``target`` reads, to ``value``."""
        if isinstance(target, ast.Name):
            if target.id in self.env:
                self.env[target.id] = value
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and self.cls is not None
            and target.value.id == "self"
        ):
            self.cls.attributes[target.attr] = value

    def _bind_target(self, target: ast.AST, value: Value) -> None:
        kind = target.__class__
        if kind is ast.Name:
            self.bind(target.id, value)
        elif kind is ast.Tuple or kind is ast.List:
            items = value.items
            elements = target.elts
            if items is not None and len(items) == len(elements):
                for element, item in zip(elements, items, strict=True):
                    self._bind_target(element, item)
            else:
                element_value = value.element() if value.kind != "unknown" else UNKNOWN
                for element in elements:
                    self._bind_target(element, element_value)
        elif kind is ast.Attribute:
            receiver = self._use(target.value, ATTRIBUTE, target)
            if target.attr in self.attribute_hooks:
                self._attribute_hooks(target, receiver, STORE, target)
            if target.attr == "grad":  # `p.grad = None`: the gradient is reset
                self.event("zero", target, dotted(target.value))
            if (
                isinstance(target.value, ast.Name)
                and target.value.id == "self"
                and self.cls is not None
            ):
                self.cls.attributes[target.attr] = value
        elif kind is ast.Subscript:
            self._subscript_write(target)
        elif kind is ast.Starred:
            self._bind_target(target.value, list_of(value.element()))

    def _subscript_write(self, target: ast.Subscript) -> Value:
        """``x[i] = ...`` or ``x[i] += ...``: an in-place write into x."""
        base = self._use(target.value, SUBSCRIPT_STORE, target)
        self.ev(target.slice)
        for handler in self.hooks.get("on_subscript", ()):
            handler(self, target, base, True)
        if base.kind == "tensor":
            self.write(base, target)
        return base

    # ---- in-place writes and backward -------------------------------------------------------

    def write(self, value: Value, node: ast.AST) -> None:
        """An in-place write into ``value`` at ``node``: its version counter moves."""
        storage = value.storage
        if storage is not None:
            storage.version += 1
            storage.writes.append((storage.version, node, self.unit))
        for handler in self.hooks.get("on_write", ()):
            handler(self, value, node)

    def backward(self, value: Value, node: ast.AST, receiver: ast.AST | None) -> None:
        """Notes a backward (``x.backward()``, ``autograd.grad``) from ``value`` at ``node``."""
        self.scope.calls_backward = True
        roots = _names_in(receiver) if receiver is not None else set()
        self.scope.backward_roots.update(roots)
        event = self.event("backward", node, None)
        event.roots = roots
        if isinstance(node, ast.Call):
            retain = _keyword(node, "retain_graph")
            event.retain = isinstance(retain, ast.Constant) and retain.value is True
            root = receiver
            while isinstance(root, ast.Attribute | ast.Subscript | ast.Call):
                root = root.func if isinstance(root, ast.Call) else root.value
            loop = self.loop
            event.fresh = loop is not None and (
                not isinstance(root, ast.Name) or root.id in loop.assigned
            )
        for handler in self.hooks.get("on_backward", ()):
            handler(self, value, node)

    def _assigned_here(self, name: str) -> bool:
        """``name`` was bound in this iteration of the loop being read."""
        return self.loop is not None and name in self.loop.assigned

    def event(self, kind: str, node: ast.AST, receiver: str | None) -> Event:
        """Records a training-loop event in the scope and the loop being read."""
        event = Event(kind, node, receiver)
        self.scope.events.append(event)
        if self.loop is not None:
            self.loop.events.append(event)
        return event

    # ---- statements ---------------------------------------------------------------------

    def _expr_statement(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Call):
            self._call(value)
            if _is_grad_switch(self, value):
                self.no_grad = 0 if _literal(value.args[0] if value.args else None) else 1
        else:
            self.ev(value)

    def _assign(self, node: ast.Assign) -> None:
        reads, self.reads = self.reads, set()
        value = self.ev(node.value)
        names_read, self.reads = self.reads, reads
        for handler in self.hooks.get("on_assign", ()):
            handler(self, node, node.targets, value, names_read)
        for target in node.targets:
            self._note_deps(target, names_read)
            self._bind_target(target, value)
            if isinstance(node.value, ast.Lambda | ast.Name | ast.Attribute):
                self._note_alias(target, node.value, value)

    def _ann_assign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        reads, self.reads = self.reads, set()
        value = self.ev(node.value)
        names_read, self.reads = self.reads, reads
        for handler in self.hooks.get("on_assign", ()):
            handler(self, node, [node.target], value, names_read)
        self._note_deps(node.target, names_read)
        self._bind_target(node.target, value)

    def _note_deps(self, target: ast.AST, names_read: set[str]) -> None:
        if isinstance(target, ast.Name):
            self.scope.deps.setdefault(target.id, set()).update(names_read)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._note_deps(element, names_read)

    def _note_alias(self, target: ast.AST, value_node: ast.AST, value: Value) -> None:
        """``V = Variable`` or ``Variable = lambda *a, **k: autograd.Variable(*a, **k)``."""
        if not isinstance(target, ast.Name) or not isinstance(value_node, ast.Lambda):
            return
        forwarded = _forwarded_call(value_node.body)
        if forwarded is not None and self._callee_qual(forwarded.func) in _VARIABLE:
            value.info.alias_of = "torch.autograd.Variable"  # type: ignore[union-attr]

    def _aug_assign(self, node: ast.AugAssign) -> None:
        target = node.target
        grad_reads = self.grad_reads
        reads, self.reads = self.reads, set()
        value = self.ev(node.value)
        names_read, self.reads = self.reads, reads
        used_grad = self.grad_reads != grad_reads
        if isinstance(target, ast.Name):
            old = self.lookup(target.id)
            self._note_deps(target, names_read | {target.id})
            for handler in self.hooks.get("on_aug_assign", ()):
                handler(self, node, old, value)
            if old.kind == "tensor":
                self.write(old, node)  # `x += 1` on a tensor writes in place
                grad = NO if self.no_grad else max(old.grad, _grad_of(value))
                new = tensor(
                    grad,
                    leaf=old.leaf,
                    param=old.param,
                    zero_dim=old.zero_dim,
                    loss=old.loss,
                    storage=old.storage,
                    inputs=(old, value) if grad and value.kind == "tensor" else (old,),
                )
                self.bind(target.id, new)
                if used_grad:
                    self.event("update", node, target.id)
            else:
                result = torch_model.binary_op(self, node, node.op, old, value)
                self.bind(target.id, result)
        elif isinstance(target, ast.Attribute):
            receiver = self._use(target.value, ATTRIBUTE, target)
            self._attribute_hooks(target, receiver, AUG_STORE, node)
            current = torch_model.attribute_of(receiver, target.attr)
            for handler in self.hooks.get("on_aug_assign", ()):
                handler(self, node, current, value)
            if current.kind == "tensor":
                self.write(current, node)
            if used_grad:
                self.event("update", node, dotted(target))
        elif isinstance(target, ast.Subscript):
            base = self._subscript_write(target)
            if used_grad and base.kind != "unknown":
                self.event("update", node, dotted(target.value))

    def _if(self, node: ast.If) -> None:
        self.ev(node.test)
        self._branches([node.body, node.orelse])

    def _branches(self, bodies: list[list[ast.stmt]]) -> None:
        """Runs each body on its own copy of the names, then joins what they bound."""
        before = self.env
        outer_assigned = self.branch_assigned
        results = []
        for body in bodies:
            self.env = dict(before)
            self.branch_assigned = set()
            self.run_body(body)
            results.append((self.env, self.branch_assigned))
        merged = dict(results[0][0])
        names = set().union(*(names for _, names in results))
        for name in names:
            joined = None
            for env, _ in results:
                value = env.get(name) or before.get(name) or UNKNOWN
                joined = value if joined is None else join(joined, value)
            merged[name] = joined  # type: ignore[assignment]
        self.env = merged
        self.branch_assigned = outer_assigned
        if outer_assigned is not None:
            outer_assigned.update(names)

    def _for(self, node: ast.For) -> None:
        iterable = self.ev(node.iter)
        before = dict(self.env)
        frame = LoopFrame(node, self.loop)
        self.loop = frame
        self._bind_target(node.target, iterable.element())
        self.run_body(node.body)
        self._end_loop(frame, before)
        self.run_body(node.orelse)

    def _while(self, node: ast.While) -> None:
        self.ev(node.test)
        before = dict(self.env)
        frame = LoopFrame(node, self.loop)
        self.loop = frame
        self.run_body(node.body)
        self._end_loop(frame, before)
        self.run_body(node.orelse)

    def _end_loop(self, frame: LoopFrame, before: dict[str, Value]) -> None:
        for handler in self.hooks.get("on_loop_end", ()):
            handler(self, frame)
        self.loop = frame.parent
        if self.loop is not None:
            self.loop.events.extend(frame.events)
            for name, reads in frame.carried_reads.items():
                if name not in self.loop.assigned:
                    self.loop.carried_reads[name] = self.loop.carried_reads.get(name, 0) + reads
            self.loop.assigned.update(frame.assigned)
        for name in frame.assigned:  # after the loop: as before it, or as after its body
            previous = before.get(name)
            if previous is not None and name in self.env:
                self.env[name] = join(previous, self.env[name])
        if self.branch_assigned is not None:
            self.branch_assigned.update(frame.assigned)

    def _with(self, node: ast.With) -> None:
        no_grad = self.no_grad
        for item in node.items:
            context = item.context_expr
            self.ev(context)
            switch = _grad_context(self, context)
            if switch is not None:
                self.no_grad = switch
            if item.optional_vars is not None:
                self._bind_target(item.optional_vars, UNKNOWN)
        self.run_body(node.body)
        self.no_grad = no_grad

    def _function_def(self, node: ast.FunctionDef) -> None:
        no_grad = 0
        for decorator in node.decorator_list:
            self.ev(decorator)
            if _grad_context(self, decorator) or self._callee_qual(decorator) in _NO_GRAD:
                no_grad = 1
        info = FunctionInfo(node, returns_tensor_list=_returns_tensor_list(node.returns))
        forwarded = _wrapped_variable(self, node)
        if forwarded is not None:
            info.volatile_keyword = forwarded
        if node.name == "Variable" and forwarded_to_variable(self, node):
            info.alias_of = "torch.autograd.Variable"  # `def Variable(x): return V(x).cuda()`
        self.bind(node.name, Value("function", info=info))
        self.pending.append(
            _Pending(node, (self.env, *self.outer), None, no_grad, self.unit, self.source)
        )

    def _class_def(self, node: ast.ClassDef) -> None:
        is_module = False
        for base in node.bases:
            value = self.ev(base)
            is_module = is_module or _is_module_class(value)
        for decorator in node.decorator_list:
            self.ev(decorator)
        info = ClassInfo(node, is_module=is_module)
        for base in node.bases:  # a subclass starts from what its base's __init__ set
            value = self.lookup(base.id) if isinstance(base, ast.Name) else UNKNOWN
            if value.kind == "class" and isinstance(value.info, ClassInfo):
                info.attributes.update(value.info.attributes)
        self.bind(node.name, Value("class", info=info))
        outer = (self.env, *self.outer)
        methods = [
            statement
            for statement in node.body
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        saved = self.env, self.outer, self.cls, self.branch_assigned
        self.env, self.outer, self.cls, self.branch_assigned = {}, outer, info, None
        for statement in node.body:  # the class body: attributes and nested classes
            if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                handler = self._statements.get(statement.__class__)
                if handler is not None:
                    handler(statement)
        self.env, self.outer, self.cls, self.branch_assigned = saved
        for method in methods:
            if method.name == "__init__":
                self._run_function(_Pending(method, outer, info, 0, self.unit, self.source))
        for method in methods:
            if method.name != "__init__":
                no_grad = int(any(_grad_context(self, d) for d in method.decorator_list))
                self.pending.append(_Pending(method, outer, info, no_grad, self.unit, self.source))

    def _run_function(self, pending: _Pending) -> None:
        node = pending.node
        saved = (
            self.env,
            self.outer,
            self.scope,
            self.loop,
            self.no_grad,
            self.cls,
            self.branch_assigned,
            self.display,
            self.unit,
            self.source,
        )
        self.unit, self.source = pending.unit, pending.source
        self.env, self.outer, self.loop = {}, pending.outer, None
        self.no_grad, self.branch_assigned, self.display = pending.no_grad, None, 0
        self.scope = Scope(node=node)
        cls = pending.cls
        if cls is not None and getattr(node, "name", "") != "__init__":
            # Each method starts from what __init__ set; its own changes stay its own.
            cls = ClassInfo(cls.node, cls.is_module, dict(cls.attributes))
        self.cls = cls
        arguments = node.args  # type: ignore[attr-defined]
        positional = [*arguments.posonlyargs, *arguments.args]
        for index, argument in enumerate(positional + arguments.kwonlyargs):
            if index == 0 and cls is not None and not _is_static(node):
                kind = "module" if cls.is_module else "instance"
                self.env[argument.arg] = Value(kind, info=cls, flags=PARAMS if cls.is_module else 0)
            else:
                self.env[argument.arg] = UNKNOWN
        for extra in (arguments.vararg, arguments.kwarg):
            if extra is not None:
                self.env[extra.arg] = UNKNOWN
        if isinstance(node, ast.Lambda):
            self.ev(node.body)
        else:
            self.run_body(node.body)  # type: ignore[attr-defined]
        self._end_scope()
        (
            self.env,
            self.outer,
            self.scope,
            self.loop,
            self.no_grad,
            self.cls,
            self.branch_assigned,
            self.display,
            self.unit,
            self.source,
        ) = saved

    def _return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.ev(node.value)
            self.scope.returned.update(_names_in(node.value))

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self.bind(alias.asname, ref(alias.name))
            else:
                top = alias.name.split(".", 1)[0]
                self.bind(top, ref(top))

    def _import_from(self, node: ast.ImportFrom) -> None:
        if node.level or node.module is None:
            for alias in node.names:
                self.bind(alias.asname or alias.name, UNKNOWN)
            return
        for alias in node.names:
            if alias.name != "*":
                self.bind(alias.asname or alias.name, ref(f"{node.module}.{alias.name}"))

    def _try(self, node: ast.Try) -> None:
        self.run_body(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self.ev(handler.type)
            if handler.name:
                self.bind(handler.name, OBJECT)
            self.run_body(handler.body)
        self.run_body(node.orelse)
        self.run_body(node.finalbody)

    def _assert(self, node: ast.Assert) -> None:
        self.display += 1
        self.ev(node.test)
        if node.msg is not None:
            self.ev(node.msg)
        self.display -= 1

    def _raise(self, node: ast.Raise) -> None:
        if node.exc is not None:
            self.ev(node.exc)

    def _delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.env.pop(target.id, None)
            else:
                self.ev(target)

    def _match(self, node: ast.Match) -> None:
        self.ev(node.subject)
        self._branches([case.body for case in node.cases])

    # ---- expressions ------------------------------------------------------------------------

    def ev(self, node: ast.AST) -> Value:
        """The value of an expression, after telling the rules about its parts."""
        handler = self._expressions.get(node.__class__)
        return handler(node) if handler is not None else UNKNOWN

    def _name(self, node: ast.Name) -> Value:
        name = node.id
        if self.reads is not None:
            self.reads.add(name)
        loop = self.loop
        if loop is not None and name not in loop.assigned:
            loop.carried_reads[name] = loop.carried_reads.get(name, 0) + 1
        return self.lookup(name)

    def _constant(self, node: ast.Constant) -> Value:
        value = node.value
        if isinstance(value, bool | int | float | complex):
            return NUMBER
        if isinstance(value, str | bytes):
            return STRING
        return NONE if value is None else OBJECT

    def _child_value(self, node) -> Value:
        self.ev(node.value)
        return UNKNOWN

    def _yield(self, node: ast.Yield) -> Value:
        if node.value is not None:
            self.ev(node.value)
        return UNKNOWN

    def _starred(self, node: ast.Starred) -> Value:
        return self.ev(node.value)

    def _slice(self, node: ast.Slice) -> Value:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.ev(part)
        return OBJECT

    def _use(self, node: ast.AST, use: int, parent: ast.AST) -> Value:
        """The value of ``node``, telling an attribute (through subscripts) how it is used."""
        kind = node.__class__
        if kind is ast.Attribute:
            return self._attribute(node, use, parent)
        if kind is ast.Subscript and use in (SUBSCRIPT_STORE, METHOD, AUG_STORE, STORE):
            inner = SUBSCRIPT_STORE if use != METHOD else METHOD
            base = self._use(node.value, inner, parent if use == METHOD else node)
            self.ev(node.slice)
            return _subscript_value(base, node)
        return self.ev(node)

    def _attribute_load(self, node: ast.Attribute) -> Value:
        return self._attribute(node, LOAD, node)

    def _attribute(self, node: ast.Attribute, use: int, parent: ast.AST) -> Value:
        base = node.value
        receiver = (
            self._use(base, ATTRIBUTE, node) if base.__class__ is ast.Attribute else self.ev(base)
        )
        attribute = node.attr
        if attribute == "grad":
            self.grad_reads += 1
        if base.__class__ is ast.Name:
            self.scope.attribute_reads.add(base.id)
        if attribute in self.attribute_hooks:
            self._attribute_hooks(node, receiver, use, parent)
        return torch_model.attribute_of(receiver, attribute)

    def _attribute_hooks(self, node: ast.Attribute, receiver: Value, use: int, parent) -> None:
        for family in self.attribute_hooks.get(node.attr, ()):
            family.on_attribute(self, node, receiver, use, parent)

    def _subscript_load(self, node: ast.Subscript) -> Value:
        base = self._use(node.value, SUBSCRIPT_LOAD, node)
        self.ev(node.slice)
        for handler in self.hooks.get("on_subscript", ()):
            handler(self, node, base, False)
        return _subscript_value(base, node)

    def _call(self, node: ast.Call) -> Value:
        func = node.func
        receiver = None
        method = None
        if func.__class__ is ast.Attribute:
            method = func.attr
            receiver = self._use(func.value, METHOD, node)
            if method == "grad":
                self.grad_reads += 1
            callee = torch_model.attribute_of(receiver, method)
        else:
            callee = self.ev(func)
        display = func.__class__ is ast.Name and func.id in _DISPLAY_CALLS
        if display:
            self.display += 1
        args = [self.ev(arg) for arg in node.args]
        keywords = {keyword.arg: self.ev(keyword.value) for keyword in node.keywords}
        if display:
            self.display -= 1
        qual = callee.qual if callee.kind == "ref" else None
        aliased = False
        if qual is None and callee.kind == "function" and callee.info is not None:
            qual = callee.info.alias_of  # type: ignore[union-attr]
            aliased = qual is not None
        result = self._call_result(node, callee, qual, receiver, method, args, keywords)
        if qual is None and callee.kind == "function" and callee.info.volatile_keyword:  # type: ignore[union-attr]
            qual, aliased = VOLATILE_WRAPPER, True
        families = self.call_quals.get(qual) if qual is not None else None
        by_method = self.call_methods.get(method) if method is not None else None
        if families or by_method:
            site = CallSite(node, callee, qual, aliased, receiver, method, args, keywords)
            for family in families or ():
                family.on_call(self, site, result)
            for family in by_method or ():
                if not families or family not in families:
                    family.on_call(self, site, result)
        return result

    def _call_result(
        self,
        node: ast.Call,
        callee: Value,
        qual: str | None,
        receiver: Value | None,
        method: str | None,
        args: list[Value],
        keywords: dict,
    ) -> Value:
        """What the call returns, and what it does (backward, a write, a step)."""
        if receiver is not None and method is not None:
            result = self._method_call(node, receiver, method, args, keywords)
            if result is not None:
                return result
        if qual is not None:
            if qual.startswith("torch."):
                if qual in ("torch.autograd.backward", "torch.autograd.grad"):
                    target = node.args[0] if node.args else None
                    self.backward(args[0] if args else UNKNOWN, node, target)
                return torch_model.torch_call(self, node, qual, args, keywords)
            if qual.startswith(torch_model.NOT_TORCH_PACKAGES):
                return OBJECT
            return UNKNOWN
        kind = callee.kind
        if kind == "module":
            return torch_model.module_call(self, node, callee, args)
        if kind == "class" and callee.info is not None:
            info = callee.info
            if info.is_module:  # type: ignore[union-attr]
                return Value("module", info=info, flags=PARAMS)
            return Value("instance", info=info)
        if kind == "function" and callee.info is not None:
            if callee.info.returns_tensor_list:  # type: ignore[union-attr]
                # Tensors made from the arguments: requiring grad as the arguments do.
                grad = NO if self.no_grad else max((_grad_of(a) for a in args), default=MAYBE)
                return list_of(tensor(grad))
            return UNKNOWN
        if kind == "unknown":
            name = terminal_name(node.func)
            if name is None:
                return UNKNOWN
            if node.func.__class__ is ast.Name:
                builtin = torch_model.builtin_call(name, args)
                if builtin is not None and name not in self.env:
                    return builtin
            lowered = name.lower()
            if "criterion" in lowered or lowered in _LOSS_CALLEES:
                return torch_model.compute(self, node, "loss", args, zero_dim=True, loss=True)
            if torch_model.is_model_name(name) or name == "forward" or _self_call(node.func):
                return Value("unknown", grad=MAYBE, flags=MODEL_OUTPUT)
        return UNKNOWN

    def _method_call(
        self, node: ast.Call, receiver: Value, method: str, args: list[Value], keywords: dict
    ) -> Value | None:
        kind = receiver.kind
        target = node.func.value  # type: ignore[attr-defined]
        loop = self.loop
        if (
            method in ("detach", "detach_")
            and loop is not None
            and isinstance(target, ast.Name)
            and loop.carried_reads.get(target.id)
            and target.id not in loop.assigned
        ):
            loop.carried_reads[target.id] -= 1  # `h.detach()`: the read cuts the graph
        if method == "backward":
            if kind not in ("tensor", "unknown") and node.args:  # accelerator.backward(loss)
                self.backward(args[0], node, node.args[0])
            else:
                self.backward(receiver, node, target)
            return NONE
        if method == "zero_grad":
            self.event("zero", node, dotted(target)).module = kind == "module"
            return NONE
        if method == "step":
            if _is_optimizer(receiver, target):
                step = self.event("step", node, dotted(target))
                # An optimiser made in this iteration steps tensors of this iteration.
                step.fresh = isinstance(target, ast.Name) and self._assigned_here(target.id)
                return NONE
            if node.args and _is_optimizer(args[0], node.args[0]):  # scaler.step(optimizer)
                self.event("step", node, dotted(node.args[0]))
                return NONE
        if torch_model.is_inplace_method(method) and kind in ("tensor", "unknown"):
            self._inplace_method(node, receiver, method, args)
            return receiver
        if kind == "module":
            if method in ("parameters",):
                return list_of(tensor(YES, leaf=True, param=True))
            if method == "named_parameters":
                return list_of(Value("tuple", items=(STRING, tensor(YES, leaf=True, param=True))))
            if method in ("forward", "__call__"):
                return torch_model.module_call(self, node, receiver, args)
            if method in ("to", "cuda", "cpu", "train", "eval", "double", "float", "half"):
                return receiver
            return UNKNOWN
        if kind in ("list", "tuple"):
            if method in ("append", "extend", "insert"):
                added = args[-1] if args else UNKNOWN
                if method == "extend":
                    added = added.element()
                element = receiver.element()
                merged = (
                    added if receiver.item is None and not receiver.items else join(element, added)
                )
                self.rebind(node.func.value, list_of(merged))  # type: ignore[attr-defined]
                return NONE
            if method == "pop":
                return receiver.element()
            return None
        if kind == "tensor" or kind == "unknown":
            if kind == "unknown" and method not in torch_model.MATH | torch_model.VIEWS:
                if method in torch_model.FULL_REDUCTIONS and not node.args:
                    return torch_model.compute(self, node, method, [receiver], zero_dim=True)
                if method not in ("item", "detach", "clone", "cpu", "cuda", "to", "numpy"):
                    return None
            result = torch_model.tensor_method(self, node, receiver, method, args)
            if method == "requires_grad_" and result is not None:
                self.rebind(node.func.value, result)  # type: ignore[attr-defined]
            return result
        return None

    def _inplace_method(
        self, node: ast.Call, receiver: Value, method: str, args: list[Value]
    ) -> None:
        """``x.add_(...)``: a write into x; ``x.grad.zero_()`` zeroes a gradient."""
        target = node.func.value  # type: ignore[attr-defined]
        if _ends_with_grad(target):
            if method in ("zero_", "fill_", "detach_", "mul_"):
                self.event("zero", node, dotted(target))
            return
        used_grad = any(_reads_grad(arg) for arg in node.args) or any(
            _reads_grad(keyword.value) for keyword in node.keywords
        )
        if receiver.kind == "tensor":
            self.write(receiver, node)
            grad = max(receiver.grad, max((_grad_of(a) for a in args), default=NO))
            if not self.no_grad and grad > receiver.grad:
                self.rebind(target, tensor(grad, storage=receiver.storage, inputs=(receiver,)))
            op = method[:-1]
            if not self.no_grad and receiver.grad == YES and op in torch_model.SAVES_RESULT:
                computed = torch_model.compute(self, node, op, [receiver, *args])
                computed.storage = receiver.storage
                for save in computed.saves:
                    save.storage = receiver.storage
                    save.version = receiver.storage.version if receiver.storage else 0
                self.rebind(target, computed)
        if used_grad:
            self.event("update", node, dotted(target))

    def _bin_op(self, node: ast.BinOp) -> Value:
        left = self.ev(node.left)
        right = self.ev(node.right)
        return torch_model.binary_op(self, node, node.op, left, right)

    def _unary_op(self, node: ast.UnaryOp) -> Value:
        operand = self.ev(node.operand)
        if operand.kind == "tensor":
            if isinstance(node.op, ast.Not):
                return NUMBER
            return torch_model.compute(self, node, "neg", [operand], zero_dim=operand.zero_dim)
        return operand if operand.kind == "number" else UNKNOWN

    def _bool_op(self, node: ast.BoolOp) -> Value:
        values = [self.ev(value) for value in node.values]
        result = values[0]
        for value in values[1:]:
            result = join(result, value)
        return result

    def _compare(self, node: ast.Compare) -> Value:
        left = self.ev(node.left)
        tensors = left.kind == "tensor"
        for comparator in node.comparators:
            tensors = self.ev(comparator).kind == "tensor" or tensors
        if tensors and not isinstance(node.ops[0], ast.Is | ast.IsNot | ast.In | ast.NotIn):
            return tensor(NO)
        return NUMBER

    def _sequence(self, node: ast.List | ast.Tuple | ast.Set) -> Value:
        items = tuple(self.ev(element) for element in node.elts)
        kind = "tuple" if node.__class__ is ast.Tuple else "list"
        if any(element.__class__ is ast.Starred for element in node.elts):
            return Value(kind, item=join_items(items))
        return Value(kind, items=items, item=join_items(items))

    def _dict(self, node: ast.Dict) -> Value:
        self.display += 1  # a value stored by name, not computed with
        for key in node.keys:
            if key is not None:
                self.ev(key)
        for value in node.values:
            self.ev(value)
        self.display -= 1
        return OBJECT

    def _comprehension(self, node) -> Value:
        saved = self.env, self.outer, self.branch_assigned
        self.outer = (self.env, *self.outer)
        self.env, self.branch_assigned = {}, None
        for generator in node.generators:
            iterable = self.ev(generator.iter)
            self._bind_target(generator.target, iterable.element())
            for condition in generator.ifs:
                self.ev(condition)
        if isinstance(node, ast.DictComp):
            self.ev(node.key)
            self.ev(node.value)
            element = OBJECT
        else:
            element = self.ev(node.elt)
        self.env, self.outer, self.branch_assigned = saved
        if isinstance(node, ast.DictComp):
            return OBJECT
        return list_of(element, "list")

    def _if_exp(self, node: ast.IfExp) -> Value:
        self.ev(node.test)
        return join(self.ev(node.body), self.ev(node.orelse))

    def _lambda(self, node: ast.Lambda) -> Value:
        self.pending.append(
            _Pending(node, (self.env, *self.outer), self.cls, self.no_grad, self.unit, self.source)
        )
        return Value("function", info=FunctionInfo(node))

    def _joined_str(self, node: ast.JoinedStr) -> Value:
        self.display += 1
        for value in node.values:
            self.ev(value)
        self.display -= 1
        return STRING

    def _formatted_value(self, node: ast.FormattedValue) -> Value:
        self.ev(node.value)
        if node.format_spec is not None:
            self.ev(node.format_spec)
        return STRING

    def _named_expr(self, node: ast.NamedExpr) -> Value:
        value = self.ev(node.value)
        self.bind(node.target.id, value)
        return value

    def _callee_qual(self, func: ast.AST) -> str | None:
        """The qualified name a callee expression resolves to, without running it."""
        if isinstance(func, ast.Call):
            func = func.func
        name = dotted(func)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        value = self.lookup(head)
        if value.kind == "function" and value.info is not None and not rest:
            return value.info.alias_of  # type: ignore[union-attr]
        if value.kind != "ref":
            return None
        return f"{value.qual}.{rest}" if rest else value.qual


def join_items(items: tuple[Value, ...]) -> Value | None:
    """The join of a literal's elements (None for an empty literal)."""
    if not items:
        return None
    result = items[0]
    for item in items[1:]:
        result = join(result, item)
    return result


def _grad_of(value: Value) -> int:
    if value.kind == "tensor":
        return value.grad
    return MAYBE if value.kind == "unknown" else NO


def _is_module_class(value: Value) -> bool:
    """A base class that makes a model: an ``nn`` class, or a model class of the code."""
    if value.kind == "ref":
        return (value.qual or "").startswith("torch.nn.")
    return value.kind == "class" and isinstance(value.info, ClassInfo) and value.info.is_module


def _subscript_value(base: Value, node: ast.Subscript) -> Value:
    """``base[i]``: a view of a tensor, an element of a list."""
    kind = base.kind
    if kind == "tensor":
        index = node.slice
        view = isinstance(index, ast.Slice | ast.Constant | ast.Tuple) or (
            isinstance(index, ast.UnaryOp) and isinstance(index.operand, ast.Constant)
        )
        return tensor(
            base.grad,
            storage=base.storage if view else None,
            inputs=(base,) if base.grad else (),
        )
    if kind in ("list", "tuple"):
        index = node.slice
        if (
            base.items is not None
            and isinstance(index, ast.Constant)
            and isinstance(index.value, int)
            and -len(base.items) <= index.value < len(base.items)
        ):
            return base.items[index.value]
        if isinstance(index, ast.Slice):
            return base
        return base.element()
    if kind == "object" and base.flags:
        return UNKNOWN
    return UNKNOWN


def _names_in(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _literal(node: ast.AST | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _is_grad_switch(an: Analyzer, call: ast.Call) -> bool:
    """``torch.set_grad_enabled(False)`` as a statement (grad mode off from here on)."""
    return an._callee_qual(call.func) == "torch.set_grad_enabled" and bool(call.args)


def _grad_context(an: Analyzer, node: ast.AST) -> int | None:
    """1 for a context that turns grad mode off, 0 for one that turns it on, else None."""
    if not isinstance(node, ast.Call):
        return 1 if an._callee_qual(node) in _NO_GRAD else None
    qual = an._callee_qual(node.func)
    if qual in _NO_GRAD:
        if qual.endswith("inference_mode") and node.args and _literal(node.args[0]) is False:
            return 0
        return 1
    if qual == "torch.enable_grad":
        return 0
    if qual == "torch.set_grad_enabled" and node.args:
        flag = _literal(node.args[0])
        return 1 if flag is False else (0 if flag is True else None)
    return None


def _is_optimizer(receiver: Value, node: ast.AST) -> bool:
    """An optimiser: made by torch.optim, or named like one (not a scheduler)."""
    if receiver.flags & OPTIMIZER:
        return True
    if receiver.kind not in ("unknown", "object"):
        return False
    name = (terminal_name(node) or "").lower()
    if "sched" in name:
        return False
    return (
        "optim" in name
        or name in ("opt", "opt_g", "opt_d", "g_opt", "d_opt")
        or (name.startswith("opt") and len(name) <= 5)
    )


def _ends_with_grad(node: ast.AST) -> bool:
    """``p.grad`` or ``p.grad.data``: a gradient, as a zeroing write reaches it."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _reads_grad(node: ast.AST) -> bool:
    return any(
        isinstance(child, ast.Attribute) and child.attr == "grad" for child in ast.walk(node)
    )


def _self_call(func: ast.AST) -> bool:
    """``self.net(x)``: a call of the model's own layer or sub-model."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and not func.attr.startswith("_")
    )


def _is_static(node: ast.AST) -> bool:
    return any(
        isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod")
        for decorator in getattr(node, "decorator_list", ())
    )


def _returns_tensor_list(annotation: ast.AST | None) -> bool:
    """``-> list[Tensor]`` (or tuple, Sequence; any spelling of Tensor)."""
    if not isinstance(annotation, ast.Subscript):
        return False
    container = terminal_name(annotation.value) or ""
    if container.lower() not in ("list", "tuple", "sequence"):
        return False
    return any(
        isinstance(child, ast.Name | ast.Attribute) and terminal_name(child) == "Tensor"
        for child in ast.walk(annotation.slice)
    )


def _forwarded_call(node: ast.AST) -> ast.Call | None:
    """The call a wrapper's result comes from: ``V(x).cuda()``, ``a if c else V(x)``."""
    while True:
        if isinstance(node, ast.IfExp):
            node = node.body if isinstance(node.body, ast.Call) else node.orelse
            continue
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
            node = func.value  # `.cuda()`, `.to(device)` after the wrapped call
            continue
        return node


def forwarded_to_variable(an: Analyzer, node: ast.FunctionDef) -> bool:
    """A function whose every return gives ``Variable(...)`` (maybe moved): an alias."""
    returns = [s for s in node.body if isinstance(s, ast.Return) and s.value is not None]
    return bool(returns) and all(
        (call := _forwarded_call(r.value)) is not None  # type: ignore[arg-type]
        and an._callee_qual(call.func) in _VARIABLE
        for r in returns
    )


def _wrapped_variable(an: Analyzer, node: ast.FunctionDef) -> str | None:
    """For ``def to_var(x, volatile=False): return Variable(x, volatile=volatile)``, the keyword.

    Only short functions are read (a wrapper is a few lines); the keyword is the
    function's parameter that it hands on as ``volatile=``.
    """
    if len(node.body) > 6:
        return None
    parameters = {argument.arg for argument in node.args.args + node.args.kwonlyargs}
    for statement in node.body:
        inner = statement.body + statement.orelse if isinstance(statement, ast.If) else [statement]
        candidates = [
            each.value
            for each in inner
            if isinstance(each, ast.Return | ast.Assign) and each.value is not None
        ]
        for candidate in candidates:
            call = _forwarded_call(candidate)
            if call is None or an._callee_qual(call.func) not in _VARIABLE:
                continue
            volatile = _keyword(call, "volatile")
            if isinstance(volatile, ast.Name) and volatile.id in parameters:
                return volatile.id
    return None
