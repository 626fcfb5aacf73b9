"""``python -m autograd_pitfalls.lint PATH...``: the command line over the same rules.

Exit status: 0 when nothing was found, 1 when something was (as flake8), 2 when a file
could not be checked (it is named on stderr; the other files are still checked).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from autograd_pitfalls.lint.base import Finding
from autograd_pitfalls.lint.engine import LintSyntaxError, fix_source, fix_unit, lint_unit
from autograd_pitfalls.lint.output import FORMATS, format_findings
from autograd_pitfalls.lint.registry import RULES, UnknownCodeError, resolve_codes
from autograd_pitfalls.lint.sources import CodeUnit, find_files, units_in, write_notebook

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
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="flake8",
        help="flake8 lines (default), json, sarif (GitHub code scanning), github (annotations)",
    )
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


def _lint(unit: CodeUnit, args, errors: list[str]) -> list[Finding]:
    if "torch" not in unit.text:  # as TorchFix: code that never names torch is skipped
        return []
    findings, unit_errors = lint_unit(unit, args.select, args.ignore)
    errors += unit_errors
    return findings


def _check_file(path: Path, args, errors: list[str], fixed: Counter[str]) -> list[Finding]:
    """Lints one file (fixing it first with ``--fix``); counts what the fix removed."""
    try:
        units = list(units_in(path))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        errors.append(f"{error}" if str(path) in str(error) else f"{path}: {error}")
        return []
    findings = [finding for unit in units for finding in _lint(unit, args, errors)]
    if not args.fix or not any(finding.fixable for finding in findings):
        return findings
    before = Counter(finding.code for finding in findings)
    findings = []
    for unit in units:
        findings += _fix(path, unit, args, errors)
    removed = before - Counter(finding.code for finding in findings)
    if removed:
        print(f"{path}: fixed {_counted(removed)}", file=sys.stderr)
        fixed.update(removed)
    return findings


def _fix(path: Path, unit: CodeUnit, args, errors: list[str]) -> list[Finding]:
    """Rewrites a file (or a notebook's plain-Python cells) with the exact fixes."""
    if not unit.is_notebook:
        try:
            code, findings = fix_source(unit.code, str(path), args.select, args.ignore)
        except LintSyntaxError as error:
            errors.append(str(error))
            return []
        if code != unit.code:
            path.write_text(code, encoding="utf-8")
        return findings
    changed, findings, unit_errors = fix_unit(unit, args.select, args.ignore)
    errors += unit_errors
    if changed:
        write_notebook(unit, changed, path)
    return findings


def _counted(codes: Counter[str]) -> str:
    """``3 findings (AGP103 x2, AGP110)``."""
    total = sum(codes.values())
    parts = [f"{code} x{count}" if count > 1 else code for code, count in sorted(codes.items())]
    return f"{total} finding{'' if total == 1 else 's'} ({', '.join(parts)})"


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
        codes = resolve_codes(args.select, args.ignore)
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
    selected = {code: rule for code, rule in RULES.items() if code in codes}
    sys.stdout.write(format_findings(findings, args.format, selected))
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
