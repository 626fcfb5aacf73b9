"""An ``nn.Embedding(max_norm=...)`` whose ``.weight`` is read elsewhere (AGP150)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule, dotted_name, get_arg

__all__ = ["EmbeddingMaxNormVisitor"]


class _AssignmentCollector(cst.CSTVisitor):
    """Hands every assignment of a module to a callback (lighter than matchers' findall)."""

    def __init__(self, callback) -> None:
        super().__init__()
        self.callback = callback

    def visit_Assign(self, node: cst.Assign) -> None:
        self.callback(node)


WEIGHT_OF_RENORMED = Rule(
    "AGP150",
    "embedding-renorm-in-forward",
    "This embedding has `max_norm`, so every lookup rescales its weight in place: a use of "
    "`.weight` saved for backward before a lookup goes stale; use `.weight.clone()` there.",
)

# `.weight.<x>` that reads no values a backward() saves: copies, metadata, its gradient.
_NOT_A_USE = frozenset(
    [
        "clone",
        "detach",
        "_version",
        "grad",
        "shape",
        "dtype",
        "device",
        "data",
        "requires_grad",
        "is_leaf",
        "grad_fn",
        "size",
        "dim",
        "numel",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "copy_",
        "requires_grad_",
        "tolist",
    ]
)

_EMBEDDING = ("torch.nn.Embedding", "torch.nn.modules.sparse.Embedding")


class EmbeddingMaxNormVisitor(PitfallVisitor):
    """Collects embeddings made with max_norm, then flags reads of their ``.weight``."""

    RULES = (WEIGHT_OF_RENORMED,)

    def __init__(self) -> None:
        super().__init__()
        self._renormed: set[str] = set()

    def visit_Module(self, node: cst.Module) -> None:
        node.visit(_AssignmentCollector(self._note_assignment))

    def _note_assignment(self, assign: cst.Assign) -> None:
        """Notes the targets of ``x = nn.Embedding(..., max_norm=m)`` (m not None)."""
        call = assign.value
        if not isinstance(call, cst.Call) or not self.refers_to(call, *_EMBEDDING):
            return
        max_norm = get_arg(call, "max_norm", 2)
        if max_norm is None or (
            isinstance(max_norm.value, cst.Name) and max_norm.value.value == "None"
        ):
            return
        for target in assign.targets:
            name = dotted_name(target.target)
            if name is not None:
                self._renormed.add(name)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "weight" or dotted_name(node.value) not in self._renormed:
            return
        parent = self.parent(node)
        if isinstance(parent, cst.AssignTarget) or self.under_no_grad(node):
            return  # a write, or a read under no_grad that no backward will see
        if isinstance(parent, cst.Attribute) and parent.attr.value in _NOT_A_USE:
            return  # a copy (the fix), or metadata that no backward() depends on
        if any(self._is_display(a) for a in self.ancestors(node)):
            return  # printed, asserted or stored by name, not computed with
        self.report(node, WEIGHT_OF_RENORMED)

    def _is_display(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FormattedString | cst.Assert | cst.DictElement):
            return True
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and (node.func.value in {"print", "repr", "str", "id", "len"})
        )
