"""Line a submission's nbgrader cells up with the released notebook before grading.

nbgrader finds test cells by their ``grade_id`` metadata and trusts the rest of it: its
OverwriteCells restores a locked cell's source, points and lock flag, but only for the
cells it still finds. A submission whose test cell was deleted, renamed, unmarked as
graded or stripped of its metadata loses that test silently (nbgrader scores it None),
and a renamed test cell makes nbgrader reject the notebook.

:class:`RestoreFromSource` runs before OverwriteCells. It finds each of the released
notebook's nbgrader cells in the submission (by grade id, then by cell id, then, for
locked cells, by their text), gives every one the released metadata, puts back the ones
that are gone next to their neighbours, and turns any other nbgrader metadata into a
plain cell. OverwriteCells then restores the hidden tests into the locked cells from the
gradebook, so every test of the source runs. What was wrong is recorded as ``tampered``
(see :mod:`autograder.submission`); the score is what the answers earn against the real tests.
"""

from __future__ import annotations

import ast
import copy
import functools
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.demonstrations import SKIPPABLE, skippable_ids
from autograder.submission import KEY, NOTES, TAMPERED, record, reset

COMPARED = ("grade", "solution", "locked", "points", "task")


def _grade_id(cell: NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _set_type(cell: NotebookNode, cell_type: str) -> None:
    if cell.cell_type == cell_type:
        return
    cell.cell_type = cell_type
    if cell_type == "code":
        cell.outputs, cell.execution_count = [], None
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def restore_cells(
    template: list[NotebookNode], cells: list[NotebookNode]
) -> tuple[list[NotebookNode], list[str]]:
    """Returns ``cells`` with the template's nbgrader cells restored, and what was wrong.

    Args:
        template: The released notebook's cells (nbgrader metadata, student-visible text).
        cells: The submission's cells (modified in place where kept).

    Returns:
        The cells to grade, and one message per problem found (empty when none).
    """
    wanted = {_grade_id(cell): cell for cell in template if _grade_id(cell)}
    found: dict[str, NotebookNode] = {}
    how: dict[str, str] = {}
    issues: list[str] = []
    for cell in cells:
        grade_id = _grade_id(cell)
        if "nbgrader" in cell.metadata and grade_id not in wanted:
            del cell.metadata["nbgrader"]
            label = repr(grade_id) if grade_id else "without a grade id"
            issues.append(f"a cell has nbgrader metadata {label} the source does not have")
        elif grade_id in wanted:
            if grade_id in found:
                # Like nbgrader's DeduplicateIds: the last copy counts.
                del found[grade_id].metadata["nbgrader"]
                issues.append(f"{grade_id} appears twice (the last copy is graded)")
            found[grade_id] = cell
            how[grade_id] = "grade id"
    plain = [cell for cell in cells if "nbgrader" not in cell.metadata]
    for grade_id, model in wanted.items():
        if grade_id in found:
            continue
        by_id = [cell for cell in plain if cell.get("id") == grade_id]
        locked = utils.is_locked(model)
        same_text = [cell for cell in plain if locked and cell.source == model.source]
        for cell in by_id[:1] or same_text[:1]:
            found[grade_id], how[grade_id] = cell, "found again"
            plain.remove(cell)
            issues.append(f"{grade_id} had lost its nbgrader metadata (restored)")
    for grade_id, cell in found.items():
        model = wanted[grade_id]
        ours, theirs = model.metadata.nbgrader, cell.metadata.get("nbgrader", {})
        changed = [key for key in COMPARED if theirs.get(key) != ours.get(key)]
        if cell.cell_type != model.cell_type:
            changed.append("cell type")
        if changed and how[grade_id] == "grade id":
            issues.append(f"{grade_id}: changed {', '.join(changed)} (restored)")
        if utils.is_locked(model) and cell.source != model.source:
            issues.append(f"{grade_id}: edited a locked cell (the source's version is graded)")
            cell.source = model.source
        _set_type(cell, model.cell_type)
        cell.metadata["nbgrader"] = copy.deepcopy(ours)
    return _unique_ids(_put_back_missing(template, cells, found, issues)), issues


def _put_back_missing(
    template: list[NotebookNode],
    cells: list[NotebookNode],
    found: dict[str, NotebookNode],
    issues: list[str],
) -> list[NotebookNode]:
    result = list(cells)
    for position, model in enumerate(template):
        grade_id = _grade_id(model)
        if not grade_id or grade_id in found:
            continue
        if not (utils.is_grade(model) or utils.is_locked(model)):
            # Its code, if the cell is still there without metadata, runs as any cell.
            issues.append(f"{grade_id} was deleted or lost its nbgrader metadata (an answer cell)")
            continue
        before = [found[_grade_id(c)] for c in template[:position] if _grade_id(c) in found]
        after = [found[_grade_id(c)] for c in template[position:] if _grade_id(c) in found]
        if before:
            index = _index(result, before[-1]) + 1
        elif after:
            index = _index(result, after[0])
        else:
            index = min(position, len(result))
        restored = copy.deepcopy(model)
        if restored.cell_type == "code":
            restored.outputs, restored.execution_count = [], None
        result.insert(index, restored)
        found[grade_id] = restored
        issues.append(f"{grade_id} was deleted (restored from the source)")
    return result


def moved_tests(cells: list[NotebookNode]) -> list[str]:
    """Says which test cells come before their answer cell: they are graded where they are.

    A test that runs before its answer is defined fails; the score is what the notebook
    earns as handed in, and the message says why a correct-looking answer lost points.
    """
    position = {_grade_id(cell): index for index, cell in enumerate(cells) if _grade_id(cell)}
    notes = []
    for grade_id, index in position.items():
        if not (grade_id or "").endswith("-tests"):
            continue
        answer = grade_id.removesuffix("-tests") + "-answer"
        if answer in position and position[answer] > index:
            notes.append(
                f"{grade_id} was moved above {answer} (graded in the order handed in: "
                "the test ran before the answer was defined)"
            )
    return notes


def _unique_ids(cells: list[NotebookNode]) -> list[NotebookNode]:
    # A restored cell keeps the released id, which a student's cell may also carry.
    seen: set[str] = set()
    for index, cell in enumerate(cells):
        if "id" in cell and cell.id in seen:
            cell.id = f"{cell.id}-{index}"
        seen.add(cell.get("id", ""))
    return cells


def _index(cells: list[NotebookNode], cell: NotebookNode) -> int:
    return next(index for index, candidate in enumerate(cells) if candidate is cell)


def protected_names(notebook: NotebookNode) -> dict[str, str]:
    """Returns the names the notebook's own cells import, which the tests rely on.

    Args:
        notebook: The released notebook; answer cells are skipped.

    Returns:
        ``{name: "module"}`` for ``import module`` and ``{name: "module:attribute"}`` for
        ``from module import attribute``, sorted by name.
    """
    names: dict[str, str] = {}
    for cell in notebook.cells:
        if cell.cell_type != "code" or utils.is_solution(cell):
            continue
        # IPython magics and shell escapes are not Python.
        lines = [
            line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))
        ]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    names[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return dict(sorted(names.items()))


@functools.lru_cache(maxsize=8)
def _released(path: str, modified: int) -> NotebookNode:
    # Read once per grading process, not once per student (``modified`` keys a rebuild).
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


@functools.lru_cache(maxsize=8)
def _released_names(path: str, modified: int) -> dict[str, str]:
    # Parsed once per grading process with the notebook (10 ms of every student's grading).
    return protected_names(_released(path, modified))


@functools.lru_cache(maxsize=8)
def _released_skippable(path: str, modified: int) -> tuple[str, ...]:
    return tuple(skippable_ids(_released(path, modified).cells))


class RestoreFromSource(NbGraderPreprocessor):
    """Restores a submission's nbgrader cells from the released notebook (sanitize step)."""

    release_directory = Unicode(
        "", help="The folder of released notebooks: <release_directory>/<assignment>/<nb>.ipynb"
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict]:
        """Restores the cells and records what was wrong under ``metadata.autograder``."""
        reset(nb)
        info = resources["nbgrader"]
        released = Path(self.release_directory) / info["assignment"] / f"{info['notebook']}.ipynb"
        if not self.release_directory or not released.is_file():
            self.log.warning("No released notebook at %s: cells not restored", released)
            return nb, resources
        modified = released.stat().st_mtime_ns
        template = _released(str(released), modified)
        nb.cells, issues = restore_cells(template.cells, nb.cells)
        record(nb, TAMPERED, *issues)
        record(nb, NOTES, *moved_tests(nb.cells))
        names = _released_names(str(released), modified)
        nb.metadata.setdefault(KEY, {})["protected_names"] = dict(names)
        # The demonstrations grading may skip, from the release: never what a student marked.
        nb.metadata[KEY][SKIPPABLE] = list(_released_skippable(str(released), modified))
        return nb, resources
