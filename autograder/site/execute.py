"""Run each student notebook once, as ``make check`` runs it, and keep the result.

A page shows the student notebook (never the source with its solutions) with the outputs
of an execution on the pinned torch. The student notebook runs from top to bottom without
an answer: every demonstration cell passes and only the graded test cells fail with
"Exercise not answered yet" (``tests/test_notebooks.py`` holds that). So no solution is in
the process that makes the outputs, and nothing after an unanswered exercise breaks.

Executing the twelve notebooks takes about half a minute; the result is kept under
``build/site-cache/`` in a file named by a hash of everything its outputs depend on (the
notebook, the course's helper package, the versions of torch and graphviz), so a rebuild
of an unchanged course runs nothing, and any change to those runs it again.

A translated edition's notebook has the English code cells byte for byte (the build of
``notebooks/zh-CN`` takes them from the English release; tests/test_i18n.py holds it), so
its pages show the English execution's outputs under its own prose
(:func:`executed_like`) instead of running the same code again. Only the graded test
cells' outputs would differ (their failure is in the notebook's language), and a page
shows those without output.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
import subprocess
import tempfile
from importlib import metadata
from pathlib import Path

import nbformat
from nbgrader import utils

from autograder.atomic import replace_file
from autograder.course import REPO
from autograder.errors import AutograderError
from autograder.learner.validate import check_notebook

CACHE = REPO / "build" / "site-cache"
# The helper package the notebooks import: its code makes their outputs (graphs, messages).
HELPERS = REPO / "src" / "autograd_pitfalls"
# Bump when the way outputs are made changes (not the inputs: those are hashed).
RECIPE = "check_notebook-1"


class ExecutionError(AutograderError):
    """A demonstration cell of a student notebook raised: the page would show a broken lesson."""


def fingerprint(notebook: Path) -> str:
    """A hash of what the executed ``notebook``'s outputs depend on.

    Args:
        notebook: The student notebook.

    Returns:
        A hex digest of the notebook's bytes, every file of the helper package, the
        versions of torch and graphviz's ``dot``, and :data:`RECIPE`.
    """
    digest = hashlib.sha256()
    digest.update(RECIPE.encode())
    digest.update(notebook.read_bytes())
    for path in sorted(HELPERS.rglob("*.py")):
        digest.update(str(path.relative_to(HELPERS)).encode())
        digest.update(path.read_bytes())
    digest.update(metadata.version("torch").encode())
    digest.update(_dot_version().encode())
    return digest.hexdigest()


def _dot_version() -> str:
    """What ``dot -V`` says (the graphs' SVG is its output), or ``"none"`` without it."""
    dot = shutil.which("dot")
    if dot is None:
        return "none"
    done = subprocess.run([dot, "-V"], capture_output=True, text=True, check=False)
    return done.stderr.strip() or done.stdout.strip()


def executed(notebook: Path, cache: Path = CACHE) -> tuple[nbformat.NotebookNode, bool]:
    """``notebook`` with the outputs of one execution: from the cache, or run now and kept.

    It runs in a temporary copy (a cell that writes a file writes it there), in a fresh
    kernel, as the learner's ``make check`` runs it.

    Args:
        notebook: A student notebook.
        cache: The folder of kept executions.

    Returns:
        The executed notebook, and whether it came from the cache.

    Raises:
        ExecutionError: If a cell that is not a graded test cell raised.
    """
    kept = cached_path(notebook, cache)
    if kept.is_file():
        return nbformat.read(kept, as_version=4), True
    with tempfile.TemporaryDirectory(prefix="site-run-") as folder:
        copy = Path(folder) / notebook.name
        shutil.copy(notebook, copy)
        result = check_notebook(copy).executed
    keep(notebook, result, cache)
    return result, False


def executed_like(
    notebook: Path, reference: Path, cache: Path = CACHE
) -> tuple[nbformat.NotebookNode, bool]:
    """``notebook`` with the outputs of ``reference``'s execution, when their code is the same.

    Args:
        notebook: A translated edition's student notebook.
        reference: The student notebook it was translated from (the English one).
        cache: The folder of kept executions.

    Returns:
        ``notebook`` (its prose, its metadata) with each code cell's outputs and execution
        count from ``reference``'s execution, and whether that came from the cache. When
        the two notebooks' code cells differ in any way (their number, order or source),
        ``notebook`` is executed on its own instead (:func:`executed`).

    Raises:
        ExecutionError: If a cell that is not a graded test cell raised.
    """
    own = nbformat.read(notebook, as_version=4)
    if code_cells(own) != code_cells(nbformat.read(reference, as_version=4)):
        return executed(notebook, cache)
    ran, from_cache = executed(reference, cache)
    result = copy.deepcopy(own)
    outputs = [cell for cell in ran.cells if cell.cell_type == "code"]
    for cell, done in zip(
        (cell for cell in result.cells if cell.cell_type == "code"), outputs, strict=True
    ):
        cell.outputs = copy.deepcopy(done.outputs)
        cell.execution_count = done.execution_count
    return result, from_cache


def code_cells(notebook: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """Each code cell's id and source, in order: what must match for outputs to be shared."""
    return [
        (cell.get("id", ""), cell.source) for cell in notebook.cells if cell.cell_type == "code"
    ]


def cached_path(notebook: Path, cache: Path = CACHE) -> Path:
    """Where the execution of ``notebook`` as it is now is kept (it may not be there yet)."""
    return cache / f"{notebook.stem}-{fingerprint(notebook)[:20]}.ipynb"


def keep(notebook: Path, result: nbformat.NotebookNode, cache: Path = CACHE) -> Path:
    """Keeps ``result``, an execution of ``notebook`` as ``make check`` runs it, in the cache.

    ``tests/test_notebooks.py`` runs every student notebook so already: it keeps what it
    got, and the site's test in the same session renders it instead of running it again.

    Args:
        notebook: The student notebook that was executed (its bytes name the entry).
        result: The executed notebook.
        cache: The folder of kept executions.

    Returns:
        The kept file; earlier executions of the same notebook are removed.

    Raises:
        ExecutionError: If a cell that is not a graded test cell raised (nothing is kept).
    """
    broken = [
        cell.source.splitlines()[0] if cell.source else "(empty cell)"
        for cell in result.cells
        if cell.cell_type == "code"
        and not utils.is_grade(cell)
        and any(output.output_type == "error" for output in cell.get("outputs", []))
    ]
    if broken:
        raise ExecutionError(
            f"{notebook.name}: a cell outside the exercises' tests raised, so its page "
            f"would show a broken lesson: {broken}"
        )
    kept = cached_path(notebook, cache)
    for stale in cache.glob(f"{notebook.stem}-*.ipynb"):
        if stale != kept:
            stale.unlink(missing_ok=True)
    replace_file(kept, nbformat.writes(result))
    return kept
