"""The plain format translators write: each cell's text after a line ``@@@ cell N @@@``.

A translator needs no gettext tool: :func:`export` writes the English of the cells that
need work (``en.md``) and, where an older translation exists, that translation as a start
(``zh.md``); the translator edits ``zh.md`` with the same markers, and :func:`import_`
puts it into the catalog. ``N`` is the cell's index among all cells of the notebook.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.course import Course
from autograder.i18n import catalog as catalogs
from autograder.i18n.catalog import TranslationError


def marker(index: int, kind: str = "cell") -> str:
    """The line before cell ``index``'s text (message ``index``'s, in a message file)."""
    return f"@@@ {kind} {index} @@@"


def parse(text: str, name: str = "the file", kind: str = "cell") -> dict[int, str]:
    """The cells of a marker file, by index (each text without its surrounding blank lines).

    Raises:
        TranslationError: If there is text before the first marker or a cell twice.
    """
    parts = re.split(rf"^@@@ {kind} (\d+) @@@$", text, flags=re.M)
    if parts[0].strip():
        raise TranslationError(f"{name}: text before the first `@@@ cell N @@@` line")
    cells: dict[int, str] = {}
    for position in range(1, len(parts), 2):
        index = int(parts[position])
        if index in cells:
            raise TranslationError(f"{name}: cell {index} appears twice")
        cells[index] = parts[position + 1].strip("\n")
    return cells


def render(cells: dict[int, str], kind: str = "cell") -> str:
    """A marker file of ``cells`` (index -> text), in index order."""
    return "".join(f"{marker(index, kind)}\n{text}\n\n" for index, text in sorted(cells.items()))


@dataclass(frozen=True)
class Imported:
    """What :func:`import_` did.

    Attributes:
        translated: Cells whose translation is now current.
        fuzzy: Cells translated from an older English (given by ``english``): kept as
            fuzzy, to be checked against the current English.
        unknown: Indexes in the file that are not markdown cells of the source.
    """

    translated: list[int]
    fuzzy: list[int]
    unknown: list[int]


def import_(
    course: Course,
    assignment: str,
    language: str,
    translated: Path,
    english: Path | None = None,
) -> Imported:
    """Puts a translator's marker file into the assignment's catalog.

    Args:
        course: The course (its ``solutions/``).
        assignment: The assignment id.
        language: The edition, for example ``"zh-CN"``.
        translated: The translator's file (``zh.md``).
        english: The English the translator worked from (``en.md``). A cell whose English
            has changed since is imported as fuzzy, with that English as its previous text.
            Without it, every cell is taken as translated from the current English.

    Raises:
        TranslationError: If a file is malformed.
    """
    catalog = catalogs.update(course, assignment, language)
    current = {cell.index: cell.source for cell in catalogs.prose_cells(course, assignment)}
    texts = parse(translated.read_text(encoding="utf-8"), translated.name)
    before = parse(english.read_text(encoding="utf-8"), english.name) if english else {}
    done, fuzzy, unknown = [], [], []
    for index, text in texts.items():
        source = current.get(index)
        if source is None:
            unknown.append(index)
            continue
        entry = catalog[source]
        entry.string = text
        old = before.get(index, source)
        if old.strip("\n") == source.strip("\n"):  # the file keeps no blank edge lines
            entry.flags.discard("fuzzy")
            entry.previous_id = []
            done.append(index)
        else:
            entry.flags.add("fuzzy")
            entry.previous_id = [old]
            fuzzy.append(index)
    catalogs.write(catalog, catalogs.catalog_path(course, assignment, language))
    return Imported(done, fuzzy, unknown)


def export(course: Course, assignment: str, language: str, folder: Path) -> int:
    """Writes ``en.md`` and ``zh.md`` (or ``<language>.md``) of the cells that need work.

    ``en.md`` holds the current English of each untranslated or fuzzy cell; the other file
    the same markers, with the older translation where there is one (to be revised) and
    the English otherwise (to be replaced). For a fuzzy cell, ``previous.md`` holds the
    English it was translated from.

    Returns:
        How many cells need work (0: nothing written).
    """
    catalog = catalogs.update(course, assignment, language)
    work = catalogs.missing(catalog, catalogs.prose_cells(course, assignment))
    if not work:
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    english = {cell.index: cell.source for cell, _ in work}
    draft, previous = {}, {}
    for cell, _ in work:
        entry = catalog.get(cell.source)
        draft[cell.index] = entry.string if entry is not None and entry.string else cell.source
        if entry is not None and entry.previous_id:
            previous[cell.index] = entry.previous_id[0]
    short = language.split("-")[0]
    (folder / "en.md").write_text(render(english), encoding="utf-8")
    (folder / f"{short}.md").write_text(render(draft), encoding="utf-8")
    if previous:
        (folder / "previous.md").write_text(render(previous), encoding="utf-8")
    return len(work)
