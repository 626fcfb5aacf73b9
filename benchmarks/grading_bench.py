"""How fast a class is graded: plain ``nbgrader autograde`` against ``python -m autograder``.

Builds a synthetic class (``--students`` per assignment, every current assignment, made
of the fixture submissions in turn, leaving out those that attack the grading itself,
``tests.support.fixtures.GRADER_ATTACKS``, and those whose kernel dies, on which plain
nbgrader fails), then grades it three times, each in a fresh course
folder and each through the command line, as an instructor would:

* plain ``nbgrader autograde`` (one student at a time, a fresh kernel each);
* ``python -m autograder autograde --jobs 1`` and ``--jobs 2``, one command per assignment
  as with nbgrader (which takes one assignment per command), through the course's grading
  service, which the first command starts and the next ones find warm
  (:mod:`autograder.pipeline.service`); ``jobs2-cold`` the same with ``--keep-warm 0``
  (each command starts and stops its own processes); and every assignment in one command
  (``jobs1-one``, ``jobs2-one``);
* ``--executor dask`` on two local workers: a ``dask scheduler`` and two ``dask worker``
  processes started once for the benchmark (a cluster one already has, ``--scheduler``),
  and a local cluster that each command starts for itself (``--executor dask --jobs 2``).

Only the autograde commands are timed (not the build or the collection, nor starting
the long-lived cluster). Plain nbgrader and ``--jobs 1``/``--jobs 2`` take turns, one
assignment at a time, so that the machine's drift in speed over minutes touches them alike;
the one-command runs go in the middle of those turns, and the Dask runs after them. It
prints the seconds per submitted notebook, the floor of plain nbgrader (a fresh kernel
that imports torch), the throughput of each against plain nbgrader, the core-seconds the
machine's cores were busy per notebook (every process's, so what a second worker costs
beyond the first shows there, whatever each waited), where a notebook's time went, the
Dask rows against ``--jobs 2``, each command's start-up (from its start to its first
student's first cell: a cost that a larger class shares), and whether all of them gave
every test the same score.
Its headline is ``--jobs 2``, one command per assignment, against plain nbgrader and against
plain nbgrader's floor. Run it on an otherwise idle machine::

    .venv/bin/python -m benchmarks.grading_bench --students 20 --runs plain jobs1 jobs2 jobs2-cold
    .venv/bin/python -m benchmarks.grading_bench --students 8
    .venv/bin/python -m benchmarks.grading_bench --students 8 --runs plain jobs1-one jobs2-one
    .venv/bin/python -m benchmarks.grading_bench --students 8 --runs jobs2 dask dask-local
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
from jupyter_client.manager import start_new_kernel
from nbgrader.api import Gradebook

from autograder.authoring.build import build
from autograder.course import Course, assignment_ids
from autograder.pipeline.collect import collect
from autograder.pipeline.service import stop_service
from benchmarks.cpu import busy_and_idle
from tests.support.fixtures import GRADER_ATTACKS, fixture_notebooks

# Fixture students whose kernel dies: plain nbgrader drops the submission and its command
# fails (this grader scores the cell it died in 0 and grades the rest): left out of the
# class, with the attacks on the grading. (02 has it as its 17th: a class of 17 or more.)
KERNEL_KILLERS = frozenset({"kernel_aborted_in_q2"})
# The runs that grade on Dask: timed after the others (see main).
CLUSTER_RUNS = ("dask", "dask-local")
# The runs that grade every assignment in one command (the others: one per assignment).
ONE_COMMAND_RUNS = ("jobs1-one", "jobs2-one")
# How many notebooks each run grades at once.
WORKERS = {
    "plain": 1,
    "jobs1": 1,
    "jobs2": 2,
    "jobs2-cold": 2,
    "jobs1-one": 1,
    "jobs2-one": 2,
    "dask": 2,
    "dask-local": 2,
}
RUNS = {
    "plain": "plain nbgrader autograde",
    "jobs1": "autograder --jobs 1",
    "jobs2": "autograder --jobs 2",
    "jobs2-cold": "autograder --jobs 2 --keep-warm 0",
    "jobs1-one": "autograder --jobs 1, one command",
    "jobs2-one": "autograder --jobs 2, one command",
    "dask": "autograder --executor dask (2 workers)",
    "dask-local": "autograder --executor dask --jobs 2 (own)",
}
# The figure an instructor sees: one command per assignment, two at a time.
HEADLINE = "jobs2"
# Seconds the grading service stays warm between the commands of a run (the default's).
KEEP_WARM = "600"


def make_class(
    course: Course, assignments: list[str], students: int, folder: Path
) -> dict[tuple[str, str], str]:
    """Builds ``course`` and collects ``students`` submissions per assignment into it.

    Returns:
        The fixture each student's notebook is, by (assignment, student id).
    """
    build(course, assignments)
    made = {}
    for assignment in assignments:
        incoming = folder / assignment
        fixtures = sorted(
            (name, notebook)
            for name, notebook in fixture_notebooks(course, assignment).items()
            # plain nbgrader may score these differently, or fail on them
            if name not in GRADER_ATTACKS | KERNEL_KILLERS
        )
        for number, (name, notebook) in zip(range(students), itertools.cycle(fixtures)):
            student = f"s{number + 1:03d}"
            target = incoming / student
            target.mkdir(parents=True)
            nbformat.write(notebook, target / f"{assignment}.ipynb")
            made[assignment, student] = name
        collect(course, assignment, incoming)
    return made


# Where a graded notebook's time went, as printed: cells by kind (from nbclient's
# timestamps, which plain nbgrader's notebooks have too), then what SandboxedExecute
# recorded (metadata.autograder.seconds), then what each command paid once, before its
# first cell and after its last (times its workers, over its notebooks), then the rest of
# the worker's time: with two workers, "outside" is then what grading a notebook costs
# outside its kernel, to compare with one worker's.
PHASES = {
    "kernel_ready": "kernel forked/started and ready",
    "answers": "cells: the student's answers",
    "tests": "cells: the tests",
    "other": "cells: the rest (demos, drawings)",
    "between": "between cells (messages)",
    "guard": "guard (before/after each test)",
    "judge": "judges (in the grader's process)",
    "startup": "command start-up, to its first kernel",
    "ending": "command's end, after its last cell",
    "outside": "outside the kernel (nbgrader, sandbox)",
}
# The phases a command pays once, shared by its notebooks (and by its workers: each waits).
SHARED_PHASES = ("startup", "ending")


def _stamp(cell: dict, key: str) -> float:
    return _stamp_of(cell["metadata"]["execution"], key)


def _stamp_of(execution: dict, key: str) -> float:
    return datetime.fromisoformat(execution[key].replace("Z", "+00:00")).timestamp()


def breakdown(
    course: Course, assignments: list[str], worker_seconds: float, shared: dict[str, float]
) -> dict[str, float]:
    """Seconds per notebook in each of :data:`PHASES`, averaged over the graded notebooks.

    Args:
        course: A course whose students were autograded.
        assignments: Its assignments.
        worker_seconds: The run's seconds times its workers, over its notebooks: what one
            notebook cost a worker, from which the phases measured are taken away.
        shared: The :data:`SHARED_PHASES`, in seconds per notebook and worker.
    """
    totals = dict.fromkeys(set(PHASES) - set(SHARED_PHASES), 0.0)
    paths = [
        path
        for assignment in assignments
        for path in (course.root / "autograded").glob(f"*/{assignment}/{assignment}.ipynb")
    ]
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        timed = [
            cell
            for cell in notebook.cells
            if {"iopub.status.busy", "iopub.status.idle"}
            <= set(cell.get("metadata", {}).get("execution", {}))
        ]
        if not timed:
            continue
        in_cells = 0.0
        for cell in timed:
            about = cell["metadata"].get("nbgrader", {})
            kind = (
                "answers" if about.get("solution") else "tests" if about.get("grade") else "other"
            )
            seconds = _stamp(cell, "iopub.status.idle") - _stamp(cell, "iopub.status.busy")
            totals[kind] += seconds
            in_cells += seconds
        recorded = notebook.metadata.get("autograder", {}).get("seconds", {})
        for name in ("kernel_ready", "guard", "judge"):
            totals[name] += recorded.get(name, 0.0)
        # The guard and the judges run between a test's cells and the next ones.
        span = _stamp(timed[-1], "iopub.status.idle") - _stamp(timed[0], "iopub.status.busy")
        totals["between"] += (
            span - in_cells - recorded.get("guard", 0.0) - recorded.get("judge", 0.0)
        )
    count = max(len(paths), 1)
    phases = {name: value / count for name, value in totals.items()} | shared
    phases["outside"] = worker_seconds - sum(phases.values())
    return {name: phases[name] for name in PHASES}


def cells_span(course: Course, assignments: list[str]) -> tuple[float, float, float] | None:
    """When ``assignments``' first kernel was asked for, their first cell began, their last ended.

    Unix times over every graded notebook of those assignments. The first kernel was asked
    for when the first cell began less the time its kernel took to be ready (which
    :func:`breakdown` counts already). None if no cell ran.
    """
    kernels, starts, ends = [], [], []
    for assignment in assignments:
        for path in (course.root / "autograded").glob(f"*/{assignment}/{assignment}.ipynb"):
            notebook = nbformat.read(path, as_version=4)
            ready = notebook.metadata.get("autograder", {}).get("seconds", {})
            executions = [cell.get("metadata", {}).get("execution", {}) for cell in notebook.cells]
            busy = [
                _stamp_of(e, "iopub.status.busy") for e in executions if "iopub.status.busy" in e
            ]
            idle = [
                _stamp_of(e, "iopub.status.idle") for e in executions if "iopub.status.idle" in e
            ]
            if busy:
                starts.append(min(busy))
                kernels.append(min(busy) - ready.get("kernel_ready", 0.0))
            ends += idle
    if not starts or not ends:
        return None
    return min(kernels), min(starts), max(ends)


def grades(course: Course, assignments: list[str]) -> dict:
    """Every test's score in the course's gradebook."""
    with Gradebook(f"sqlite:///{course.gradebook}") as gradebook:
        return {
            (assignment, submission.student.id, grade.name): grade.auto_score
            for assignment in assignments
            for submission in gradebook.find_assignment(assignment).submissions
            for notebook in submission.notebooks
            for grade in notebook.grades
        }


def timed(commands: list[list[str]], cwd: Path) -> tuple[float, float]:
    """Runs the commands one after the other.

    Returns:
        The seconds they took, and the core-seconds the machine's cores were busy meanwhile
        (every process's: the commands', their services', their kernels').
    """
    start, busy = time.perf_counter(), busy_and_idle()[0]
    for command in commands:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start, busy_and_idle()[0] - busy


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2):
    """A ``dask scheduler`` and ``workers`` one-thread ``dask worker`` processes on 127.0.0.1."""
    dask = str(Path(sys.executable).with_name("dask"))
    scheduler_file = folder / "scheduler.json"
    log = (folder / "dask.log").open("w")
    processes = [
        subprocess.Popen(
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        address = ""
        while not address:  # the file appears before the scheduler has written it
            time.sleep(0.2)
            if scheduler_file.is_file():
                with contextlib.suppress(ValueError):
                    address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(workers):
            processes.append(
                subprocess.Popen(
                    [
                        dask,
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait()
        log.close()


def kernel_floor(repeats: int = 3) -> float:
    """Seconds for a fresh kernel to start and import torch (plain nbgrader pays it each time)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        # ipykernel warns on stderr about its unencrypted TCP sockets: not a result.
        manager, client = start_new_kernel(kernel_name="python3", stderr=subprocess.DEVNULL)
        client.execute_interactive("import torch", timeout=120)
        times.append(time.perf_counter() - start)
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return statistics.median(times)


