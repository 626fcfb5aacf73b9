"""Every private API of torch this package relies on, in one place.

The helpers need things torch does not promise to keep: a dispatch mode sees each aten
op with its schema (``track_inplace`` finds in-place writes, ``on_meta`` finds a CPU
tensor mixed with a meta one), and the graph walk reads what each backward node saved
through its ``_raw_saved_<name>`` / ``_saved_<name>`` accessors. They are reached here
only, and ``tests/test_compat.py`` checks each one on the installed torch, so that an
upgrade that moves or renames one fails there, loudly, rather than somewhere in a
notebook. (``Tensor._version``, the version counter, is what notebook 02 teaches: it is
used as the course uses it.)
"""

from __future__ import annotations

from typing import Any

from torch._ops import OpOverload
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = [
    "CHECKED_SAVED_PREFIX",
    "RAW_SAVED_PREFIX",
    "OpOverload",
    "TorchDispatchMode",
    "op_arguments",
    "op_name",
    "tree_leaves",
]

# A backward node exposes each tensor it saved twice: ``_raw_saved_<x>`` (a SavedTensor
# whose .data is the tensor, unchecked) and ``_saved_<x>`` (unpacked with backward()'s
# version check).
RAW_SAVED_PREFIX = "_raw_saved_"
CHECKED_SAVED_PREFIX = "_saved_"


def op_name(func: OpOverload) -> str:
    """Returns an aten op's name without namespace and overload, for example ``add_``."""
    return func._opname


def op_arguments(func: OpOverload) -> list[Any]:
    """Returns the arguments of an aten op's schema (``name``, ``alias_info``, ...)."""
    return list(func._schema.arguments)
