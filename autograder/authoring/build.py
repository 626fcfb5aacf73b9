"""From ``solutions/`` to student notebooks: jupytext, normalise, nbgrader generate_assignment."""

from __future__ import annotations

import shutil
from pathlib import Path

import jupytext
import nbformat

from autograder.authoring.normalize import normalize
from autograder.course import Course, assignment_ids
from autograder.errors import AutograderError
from autograder.i18n.catalog import TranslationError
from autograder.i18n.edition import release_folder, write_edition


class BuildError(AutograderError):
    """A source could not be turned into a student notebook."""


def write_source_notebook(course: Course, assignment: str) -> Path:
    """Converts one solution file into nbgrader's source notebook.

    Args:
        course: The course to build in.
        assignment: The assignment id, for example ``"01_leaf_tensors"``.

    Returns:
        The path of the written ``build/source/<id>/<id>.ipynb``.

    Raises:
        BuildError: If the solution file is missing or its metadata is inconsistent.
    """
    solution = course.solution_file(assignment)
    if not solution.is_file():
        raise BuildError(f"no source for {assignment!r}: {solution} does not exist")
    try:
        notebook = normalize(jupytext.read(solution, fmt="py:percent"))
    except ValueError as error:
        raise BuildError(f"{solution}: {error}") from error
    target = course.source_notebook(assignment)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(notebook)
    nbformat.write(notebook, target)
    return target


def release(course: Course, assignment: str) -> Path:
    """Generates the student version of one assignment with nbgrader.

    This also records the assignment (its cells, points and tests) in the gradebook,
    which autograde needs.

    Args:
        course: The course to build in.
        assignment: The assignment id.

    Returns:
        The path of the student notebook.

    Raises:
        BuildError: If nbgrader fails; its log is in the message.
    """
    result = course.api().generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise BuildError(
            f"nbgrader generate_assignment failed for {assignment}:\n"
            f"{result.get('error', '')}\n{result.get('log', '')}"
        )
    return course.student_notebook(assignment)


def build(
    course: Course, assignments: list[str] | None = None, languages: tuple[str, ...] = ()
) -> list[Path]:
    """Builds the student notebooks of ``assignments`` (all of them when None), every edition.

    Each English student notebook is released by nbgrader; each other edition's is made
    from it with the prose of its catalog (:mod:`autograder.i18n.edition`).

    Args:
        course: The course to build in.
        assignments: Assignment ids; every source in ``solutions/`` when None.
        languages: The editions besides English to build (``LANGUAGES``: all; grading
            needs none, and builds none).

    Returns:
        The paths of the student notebooks, in assignment order, English first.

    Raises:
        BuildError: If a source cannot be built, or (once every English notebook is
            written) an edition's catalog lacks a current translation of a markdown cell:
            the message names each such cell.
    """
    built, problems = [], []
    if assignments is None:
        remove_retired(course, languages)
    for assignment in assignments or assignment_ids(course):
        write_source_notebook(course, assignment)
        built.append(release(course, assignment))
        for language in languages:
            try:
                built.append(write_edition(course, assignment, language))
            except TranslationError as error:
                problems.append(str(error))
    if problems:
        raise BuildError("\n".join(problems))
    return built


def remove_retired(course: Course, languages: tuple[str, ...] = ()) -> list[Path]:
    """Removes the built notebooks of assignments that no longer have a source.

    When a lesson is renamed or split (``02_version_counter`` into ``02a_`` and ``02b_``), its
    old ``notebooks/02_version_counter/`` would stay, and ``make lab`` would copy it into
    every new workspace. Only a folder holding nothing but ``<name>.ipynb`` (what the build
    writes) goes; anything else is left for its owner.

    Args:
        course: The course whose release folder to tidy.
        languages: The editions besides English whose folders to tidy too.

    Returns:
        The folders removed.
    """
    current = set(assignment_ids(course))
    removed = []
    for folder in [course.release, *(release_folder(course, lang) for lang in languages)]:
        if not folder.is_dir():
            continue
        for old in sorted(folder.iterdir()):
            built = [path.name for path in old.iterdir()] if old.is_dir() else []
            if old.name not in current and built == [f"{old.name}.ipynb"]:
                shutil.rmtree(old)
                removed.append(old)
    return removed
