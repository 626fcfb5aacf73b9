"""The torch internals that the kernel guard reads, checked against the installed torch.

``autograder/kernel/guard.py`` reaches every private torch API it uses through a few
functions of ``autograd_pitfalls/compat.py`` (the mode stacks). A torch release that moves
one must fail here, loudly, and not turn into a silent hole in the grading of a class.
"""

from __future__ import annotations

import sys
import threading

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from autograd_pitfalls.compat import pop_torch_modes, torch_mode_stacks
from autograder.kernel import guard as kernel_guard


class _Agree(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.allclose:
            return True
        return func(*args, **(kwargs or {}))


class _Passes(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_the_mode_stacks_show_and_pop_modes_left_active():
    assert torch_mode_stacks() == ([], [])
    function_mode, dispatch_mode = _Agree(), _Passes()
    function_mode.__enter__()
    dispatch_mode.__enter__()
    functions, dispatches = torch_mode_stacks()
    assert functions == [function_mode] and dispatches == [dispatch_mode]
    assert sorted(pop_torch_modes()) == ["_Agree", "_Passes"]
    assert torch_mode_stacks() == ([], [])


def test_a_default_device_left_set_is_put_back_not_called_tampering():
    torch.set_default_device("cpu")  # an answer that set the default device, honestly
    assert torch_mode_stacks()[0], "torch keeps the default device as a function mode"
    assert kernel_guard.pop_modes_left_active() == []
    assert torch_mode_stacks() == ([], []) and torch.get_default_device().type == "cpu"
    _Agree().__enter__()
    assert kernel_guard.pop_modes_left_active() == ["_Agree"]


def test_the_audit_events_the_guard_blocks_exist():
    seen: list[str] = []
    watching = True

    def hook(event, args):
        if watching and (event in kernel_guard.BLOCKED_EVENTS or event == "object.__setattr__"):
            seen.append(event)

    sys.addaudithook(hook)  # stays for the session; it only records while watching
    try:
        import gc

        gc.get_referrers(hook)
        sys.settrace(sys.gettrace())
        sys.setprofile(sys.getprofile())

        def function(*, atol=1.0):
            return atol

        function.__code__ = function.__code__
    finally:
        watching = False
    assert {"gc.get_referrers", "sys.settrace", "sys.setprofile", "object.__setattr__"} <= set(seen)
    assert threading.current_thread() is threading.main_thread()
