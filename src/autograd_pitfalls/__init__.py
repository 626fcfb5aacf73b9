"""Helpers for the autograd-pitfalls course: draw and diagnose autograd graphs, check exercises."""

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
from autograd_pitfalls.passline import install as _install_pass_line
from autograd_pitfalls.pitfalls import PITFALLS, explain
from autograd_pitfalls.probe import probe_and_judge
from autograd_pitfalls.standin import GPU, gpu_standin, on_gpu, to_gpu, to_host
from autograd_pitfalls.torch_state import reset_torch_settings
from autograd_pitfalls.track import InplaceLog, InplaceWrite, track_inplace
from autograd_pitfalls.watch import CountedWrite, WatchWrites

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

# In a notebook, a graded test cell that passes says so (display only, see passline).
_install_pass_line()
