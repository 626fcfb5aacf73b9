"""Where `make test`'s time goes: the machine's busy and idle core-seconds around each test.

A pytest plugin, off unless asked for::

    .venv/bin/python -m pytest -p benchmarks.pytest_cpu

At the end of the run it prints, per test module in the order they ran, when the module
started, its wall time, and the core-seconds the machine's cores were busy and idle
meanwhile (read from ``/proc/stat``, so work in other processes counts: the class graded
in the background, another run on the machine). Idle core-seconds in a module are cores
nothing used while it ran: the place to look when the cores are not all busy. It asserts
nothing; it is how docs/benchmarks.md's ``make test`` figures were measured.
"""

from __future__ import annotations

import time

from benchmarks.cpu import busy_and_idle


class _Module:
    def __init__(self, started: float) -> None:
        self.started = started
        self.wall = self.busy = self.idle = 0.0


_modules: dict[str, _Module] = {}
_running: dict[str, tuple[float, float, float]] = {}
_session_start = time.monotonic()


def pytest_runtest_logstart(nodeid: str, location: tuple) -> None:
    """Notes the clock and the cores' counters as a test's setup begins."""
    _running[nodeid] = (time.monotonic(), *busy_and_idle())


def pytest_runtest_logfinish(nodeid: str, location: tuple) -> None:
    """Adds what the test (setup, call and teardown) took to its module's figures."""
    started, busy, idle = _running.pop(nodeid)
    busy_now, idle_now = busy_and_idle()
    module = _modules.setdefault(nodeid.split("::")[0], _Module(started - _session_start))
    module.wall += time.monotonic() - started
    module.busy += busy_now - busy
    module.idle += idle_now - idle


def pytest_terminal_summary(terminalreporter) -> None:
    """Prints each module's figures, and the run's, after pytest's own summary."""
    write = terminalreporter.write_line
    write("core-seconds per test module (busy and idle: the whole machine's cores)")
    write(f"{'module':45} {'start s':>8} {'wall s':>8} {'busy':>8} {'idle':>8}")
    for name, module in _modules.items():
        write(
            f"{name:45} {module.started:8.0f} {module.wall:8.1f} "
            f"{module.busy:8.1f} {module.idle:8.1f}"
        )
    total = [sum(getattr(m, key) for m in _modules.values()) for key in ("wall", "busy", "idle")]
    write(f"{'all':45} {'':>8} {total[0]:8.1f} {total[1]:8.1f} {total[2]:8.1f}")
