"""The command line: ``python -m autograder <command>``; the Makefile's targets call it.

The modules that import nbgrader (seconds) are imported in the commands that need them:
``autograde`` and ``grade`` first start their zygotes, which import torch meanwhile.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import interrupts
from autograder.atomic import WRITE_ERRNOS
from autograder.atomic import one_line as write_error_line
from autograder.course import Course
from autograder.errors import AutograderError
from autograder.pipeline import import_judge_modules, worker_context
from autograder.pipeline.progress import Progress
from autograder.sandbox.limits import DEVICES, Limits
from autograder.sandbox.zygote import Zygote, close_zygotes, launch_zygotes
from autograder.submission import INTERRUPTED, MISSING, UNREADABLE, load_status

if TYPE_CHECKING:
    from autograder.submission import Submission

_log = logging.getLogger("autograder")


def _print_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _build(args: argparse.Namespace) -> int:
    from autograder.authoring.build import build
    from autograder.i18n.catalog import LANGUAGES

    course = Course.repository()
    for path in build(course, args.assignments or None, LANGUAGES):
        print(f"wrote {path.relative_to(course.root)}")
    return 0


def _translate(args: argparse.Namespace) -> int:
    """Keeps the prose catalogs of an edition up to date (docs/i18n.md)."""
    from autograder.course import assignment_ids
    from autograder.i18n import catalog, markers

    course = Course.repository()
    if args.action == "messages":
        from autograder.i18n import messages

        left = messages.untranslated(messages.update(args.lang))
        print(f"{messages.catalog_path(args.lang).name}: {len(left)} message(s) to translate")
        return 0
    assignments = args.assignments or assignment_ids(course)
    if args.action in ("import", "export") and len(assignments) != 1:
        raise AutograderError(f"translate {args.action} takes one assignment id")
    if args.action == "import":
        done = markers.import_(course, assignments[0], args.lang, args.file, args.english)
        print(
            f"{assignments[0]}: {len(done.translated)} cell(s) translated, "
            f"{len(done.fuzzy)} fuzzy (the English changed since: {done.fuzzy or 'none'}), "
            f"{len(done.unknown)} not markdown cells of the source ({done.unknown or 'none'})"
        )
        return 0
    if args.action == "export":
        count = markers.export(course, assignments[0], args.lang, args.file)
        print(
            f"{assignments[0]}: {count} cell(s) to translate"
            + (f" in {args.file}" if count else "")
        )
        return 0
    left = 0
    for assignment in assignments:
        cells = catalog.prose_cells(course, assignment)
        if args.action == "update":
            found = catalog.update(course, assignment, args.lang)
        else:  # status only reads
            found = catalog.read(catalog.catalog_path(course, assignment, args.lang), args.lang)
        work = catalog.missing(found, cells)
        left += len(work)
        print(f"{assignment}: {len(cells) - len(work)} of {len(cells)} cells translated")
        for cell, why in work if args.action == "status" else []:
            print(f"  cell {cell.index} ({cell.first_line!r}): {why}")
    return 1 if left and args.action == "status" else 0


def _check(args: argparse.Namespace) -> int:
    """Checks notebooks as the grader grades them (or their visible tests only).

    Exit status: 0 when every exercise passes, 1 when one does not yet or a notebook
    could not be checked; with ``--exit-zero``, 0 whenever every notebook was checked.
    """
    from autograder.learner.workspace import default_workspace, workspace_notebooks

    notebooks = [Path(name) for name in args.notebooks]
    if not notebooks:
        workspace = default_workspace()
        if args.lang != "en":  # an edition's notebooks: <workspace>/<language>/ (make lab)
            workspace = workspace / args.lang
        notebooks = workspace_notebooks(workspace) if workspace.is_dir() else []
        if not notebooks:
            raise AutograderError(
                f"no notebook to check: {workspace} holds none yet (`make lab` makes it from "
                "notebooks/), or name one: make check NB=path/to/notebook.ipynb"
            )
    unchecked, all_pass, results = _check_notebooks(notebooks, args)
    if args.json:
        print(json.dumps(results, indent=1))
    if unchecked:
        return 1
    return 0 if all_pass or args.exit_zero else 1


def _check_notebooks(
    notebooks: list[Path], args: argparse.Namespace
) -> tuple[bool, bool, list[dict]]:
    """Checks each notebook; prints its report unless ``--json``.

    Returns:
        Whether a notebook could not be checked, whether every exercise passes, and the
        verdicts as data.
    """
    from autograder.course import REPO, assignment_ids, parts_of
    from autograder.learner.verdict import (
        format_verdict,
        grade_at_home,
        hidden_checks_at_home,
        holds_hidden_tests,
    )
    from autograder.learner.workspace import assignment_of

    say = (lambda text: None) if args.json else print
    setting_on = hidden_checks_at_home()
    known = set(assignment_ids()) if (REPO / "solutions").is_dir() else set()
    graded, visible, unchecked = [], [], False
    for notebook in notebooks:
        parts = parts_of(assignment_of(notebook), sorted(known))  # a lesson split since?
        if not notebook.is_file():
            _print_error(f"cannot check {notebook}: no notebook there")
            unchecked = True
        elif parts and assignment_of(notebook) not in known:
            # A lesson the course now splits into parts: `make lab` carried its answers there.
            say(
                f"{notebook.name}: not checked: the course splits this lesson into "
                f"{', '.join(parts)} (`make lab` copies your answers into them); check those"
            )
        elif (
            setting_on
            and not args.visible_only
            and assignment_of(notebook) in known
            and not holds_hidden_tests(notebook)
        ):
            graded.append(notebook)
        else:
            visible.append(notebook)
    results: list[dict] = []
    all_pass = True
    if graded:
        for verdict in grade_at_home(graded, cell_timeout=args.timeout):
            say(format_verdict(verdict, _shown_path(verdict.notebook), _terminal_width()))
            results.append(verdict.as_dict())
            all_pass = all_pass and verdict.ok
    for notebook in visible:
        from autograder.learner.validate import check_notebook

        try:
            report = check_notebook(notebook, cell_timeout=args.timeout)
        except (OSError, ValueError) as error:  # this notebook only: check the others
            _print_error(f"cannot check {notebook}: {error}")
            unchecked = True
            continue
        if holds_hidden_tests(notebook):
            why = "a source notebook: its hidden tests run in it"
        elif args.visible_only:
            why = "as asked"
        elif not setting_on:
            why = "this course turns the hidden checks off at home"
        elif not known:
            why = "no solutions/ here, so no hidden checks"
        else:
            why = f"{notebook.name} is not named after an assignment"
        say(report.format(note=f"its own tests only ({why})"))
        results.append(report.as_dict())
        all_pass = all_pass and report.ok
    return unchecked, all_pass, results


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _terminal_width() -> int:
    import shutil

    return max(60, min(120, shutil.get_terminal_size((100, 24)).columns))


def _course(args: argparse.Namespace) -> Course:
    # The repository is the instructor's course; --course grades in another folder.
    root = Path(args.course) if args.course else Course.repository().root
    return Course.at(root, db_url=args.db_url)


def _add_assignment(
    command: argparse.ArgumentParser, submissions: bool = False, several: bool = False
) -> None:
    if several:
        command.add_argument(
            "assignment",
            nargs="+",
            help="assignment ids, for example 01a_leaf_tensors (several: one after the other)",
        )
        return
    command.add_argument("assignment", help="assignment id, for example 01a_leaf_tensors")
    if submissions:
        command.add_argument(
            "submissions", help="folder with one subfolder, notebook or zip per student"
        )


def _add_course_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--course", help="course folder (gradebook, submitted/, ...); default: the repository"
    )
    command.add_argument(
        "--wait",
        action="store_true",
        help="if another command is writing this course (or its gradebook), wait for it to "
        "end instead of stopping at once",
    )
    command.add_argument(
        "--db-url",
        metavar="URL",
        help="the gradebook's database (nbgrader's db_url), for example "
        "postgresql+psycopg://user@host/course for a gradebook shared in formgrader; "
        "default: gradebook.db (SQLite) in the course folder",
    )


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        memory_mb=args.memory_mb,
        disk_mb=args.disk_mb,
        device=args.device,
    )


def _grading_options(args: argparse.Namespace) -> dict[str, object]:
    """What ``autograde`` and ``grade`` pass on from their options (_add_grading_options)."""
    return {
        "jobs": args.jobs,
        "limits": _limits(args),
        "sandbox": args.sandbox,
        "only": args.student,
        "regrade": args.regrade,
    }


def _require_device(args: argparse.Namespace) -> None:
    """Stops the command when the tests cannot run on ``--device`` here."""
    from autograder.sandbox.bwrap import gpu_nodes

    if args.device == "cuda" and not gpu_nodes():
        raise AutograderError(
            "--device cuda: this machine has no NVIDIA GPU (no /dev/nvidia* device files)"
        )


def _id_width(ids: list[str]) -> int:
    """Width of the student id column: the longest id, so the next column lines up."""
    return max(map(len, ids), default=0)


def _print_students(students: list[Submission]) -> None:
    width = _id_width([student.student_id for student in students])
    for student in students:
        line = f"{student.student_id:<{width}}  {student.status}"
        print(line + (f"  ({student.message})" if student.message else ""))


def _print_rows(rows: list[dict]) -> None:
    width = _id_width([row["student_id"] for row in rows])
    for row in rows:
        score = f"{row['score']:g}/{row['max_score']:g}"
        line = f"{row['student_id']:<{width}}  {score:>7}  {row['status']}"
        print(line + (f"  ({row['message']})" if row["message"] else ""))


def _collect(args: argparse.Namespace) -> int:
    from autograder.pipeline.run import collect_class

    _print_students(collect_class(_course(args), args.assignment, Path(args.submissions)))
    return 0


def _launch(
    args: argparse.Namespace, course: Course, assignments: list[str], students: int
) -> list[Zygote]:
    """Starts one zygote per job, before nbgrader is imported: both take seconds.

    Each zygote also imports what the assignments' released notebooks import, as soon as
    it has imported torch. Only for the local executor: Dask workers start their own.
    """
    from autograder.pipeline.preload import files_imports
    from autograder.sandbox.bwrap import course_sandbox

    if students == 0 or args.executor != "local":
        return []
    sandbox = course_sandbox(course, enabled=args.sandbox)
    jobs = max(1, min(args.jobs, students))
    released = [path for a in assignments for path in sorted((course.release / a).glob("*.ipynb"))]
    # The threads grade_class gives each kernel when args.jobs run at once.
    zygotes = launch_zygotes(
        sandbox, _limits(args).sharing(args.jobs), jobs, tuple(files_imports(released))
    )
    if jobs > 1:
        # The grading processes fork from a server that imports nbgrader: start it now too.
        worker_context(start=True)
    else:
        import_judge_modules()  # this process grades
    return zygotes


def _service(args: argparse.Namespace, course: Course, assignments: list[str], students: int):
    """The course's grading service (:mod:`autograder.pipeline.service`), started if need be.

    None when it is not used: ``--keep-warm 0``, another executor than the local one, or
    nobody to grade.
    """
    if students == 0 or args.executor != "local" or args.keep_warm <= 0:
        return None
    from autograder.pipeline.preload import files_imports
    from autograder.pipeline.service import open_service
    from autograder.sandbox.bwrap import course_sandbox

    released = [path for a in assignments for path in sorted((course.release / a).glob("*.ipynb"))]
    return open_service(
        course,
        max(1, args.jobs),
        _limits(args).sharing(args.jobs),
        course_sandbox(course, enabled=args.sandbox),
        requested=args.sandbox,
        imports=tuple(files_imports(released)),
        keep_warm=args.keep_warm,
    )


def _executor(args: argparse.Namespace):
    """Connects to the Dask scheduler (or starts a local cluster) for ``--executor dask``.

    Done before anything is collected: a scheduler that cannot be reached stops the
    command at once. Returns None for the local executor (made by the pipeline).
    """
    if args.executor == "local":
        if args.scheduler:
            raise AutograderError("--scheduler is for --executor dask")
        return None
    from autograder.pipeline.executors import DaskExecutor

    return DaskExecutor(
        args.scheduler, workers=args.jobs, batch_size=args.batch_size, lost_after=args.lost_after
    )


def _autograde(args: argparse.Namespace) -> int:
    """Autogrades the collected students of each assignment named, one after the other.

    Several assignments share one set of grading processes and zygotes (a kept executor):
    each zygote imports torch and the notebooks' modules once for all of them, seconds
    of a core that one command per assignment pays again each time.
    """
    _require_device(args)
    course = _course(args)
    assignments = _assignments(args, course)  # all built, before anything starts
    several = len(assignments) > 1
    executor = _executor(args)
    waiting = [
        sum(
            s.status not in (MISSING, UNREADABLE)
            and (args.regrade or not s.graded)
            and (not args.student or s.student_id in args.student)
            for s in load_status(course, assignment)[0]
        )
        for assignment in assignments
    ]
    executor = executor or _service(args, course, assignments, max(waiting))
    zygotes = [] if executor is not None else _launch(args, course, assignments, max(waiting))
    done: list[str] = []
    try:
        from autograder.pipeline.run import autograde_class
        from autograder.sandbox.bwrap import course_sandbox

        if executor is None and several:
            # Imported (nbgrader) while the zygotes import torch; not through the service,
            # which has it, and starts on the students before this process imports it.
            from autograder.pipeline.executors import LocalExecutor

            sandbox = course_sandbox(course, enabled=args.sandbox)
            executor = LocalExecutor(max(1, len(zygotes)), zygotes or None, sandbox, keep=True)
            zygotes = []  # the executor's now: it closes them
        options = _grading_options(args)
        for assignment in assignments:
            students = autograde_class(
                course,
                assignment,
                zygotes=zygotes,
                progress=Progress(description=assignment if several else "grading"),
                executor=executor,
                **options,
            )
            done.append(assignment)
            if several:
                print(f"{assignment}:")
            _print_students(students)
    except BaseException:
        left = [assignment for assignment in assignments if assignment not in done]
        if several and left:  # what was graded is recorded; say what was not
            _print_error(f"not graded: {', '.join(left)}")
        raise
    finally:
        close_zygotes(zygotes)
        if executor is not None:
            executor.close()
    return 0


def _assignments(args: argparse.Namespace, course: Course) -> list[str]:
    """The assignments a command names, each once, in order; stops if one is not built.

    Raises:
        BuildError: If one of them is not built (before anything is done for the others).
    """
    assignments = list(dict.fromkeys(args.assignment))
    for assignment in assignments:
        course.require_built(assignment)
    return assignments


def _feedback(args: argparse.Namespace) -> int:
    from autograder.pipeline.run import feedback_class

    course = _course(args)
    for assignment in _assignments(args, course):
        feedback_class(course, assignment)
        print(f"feedback: {course.feedback}/<student>/{assignment}/")
    return 0


def _export(args: argparse.Namespace) -> int:
    from autograder.pipeline.run import export_class

    course = _course(args)
    assignments = _assignments(args, course)
    for assignment in assignments:
        rows, csv_path = export_class(course, assignment)
        if len(assignments) > 1:
            print(f"{assignment}:")
        _print_rows(rows)
        print(f"grades: {csv_path.relative_to(course.root)}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from autograder.pipeline.report import write_report

    course = _course(args)
    for assignment in _assignments(args, course):
        report = write_report(course, assignment)
        print(report.markdown.read_text())
        print(f"report: {report.markdown.relative_to(course.root)}")
        print(f"plot:   {report.plot.relative_to(course.root)}")
        if report.page is not None:
            print(f"page:   {report.page.as_uri()}")
    return 0


def _grade(args: argparse.Namespace) -> int:
    _require_device(args)
    course = _course(args)
    executor = _executor(args)
    folder = Path(args.submissions)
    entries = list(folder.iterdir()) if folder.is_dir() else []
    students = len(args.student) if args.student else len(entries)
    # Imports read from the release folder as it is: the build below may change them.
    executor = executor or _service(args, course, [args.assignment], students)
    zygotes = [] if executor is not None else _launch(args, course, [args.assignment], students)
    # Imported while the zygotes import torch.
    from autograder.pipeline.run import grade_class

    try:
        result = grade_class(
            course,
            args.assignment,
            folder,
            zygotes=zygotes,
            progress=Progress(),
            executor=executor,
            **_grading_options(args),
        )
    finally:
        close_zygotes(zygotes)
        if executor is not None:
            executor.close()
    _print_rows(result.rows)
    print(f"grades:   {result.csv.relative_to(course.root)}")
    print(f"feedback: {result.feedback.relative_to(course.root)}/<student>/{args.assignment}/")
    if result.report is not None:
        print(f"report:   {result.report.markdown.relative_to(course.root)}")
        if result.report.page is not None:
            print(f"          {result.report.page.as_uri()} (in a browser)")
    return 0


def _add_grading_options(command: argparse.ArgumentParser) -> None:
    from autograder.pipeline import LOST_AFTER
    from autograder.pipeline.service import KEEP_WARM_VARIABLE, keep_warm_default

    defaults = Limits()
    _add_course_option(command)
    command.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="students graded at once (local processes; with --executor dask and no "
        "--scheduler, the local cluster's workers)",
    )
    command.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where students are graded: local processes (default) or the workers of a "
        "Dask cluster; either way only this process writes the gradebook and the files",
    )
    command.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="the Dask scheduler to grade on (for example tcp://10.0.0.5:8786); without it, "
        "--executor dask starts a local cluster of --jobs workers for the run",
    )
    command.add_argument(
        "--keep-warm",
        type=float,
        default=keep_warm_default(),
        metavar="SECONDS",
        help="grade through the course's grading service, started by the first command and "
        "kept warm this long after the last (its processes and zygotes start once for a "
        "run of commands); 0 starts and stops them in each command (default "
        f"{keep_warm_default():g}, or ${KEEP_WARM_VARIABLE})",
    )
    command.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="students per Dask task (default: BATCH_SIZE of autograder.pipeline.executors)",
    )
    command.add_argument(
        "--cell-timeout", type=int, default=defaults.cell_timeout, help="seconds per cell"
    )
    command.add_argument(
        "--notebook-timeout",
        type=int,
        default=defaults.notebook_timeout,
        help="seconds per notebook",
    )
    command.add_argument(
        "--memory-mb",
        type=int,
        default=defaults.memory_mb,
        help="memory a student may add: each process, and all its processes and shared "
        "memory together",
    )
    command.add_argument(
        "--device",
        choices=DEVICES,
        default=defaults.device,
        help="where the tests run (default cpu: grades do not depend on the machine)",
    )
    command.add_argument(
        "--disk-mb",
        type=int,
        default=defaults.disk_mb,
        help="MB a student's code may write in its folder, and in /tmp and /dev/shm (sandbox only)",
    )
    command.add_argument(
        "--student",
        action="append",
        metavar="ID",
        help="grade this student only (repeat for more): a late submission joins the class "
        "graded earlier; the CSV and the report still cover everyone",
    )
    command.add_argument(
        "--regrade",
        action="store_true",
        help="grade every student again; by default a run grades only what is missing "
        "(students not graded yet, interrupted, whose notebook changed, or graded against "
        "other tests), so the same command run again after Ctrl-C finishes the class",
    )
    command.add_argument(
        "--lost-after",
        type=float,
        default=LOST_AFTER,
        metavar="SECONDS",
        help="with --executor dask: stop with an error when the scheduler, or every worker, "
        f"has been gone this long (default {LOST_AFTER:g}); the students graded are kept",
    )
    command.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="run student code without bubblewrap (it runs with your file access)",
    )


def _workspace(args: argparse.Namespace) -> Path:
    from autograder.learner.workspace import default_workspace

    return Path(args.workspace).resolve() if args.workspace else default_workspace()


def _lab(args: argparse.Namespace) -> int:
    from autograder.learner.lab import start_lab

    return start_lab(_workspace(args), args.port, args.token, args.jupyter_args, language=args.lang)


def _sane_locale() -> None:
    """Replaces a LANG that names a course edition (``make lab LANG=zh-CN``) with a locale.

    make hands its LANG to the commands it runs, and ``zh-CN`` is no locale: a program
    started from here would warn that it cannot set it (or fall back to ASCII).
    """
    from autograder.i18n import LANGUAGES

    if os.environ.get("LANG") in LANGUAGES:
        os.environ["LANG"] = "C.UTF-8"


def _changes(args: argparse.Namespace) -> int:
    """Prints what changed in the course's release for the exercises the learner answered."""
    from autograd_pitfalls.messages import translate
    from autograder.learner.workspace import (
        edition_folders,
        exercise_changes,
        workspace_notebooks,
    )

    language = args.lang
    workspace, release = edition_folders(_workspace(args), language)
    notebooks = [Path(name).resolve() for name in args.notebooks] or (
        workspace_notebooks(workspace) if workspace.is_dir() else []
    )
    if not notebooks:
        missing = f"no notebook in {workspace}: `make lab` makes it on first use"
        raise AutograderError(translate(missing, language))
    said = False
    for notebook in notebooks:
        lines = exercise_changes(notebook, workspace, release, language)
        if lines:
            print(f"{notebook.name}:")
            print("\n".join(f"  {line}" for line in lines))
            said = True
    if not said:
        print(translate("Nothing you answered has changed in the course's notebooks.", language))
    return 0


