"""The flake8 plugin, run through flake8 itself (its entry point, as a user runs it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from autograd_pitfalls.lint import RULES

CHECKERS = Path(__file__).parent / "fixtures" / "checker"


def _flake8(*args: str) -> list[str]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "flake8",
            "--jobs",
            "1",
            "--format",
            "%(path)s %(row)d:%(col)d %(code)s",
            *args,
        ],
        cwd=CHECKERS,
        capture_output=True,
        text=True,
    )
    assert result.returncode in {0, 1}, result.stderr
    return [line for line in result.stdout.splitlines() if re.search(r" AGP\d+$", line)]


def test_flake8_plugin_gives_each_fixture_its_expected_findings_and_keeps_off_rules_off():
    """One flake8 run (flake8 starts slowly): every rule on by default finds what its
    fixture expects; a rule off by default finds nothing until selected."""
    off = {code for code, rule in RULES.items() if not rule.on_by_default}
    assert off
    found = _flake8(".")
    expected = [
        f"./{fixture.name} {line}"
        for fixture in sorted(CHECKERS.glob("*.py"))
        for line in fixture.with_suffix(".txt").read_text().splitlines()
        if line.split()[1] not in off
    ]
    assert sorted(found) == sorted(expected)
