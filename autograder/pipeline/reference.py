"""What a grading worker needs to know about an assignment, carried as plain data.

A worker grades without the course folder and without the gradebook: the process that
started the run reads the assignment once (:func:`read_reference`) and hands the worker an
:class:`AssignmentReference`: the released notebook (the tests' template, see
:mod:`autograder.preprocessors.restore`), the assignment's other files, and the gradebook's
record of its cells (ids, points, locked sources with the hidden tests, checksums).

On the worker, :func:`scratch_course` lays these out as a private nbgrader course: its own
folders and its own SQLite gradebook holding this record and nothing else (no student,
no grade). nbgrader's autograde steps run against it (its OverwriteCells reads the hidden
tests from that gradebook; feedback records a student there to score the page), and what
is written there is thrown away: the grades reach the real gradebook only through the
process that started the run (:mod:`autograder.pipeline.record`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import Course
from autograder.errors import AutograderError

# The assignment's data files travel with every worker's copy: a runaway folder must not.
MAX_ASSIGNMENT_FILE_BYTES = 100 * 2**20


@dataclass(frozen=True)
class CellRecord:
    """One cell as the gradebook records it for the assignment (not for a student).

    Attributes:
        name: The cell's grade id.
        kind: ``grade``, ``solution``, ``task`` or ``source``: the gradebook table.
        fields: The table's columns for it (points, cell type, lock, source, checksum).
    """

    name: str
    kind: str
    fields: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class NotebookRecord:
    """One notebook of the assignment as the gradebook records it."""

    name: str
    kernelspec: str | None
    cells: tuple[CellRecord, ...]


@dataclass(frozen=True)
class AssignmentReference:
    """Everything a worker needs to grade the students of one assignment.

    Attributes:
        assignment: The assignment id.
        released: The released notebooks, by notebook name: bytes as in the release folder.
        sources: The source notebooks (solutions and hidden tests), by notebook name.
        files: The assignment's other files (data the notebooks read), by relative path.
        notebooks: The gradebook's record of each notebook and its cells.
        grading_secret: The course's grading secret (hex), which seeds each student's
            hidden cases: the same on every worker, so that a student's grade does not
            depend on the worker that graded them.
    """

    assignment: str
    released: dict[str, bytes] = field(hash=False)
    sources: dict[str, bytes] = field(hash=False)
    files: dict[str, bytes] = field(hash=False)
    notebooks: tuple[NotebookRecord, ...]
    grading_secret: str = field(default="", repr=False)

    @property
    def imports(self) -> tuple[str, ...]:
        """The modules the released notebooks import: the zygote imports them once."""
        from autograder.pipeline.preload import notebook_imports

        found: dict[str, None] = {}
        for notebook in self.released.values():
            found.update(dict.fromkeys(notebook_imports(notebook)))
        return tuple(found)

    @property
    def digest(self) -> str:
        """A short fingerprint: workers keep one scratch course per distinct reference."""
        return hashlib.sha256(pickle.dumps(self)).hexdigest()[:16]


# Columns of each gradebook table that describe the assignment (nbgrader 0.9's names).
_COLUMNS = {
    "grade": ("max_score", "cell_type"),
    "solution": (),
    "task": ("max_score", "cell_type"),
    "source": ("cell_type", "locked", "source", "checksum"),
}


def _assignment_files(course: Course, assignment: str, ignore: list[str]) -> dict[str, bytes]:
    folder = course.source / assignment
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        skipped = any(
            fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in ignore
        )
        if skipped or path.suffix == ".ipynb" or path.is_symlink() or not path.is_file():
            continue
        total += path.stat().st_size
        if total > MAX_ASSIGNMENT_FILE_BYTES:
            raise AutograderError(
                f"{assignment}'s files in {folder} pass {MAX_ASSIGNMENT_FILE_BYTES // 2**20} MB: "
                "too much to send to every grading worker"
            )
        files[str(relative)] = path.read_bytes()
    return files


def read_reference(course: Course, assignment: str) -> AssignmentReference:
    """Reads what workers need about ``assignment`` from ``course`` and its gradebook.

    Args:
        course: The course, with the assignment built (released, and in the gradebook).
        assignment: The assignment id.
    """
    from nbgrader.coursedir import CourseDirectory

    notebooks = []
    with course.gradebook_db() as gradebook:
        for notebook in gradebook.find_assignment(assignment).notebooks:
            cells = [
                CellRecord(
                    cell.name, kind, tuple((column, getattr(cell, column)) for column in columns)
                )
                for kind, columns in _COLUMNS.items()
                for cell in getattr(notebook, f"{kind}_cells")
            ]
            notebooks.append(NotebookRecord(notebook.name, notebook.kernelspec, tuple(cells)))
    released = {
        record.name: (course.release / assignment / f"{record.name}.ipynb").read_bytes()
        for record in notebooks
    }
    sources = {
        record.name: (course.source / assignment / f"{record.name}.ipynb").read_bytes()
        for record in notebooks
    }
    ignore = list(CourseDirectory().ignore)
    files = _assignment_files(course, assignment, ignore)
    return AssignmentReference(
        assignment, released, sources, files, tuple(notebooks), course.grading_secret()
    )


def scratch_course(reference: AssignmentReference, root: Path) -> Course:
    """Lays ``reference`` out under ``root`` as a private course to grade in.

    Args:
        reference: The assignment, as read by :func:`read_reference`.
        root: An empty folder of the worker's own.

    Returns:
        The course: ``build/source`` holds the assignment's source notebooks and files, the
        release folder its released notebooks, and ``gradebook.db`` the record of its cells.
    """
    course = Course.at(root, release=root / "release")
    assignment = reference.assignment
    (course.release / assignment).mkdir(parents=True)
    (course.source / assignment).mkdir(parents=True)
    for name, content in reference.released.items():
        (course.release / assignment / f"{name}.ipynb").write_bytes(content)
    for name, content in reference.sources.items():
        (course.source / assignment / f"{name}.ipynb").write_bytes(content)
    for relative, content in reference.files.items():
        target = course.source / assignment / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    with course.gradebook_db() as gradebook:
        gradebook.update_or_create_assignment(assignment)
        for notebook in reference.notebooks:
            gradebook.update_or_create_notebook(
                notebook.name, assignment, kernelspec=notebook.kernelspec
            )
            for cell in notebook.cells:
                create = getattr(gradebook, f"update_or_create_{cell.kind}_cell")
                create(cell.name, notebook.name, assignment, **dict(cell.fields))
    return course
