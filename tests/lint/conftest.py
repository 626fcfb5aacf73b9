"""Fixtures shared by the linter's tests."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def shell():
    """A real IPython shell with ``%load_ext autograd_pitfalls.lint``, unloaded afterwards."""
    ip = InteractiveShell.instance()
    ip.run_cell("%load_ext autograd_pitfalls.lint")
    yield ip
    ip.run_cell("%unload_ext autograd_pitfalls.lint")
    InteractiveShell.clear_instance()
