"""Gather a folder of submissions into nbgrader's ``submitted/`` layout, reporting bad ones.

A submissions folder holds one entry per student, named by the student id: a folder with
the notebook in it, a notebook file, or a zip file. Anything unusable (no notebook, corrupt
JSON, a broken zip) is reported with a clear message and the rest of the class goes on.

Submissions come from an LMS export or a shared drive, so they are not trusted either:
symbolic links are never followed (one could point at another student's notebook or at the
sources), only regular files are read (a FIFO or a device named like a notebook would block
or never end: it is never opened), a zip may not expand past :data:`MAX_UNZIPPED_BYTES`, a
notebook may not be larger than :data:`MAX_NOTEBOOK_BYTES`, and a student id must be a
plain name (nbgrader globs it).

Every entry gets a row, except the files that operating systems and Jupyter leave in
folders (:data:`IGNORED_NAMES`, and macOS's ``._*`` AppleDouble files), which are skipped
with a line in the log. Inside a student's folder or zip the same files are skipped, with
macOS's ``__MACOSX/`` folder: a folder zipped by macOS holds one notebook, not two.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
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
# What systems and tools leave beside the students' entries: no student's, never graded.
IGNORED_NAMES = frozenset(
    {".DS_Store", ".ipynb_checkpoints", "__MACOSX", "Thumbs.db", "desktop.ini", ".Trashes"}
)
APPLE_DOUBLE = "._"  # macOS's resource forks: ._<name> beside each file it copies
_log = logging.getLogger(__name__)


def ignored(name: str) -> bool:
    """Whether an entry named ``name`` is a system's or a tool's file, not a student's."""
    return name in IGNORED_NAMES or name.startswith(APPLE_DOUBLE)


def _kind(mode: int) -> str:
    """What a file that is not a regular file or a folder is, in words."""
    kinds = {
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISSOCK: "a socket",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISLNK: "a symbolic link",
    }
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def read_regular_file(path: Path, limit: int | None = None) -> bytes:
    """Reads a regular file of at most ``limit`` bytes, without ever blocking on another kind.

    Opened without following a link and without waiting (a FIFO opens at once), then
    checked: a FIFO, a socket or a device is refused before anything is read from it.

    Args:
        path: The file.
        limit: The most bytes it may hold (:data:`MAX_NOTEBOOK_BYTES` when None).

    Raises:
        ValueError: If it is not a regular file, or larger than ``limit``.
        OSError: If it cannot be opened or read.
    """
    limit = MAX_NOTEBOOK_BYTES if limit is None else limit
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        about = os.fstat(descriptor)
        if not stat.S_ISREG(about.st_mode):
            raise ValueError(f"{path.name} is {_kind(about.st_mode)}, not a file: not read")
        content = handle.read(limit + 1)  # the size said, or what it grew to meanwhile
        if max(about.st_size, len(content)) > limit:
            size = max(about.st_size, len(content))
            raise ValueError(
                f"{path.name} is {size / 2**20:.0f} MB, more than the "
                f"{limit // 2**20} MB a notebook may have"
            )
        return content


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


def _student_entries(submissions: Path) -> tuple[dict[str, Path], dict[str, list[str]]]:
    """The entry of each student, and the other entries each student had (not graded)."""
    entries: dict[str, Path] = {}
    extra: dict[str, list[str]] = {}
    for entry in sorted(submissions.iterdir()):
        if ignored(entry.name):
            _log.info("skipped %s: a file systems and tools leave, no student's", entry.name)
            continue
        # A folder is named by the student; a file (or a FIFO, ...) also has a suffix.
        student = entry.name if entry.is_dir() else entry.stem
        if student in entries:
            extra.setdefault(student, []).append(entry.name)
            _log.warning(
                "%s is %s's second entry: only %s is graded", entry, student, entries[student].name
            )
            continue
        entries[student] = entry
    return entries, extra


def _notebooks_under(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """Returns the notebooks under ``folder``, and what is there but never read.

    Returns:
        The notebooks (regular files), the symbolic links met (never followed), and the
        entries named like notebooks that are not regular files (FIFOs, sockets, devices).
    """
    notebooks, links, special = [], [], []
    for parent, folders, files in os.walk(folder, followlinks=False):
        here = Path(parent)
        links += [here / name for name in folders if (here / name).is_symlink()]
        folders[:] = [name for name in folders if not ignored(name)]
        for name in files:
            path = here / name
            if ignored(name):
                continue
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                links.append(path)
            elif name.endswith(".ipynb"):
                (notebooks if stat.S_ISREG(mode) else special).append(path)
    return sorted(notebooks), sorted(links), sorted(special)


def _find_notebook(folder: Path, assignment: str) -> tuple[Path | None, str]:
    candidates, links, special = _notebooks_under(folder)
    expected = folder / f"{assignment}.ipynb"
    if expected in candidates:
        return expected, ""
    if expected in special:
        return (
            None,
            f"{assignment}.ipynb is {_kind(expected.lstat().st_mode)}, not a file: not read",
        )
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


def _readable(notebook: Path) -> tuple[bytes, str]:
    """Reads a notebook once; returns its bytes, and why it is not a notebook ("" if it is)."""
    try:
        content = read_regular_file(notebook)
    except ValueError as error:
        return b"", str(error)
    try:
        nbformat.validate(nbformat.reads(content.decode("utf-8"), as_version=4))
    except Exception as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return (
            b"",
            f"{notebook.name} is not a readable notebook: {type(error).__name__}: {first_line}",
        )
    return content, ""


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
    mode = entry.lstat().st_mode
    if stat.S_ISLNK(mode):
        return Submission(student, MISSING, f"{entry.name} is a symbolic link: not followed")
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return Submission(
            student, UNREADABLE, f"{entry.name} is {_kind(mode)}, not a file: not read"
        )
    with tempfile.TemporaryDirectory() as scratch:
        folder = entry
        notebook: Path | None = None
        note = ""
        if stat.S_ISREG(mode) and entry.suffix == ".zip":
            folder = Path(scratch)
            failed = _unzip(entry, folder, student)
            if failed is not None:
                return failed
        elif stat.S_ISREG(mode):
            if entry.suffix != ".ipynb":
                return Submission(student, MISSING, f"{entry.name} is not a notebook or a zip")
            notebook = entry
        if notebook is None:
            notebook, note = _find_notebook(folder, assignment)
        if notebook is None:
            # A FIFO or a device named like the notebook: there, but not a notebook.
            status = UNREADABLE if note.endswith("not read") else MISSING
            return Submission(student, status, note)
        content, problem = _readable(notebook)
        if problem:
            return Submission(student, UNREADABLE, problem)
        target.mkdir(parents=True)
        (target / f"{assignment}.ipynb").write_bytes(content)
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
    entries, extra = _student_entries(submissions)
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
            collected = _collect_one(entry, assignment, target, student)
            if student in extra:  # said in the student's row too: the instructor decides
                others = ", ".join(extra[student])
                message = "; ".join(
                    part for part in (collected.message, f"also found {others}: not graded") if part
                )
                collected = dataclasses.replace(collected, message=message)
            results.append(collected)
        except (OSError, RecursionError, ValueError) as error:
            if isinstance(error, OSError) and error.errno in MACHINE_ERRNOS:
                raise  # a full disk is no student's fault: the command stops and says so
            # Whatever one entry holds, the rest of the class is collected.
            remove_tree(target)
            message = f"could not be collected: {type(error).__name__}: {error}"
            results.append(Submission(student, UNREADABLE, message))
    return sorted(results, key=lambda submission: submission.student_id)