def _torch_check(args: argparse.Namespace) -> int:
    from autograder.authoring.torch_check import torch_check

    report = torch_check(args.version, args.assignments or None)
    print(report.format())
    failed = report.cells or report.tests_failed or " passed" not in report.tests_summary
    return 1 if failed else 0


def _add_workspace_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--workspace",
        metavar="FOLDER",
        help="your own notebooks (default: $AUTOGRAD_PITFALLS_WORKSPACE, else workspace/)",
    )


def parser() -> argparse.ArgumentParser:
    """Returns the argument parser with one subcommand per pipeline step."""
    root = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Build, check and grade the autograd-pitfalls course with nbgrader. "
        "`grade` runs build, collect, autograde, feedback, export and report in one go; "
        "each is also a command of its own. The Makefile's targets call these commands.",
    )
    root.add_argument(
        "--debug",
        action="store_true",
        help="log what the grader does, and the traceback of an error it reports in one line",
    )
    commands = root.add_subparsers(dest="command", required=True)

    build_cmd = commands.add_parser("build", help="solutions/ -> build/source -> notebooks/")
    build_cmd.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    build_cmd.set_defaults(run=_build)

    translate_cmd = commands.add_parser(
        "translate",
        help="update an edition's prose catalogs from solutions/ (update, status), or hand "
        "cells to a translator and back (export FOLDER, import FILE)",
    )
    translate_cmd.add_argument(
        "action", choices=("update", "status", "export", "import", "messages")
    )
    translate_cmd.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    translate_cmd.add_argument("--lang", default="zh-CN", help="the edition (default: zh-CN)")
    translate_cmd.add_argument(
        "--file", type=Path, help="export: the folder to write; import: the translated file"
    )
    translate_cmd.add_argument(
        "--english", type=Path, help="import: the English the translator worked from (en.md)"
    )
    translate_cmd.set_defaults(run=_translate)

    check_cmd = commands.add_parser(
        "check",
        help="grade notebooks as the grader does (visible tests and hidden checks) and report "
        "per exercise; exit 1 while one does not pass",
    )
    check_cmd.add_argument(
        "notebooks",
        nargs="*",
        help="notebook files to check (default: every notebook of your workspace)",
    )
    check_cmd.add_argument(
        "--lang", default="en", help="the edition whose workspace to check (en, zh-CN)"
    )
    check_cmd.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    check_cmd.add_argument(
        "--visible-only",
        action="store_true",
        help="run the notebook's visible tests only, as nbgrader validate does",
    )
    check_cmd.add_argument(
        "--json", action="store_true", help="print the verdicts as JSON instead of text"
    )
    check_cmd.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 when every notebook was checked, whatever the verdict (make check)",
    )
    check_cmd.set_defaults(run=_check)

    collect_cmd = commands.add_parser(
        "collect", help="copy a folder of submissions into submitted/ and record each status"
    )
    _add_assignment(collect_cmd, submissions=True)
    _add_course_option(collect_cmd)
    collect_cmd.set_defaults(run=_collect)

    autograde_cmd = commands.add_parser(
        "autograde",
        help="grade the collected students in the sandbox, --jobs N at a time; several "
        "assignments share the grading processes, which start once",
    )
    _add_assignment(autograde_cmd, several=True)
    _add_grading_options(autograde_cmd)
    autograde_cmd.set_defaults(run=_autograde)

    feedback_cmd = commands.add_parser(
        "feedback", help="write feedback HTML for the graded students (hidden tests removed)"
    )
    _add_assignment(feedback_cmd, several=True)
    _add_course_option(feedback_cmd)
    feedback_cmd.set_defaults(run=_feedback)

    export_cmd = commands.add_parser("export", help="write exports/<assignment>_grades.csv")
    _add_assignment(export_cmd, several=True)
    _add_course_option(export_cmd)
    export_cmd.set_defaults(run=_export)

    report_cmd = commands.add_parser(
        "report", help="pass rates per exercise, the pitfalls students fell into, a plot"
    )
    _add_assignment(report_cmd, several=True)
    _add_course_option(report_cmd)
    report_cmd.set_defaults(run=_report)

    grade_cmd = commands.add_parser(
        "grade", help="build, collect, autograde, feedback, export and report, in one go"
    )
    _add_assignment(grade_cmd, submissions=True)
    _add_grading_options(grade_cmd)
    grade_cmd.set_defaults(run=_grade)

    lab_cmd = commands.add_parser(
        "lab",
        help="start JupyterLab on your workspace for self-study (made from notebooks/ on first "
        "use; other options go to jupyter lab)",
    )
    _add_workspace_option(lab_cmd)
    lab_cmd.add_argument(
        "--lang",
        default="en",
        help="the edition: en (default) or zh-CN (its notebooks in <workspace>/zh-CN/, "
        "JupyterLab in Chinese)",
    )
    lab_cmd.add_argument("--port", type=int, help="the port to serve on (default: 8888 or next)")
    lab_cmd.add_argument(
        "--token",
        help="the token the browser must give (default: a new one, printed in the URL; "
        "'' for none, on a machine only you use)",
    )
    lab_cmd.set_defaults(run=_lab)

    changes_cmd = commands.add_parser(
        "changes",
        help="show what a new version of the course changed in the exercises you answered",
    )
    changes_cmd.add_argument(
        "notebooks", nargs="*", help="workspace notebooks (default: all of them)"
    )
    _add_workspace_option(changes_cmd)
    changes_cmd.add_argument(
        "--lang",
        default="en",
        help="the edition: en (default) or zh-CN (the notebooks of <workspace>/zh-CN/, "
        "compared with notebooks/zh-CN/; what it says, in Chinese)",
    )
    changes_cmd.set_defaults(run=_changes)

    torch_cmd = commands.add_parser(
        "torch-check",
        help="run every source notebook and the helper package's tests on another torch, in "
        "a side environment built once under build/torch-check/ (exit 1 if anything fails)",
    )
    torch_cmd.add_argument("version", help="a torch release, for example 2.14.1")
    torch_cmd.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    torch_cmd.set_defaults(run=_torch_check)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line and returns its exit status."""
    # nbgrader 0.9.6's gradebook code triggers SQLAlchemy autoflush warnings on every
    # autograde; they are about nbgrader's internals and say nothing to an instructor.
    # (Matched by the module that triggers them: importing SQLAlchemy here costs time.)
    warnings.filterwarnings("ignore", module="nbgrader")
    # A student whose grading fails gets one line in the CSV; its traceback goes to
    # stderr (the grader's logger only: nbgrader's own chatter stays where it was).
    log = logging.getLogger("autograder")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    _sane_locale()
    command_line = parser()
    args, unknown = command_line.parse_known_args(argv)
    if unknown and args.command != "lab":
        command_line.error(f"unrecognized arguments: {' '.join(unknown)}")
    log.setLevel(logging.DEBUG if args.debug else logging.NOTSET)
    args.jupyter_args = unknown
    if args.command not in WRITING_COMMANDS:
        return _run(args)
    with interrupts.stopping_on_signals():
        try:
            return _run(args, lock=True)
        except interrupts.Interrupted as stop:
            _print_error(_interrupted_line(args, stop))
            return stop.exit_status


def _run(args: argparse.Namespace, lock: bool = False) -> int:
    """Runs the command; one that writes a course holds its lock (autograder.lock)."""
    from autograder.lock import course_lock

    try:
        if not lock:
            return args.run(args)
        with course_lock(_course(args), wait=args.wait):
            return args.run(args)
    except AutograderError as error:
        _log.debug("the command stopped", exc_info=True)  # shown with --debug
        _print_error(str(error))
        return 1
    except OSError as error:
        if error.errno not in WRITE_ERRNOS:
            raise
        # A full disk or a folder without permission: one line; the traceback, with --debug.
        _log.debug("the command stopped", exc_info=True)
        _print_error(write_error_line(error))
        return 1


# The commands that write a course: Ctrl-C and SIGTERM stop them cleanly (autograder.interrupts).
WRITING_COMMANDS = ("collect", "autograde", "feedback", "export", "report", "grade")


def _interrupted_line(args: argparse.Namespace, stop: interrupts.Interrupted) -> str:
    """One line: the command was stopped, how many students are graded, how to go on."""
    line = f"interrupted by {stop.name}"
    if args.command not in ("autograde", "grade"):
        return line + ": run the command again to finish"
    course = _course(args)
    graded = left = 0
    named = args.assignment if args.command == "autograde" else [args.assignment]
    for assignment in dict.fromkeys(named):
        students, _ = load_status(course, assignment)
        graded += sum(student.graded for student in students)
        left += sum(student.status == INTERRUPTED for student in students)
    return (
        f"{line}: {graded} student{'' if graded == 1 else 's'} graded and recorded, {left} "
        "not; run the same command again to grade only those (--regrade grades everyone "
        "again)"
    )
