"""Reads a program in order, as it runs, and tells the rules what each line does.

One pass over Python's ``ast``: each statement is run abstractly, names are bound to
:class:`~autograd_pitfalls.lint.values.Value`s (imports and aliases included), and the
rules are called on what they watch: calls, attributes, in-place writes, backward(),
the end of a loop, the end of a function. Branches are read each on its own copy of the
names and joined; a loop body is read once, then joined with the state before it.
Expressions are the other half (``expressions.py``).

A function body is read after the code around it (when it is called the module has run),
with its own names; a class's ``__init__`` is read when the class is defined, so that
``self.<name>`` is known in its other methods and on its instances. A notebook is one
program: the state one cell leaves is where the next one starts (:class:`ProgramState`).
"""

from __future__ import annotations

import ast

from autograd_pitfalls.lint import torch_model
from autograd_pitfalls.lint.base import Edit, Rule
from autograd_pitfalls.lint.declarations import (
    NO_GRAD,
    VARIABLE,
    forwarded_call,
    forwarded_to_variable,
    grad_context,
    is_grad_switch,
    is_module_class,
    is_static,
    returns_tensor_list,
    wrapped_variable,
)
from autograd_pitfalls.lint.expressions import ExpressionReader, grad_of
from autograd_pitfalls.lint.program import (
    ATTRIBUTE,
    AUG_STORE,
    LOAD,
    METHOD,
    STORE,
    SUBSCRIPT_LOAD,
    SUBSCRIPT_STORE,
    VOLATILE_WRAPPER,
    CallSite,
    Event,
    LoopFrame,
    PendingFunction,
    ProgramState,
    RawFinding,
    Scope,
    SourceText,
    dotted,
    keyword,
    literal,
    names_in,
    terminal_name,
)
from autograd_pitfalls.lint.values import (
    NO,
    OBJECT,
    PARAMS,
    UNKNOWN,
    ClassInfo,
    FunctionInfo,
    Value,
    join,
    list_of,
    ref,
    tensor,
)

# The program's records, for the rules (they import them from here or from program.py).
__all__ = [
    "ATTRIBUTE",
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
    "terminal_name",
]

TORCH = ref("torch")


# What a function body changes while it is read, put back once it is done.
_FUNCTION_STATE = (
    "env",
    "outer",
    "scope",
    "loop",
    "no_grad",
    "cls",
    "branch_assigned",
    "display",
    "unit",
    "source",
)


class Analyzer(ExpressionReader):
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
        self.pending: list[PendingFunction] = []
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
        roots = names_in(receiver) if receiver is not None else set()
        self.scope.backward_roots.update(roots)
        event = self.event("backward", node, None)
        event.roots = roots
        if isinstance(node, ast.Call):
            retain = keyword(node, "retain_graph")
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
        event = Event(kind, node, receiver, self.unit)
        self.scope.events.append(event)
        if self.loop is not None:
            self.loop.events.append(event)
        return event

    # ---- statements ---------------------------------------------------------------------

    def _expr_statement(self, node: ast.Expr) -> None:
        value = node.value
        if isinstance(value, ast.Call):
            self._call(value)
            if is_grad_switch(self, value):
                self.no_grad = 0 if literal(value.args[0] if value.args else None) else 1
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
        forwarded = forwarded_call(value_node.body)
        if forwarded is not None and self._callee_qual(forwarded.func) in VARIABLE:
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
                grad = NO if self.no_grad else max(old.grad, grad_of(value))
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
            switch = grad_context(self, context)
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
            if grad_context(self, decorator) or self._callee_qual(decorator) in NO_GRAD:
                no_grad = 1
        info = FunctionInfo(node, returns_tensor_list=returns_tensor_list(node.returns))
        forwarded = wrapped_variable(self, node)
        if forwarded is not None:
            info.volatile_keyword = forwarded
        if node.name == "Variable" and forwarded_to_variable(self, node):
            info.alias_of = "torch.autograd.Variable"  # `def Variable(x): return V(x).cuda()`
        self.bind(node.name, Value("function", info=info))
        self.pending.append(
            PendingFunction(node, (self.env, *self.outer), None, no_grad, self.unit, self.source)
        )

    def _class_def(self, node: ast.ClassDef) -> None:
        is_module = False
        for base in node.bases:
            value = self.ev(base)
            is_module = is_module or is_module_class(value)
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
                self._run_function(PendingFunction(method, outer, info, 0, self.unit, self.source))
        for method in methods:
            if method.name != "__init__":
                no_grad = int(any(grad_context(self, d) for d in method.decorator_list))
                pending = PendingFunction(method, outer, info, no_grad, self.unit, self.source)
                self.pending.append(pending)

    def _run_function(self, pending: PendingFunction) -> None:
        node = pending.node
        saved = {name: getattr(self, name) for name in _FUNCTION_STATE}
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
            if index == 0 and cls is not None and not is_static(node):
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
        for name, value in saved.items():
            setattr(self, name, value)

    def _return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.ev(node.value)
            self.scope.returned.update(names_in(node.value))

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
