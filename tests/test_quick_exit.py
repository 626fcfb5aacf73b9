"""Grading processes end after their atexit handlers, without tearing their modules down."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from autograder import quick_exit
from autograder.course import REPO

# A module-level object whose finaliser prints: module teardown runs it, os._exit does not.
TORN_DOWN = """
class Noisy:
    def __del__(self):
        print("torn down", flush=True)

noisy = Noisy()
"""


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), ("a message", 1)])
def test_the_status_is_the_one_python_gives_sys_exit(code, status):
    assert quick_exit.exit_status(code) == status


def test_without_it_the_modules_are_torn_down():
    """The check below can fail: this process prints from its teardown."""
    assert "torn down" in _run(TORN_DOWN).stdout


def test_the_handlers_run_the_teardown_does_not_and_the_status_stays():
    result = _run(
        "from autograder import quick_exit\n"
        "quick_exit.skip_teardown()\n"
        "import atexit, sys\n"
        "atexit.register(print, 'a handler registered later ran', flush=True)\n"
        + TORN_DOWN
        + "sys.exit(quick_exit.exit_status(3))\n"
    )
    assert result.returncode == 3
    assert "a handler registered later ran" in result.stdout
    assert "torn down" not in result.stdout


def test_an_exception_that_escapes_is_printed_and_exits_1():
    result = _run(
        "from autograder import quick_exit\n"
        "quick_exit.skip_teardown()\n" + TORN_DOWN + "raise RuntimeError('broken')\n"
    )
    assert result.returncode == 1
    assert "RuntimeError: broken" in result.stderr
    assert "torn down" not in result.stdout


def test_the_forkserver_ends_without_teardown_and_imports_that_first(monkeypatch):
    import multiprocessing

    from autograder.pipeline import FORKSERVER_EXIT, worker_context

    preloads = []
    context = multiprocessing.get_context("forkserver")
    monkeypatch.setattr(context, "set_forkserver_preload", preloads.append)
    worker_context()
    assert preloads[0][0] == FORKSERVER_EXIT
    result = _run(f"import {FORKSERVER_EXIT}\n" + TORN_DOWN + "raise SystemExit\n")
    assert result.returncode == 0
    assert "torn down" not in result.stdout


@pytest.mark.parametrize(("arguments", "status"), [(["--help"], 0), (["no-such-command"], 2)])
def test_the_command_line_keeps_its_exit_status(arguments, status):
    result = subprocess.run(
        [sys.executable, "-m", "autograder", *arguments],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == status


@pytest.mark.parametrize(
    ("raised", "status"), [("KeyboardInterrupt()", 130), ("RuntimeError('broken')", 1)]
)
def test_the_command_line_interrupted_or_broken_exits_as_a_shell_expects(raised, status):
    result = _run(
        "import runpy\n"
        "import autograder.cli\n"
        "def main():\n"
        f"    raise {raised}\n"
        "autograder.cli.main = main\n"
        "runpy.run_module('autograder', run_name='__main__')\n"
    )
    assert result.returncode == status
    assert raised.split("(")[0] in result.stderr