def print_breakdown(phases: dict[str, dict[str, float]]) -> None:
    """Prints the seconds per notebook of each phase (rows) for each run (columns)."""
    if not phases:
        return
    names = list(phases)
    print("\nwhere a notebook's time goes (s per notebook, per worker):")
    print(f"| {'phase':<40} | " + " | ".join(f"{name[:24]:>24}" for name in names) + " |")
    print(f"|{'-' * 42}|" + "|".join("-" * 26 for _ in names) + "|")
    for key, title in PHASES.items():
        values = " | ".join(f"{phases[name][key]:24.2f}" for name in names)
        print(f"| {title:<40} | {values} |")
    total = " | ".join(f"{sum(phases[name].values()):24.2f}" for name in names)
    print(f"| {'total':<40} | {total} |")


def main() -> None:
    """Builds the class, grades it three ways, prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20, help="students per assignment")
    parser.add_argument(
        "--runs",
        nargs="+",
        choices=RUNS,
        default=list(RUNS),
        help="which commands to time (default: all)",
    )
    args = parser.parse_args()
    assignments = assignment_ids()
    python = sys.executable
    nbgrader = str(Path(python).with_name("nbgrader"))
    ours = [python, "-m", "autograder", "autograde"]
    address = ""

    def dask_on_scheduler(a: list[str], root: Path) -> list[str]:
        return [*ours, *a, "--course", str(root), "--executor", "dask", "--scheduler", address]

    def local(jobs: int, keep_warm: str = KEEP_WARM):
        # --keep-warm given, whatever $AUTOGRADER_KEEP_WARM says where this runs.
        return lambda a, root: [
            *ours,
            *a,
            "--course",
            str(root),
            "--jobs",
            str(jobs),
            "--keep-warm",
            keep_warm,
        ]

    # Each takes the assignments of one command (one, or all for ONE_COMMAND_RUNS).
    commands = {
        "plain": lambda a, root: [nbgrader, "autograde", *a, "--force"],
        "jobs1": local(1),
        "jobs2": local(2),
        "jobs2-cold": local(2, "0"),
        "jobs1-one": local(1),
        "jobs2-one": local(2),
        "dask": dask_on_scheduler,
        "dask-local": lambda a, root: [
            *ours,
            *a,
            "--course",
            str(root),
            "--executor",
            "dask",
            "--jobs",
            "2",
        ],
    }
    runs = {RUNS[key]: commands[key] for key in RUNS if key in args.runs}
    key_of = {RUNS[key]: key for key in RUNS if key in args.runs}
    notebooks = args.students * len(assignments)
    print(
        f"{notebooks} notebooks ({args.students} students x {', '.join(assignments)}), "
        f"{os.cpu_count()} CPUs"
    )
    results: dict[str, float] = dict.fromkeys(runs, 0.0)
    # The core-seconds the machine was busy during each run's commands.
    cpu: dict[str, float] = dict.fromkeys(runs, 0.0)
    # Seconds from a command's start to its first student's first cell, per run.
    startup: dict[str, float] = {}
    phases: dict[str, dict[str, float]] = {}
    scores = []
    fixtures: dict[tuple[str, str], str] = {}
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="grading-bench-")))
        courses = {}
        for name in runs:
            # A plain folder name: nbgrader matches course paths with regular expressions.
            course = Course.at(scratch / key_of[name])
            fixtures = make_class(course, assignments, args.students, course.root / "incoming")
            course.write_nbgrader_config()
            courses[name] = course
            stack.callback(stop_service, course)  # whatever happens, no service stays warm
        # The runs that need no cluster take turns, assignment by assignment: this
        # machine's speed drifts by a quarter over minutes, and a drift then slows each
        # of them alike instead of whichever ran during it. The Dask runs follow, with
        # the long-lived cluster started for them only (idle, it still takes a few %).
        # Each command's assignments, and when it started and ended, by run.
        commands_run: dict[str, list[tuple[list[str], float, float]]] = {n: [] for n in runs}

        def run(name: str, graded: list[str]) -> None:
            command = runs[name](graded, courses[name].root)
            began = time.time()
            seconds, busy = timed([command], courses[name].root)
            results[name] += seconds
            cpu[name] += busy
            commands_run[name].append((graded, began, time.time()))

        clustered = [name for name in runs if key_of[name] in CLUSTER_RUNS]
        at_once = [name for name in runs if key_of[name] in ONE_COMMAND_RUNS]
        for index, assignment in enumerate(assignments):
            if index == len(assignments) // 2:
                # The one-command runs go in the middle of the others' turns: a drift
                # that lasts the whole benchmark touches them as it touches the others.
                for name in at_once:
                    run(name, assignments)
            for name in runs:
                if name not in clustered and name not in at_once:
                    run(name, [assignment])
        for course in courses.values():
            stop_service(course)  # idle, it holds memory: the Dask runs do not share it
        if "dask" in args.runs:
            address = stack.enter_context(dask_cluster(scratch))
        for name in clustered:
            for assignment in assignments:
                run(name, [assignment])
        for name, course in courses.items():
            # Per command: seconds to its first kernel, to its first cell, after its last.
            to_kernel, to_cell, after = [], [], []
            for graded, began, ended in commands_run[name]:
                span = cells_span(course, graded)
                if span is not None:
                    first_kernel, first_cell, last_cell = span
                    to_kernel.append(first_kernel - began)
                    to_cell.append(first_cell - began)
                    after.append(ended - last_cell)
            startup[name] = statistics.mean(to_cell) if to_cell else 0.0
            scores.append(grades(course, assignments))
            workers = WORKERS[key_of[name]]
            shared = {
                "startup": sum(to_kernel) * workers / notebooks,
                "ending": sum(after) * workers / notebooks,
            }
            worker_seconds = results[name] * workers / notebooks
            phases[name] = breakdown(course, assignments, worker_seconds, shared)
            print(f"  {name}: {results[name]:.1f} s", flush=True)
    print()
    print(f"| {'command':<40} | s / notebook | throughput vs plain | core-s / notebook |")
    print(f"|{'-' * 42}|{'-' * 14}|{'-' * 21}|{'-' * 19}|")
    plain = results.get(RUNS["plain"], 0.0) / notebooks
    for name, seconds in results.items():
        per = seconds / notebooks
        against = f"{plain / per:18.1f}x" if plain else f"{'-':>19}"
        print(f"| {name:<40} | {per:12.2f} | {against} | {cpu[name] / notebooks:17.2f} |")
    floor = kernel_floor() if plain else 0.0
    if plain:
        floor_row = f"| {'floor: kernel + torch':<40} | {floor:12.2f} | {plain / floor:18.1f}x |"
        print(f"{floor_row} {'-':>17} |")
    headline = results.get(RUNS[HEADLINE])
    if headline and plain:
        per = headline / notebooks
        print(
            f"\nheadline ({RUNS[HEADLINE]}, one command per assignment, {args.students} "
            f"students each): {per:.2f} s a notebook, {plain / per:.1f}x plain nbgrader, "
            f"{floor / per:.1f}x its floor (a fresh kernel that imports torch)"
        )
    print_breakdown(phases)
    print("\nstart-up: seconds from a command's start to its first cell, per command:")
    for name, seconds in startup.items():
        share = seconds * len(commands_run[name]) / notebooks
        print(f"  {name:<40} {seconds:5.2f} s ({share:.2f} s a notebook, shared by the class)")
    jobs2 = results.get(RUNS["jobs2"])
    for key in ("dask", "dask-local"):
        if jobs2 and RUNS[key] in results:
            overhead = results[RUNS[key]] / jobs2 - 1
            print(f"{RUNS[key]} against --jobs 2: {overhead:+.1%} time")
    same = all(other == scores[0] for other in scores[1:])
    print(f"\nevery test scored the same by all of them: {'yes' if same else 'NO'}")
    if not same:
        names = list(results)
        for name, other in zip(names[1:], scores[1:], strict=True):
            for test_key in sorted(set(scores[0]) | set(other)):
                if scores[0].get(test_key) != other.get(test_key):
                    assignment, student, test = test_key
                    print(
                        f"  {assignment} {student} ({fixtures[assignment, student]}) {test}: "
                        f"{names[0]} {scores[0].get(test_key)}, {name} {other.get(test_key)}"
                    )
        sys.exit(1)


if __name__ == "__main__":
    main()
