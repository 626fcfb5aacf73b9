"""Helpers for the autograd-pitfalls course: draw autograd graphs, check exercises."""

from autograd_pitfalls.checks import (
    assert_grad_close,
    assert_is_leaf,
    assert_version,
    compare,
    devices,
)
from autograd_pitfalls.errors import expect_error, expect_warning
from autograd_pitfalls.graph import draw, to_dot
from autograd_pitfalls.pitfalls import PITFALLS, explain

__all__ = [
    "PITFALLS",
    "assert_grad_close",
    "assert_is_leaf",
    "assert_version",
    "compare",
    "devices",
    "draw",
    "expect_error",
    "expect_warning",
    "explain",
    "to_dot",
]
