"""What every lint rule shares: the rule's identity, a finding, and the LibCST visitor base.

The design is TorchFix's: each rule family is a LibCST ``BatchableCSTVisitor`` that resolves
names through imports and aliases with LibCST's ``QualifiedNameProvider`` (so ``Variable``,
``torch.autograd.Variable`` and ``from torch.autograd import Variable as V`` are one name),
records findings, and may attach a replacement node: the codemod that ``--fix`` applies.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m
from libcst.metadata import (
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    QualifiedNameSource,
    ScopeProvider,
)

from autograd_pitfalls.lint.bindings import Bindings, collect_bindings
from autograd_pitfalls.pitfalls import PITFALLS

__all__ = ["Finding", "PitfallVisitor", "Rule", "Violation", "is_loss_name"]


@dataclass(frozen=True)
class Rule:
    """One check: its code, the pitfall it points to, and whether it runs by default.

    Attributes:
        code: The code shown and selected, for example ``"AGP101"``.
        pitfall: A key of :data:`autograd_pitfalls.pitfalls.PITFALLS`.
        message: The one sentence every finding of this rule prints.
        on_by_default: False for a rule not precise enough to run unless selected.
        why_off: For a rule off by default, why (shown by ``--list-rules``).
    """

    code: str
    pitfall: str
    message: str
    on_by_default: bool = True
    why_off: str = ""

    def __post_init__(self) -> None:
        if self.pitfall not in PITFALLS:
            raise ValueError(f"{self.code}: unknown pitfall key {self.pitfall!r}")

    @property
    def notebook(self) -> str:
        """The assignment id of the notebook that teaches this rule's pitfall."""
        return PITFALLS[self.pitfall].notebook


@dataclass(frozen=True)
class Finding:
    """One place where a rule matched.

    Attributes:
        path: The file checked (``"<cell>"`` for code given as a string).
        line: 1-based line; in a notebook, the line within the cell.
        column: 1-based column, as flake8 counts.
        code: The rule's code.
        message: One sentence saying what is wrong and what to do.
        pitfall: The pitfall's key (see ``autograd_pitfalls.pitfalls``).
        notebook: The notebook that teaches the pitfall.
        cell: In a notebook, the id of the code cell; otherwise None.
        fixable: True when ``--fix`` rewrites this finding.
    """

    path: str
    line: int
    column: int
    code: str
    message: str
    pitfall: str
    notebook: str
    cell: str | None = None
    fixable: bool = False

    @property
    def location(self) -> str:
        """``path:line:col``, or ``path:cell:line:col`` in a notebook (as ruff writes it)."""
        cell = f"{self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    def flake8_line(self) -> str:
        """The finding in flake8's format, with the pitfall's key and notebook at the end."""
        fix = " [*]" if self.fixable else ""
        return (
            f"{self.location}: {self.code}{fix} {self.message} "
            f"[{self.pitfall}, taught in {self.notebook}]"
        )

    def as_dict(self) -> dict[str, object]:
        """The finding as plain data, for ``--format json``."""
        return {
            "path": self.path,
            "cell": self.cell,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": self.message,
            "pitfall": self.pitfall,
            "notebook": self.notebook,
            "fixable": self.fixable,
        }


@dataclass
class Violation:
    """A finding as a visitor records it: the node, the rule, and the optional fix.

    ``replaces`` is the node the fix replaces when it is not the node reported (a note
    added to the statement that holds the reported argument).
    """

    rule: Rule
    node: cst.CSTNode
    line: int
    column: int
    replacement: cst.CSTNode | None = None
    replaces: cst.CSTNode | None = None


# A name that holds a loss: `loss`, `total_loss`, `g_loss`, `lossD`, `val_loss`, not `losses`.
_LOSS_NAME = re.compile(r"(^|_)loss(_?[a-z0-9]{0,2})?$|^loss", re.IGNORECASE)


def is_loss_name(name: str) -> bool:
    """True for a name that by its spelling holds one loss value (not a list of them)."""
    return bool(_LOSS_NAME.search(name)) and not name.lower().endswith(("losses", "loss_fn"))


def terminal_name(node: cst.BaseExpression) -> str | None:
    """The last name of ``a``, ``a.b`` or ``self.b``; None for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a`` or ``a.b.c`` as text (a way to compare targets); None for anything else."""
    return (
        cst.helpers.get_full_name_for_node(node)
        if m.matches(node, m.Name() | m.Attribute())
        else None
    )


_VISITOR_METHODS: dict[type, tuple[str, ...]] = {}


