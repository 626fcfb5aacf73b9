"""Run the course on another PyTorch: ``python -m autograder torch-check 2.14.1``.

The course pins one torch, and every claim a notebook makes is executed on it. Before the
pin moves, an author wants to know what the next release breaks: this builds (once) a side
environment with that torch and the course's other pinned packages,
``build/torch-check/<version>/venv``, then, in it:

* executes every source notebook as ``make check`` runs a source notebook (its own tests,
  hidden ones included), and lists each cell that raised: a demonstration whose
  assertion fails, an ``expect_error``/``expect_warning`` whose live text no longer
  matches, a test that fails;
* runs the helper package's own tests (:data:`PACKAGE_TESTS`).

The report is printed and kept in ``build/torch-check/<version>/report.txt``. The project's
own ``.venv`` is never touched. A torch that is not on this machine's disk comes from PyPI
(a CUDA build of several GB for Linux). The side environment's installs read no pip
configuration file: a machine's configuration may cap torch below the release to check
(this workplace's caps it at the releases on its disk).

The command also runs inside the side environment (``--inner``), where it executes the
notebooks and prints what failed as JSON for the outer run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tomllib
import venv
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import REPO, Course, assignment_ids
from autograder.errors import AutograderError

SIDE = REPO / "build" / "torch-check"
# The tests of the helper package the notebooks import (not the grader's pipeline, which
# runs in the grader's environment, whatever torch the notebooks were written on).
PACKAGE_TESTS = (
    "tests/test_checks.py",
    "tests/test_diagnose.py",
    "tests/test_graph.py",
    "tests/test_track.py",
    "tests/test_watch.py",
    "tests/test_passes.py",
    "tests/test_gpu_standin.py",
    "tests/test_probe_judge.py",
)
# Besides the project's dependencies: what the package's tests need.
TEST_PACKAGES = ("pytest", "torchviz")
STAMP = "installed.json"


class TorchCheckError(AutograderError):
    """The side environment could not be built or the check could not run."""


@dataclass(frozen=True)
class FailedCell:
    """A cell of a source notebook that raised on the other torch.

    Attributes:
        notebook: The assignment.
        cell: The cell's position (1-based, as JupyterLab counts).
        name: Its grade id, or its first line.
        error: ``Name: message`` of what it raised (the message's first lines).
    """

    notebook: str
    cell: int
    name: str
    error: str


@dataclass
class TorchCheckReport:
    """What running the course on one torch found."""

    version: str
    installed: str = ""
    cells: list[FailedCell] = field(default_factory=list)
    tests_summary: str = ""
    tests_failed: list[str] = field(default_factory=list)

    def format(self) -> str:
        """The report as text."""
        lines = [f"torch-check {self.version}: torch {self.installed} in its own environment"]
        lines.append(f"source notebooks: {len(self.cells)} cells raised")
        for failed in self.cells:
            lines.append(f"  {failed.notebook} cell {failed.cell} ({failed.name}):")
            lines += [f"      {line}" for line in failed.error.splitlines()]
        lines.append(f"package tests: {self.tests_summary}")
        lines += [f"  {name}" for name in self.tests_failed]
        return "\n".join(lines)


def _dependencies() -> list[str]:
    """The project's pinned dependencies, torch left out (the check installs its own)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pinned = [spec for spec in project["dependencies"] if not spec.startswith("torch==")]
    dev = {spec.split("==")[0]: spec for spec in project["optional-dependencies"]["dev"]}
    return pinned + [dev.get(name, name) for name in TEST_PACKAGES]


def _pip(python: Path, *arguments: str, lift_cap: bool = False) -> None:
    env = dict(os.environ)
    if lift_cap:
        # A machine's pip configuration may constrain torch (this workplace's caps it at
        # the releases on its disk): read no configuration file for these installs.
        env["PIP_CONFIG_FILE"] = os.devnull
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    print("+ pip install", " ".join(arguments), flush=True)
    done = subprocess.run([*command, *arguments], env=env)
    if done.returncode != 0:
        raise TorchCheckError(f"pip install {' '.join(arguments)} failed in {python.parent}")


def side_environment(version: str, folder: Path | None = None) -> Path:
    """Returns the Python of a side environment with torch ``version`` (built once).

    Args:
        version: A torch release, for example ``"2.14.1"``.
        folder: Where to build it (``build/torch-check/<version>`` when None).

    Raises:
        TorchCheckError: If an install fails.
    """
    folder = folder or SIDE / version
    python = folder / "venv" / "bin" / "python"
    stamp = folder / STAMP
    wanted = {"torch": version, "dependencies": _dependencies()}
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        return python
    print(f"Building a side environment with torch {version} in {folder}", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(folder / "venv")
    # torch first: a dependency that needs torch (torchviz) then finds this one, not the
    # newest release; with the cap lifted for both, or pip would downgrade it to the cap.
    _pip(python, f"torch=={version}", lift_cap=True)
    _pip(python, *wanted["dependencies"], lift_cap=True)
    stamp.write_text(json.dumps(wanted, indent=1) + "\n")
    return python


def _first_lines(text: str, count: int = 3) -> str:
    return "\n".join(text.strip().splitlines()[:count])


def failed_cells(assignments: list[str], solutions: Path | None = None) -> list[FailedCell]:
    """Executes each assignment's source notebook here; returns the cells that raised.

    Runs in the side environment (``--inner``): the notebooks' kernels are this
    environment's Python, with its torch.

    Args:
        assignments: The assignments whose sources to run.
        solutions: Where their sources are (the course's ``solutions/`` when None).
    """
    from dataclasses import replace

    from nbgrader import utils

    from autograder.authoring.build import write_source_notebook
    from autograder.learner.validate import check_notebook

    failed = []
    with tempfile.TemporaryDirectory() as folder:
        course = Course.at(Path(folder))
        if solutions is not None:
            course = replace(course, solutions=solutions)
        for assignment in assignments:
            path = write_source_notebook(course, assignment)
            report = check_notebook(path, cell_timeout=600)
            for index, cell in enumerate(report.executed.cells, start=1):
                errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
                if cell.cell_type != "code" or not errors:
                    continue
                nbgrader = cell.metadata.get("nbgrader", {})
                first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                name = nbgrader.get("grade_id") if utils.is_grade(cell) else first[:70]
                error = "\n".join(f"{e.ename}: {_first_lines(e.evalue)}" for e in errors)
                failed.append(FailedCell(assignment, index, name or first, error))
    return failed


def _inner(assignments: list[str]) -> int:
    import torch

    cells = failed_cells(assignments)
    print(json.dumps({"torch": torch.__version__, "cells": [vars(cell) for cell in cells]}))
    return 0


def torch_check(version: str, assignments: list[str] | None = None) -> TorchCheckReport:
    """Runs the course's source notebooks and the package's tests on torch ``version``.

    Args:
        version: The torch release to check.
        assignments: Which notebooks (every one when None).

    Returns:
        The report, also written to ``build/torch-check/<version>/report.txt``.

    Raises:
        TorchCheckError: If the environment cannot be built or the notebooks not run.
    """
    assignments = assignments or assignment_ids()
    python = side_environment(version)
    # The repository's code, over the side environment's packages; its own .venv unseen.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    for variable in ("VIRTUAL_ENV", "JUPYTER_PATH"):  # make lab's kernel would be the .venv's
        env.pop(variable, None)
    print(f"Running {len(assignments)} source notebooks on torch {version}...", flush=True)
    inner = subprocess.run(
        [str(python), "-m", "autograder.authoring.torch_check", "--inner", *assignments],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    try:
        found = json.loads(inner.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TorchCheckError(
            f"the notebooks did not run on torch {version}:\n{inner.stderr[-3000:]}"
        ) from None
    report = TorchCheckReport(version, found["torch"], [FailedCell(**c) for c in found["cells"]])
    print(f"Running the helper package's tests on torch {version}...", flush=True)
    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *PACKAGE_TESTS],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    lines = tests.stdout.strip().splitlines()
    report.tests_summary = lines[-1] if lines else f"pytest exited {tests.returncode}"
    report.tests_failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    (SIDE / version).mkdir(parents=True, exist_ok=True)
    (SIDE / version / "report.txt").write_text(report.format() + "\n")
    return report


if __name__ == "__main__" and sys.argv[1:2] == ["--inner"]:
    sys.exit(_inner(sys.argv[2:]))
