"""The translation catalogs of the notebooks' prose: one gettext ``.po`` file per source.

``solutions/NN_slug/NN_slug.zh-CN.po`` holds, for each markdown cell of
``solutions/NN_slug/NN_slug.py``, the English text as ``msgid`` (exactly the cell's source as
jupytext reads it) and its translation as ``msgstr``. Code cells are not in it: every edition
takes them from the source unchanged.

Babel reads and writes the files, and :func:`update` merges a changed source into them as
gettext's ``msgmerge`` does: a new cell gets an empty entry, a changed cell's old
translation is kept as ``fuzzy`` beside the previous English (``#| msgid``), and a removed
cell's entry becomes obsolete (``#~``). The build accepts only entries that are translated
and not fuzzy (:func:`translations`), so the editions cannot drift apart.
"""

from __future__ import annotations

import datetime
import io
import re
from dataclasses import dataclass
from pathlib import Path

import jupytext
from babel.messages.catalog import Catalog
from babel.messages.pofile import denormalize, normalize, read_po, write_po

from autograder.course import Course
from autograder.errors import AutograderError
from autograder.i18n import LANGUAGES  # noqa: F401 (the editions, imported from here too)

# Fixed so that writing a catalog twice gives the same bytes (gettext would write "now").
_DATE = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
# A cell's place in the catalog's comments: "#: cell-012", the cell's id in the built
# notebook (its index among all cells; autograder/authoring/normalize.py).
_CELL = "cell-{:03d}"


class TranslationError(AutograderError):
    """An edition cannot be built: a markdown cell has no current translation."""


@dataclass(frozen=True)
class ProseCell:
    """A markdown cell of a source.

    Attributes:
        index: Its index among all cells of the notebook.
        source: Its English text, as jupytext reads it.
    """

    index: int
    source: str

    @property
    def first_line(self) -> str:
        """Its first non-empty line, shortened: how an error names the cell."""
        line = next((line for line in self.source.splitlines() if line.strip()), "")
        return line if len(line) <= 60 else line[:57] + "..."


def babel_locale(language: str) -> str:
    """Babel's and gettext's name of a language: ``zh_CN`` for ``zh-CN``."""
    return language.replace("-", "_")


def catalog_path(course: Course, assignment: str, language: str) -> Path:
    """``solutions/<id>/<id>.<language>.po``: the catalog beside the source."""
    return course.solutions / assignment / f"{assignment}.{language}.po"


def prose_cells(course: Course, assignment: str) -> list[ProseCell]:
    """The markdown cells of an assignment's source, in order."""
    notebook = jupytext.read(course.solution_file(assignment), fmt="py:percent")
    return [
        ProseCell(index, cell.source)
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "markdown"
    ]


def template(cells: list[ProseCell], language: str) -> Catalog:
    """A catalog with one empty entry per distinct English text (gettext's ``.pot``)."""
    catalog = _new_catalog(language)
    for cell in cells:
        entry = catalog.get(cell.source)
        if entry is None:
            catalog.add(cell.source, locations=[(_CELL.format(cell.index), None)])
        else:  # the same text twice: one translation serves both cells
            entry.locations.append((_CELL.format(cell.index), None))
    return catalog


def _new_catalog(language: str) -> Catalog:
    return Catalog(
        header_comment="# Translations of the prose of a notebook (docs/i18n.md).\n#",
        last_translator="autograd-pitfalls translators",
        language_team=language,
        locale=babel_locale(language),
        project="autograd-pitfalls",
        version="",
        copyright_holder="",
        msgid_bugs_address="",
        creation_date=_DATE,
        revision_date=_DATE,
        fuzzy=False,
    )


def read(path: Path, language: str) -> Catalog:
    """Reads a catalog; an empty one when the file does not exist yet."""
    if not path.is_file():
        return _new_catalog(language)
    with path.open("rb") as handle:
        catalog = read_po(handle, locale=babel_locale(language), abort_invalid=True)
    catalog.fuzzy = False
    for message in catalog:  # Babel reads "#| msgid" as a comment of the translator's
        message.user_comments = [c for c in message.user_comments if not c.startswith("|")]
    for msgid, previous in _previous_ids(path.read_text(encoding="utf-8")).items():
        if msgid in catalog:
            catalog[msgid].previous_id = [previous]
    return catalog


