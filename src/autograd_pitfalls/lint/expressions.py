"""The values of expressions, and what calls do: the analysis's expression half.

:class:`ExpressionReader` is the part of the :class:`~autograd_pitfalls.lint.analyzer.Analyzer`
that evaluates an expression to a :class:`~autograd_pitfalls.lint.values.Value`, telling the
rules about the calls and attributes in it on the way: names through the scopes, attributes
(with how the expression around uses them: read, written, called), calls (torch's, methods
of tensors, lists, modules and optimisers, the code's own classes and functions),
operators, literals and comprehensions.
"""

from __future__ import annotations

import ast

from autograd_pitfalls.lint import torch_model
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
    PendingFunction,
    dotted,
    terminal_name,
)
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
    FunctionInfo,
    Value,
    join,
    list_of,
    tensor,
)

__all__ = ["ExpressionReader", "grad_of", "subscript_value"]

_LOSS_CALLEES = frozenset({"loss_fn", "loss_func", "loss_function", "lossfn", "loss"})
_DISPLAY_CALLS = frozenset({"print", "repr", "str", "id", "len", "format"})


class ExpressionReader:
    """Evaluates expressions for the :class:`~autograd_pitfalls.lint.analyzer.Analyzer`.

    A mixin: the names, scopes and hooks it reads are the analyzer's.
    """

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
            return subscript_value(base, node)
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
        return subscript_value(base, node)

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
                grad = NO if self.no_grad else max((grad_of(a) for a in args), default=MAYBE)
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
            if torch_model.is_model_name(name) or name == "forward" or self_call(node.func):
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
            if is_optimizer(receiver, target):
                step = self.event("step", node, dotted(target))
                # An optimiser made in this iteration steps tensors of this iteration.
                step.fresh = isinstance(target, ast.Name) and self._assigned_here(target.id)
                return NONE
            if node.args and is_optimizer(args[0], node.args[0]):  # scaler.step(optimizer)
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
        if ends_with_grad(target):
            if method in ("zero_", "fill_", "detach_", "mul_"):
                self.event("zero", node, dotted(target))
            return
        used_grad = any(reads_grad(arg) for arg in node.args) or any(
            reads_grad(keyword.value) for keyword in node.keywords
        )
        if receiver.kind == "tensor":
            self.write(receiver, node)
            grad = max(receiver.grad, max((grad_of(a) for a in args), default=NO))
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
        outer = (self.env, *self.outer)
        pending = PendingFunction(node, outer, self.cls, self.no_grad, self.unit, self.source)
        self.pending.append(pending)
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


def grad_of(value: Value) -> int:
    """What ``value`` contributes to an op's requires-grad state (unknown: maybe)."""
    if value.kind == "tensor":
        return value.grad
    return MAYBE if value.kind == "unknown" else NO


def subscript_value(base: Value, node: ast.Subscript) -> Value:
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


def is_optimizer(receiver: Value, node: ast.AST) -> bool:
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


def ends_with_grad(node: ast.AST) -> bool:
    """``p.grad`` or ``p.grad.data``: a gradient, as a zeroing write reaches it."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def reads_grad(node: ast.AST) -> bool:
    return any(
        isinstance(child, ast.Attribute) and child.attr == "grad" for child in ast.walk(node)
    )


def self_call(func: ast.AST) -> bool:
    """``self.net(x)``: a call of the model's own layer or sub-model."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and not func.attr.startswith("_")
    )
