"""How fast a class is graded: plain ``nbgrader autograde`` against ``python -m autograder``.

Builds a synthetic class (``--students`` per assignment, every current assignment, made
of the fixture submissions in turn), then grades it three times, each in a fresh course
folder and each through the command line, as an instructor would:

* plain ``nbgrader autograde`` (one student at a time, a fresh kernel each);
* ``python -m autograder autograde --jobs 1`` and ``--jobs 2``.

Only the autograde commands are timed (not the build or the collection). It prints the
seconds per submitted notebook, the floor of plain nbgrader (a fresh kernel that imports
torch), the throughput of each against plain nbgrader, and whether all three gave every
test the same score. Run it on an otherwise idle machine::

    .venv/bin/python -m benchmarks.grading_bench --students 8
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import start_new_kernel
from nbgrader.api import Gradebook

from autograder.authoring.build import build
from autograder.course import Course, assignment_ids
from autograder.pipeline.collect import collect
from tests.support.fixtures import fixture_notebooks


def make_class(course: Course, assignments: list[str], students: int, folder: Path) -> None:
    """Builds ``course`` and collects ``students`` submissions per assignment into it."""
    build(course, assignments)
    for assignment in assignments:
        incoming = folder / assignment
        fixtures = sorted(fixture_notebooks(course, assignment).items())
        for number, (_, notebook) in zip(range(students), itertools.cycle(fixtures)):
            target = incoming / f"s{number + 1:03d}"
            target.mkdir(parents=True)
            nbformat.write(notebook, target / f"{assignment}.ipynb")
        collect(course, assignment, incoming)


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


def timed(commands: list[list[str]], cwd: Path) -> float:
    """Runs the commands one after the other; returns the seconds they took."""
    start = time.perf_counter()
    for command in commands:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


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


def main() -> None:
    """Builds the class, grades it three ways, prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=20, help="students per assignment")
    args = parser.parse_args()
    assignments = assignment_ids()
    python = sys.executable
    nbgrader = str(Path(python).with_name("nbgrader"))
    ours = [python, "-m", "autograder", "autograde"]
    runs = {
        "plain nbgrader autograde": lambda a, root: [nbgrader, "autograde", a, "--force"],
        "autograder --jobs 1": lambda a, root: [*ours, a, "--course", str(root), "--jobs", "1"],
        "autograder --jobs 2": lambda a, root: [*ours, a, "--course", str(root), "--jobs", "2"],
    }
    notebooks = args.students * len(assignments)
    print(
        f"{notebooks} notebooks ({args.students} students x {', '.join(assignments)}), "
        f"{os.cpu_count()} CPUs"
    )
    results: dict[str, float] = {}
    scores = []
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as scratch:
        for name, command in runs.items():
            root = Path(scratch) / name.replace(" ", "_")
            course = Course.at(root)
            make_class(course, assignments, args.students, root / "incoming")
            course.write_nbgrader_config()
            commands = [command(assignment, root) for assignment in assignments]
            results[name] = timed(commands, root)
            scores.append(grades(course, assignments))
            print(f"  {name}: {results[name]:.1f} s", flush=True)
    floor = kernel_floor()
    plain = results["plain nbgrader autograde"] / notebooks
    print()
    print(f"| {'command':<26} | s / notebook | throughput vs plain |")
    print(f"|{'-' * 28}|{'-' * 14}|{'-' * 21}|")
    for name, seconds in results.items():
        per = seconds / notebooks
        print(f"| {name:<26} | {per:12.2f} | {plain / per:18.1f}x |")
    print(f"| {'floor: kernel + torch':<26} | {floor:12.2f} | {plain / floor:18.1f}x |")
    same = all(other == scores[0] for other in scores[1:])
    print(f"\nevery test scored the same by all three: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
