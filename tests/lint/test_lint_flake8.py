"""The flake8 plugin, run through flake8 itself (its entry point, as a user runs it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from autograd_pitfalls.lint import RULES
from autograd_pitfalls.lint.flake8_plugin import OFF_BY_DEFAULT

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


def test_flake8_select_and_extend_select_turn_the_rules_on_and_off():
    selected = _flake8("--select", "AGP12", "AGP121_index_write_leaf.py")
    assert selected == [
        "AGP121_index_write_leaf.py 5:1 AGP121",
        "AGP121_index_write_leaf.py 7:1 AGP121",
    ]
    assert _flake8("--select", "E,F,W", "AGP121_index_write_leaf.py") == []
    assert _flake8("--ignore", "AGP", "AGP121_index_write_leaf.py") == []
    off = _flake8("--extend-select", "AGP104", "AGP104_loss_index_0.py")
    assert off == ["AGP104_loss_index_0.py 4:9 AGP104", "AGP104_loss_index_0.py 6:7 AGP104"]


def test_flake8_without_agp_codes_selected_never_imports_the_rules_or_torch():
    """What the plugin costs every flake8 run of the environment: its import, nothing else."""
    code = (
        "import sys\nfrom flake8.main.cli import main\n"
        "try:\n    main(['--select', 'E,F,W', '--jobs', '1', 'AGP121_index_write_leaf.py'])\n"
        "except SystemExit:\n    pass\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=CHECKERS, capture_output=True, text=True
    )
    imported = set(result.stdout.splitlines())
    assert "autograd_pitfalls.lint.flake8_plugin" in imported  # loaded, as every plugin is
    assert not {"autograd_pitfalls.lint.registry", "autograd_pitfalls.lint.analyzer"} & imported
    assert "torch" not in imported


def test_the_plugins_list_of_rules_off_by_default_is_the_rules_own():
    off = tuple(code for code, rule in RULES.items() if not rule.on_by_default)
    assert off == OFF_BY_DEFAULT
