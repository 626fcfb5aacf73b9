"""``python -m autograd_pitfalls.lint PATH...``: the command line over the same rules.

Exit status: 0 when nothing was found, 1 when something was (as flake8), 2 when a file
could not be checked (it is named on stderr; the other files are still checked).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from autograd_pitfalls.lint.base import Finding
from autograd_pitfalls.lint.engine import LintSyntaxError, fix_source, lint_unit
from autograd_pitfalls.lint.registry import RULES, UnknownCodeError, resolve_codes
from autograd_pitfalls.lint.sources import cell_as_python, find_files, units_in

__all__ = ["main"]


def _codes(text: str | None) -> list[str] | None:
    return None if text is None else [code for code in text.split(",") if code.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograd_pitfalls.lint",
        description="Find the autograd pitfalls the course teaches in your own code.",
    )
    parser.add_argument("paths", nargs="*", help=".py files, .ipynb notebooks or folders")
    parser.add_argument("--select", help="codes or prefixes to run (AGP101,AGP11 or ALL)")
    parser.add_argument("--ignore", help="codes or prefixes not to run")
    parser.add_argument("--fix", action="store_true", help="apply the fixes that are exact")
    parser.add_argument("--format", choices=["flake8", "json"], default="flake8")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    parser.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    return parser


def _list_rules() -> str:
    lines = []
    for code, rule in RULES.items():
        state = "on " if rule.on_by_default else "off"
        lines.append(f"{code} [{state}] {rule.pitfall} ({rule.notebook}): {rule.message}")
        if rule.why_off:
            lines.append(f"        off by default: {rule.why_off}")
    return "\n".join(lines)


def _lint_units(units, args, errors: list[str]) -> list[Finding]:
    findings = []
    for unit in units:
        if "torch" not in unit.code:  # as TorchFix: code that never names torch is skipped
            continue
        found, unit_errors = lint_unit(unit, args.select, args.ignore)
        findings += found
        errors += unit_errors
    return findings


def _check_file(path: Path, args, errors: list[str], fixed: Counter[str]) -> list[Finding]:
    """Lints one file (fixing it first with ``--fix``); counts what the fix removed."""
    try:
        units = list(units_in(path))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        errors.append(f"{path}: {error}")
        return []
    if not args.fix:
        return _lint_units(units, args, errors)
    before = Counter(finding.code for finding in _lint_units(units, args, []))
    _fix_file(path, units, args, errors)
    try:
        units = list(units_in(path))
    except (OSError, ValueError) as error:
        errors.append(f"{path}: {error}")
        return []
    findings = _lint_units(units, args, errors)
    removed = before - Counter(finding.code for finding in findings)
    if removed:
        print(f"{path}: fixed {_counted(removed)}", file=sys.stderr)
        fixed.update(removed)
    return findings


def _counted(codes: Counter[str]) -> str:
    """``3 findings (AGP103 x2, AGP110)``."""
    total = sum(codes.values())
    parts = [f"{code} x{count}" if count > 1 else code for code, count in sorted(codes.items())]
    return f"{total} finding{'' if total == 1 else 's'} ({', '.join(parts)})"


def _fix_file(path: Path, units, args, errors: list[str]) -> None:
    """Rewrites a file (or a notebook's plain-Python cells) with the exact fixes."""
    if path.suffix != ".ipynb":
        try:
            fixed, _ = fix_source(units[0].code, str(path), args.select, args.ignore)
        except LintSyntaxError as error:
            errors.append(str(error))
            return
        if fixed != units[0].code:
            path.write_text(fixed, encoding="utf-8")
        return
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    changed = False
    for cell in notebook.cells:
        if cell.get("cell_type") != "code" or cell_as_python(cell.source) != cell.source:
            continue  # cells with magics are checked, never rewritten
        try:
            fixed, _ = fix_source(cell.source, str(path), args.select, args.ignore)
        except LintSyntaxError:
            continue  # reported when the notebook is checked
        if fixed != cell.source:
            cell.source, changed = fixed, True
    if changed:
        nbformat.write(notebook, path)


def main(argv: list[str] | None = None) -> int:
    """Runs the linter; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list_rules:
        print(_list_rules())
        return 0
    if not args.paths:
        parser.error("give at least one file or folder (or --list-rules)")
    args.select, args.ignore = _codes(args.select), _codes(args.ignore) or []
    try:
        resolve_codes(args.select, args.ignore)
    except UnknownCodeError as error:
        parser.error(str(error))
    findings: list[Finding] = []
    errors: list[str] = []
    fixed: Counter[str] = Counter()
    try:
        files = list(find_files(args.paths))
    except FileNotFoundError as error:
        parser.error(str(error))
    for path in files:
        findings += _check_file(path, args, errors, fixed)
    if args.format == "json":
        print(json.dumps([finding.as_dict() for finding in findings], indent=2))
    else:
        for finding in findings:
            print(finding.flake8_line())
    if args.fix:
        # On stderr, as each file's line: stdout stays findings only (flake8 lines, JSON).
        done = _counted(fixed) if fixed else "nothing"
        left = len(findings)
        print(
            f"fixed {done}; {left} finding{'' if left == 1 else 's'} left "
            "(no fix is exact for them: read each one)"
            if left
            else f"fixed {done}; nothing left",
            file=sys.stderr,
        )
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 2
    return 1 if findings and not args.exit_zero else 0
