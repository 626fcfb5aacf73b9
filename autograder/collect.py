"""Gather a folder of submissions into nbgrader's ``submitted/`` layout, reporting bad ones.

A submissions folder holds one entry per student, named by the student id: a folder with
the notebook in it, a notebook file, or a zip file. Anything unusable (no notebook, corrupt
JSON, a broken zip) is reported with a clear message and the rest of the class goes on.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path

import nbformat

from autograder.course import Course
from autograder.outcome import MISSING, OK, UNREADABLE, Submission

__all__ = ["MISSING", "OK", "UNREADABLE", "Submission", "collect"]


def _student_entries(submissions: Path) -> dict[str, Path]:
    entries: dict[str, Path] = {}
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith("."):
            continue
        student = entry.stem if entry.is_file() else entry.name
        entries.setdefault(student, entry)
    return entries


def _find_notebook(folder: Path, assignment: str) -> tuple[Path | None, str]:
    expected = folder / f"{assignment}.ipynb"
    if expected.is_file():
        return expected, ""
    candidates = sorted(
        path for path in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts
    )
    if len(candidates) == 1:
        found = candidates[0].relative_to(folder)
        return candidates[0], f"graded {found} as {assignment}.ipynb"
    if candidates:
        names = ", ".join(str(path.relative_to(folder)) for path in candidates)
        return None, f"no {assignment}.ipynb, and several notebooks to choose from: {names}"
    return None, f"no {assignment}.ipynb in the submission"


def _check_readable(notebook: Path) -> str:
    try:
        nbformat.validate(nbformat.read(notebook, as_version=4))
    except Exception as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return f"{notebook.name} is not a readable notebook: {type(error).__name__}: {first_line}"
    return ""


def _collect_one(entry: Path, assignment: str, target: Path, student: str) -> Submission:
    with tempfile.TemporaryDirectory() as scratch:
        folder = entry
        if entry.is_file() and entry.suffix == ".zip":
            folder = Path(scratch)
            try:
                with zipfile.ZipFile(entry) as archive:
                    archive.extractall(folder)
            except (zipfile.BadZipFile, OSError) as error:
                return Submission(student, UNREADABLE, f"{entry.name} is not a valid zip: {error}")
        elif entry.is_file():
            if entry.suffix != ".ipynb":
                return Submission(student, MISSING, f"{entry.name} is not a notebook or a zip")
            folder = Path(scratch)
            shutil.copy(entry, folder / f"{assignment}.ipynb")
        notebook, note = _find_notebook(folder, assignment)
        if notebook is None:
            return Submission(student, MISSING, note)
        problem = _check_readable(notebook)
        if problem:
            return Submission(student, UNREADABLE, problem)
        target.mkdir(parents=True)
        shutil.copy(notebook, target / f"{assignment}.ipynb")
    return Submission(student, OK, note)


def collect(course: Course, assignment: str, submissions: Path) -> list[Submission]:
    """Copies each student's notebook to ``submitted/<student>/<assignment>/``.

    Earlier collected copies of the same students are replaced.

    Args:
        course: The course to collect into.
        assignment: The assignment id.
        submissions: The folder with one entry per student.

    Returns:
        One :class:`Submission` per student, sorted by student id.

    Raises:
        FileNotFoundError: If ``submissions`` is not a folder.
    """
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise FileNotFoundError(f"no submissions folder at {submissions}")
    results = []
    for student, entry in _student_entries(submissions).items():
        target = course.root / "submitted" / student / assignment
        if target.exists():
            shutil.rmtree(target)
        results.append(_collect_one(entry, assignment, target, student))
    return results
