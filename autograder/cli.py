"""The command line: ``python -m autograder <command>``; the Makefile's targets call it."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.exc import SAWarning

from autograder.build import BuildError, build
from autograder.check import check_notebook
from autograder.course import Course, assignment_ids
from autograder.fixtures import FixtureError, write_fixtures
from autograder.lab import start_lab
from autograder.pipeline import grade_class


def _build(args: argparse.Namespace) -> int:
    course = Course.repository()
    try:
        for path in build(course, args.assignments or None):
            print(f"wrote {path.relative_to(course.root)}")
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _check(args: argparse.Namespace) -> int:
    failed = False
    for notebook in args.notebooks:
        try:
            report = check_notebook(Path(notebook), cell_timeout=args.timeout)
        except (OSError, ValueError) as error:
            print(f"error: cannot check {notebook}: {error}", file=sys.stderr)
            failed = True
            continue
        print(report.format())
        failed = failed or not report.ok
    return 1 if failed else 0


def _fixtures(args: argparse.Namespace) -> int:
    course = Course.repository()
    try:
        for assignment in args.assignments or assignment_ids(course):
            build(course, [assignment])
            for path in write_fixtures(course, assignment):
                print(f"wrote {path.relative_to(course.root)}")
    except (BuildError, FixtureError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _grade(args: argparse.Namespace) -> int:
    course = Course.repository()
    try:
        result = grade_class(course, args.assignment, Path(args.submissions))
    except (BuildError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for row in result.rows:
        line = f"{row['student_id']:<32} {row['score']:g}/{row['max_score']:g}  {row['status']}"
        print(line + (f"  ({row['message']})" if row["message"] else ""))
    print(f"grades:   {result.csv.relative_to(course.root)}")
    print(f"feedback: {result.feedback.relative_to(course.root)}/<student>/{args.assignment}/")
    return 0


def _lab(args: argparse.Namespace) -> int:
    return start_lab(args.jupyter_args)


def parser() -> argparse.ArgumentParser:
    """Returns the argument parser with one subcommand per pipeline step."""
    root = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    build_cmd = commands.add_parser("build", help="solutions/ -> build/source -> notebooks/")
    build_cmd.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    build_cmd.set_defaults(run=_build)

    check_cmd = commands.add_parser(
        "check", help="run a notebook's tests and report per exercise (exit 1 if any fails)"
    )
    check_cmd.add_argument("notebooks", nargs="+", help="notebook files to check")
    check_cmd.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    check_cmd.set_defaults(run=_check)

    fixtures_cmd = commands.add_parser(
        "fixtures", help="write the sample submissions from autograder/fixtures/*/wrong_answers.py"
    )
    fixtures_cmd.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    fixtures_cmd.set_defaults(run=_fixtures)

    grade_cmd = commands.add_parser(
        "grade", help="collect, autograde, write feedback and export the grades CSV"
    )
    grade_cmd.add_argument("assignment", help="assignment id, for example 01_leaf_tensors")
    grade_cmd.add_argument(
        "submissions", help="folder with one subfolder, notebook or zip per student"
    )
    grade_cmd.set_defaults(run=_grade)

    lab_cmd = commands.add_parser(
        "lab", help="start JupyterLab on notebooks/ for self-study (other options go to jupyter)"
    )
    lab_cmd.set_defaults(run=_lab)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns its exit status."""
    # nbgrader 0.9.6's gradebook code triggers SQLAlchemy autoflush warnings on every
    # autograde; they are about nbgrader's internals and say nothing to an instructor.
    warnings.filterwarnings("ignore", category=SAWarning)
    command_line = parser()
    args, unknown = command_line.parse_known_args(argv)
    if unknown and args.command != "lab":
        command_line.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.jupyter_args = unknown
    return args.run(args)
