"""What the kernel guard costs per graded test, part by part.

Builds the guard (:mod:`autograder.kernel.guard`) around a real IPython shell in this
process, with a stand-in for ipykernel's kernel object (its handlers and session), and
times, over many rounds: the whole ``before`` and ``after`` of one test, then each part of
what they do. It prints milliseconds per test::

    .venv/bin/python -m benchmarks.guard_bench --rounds 200
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace
from typing import Any

import torch  # noqa: F401 (the guard records torch's namespaces, as in a kernel)
from IPython.core.interactiveshell import InteractiveShell

import autograd_pitfalls  # noqa: F401 (the helpers the guard protects)
from autograder.kernel import guard as kernel_guard


def _kernel() -> Any:
    shell = InteractiveShell.instance()
    session = SimpleNamespace(send=lambda *args, **kwargs: None)
    return SimpleNamespace(
        shell=shell, session=session, control_handlers={}, shell_handlers={"execute": print}
    )


def _per_test_ms(function: Any, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        function()
    return 1000 * (time.perf_counter() - start) / rounds


def main(argv: list[str] | None = None) -> None:
    """Times the guard and prints milliseconds per test for it and each of its parts."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    kernel = _kernel()
    started = time.perf_counter()
    guard = kernel_guard.install(kernel)
    installed_ms = 1000 * (time.perf_counter() - started)
    print(f"install (once per kernel, in the zygote's fork): {installed_ms:.1f} ms")
    names = {"torch": "torch", "assert_grad_close": "autograd_pitfalls:assert_grad_close"}

    def one_test() -> None:
        guard.before_test(names)
        guard._pre_run_cell()
        guard._post_run_cell()
        guard.after_test(names)

    parts = {
        "whole test (before + after + the cell's two callbacks)": one_test,
        "restore: sys.modules, objects, namespaces, lists, hooks, names": lambda: guard.restore(
            names
        ),
        "  namespaces (torch, helpers, builtins, ...)": lambda: [
            namespace.restore([]) for namespace in guard.namespaces
        ],
        "  kernel, shell and session methods": lambda: [obj.restore([]) for obj in guard.objects],
        "  IPython's transformer lists": lambda: [lst.restore([]) for lst in guard.lists],
        "  sys hooks, custom exceptions, handlers": lambda: guard._restore_hooks([]),
        "torch modes left active (each callback)": guard._pre_run_cell,
        "IPython event callbacks compared": guard._changed_callbacks,
    }
    for label, function in parts.items():
        print(f"{label:<64} {_per_test_ms(function, args.rounds):8.3f} ms per test")


if __name__ == "__main__":
    main()