class PitfallVisitor(cst.BatchableCSTVisitor):
    """The base of every rule family (TorchFix's ``TorchVisitor``).

    Subclasses list their rules in ``RULES`` and call :meth:`report`.
    """

    METADATA_DEPENDENCIES = (
        QualifiedNameProvider,
        PositionProvider,
        ParentNodeProvider,
        ScopeProvider,
    )
    RULES: tuple[Rule, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        self.violations: list[Violation] = []
        self._bindings: dict[int, Bindings] = {}

    def get_visitors(self) -> dict[str, Callable[..., object]]:
        """The ``visit_*``/``leave_*`` methods the batched walk calls, found once per class.

        LibCST's default inspects every member of the instance, the hundreds of typed stubs
        included, for each visitor of each file; the rule classes' own methods are enough.
        """
        cls = type(self)
        if cls not in _VISITOR_METHODS:
            _VISITOR_METHODS[cls] = tuple(
                name
                for klass in cls.__mro__
                if issubclass(klass, PitfallVisitor)
                for name in vars(klass)
                if name.startswith(("visit_", "leave_"))
            )
        return {name: getattr(self, name) for name in _VISITOR_METHODS[cls]}

    def report(
        self,
        node: cst.CSTNode,
        rule: Rule,
        replacement: cst.CSTNode | None = None,
        replaces: cst.CSTNode | None = None,
    ) -> None:
        """Records a finding of ``rule`` at ``node``, with an optional codemod replacement.

        Args:
            node: Where the finding is (its line and column).
            rule: The rule found.
            replacement: The node that ``--fix`` puts in place of ``replaces``.
            replaces: The node replaced, when it is not ``node`` itself.
        """
        start = self.get_metadata(PositionProvider, node).start
        self.violations.append(
            Violation(rule, node, start.line, start.column + 1, replacement, replaces)
        )

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """The fully qualified names ``node`` may refer to, resolved through imports."""
        try:
            return {q.name for q in self.get_metadata(QualifiedNameProvider, node)}
        except KeyError:  # a node built by a rule, with no metadata
            return set()

    def is_imported(self, node: cst.CSTNode) -> bool:
        """True when ``node`` names a module or an object imported from one (``torch.utils``)."""
        try:
            names = self.get_metadata(QualifiedNameProvider, node)
        except KeyError:
            return False
        return any(q.source is QualifiedNameSource.IMPORT for q in names)

    def refers_to(self, node: cst.CSTNode, *names: str) -> bool:
        """True when ``node`` (a name, an attribute, or a call's callee) is one of ``names``."""
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Call):  # `f(a)(b)`: the outer call is not `f`
                return False
            node = node.func
        return bool(self.qualified_names(node) & set(names))

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node that holds ``node``; None for the module."""
        try:
            return self.get_metadata(ParentNodeProvider, node)
        except KeyError:
            return None

    def ancestors(self, node: cst.CSTNode):
        """Every node that holds ``node``, innermost first."""
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def enclosing_function(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost function around ``node`` (None at module level)."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef | cst.Lambda):
                return ancestor
        return None

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The function whose body holds ``node``, or the module at top level."""
        outermost = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
            outermost = ancestor
        return outermost

    def bindings_for(self, node: cst.CSTNode) -> Bindings:
        """What the names of ``node``'s function (or module) are assigned (read once)."""
        scope = self.scope_of(node)
        if id(scope) not in self._bindings:
            self._bindings[id(scope)] = collect_bindings(scope)
        return self._bindings[id(scope)]

    def under_no_grad(self, node: cst.CSTNode) -> bool:
        """True when ``node`` sits in a ``with torch.no_grad():`` (or inference_mode) block."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.With):
                for item in ancestor.items:
                    if self.refers_to(
                        item.item, "torch.no_grad", "torch.inference_mode", "torch.set_grad_enabled"
                    ):
                        return True
        return False

    def in_loop(self, node: cst.CSTNode) -> bool:
        """True when ``node`` runs in a for or while loop of its own function."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.For | cst.While):
                return True
            if isinstance(ancestor, cst.FunctionDef | cst.ClassDef):
                return False
        return False


def get_arg(call: cst.Call, keyword: str, position: int | None = None) -> cst.Arg | None:
    """The argument given as ``keyword=``, or at ``position`` (0-based) when given so."""
    positional = 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if position is not None and positional == position:
                return arg
            positional += 1
        elif arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    return None


def is_true(node: cst.BaseExpression | None) -> bool:
    """True for the literal ``True``."""
    return isinstance(node, cst.Name) and node.value == "True"
