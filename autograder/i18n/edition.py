"""A notebook of another edition, made from the English one: its prose from the catalog.

The zh-CN student notebook is the English student notebook (``notebooks/NN/NN.ipynb``, as
nbgrader released it) with each markdown cell's text replaced by its translation and the
language in the notebook's metadata. Everything else is the English notebook's, byte for
byte: the code cells (so from ``solutions/``, as in the English edition), the cell ids,
nbgrader's metadata and checksums. So one gradebook grades both editions, with the same
grade ids and points, and the grader reads the language from the submission itself.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograd_pitfalls.messages import (
    ENGLISH,
    LANGUAGE_KEY,
    METADATA_KEY,
    language_of_metadata,
)
from autograd_pitfalls.messages import translate as translate_message
from autograder.course import Course
from autograder.i18n.catalog import TranslationError, prose_cells, translations

# Added to the first cell of another edition's notebooks (a template of the message catalog).
HELPERS_STAY_ENGLISH = (
    "The reports the course's helpers print (diagnose, compare, the linter) and PyTorch's own "
    "messages stay in English; the tests' and the grader's messages are translated."
)


def release_folder(course: Course, language: str) -> Path:
    """Where an edition's student notebooks go: ``notebooks/<language>/NN/NN.ipynb``."""
    return course.release / language


def edition_notebook(course: Course, assignment: str, language: str) -> Path:
    """The student notebook of ``assignment`` in the edition ``language``."""
    return release_folder(course, language) / assignment / f"{assignment}.ipynb"


def language_of(notebook: NotebookNode) -> str:
    """The edition a notebook belongs to, from its metadata (``"en"`` when it names none)."""
    return language_of_metadata(notebook.get("metadata", {}))


def language_of_file(path: Path) -> str:
    """The edition of the notebook at ``path`` (``"en"`` when it cannot be read)."""
    try:
        return language_of(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return ENGLISH


def translate(
    notebook: NotebookNode, translated: dict[str, str], language: str, name: str
) -> NotebookNode:
    """Returns a copy of ``notebook`` with its prose translated and its language set.

    Args:
        notebook: An English notebook (source or student version).
        translated: Each markdown cell's translation, by its English text.
        language: The edition.
        name: How errors name the notebook.

    Raises:
        TranslationError: If a markdown cell has no translation (the English notebook was
            built from another source than the catalog was checked against).
    """
    result = copy.deepcopy(notebook)
    note = translate_message(HELPERS_STAY_ENGLISH, language)
    for index, cell in enumerate(result.cells):
        if cell.cell_type != "markdown":
            continue
        if cell.source not in translated:
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            raise TranslationError(f"{name}: cell {index} ({first[:60]!r}) has no translation")
        cell.source = translated[cell.source]
        if note:
            cell.source = f"{cell.source.rstrip()}\n\n*{note}*"
            note = ""
    result.metadata[METADATA_KEY] = {LANGUAGE_KEY: language}
    return result


def write_edition(course: Course, assignment: str, language: str) -> Path:
    """Writes the ``language`` student notebook of ``assignment`` from the English one.

    Raises:
        TranslationError: Naming each markdown cell without a current translation.
    """
    translated = translations(course, assignment, language)
    english = nbformat.read(course.student_notebook(assignment), as_version=4)
    if sum(cell.cell_type == "markdown" for cell in english.cells) != len(
        prose_cells(course, assignment)
    ):
        raise TranslationError(f"{assignment}: the released notebook is not built from solutions/")
    notebook = translate(english, translated, language, f"{language} edition of {assignment}")
    target = edition_notebook(course, assignment, language)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(notebook)
    nbformat.write(notebook, target)
    return target
