"""Helpers for the autograd-pitfalls course: draw and diagnose autograd graphs, check exercises.

The helpers need torch; the linter (:mod:`autograd_pitfalls.lint`) does not, and a linter
that imported torch would start in seconds instead of milliseconds. So the helpers are
imported on first use of any of them (PEP 562), or at once when torch is already loaded
(a notebook, the grader's kernels): then nothing is saved by waiting, and every process
that uses torch sees the package exactly as an eager import made it.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from autograd_pitfalls.passline import install as _install_pass_line

if TYPE_CHECKING:  # what the lazy import below provides, for type checkers and editors
    from autograd_pitfalls.checks import (
        assert_grad_close,
        assert_is_leaf,
        assert_version,
        compare,
        devices,
    )
    from autograd_pitfalls.diagnose import Finding, Report, diagnose
    from autograd_pitfalls.expect import expect_error, expect_warning
    from autograd_pitfalls.graph import draw, to_dot
    from autograd_pitfalls.inputs import KeptInputs, assert_inputs_left_alone
    from autograd_pitfalls.observations import TensorSeen
    from autograd_pitfalls.passes import CountForwardProducts
    from autograd_pitfalls.pitfalls import PITFALLS, explain
    from autograd_pitfalls.probe import probe_and_judge
    from autograd_pitfalls.standin import GPU, gpu_standin, on_gpu, to_gpu, to_host
    from autograd_pitfalls.torch_state import reset_torch_settings
    from autograd_pitfalls.track import InplaceLog, InplaceWrite, track_inplace
    from autograd_pitfalls.watch import CountedWrite, WatchWrites

# Each public name and its module, in the order the eager import loaded them.
_EXPORTS = {
    "checks": ("assert_grad_close", "assert_is_leaf", "assert_version", "compare", "devices"),
    "diagnose": ("Finding", "Report", "diagnose"),
    "expect": ("expect_error", "expect_warning"),
    "graph": ("draw", "to_dot"),
    "inputs": ("KeptInputs", "assert_inputs_left_alone"),
    "observations": ("TensorSeen",),
    "passes": ("CountForwardProducts",),
    "pitfalls": ("PITFALLS", "explain"),
    "probe": ("probe_and_judge",),
    "standin": ("GPU", "gpu_standin", "on_gpu", "to_gpu", "to_host"),
    "torch_state": ("reset_torch_settings",),
    "track": ("InplaceLog", "InplaceWrite", "track_inplace"),
    "watch": ("CountedWrite", "WatchWrites"),
}

__all__ = [
    "GPU",
    "PITFALLS",
    "CountForwardProducts",
    "CountedWrite",
    "Finding",
    "InplaceLog",
    "InplaceWrite",
    "KeptInputs",
    "Report",
    "TensorSeen",
    "WatchWrites",
    "assert_grad_close",
    "assert_inputs_left_alone",
    "assert_is_leaf",
    "assert_version",
    "compare",
    "devices",
    "diagnose",
    "draw",
    "expect_error",
    "expect_warning",
    "explain",
    "gpu_standin",
    "on_gpu",
    "probe_and_judge",
    "reset_torch_settings",
    "to_dot",
    "to_gpu",
    "to_host",
    "track_inplace",
]


def _load_all() -> None:
    """Imports every helper module, as the package's eager import did, and binds its names."""
    package = sys.modules[__name__]
    for module, names in _EXPORTS.items():
        loaded = importlib.import_module(f"{__name__}.{module}")
        for name in names:
            setattr(package, name, getattr(loaded, name))


def __getattr__(name: str) -> Any:
    """The helpers, imported together on the first use of any of them."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _load_all()
    return globals()[name]


def __dir__() -> list[str]:
    """The module's names, the helpers not imported yet included."""
    return sorted(set(globals()) | set(__all__))


if "torch" in sys.modules:
    _load_all()

# In a notebook, a graded test cell that passes says so (display only, see passline).
_install_pass_line()
