"""Gather a folder of submissions into nbgrader's ``submitted/`` layout, reporting bad ones.

A submissions folder holds one entry per student, named by the student id: a folder with
the notebook in it, a notebook file, or a zip file. Anything unusable (no notebook, corrupt
JSON, a broken zip) is reported with a clear message and the rest of the class goes on.

Submissions come from an LMS export or a shared drive, so they are not trusted either:
symbolic links are never followed (one could point at another student's notebook or at the
sources), a zip may not expand past :data:`MAX_UNZIPPED_BYTES`, a notebook may not be larger
than :data:`MAX_NOTEBOOK_BYTES`, and a student id must be a plain name (nbgrader globs it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Collection
from pathlib import Path

import nbformat

from autograder.atomic import MACHINE_ERRNOS
from autograder.course import Course
from autograder.errors import SubmissionsNotFoundError
from autograder.kernel.fs import remove_tree
from autograder.submission import MISSING, OK, UNREADABLE, Submission

__all__ = ["MISSING", "OK", "UNREADABLE", "Submission", "collect", "student_id_problem"]

# A notebook with its outputs is a few MB; these bound what one entry can cost the host.
MAX_NOTEBOOK_BYTES = 100 * 2**20
MAX_UNZIPPED_BYTES = 200 * 2**20
MAX_ZIP_MEMBERS = 10_000
# Besides letters and digits, what an id may hold: nbgrader uses ids in glob patterns and
# paths, so *, ?, [, ], / and the like would reach other students' files.
ID_PUNCTUATION = frozenset("_.@+-")


def student_id_problem(student: str) -> str:
    """Returns why ``student`` cannot be a student id, or "" when it can.

    Args:
        student: The entry's name, without ``.ipynb`` or ``.zip``.
    """
    if not student or student[0] in ".-" or student == "..":
        return f"{student!r} is not a usable student id: it must start with a letter or digit"
    odd = sorted({char for char in student if not (char.isalnum() or char in ID_PUNCTUATION)})
    if odd:
        shown = " ".join(repr(char) for char in odd)
        return (
            f"{student!r} is not a usable student id: it holds {shown}; use letters, digits "
            "and _ . @ + - only (rename the entry to grade it)"
        )
    return ""


def _student_entries(submissions: Path) -> dict[str, Path]:
    entries: dict[str, Path] = {}
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith("."):
            continue
        student = entry.stem if entry.is_file() else entry.name
        entries.setdefault(student, entry)
    return entries


def _notebooks_under(folder: Path) -> tuple[list[Path], list[Path]]:
    """Returns the notebooks under ``folder`` and the symbolic links met, never following one."""
    notebooks, links = [], []
    for parent, folders, files in os.walk(folder, followlinks=False):
        here = Path(parent)
        links += [here / name for name in folders if (here / name).is_symlink()]
        folders[:] = [name for name in folders if name != ".ipynb_checkpoints"]
        for name in files:
            path = here / name
            if path.is_symlink():
                links.append(path)
            elif name.endswith(".ipynb"):
                notebooks.append(path)
    return sorted(notebooks), sorted(links)


def _find_notebook(folder: Path, assignment: str) -> tuple[Path | None, str]:
    candidates, links = _notebooks_under(folder)
    expected = folder / f"{assignment}.ipynb"
    if expected in candidates:
        return expected, ""
    if not candidates and links:
        names = ", ".join(str(path.relative_to(folder)) for path in links[:5])
        return None, f"no {assignment}.ipynb; symbolic links are not followed: {names}"
    if len(candidates) == 1:
        found = candidates[0].relative_to(folder)
        return candidates[0], f"graded {found} as {assignment}.ipynb"
    if candidates:
        names = ", ".join(str(path.relative_to(folder)) for path in candidates)
        return None, f"no {assignment}.ipynb, and several notebooks to choose from: {names}"
    return None, f"no {assignment}.ipynb in the submission"


def _check_readable(notebook: Path) -> str:
    size = notebook.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        return (
            f"{notebook.name} is {size / 2**20:.0f} MB, more than the "
            f"{MAX_NOTEBOOK_BYTES // 2**20} MB a notebook may have"
        )
    try:
        nbformat.validate(nbformat.read(notebook, as_version=4))
    except Exception as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return f"{notebook.name} is not a readable notebook: {type(error).__name__}: {first_line}"
    return ""


def _zip_problem(archive: zipfile.ZipFile, name: str) -> str:
    members = archive.infolist()
    if len(members) > MAX_ZIP_MEMBERS:
        return f"{name} holds {len(members)} files, more than {MAX_ZIP_MEMBERS}"
    unzipped = sum(member.file_size for member in members)
    if unzipped > MAX_UNZIPPED_BYTES:
        return (
            f"{name} would expand to {unzipped / 2**20:.0f} MB, more than the "
            f"{MAX_UNZIPPED_BYTES // 2**20} MB a submission may take"
        )
    return ""


def _unzip(entry: Path, folder: Path, student: str) -> Submission | None:
    try:
        with zipfile.ZipFile(entry) as archive:
            problem = _zip_problem(archive, entry.name)
            if problem:
                return Submission(student, UNREADABLE, problem)
            archive.extractall(folder)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        return Submission(student, UNREADABLE, f"{entry.name} is not a valid zip: {error}")
    return None


def _collect_one(entry: Path, assignment: str, target: Path, student: str) -> Submission:
    if entry.is_symlink():
        return Submission(student, MISSING, f"{entry.name} is a symbolic link: not followed")
    with tempfile.TemporaryDirectory() as scratch:
        folder = entry
        if entry.is_file() and entry.suffix == ".zip":
            folder = Path(scratch)
            failed = _unzip(entry, folder, student)
            if failed is not None:
                return failed
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
    return Submission(student, OK, note, note=note)


def collect(
    course: Course, assignment: str, submissions: Path, only: Collection[str] | None = None
) -> list[Submission]:
    """Copies each student's notebook to ``submitted/<student>/<assignment>/``.

    Earlier collected copies of the same students are replaced.

    Args:
        course: The course to collect into.
        assignment: The assignment id.
        submissions: The folder with one entry per student.
        only: Collect these students only (a late submission); one that has no entry
            in ``submissions`` is returned as ``missing``.

    Returns:
        One :class:`Submission` per student, sorted by student id.

    Raises:
        FileNotFoundError: If ``submissions`` is not a folder.
    """
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise SubmissionsNotFoundError(f"no submissions folder at {submissions}")
    results = []
    entries = _student_entries(submissions)
    if only is not None:
        entries = {student: entry for student, entry in entries.items() if student in only}
        results += [
            Submission(student, MISSING, f"no entry for {student} in {submissions}")
            for student in sorted(set(only) - set(entries))
        ]
    for student, entry in entries.items():
        problem = student_id_problem(student)
        if problem:
            results.append(Submission(student, UNREADABLE, problem))
            continue
        target = course.submitted_folder(student, assignment)
        if target.exists():
            remove_tree(target)
        try:
            results.append(_collect_one(entry, assignment, target, student))
        except (OSError, RecursionError, ValueError) as error:
            if isinstance(error, OSError) and error.errno in MACHINE_ERRNOS:
                raise  # a full disk is no student's fault: the command stops and says so
            # Whatever one entry holds, the rest of the class is collected.
            remove_tree(target)
            message = f"could not be collected: {type(error).__name__}: {error}"
            results.append(Submission(student, UNREADABLE, message))
    return sorted(results, key=lambda submission: submission.student_id)
