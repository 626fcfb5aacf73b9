"""Write the hostile and broken sample submissions from their readable spec.

``autograder/fixtures/adversarial/attacks.py`` names each attack as an :class:`Attack`:
a base submission (``perfect``, ``blank`` or one of the assignment's named wrong answers)
and the edits that turn it into the attack. ``expected_outcomes.csv`` beside it says
what each must get: its status and the scores it may earn (never more than its answers
earn honestly). The notebooks are written to ``adversarial/submissions/`` by
``make fixtures`` and committed; a test fails when they are stale.
"""

from __future__ import annotations

import copy
import csv
import runpy
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell

from autograder.authoring.wrong_answers import FIXTURES
from autograder.course import Course
from tests.support.fixtures import FixtureError, fixture_notebooks

ADVERSARIAL = FIXTURES / "adversarial"
# Issue 19's attacks on a second assignment (the judge's side of grading).
JUDGE_ATTACKS = FIXTURES / "judge_attacks"


@dataclass(frozen=True)
class Attack:
    """One hostile or broken submission, as edits of a base submission.

    Attributes:
        base: The fixture student it starts from: ``perfect``, ``blank`` or a wrong answer.
        answers: New source of answer cells, by grade id.
        cells_after: Source of a new plain code cell to insert after a cell, by grade id.
        edit_cells: New source of other (locked) cells, by grade id.
        metadata: Changes to a cell's nbgrader metadata, by grade id.
        delete: Grade ids of cells to delete.
        move_before: Cells to move, by grade id, each before the cell of another grade id.
        strip_metadata: Remove every cell's metadata and give it a new id.
        file_name: Hand the notebook in under this name.
        raw: Hand in this text instead of a notebook.
        empty: Hand in an empty folder.
    """

    base: str = "perfect"
    answers: dict[str, str] = field(default_factory=dict)
    cells_after: dict[str, str] = field(default_factory=dict)
    edit_cells: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, dict] = field(default_factory=dict)
    delete: tuple[str, ...] = ()
    move_before: dict[str, str] = field(default_factory=dict)
    strip_metadata: bool = False
    file_name: str | None = None
    raw: str | None = None
    empty: bool = False


def load_attacks(folder: Path = ADVERSARIAL) -> tuple[str, dict[str, Attack]]:
    """Reads ``ASSIGNMENT`` and ``ATTACKS`` from ``attacks.py``."""
    spec = runpy.run_path(str(folder / "attacks.py"))
    return spec["ASSIGNMENT"], spec["ATTACKS"]


def load_expected(folder: Path = ADVERSARIAL) -> dict[str, dict[str, str]]:
    """Reads ``expected_outcomes.csv``: ``{student: {status, min_score, max_score}}``."""
    with (folder / "expected_outcomes.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def attacked(base: NotebookNode, attack: Attack, name: str) -> NotebookNode:
    """Returns a copy of ``base`` with ``attack``'s edits applied.

    Raises:
        FixtureError: If the attack names a cell the notebook does not have.
    """
    notebook = copy.deepcopy(base)
    cells = {
        cell.metadata.nbgrader["grade_id"]: cell
        for cell in notebook.cells
        if "nbgrader" in cell.metadata
    }
    named = [*attack.answers, *attack.cells_after, *attack.edit_cells, *attack.metadata]
    named += [*attack.move_before, *attack.move_before.values()]
    for grade_id in [*named, *attack.delete]:
        if grade_id not in cells:
            raise FixtureError(f"{name}: the notebook has no cell {grade_id!r}")
    for grade_id, source in {**attack.answers, **attack.edit_cells}.items():
        cells[grade_id].source = source.strip("\n")
    for grade_id, changes in attack.metadata.items():
        cells[grade_id].metadata.nbgrader.update(changes)
    for index, (grade_id, source) in enumerate(attack.cells_after.items()):
        position = next(i for i, cell in enumerate(notebook.cells) if cell is cells[grade_id])
        added = new_code_cell(source.strip("\n"))
        added.id = f"{name}-{index}"
        notebook.cells.insert(position + 1, added)
    for moved, before in attack.move_before.items():
        notebook.cells.remove(cells[moved])
        position = next(i for i, cell in enumerate(notebook.cells) if cell is cells[before])
        notebook.cells.insert(position, cells[moved])
    notebook.cells = [
        cell for cell in notebook.cells if all(cell is not cells[g] for g in attack.delete)
    ]
    if attack.strip_metadata:
        for index, cell in enumerate(notebook.cells):
            cell.metadata = NotebookNode()
            cell.id = f"stripped-{index:03d}"
    return notebook


def write_adversarial(course: Course, folder: Path = ADVERSARIAL) -> list[Path]:
    """Writes ``submissions/<student>/...`` for every attack in the spec.

    Args:
        course: A course where the spec's assignment has been built.
        folder: The folder holding ``attacks.py``.

    Returns:
        The written paths (notebooks, raw files, and ``.gitkeep`` of empty folders), sorted.
    """
    assignment, attacks = load_attacks(folder)
    bases = fixture_notebooks(course, assignment)
    submissions = folder / "submissions"
    if submissions.exists():
        shutil.rmtree(submissions)
    written = []
    for name, attack in sorted(attacks.items()):
        target = submissions / name
        target.mkdir(parents=True)
        if attack.empty:
            path = target / ".gitkeep"  # git keeps no empty folder; collect skips dot files
            path.write_text("")
        elif attack.raw is not None:
            path = target / (attack.file_name or f"{assignment}.ipynb")
            path.write_text(attack.raw)
        else:
            if attack.base not in bases:
                raise FixtureError(f"{name}: no base submission {attack.base!r}")
            path = target / (attack.file_name or f"{assignment}.ipynb")
            nbformat.write(attacked(bases[attack.base], attack, name), path)
        written.append(path)
    return sorted(written)
