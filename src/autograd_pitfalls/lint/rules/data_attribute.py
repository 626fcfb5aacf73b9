"""``.data``: reads (AGP101), writes (AGP102), and the legacy ``loss.data[0]`` (AGP103)."""

from __future__ import annotations

import libcst as cst

from autograd_pitfalls.lint.base import PitfallVisitor, Rule, is_loss_name, terminal_name
from autograd_pitfalls.lint.scalars import item_call, zero_dim_like

__all__ = ["DataAttributeVisitor"]

DATA_READ = Rule(
    "AGP101",
    "data-not-detach",
    "`.data` reads a tensor behind autograd's back: use `.detach()`.",
)
DATA_WRITE = Rule(
    "AGP102",
    "hidden-write",
    "A write through `.data` is hidden from autograd's version counter and can give a "
    "silently wrong gradient: write under `with torch.no_grad():` instead.",
)
DATA_INDEX_0 = Rule(
    "AGP103",
    "zero-dim-indexed",
    "`.data[0]` on a 0-dim loss raises IndexError since PyTorch 0.4: use `.item()`.",
)

# Objects whose `.data` is not a tensor's: datasets, configs, modules' own fields.
_NOT_TENSORS = frozenset(
    [
        "self",
        "cls",
        "args",
        "opt",
        "opts",
        "config",
        "cfg",
        "conf",
        "params",
        "hparams",
        "batch",
        "sample",
        "dataset",
        "data",
        "train_data",
        "test_data",
        "val_data",
        "train_set",
        "test_set",
        "val_set",
        "loader",
        "dataloader",
        "corpus",
        "np",
        "numpy",
        "pd",
        "df",
        "request",
        "response",
        "json",
        "yaml",
        "module",
        "model",
        "field",
        "vocab",
        "ctypes",
    ]
)


def _is_data_attribute(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "data"


class DataAttributeVisitor(PitfallVisitor):
    """Finds every ``.data`` on what may be a tensor, and says how it is used."""

    RULES = (DATA_READ, DATA_WRITE, DATA_INDEX_0)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "data" or not self._may_be_tensor(node.value):
            return
        parent = self.parent(node)
        indexed = isinstance(parent, cst.Subscript) and parent.value is node
        if indexed and _index_is_zero(parent) and zero_dim_like(self, node.value):
            self.report(parent, DATA_INDEX_0, replacement=item_call(node.value))
            return
        self.report(node, DATA_WRITE if self._is_written(node) else DATA_READ)

    def _may_be_tensor(self, base: cst.BaseExpression) -> bool:
        name = terminal_name(base)
        if name is not None and (name in _NOT_TENSORS or name.endswith(("dataset", "_set"))):
            return False
        if name is not None and is_loss_name(name):
            return True
        if any(isinstance(a, cst.Import | cst.ImportFrom) for a in self.ancestors(base)):
            return False  # `import torch.utils.data`
        # `torch.utils.data`, `tf.data`: a module path, not an object.
        return not (isinstance(base, cst.Name | cst.Attribute) and self.is_imported(base))

    def _is_written(self, node: cst.Attribute) -> bool:
        current: cst.CSTNode = node
        parent = self.parent(current)
        while isinstance(parent, cst.Subscript) and parent.value is current:  # x.data[i]...
            current, parent = parent, self.parent(parent)
        if isinstance(parent, cst.AssignTarget | cst.AugAssign) and parent.target is current:
            return True
        if isinstance(parent, cst.Attribute) and parent.value is current:
            method = parent.attr.value
            grand = self.parent(parent)
            in_place = method.endswith("_") and not method.startswith("_")
            return in_place and isinstance(grand, cst.Call) and grand.func is parent
        return False


def _index_is_zero(node: cst.Subscript) -> bool:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    value = node.slice[0].slice.value
    return isinstance(value, cst.Integer) and value.value == "0"
