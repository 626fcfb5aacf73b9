"""The code follows the project's ruff rules (pyproject.toml), in CI as locally."""

from __future__ import annotations

import subprocess
import sys

from autograder.course import REPO


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=REPO, capture_output=True, text=True
    )


def test_ruff_check_passes():
    result = _ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    result = _ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