def _previous_ids(text: str) -> dict[str, str]:
    """Each fuzzy entry's previous English (``#| msgid``), by its msgid.

    Babel writes these lines but does not read them back; without this, the next
    ``update`` would drop the English a fuzzy translation was made from.
    """
    found = {}
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        previous = [line[3:] for line in lines if line.startswith("#| ")]
        if not previous or not previous[0].startswith("msgid "):
            continue
        msgid: list[str] = []
        for line in lines:
            if line.startswith("msgid ") or (msgid and line.startswith('"')):
                msgid.append(line.removeprefix("msgid "))
            elif msgid:
                break
        old = [line.removeprefix("msgid ") for line in previous]
        found[denormalize("\n".join(msgid))] = denormalize("\n".join(old))
    return found


def _with_previous_ids(text: str, catalog: Catalog) -> str:
    """The catalog's text with each fuzzy entry's previous English, as ``#|`` lines.

    Each line is a line of the quoted string exactly as the msgid's own, prefixed with
    ``#| ``, so that :func:`_previous_ids` reads back the same text.
    """
    for message in catalog:
        if not (message.id and message.fuzzy and message.previous_id):
            continue
        msgid_line = f"msgid {normalize(message.id, width=0)}\n"
        previous = f"msgid {normalize(message.previous_id[0], width=0)}"
        previous_lines = "".join(f"#| {line}\n" for line in previous.split("\n"))
        start = text.find("\n" + msgid_line) + 1  # at a line's start: not an obsolete "#~ msgid"
        if not start:
            raise AutograderError(f"cannot place the previous English of {message.id[:40]!r}")
        text = text[:start] + previous_lines + text[start:]
    return text


def write(catalog: Catalog, path: Path) -> bool:
    """Writes a catalog (only when its bytes change); returns whether it changed."""
    catalog.creation_date = catalog.revision_date = _DATE
    catalog.fuzzy = False
    buffer = io.BytesIO()
    # width=0: a msgid keeps the cell's lines as they are, unwrapped, easy to diff.
    # include_previous=False: Babel writes the previous English through a text wrapper that
    # drops spaces and quotes at its breaks, so it would not read back; we write it ourselves.
    write_po(buffer, catalog, width=0, include_previous=False, sort_output=False)
    data = _with_previous_ids(buffer.getvalue().decode("utf-8"), catalog).encode("utf-8")
    if path.is_file() and path.read_bytes() == data:
        return False
    path.write_bytes(data)
    return True


def update(course: Course, assignment: str, language: str) -> Catalog:
    """Merges the source's current prose into its catalog (written back; returned).

    New cells get empty entries; a changed cell's translation is kept, marked fuzzy, with
    the previous English beside it; entries of removed cells become obsolete.
    """
    path = catalog_path(course, assignment, language)
    catalog = read(path, language)
    previous = {message.id: message.previous_id for message in catalog if message.previous_id}
    catalog.update(
        template(prose_cells(course, assignment), language),
        update_header_comment=False,
        update_creation_date=False,
    )
    for message in catalog:  # Babel keeps a fuzzy flag over an update, not its English
        if message.fuzzy and not message.previous_id and message.id in previous:
            message.previous_id = previous[message.id]
    # Babel rebuilds the entries in the template's order: the cells' order.
    write(catalog, path)
    return catalog


def missing(catalog: Catalog, cells: list[ProseCell]) -> list[tuple[ProseCell, str]]:
    """The cells the catalog has no current translation for, each with why."""
    problems = []
    for cell in cells:
        entry = catalog.get(cell.source)
        if entry is None:
            problems.append((cell, "not in the catalog (new, or changed since its translation)"))
        elif not entry.string:
            problems.append((cell, "not translated yet"))
        elif entry.fuzzy:
            problems.append((cell, "fuzzy: the English changed since it was translated"))
    return problems


def translations(course: Course, assignment: str, language: str) -> dict[str, str]:
    """The current translation of every markdown cell of a source, by its English text.

    Raises:
        TranslationError: Naming each cell (its index and first line) that has no
            translation, or only a fuzzy one, in the catalog.
    """
    path = catalog_path(course, assignment, language)
    catalog = read(path, language)
    cells = prose_cells(course, assignment)
    problems = missing(catalog, cells)
    if problems:
        shown = "\n".join(
            f"  cell {cell.index} ({cell.first_line!r}): {why}" for cell, why in problems[:20]
        )
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise TranslationError(
            f"{language} edition of {assignment}: {len(problems)} markdown cell(s) of "
            f"{course.solution_file(assignment).name} have no current translation in "
            f"{path.name}:\n{shown}{more}\n"
            f"Run `python -m autograder translate update {assignment}`, then translate them "
            f"(`python -m autograder translate export` gives them to a translator)."
        )
    return {cell.source: catalog.get(cell.source).string for cell in cells}
