"""Where code comes from: files, folders, notebooks' code cells, IPython cells with magics.

Notebooks are read as the JSON they are (nbformat 4), without importing nbformat: the
linter starts in milliseconds, and a notebook it rewrites keeps nbformat's layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cell", "CodeUnit", "cell_as_python", "find_files", "units_in", "write_notebook"]

# Folders never worth walking into (environments, caches, build output).
_SKIPPED_DIRS = frozenset(
    {".git", ".venv", "venv", "__pycache__", ".ipynb_checkpoints", "node_modules", "build"}
)


@dataclass(frozen=True)
class Cell:
    """One code cell of a notebook.

    Attributes:
        id: The cell's id (``cell-<index>`` for a notebook older than nbformat 4.5).
        source: The cell's source as written.
        python: The source with IPython's syntax made Python, line for line.
        index: The cell's position among all the notebook's cells.
    """

    id: str
    source: str
    python: str
    index: int

    @property
    def plain(self) -> bool:
        """True for a cell of plain Python (no magics): one ``--fix`` may rewrite."""
        return self.python == self.source


@dataclass(frozen=True)
class CodeUnit:
    """The Python to check in one file: the file's text, or a notebook's code cells.

    A notebook's cells are read in order as one program (a name one cell defines is known
    in the next), as when the notebook runs.

    Attributes:
        path: The file it came from.
        code: A ``.py`` file's text ("" for a notebook).
        cells: A notebook's code cells, in order.
        notebook: The notebook's JSON, for ``--fix`` to write back.
    """

    path: str
    code: str = ""
    cells: tuple[Cell, ...] = ()
    notebook: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_notebook(self) -> bool:
        """True for a notebook."""
        return self.path.endswith(".ipynb")

    @property
    def text(self) -> str:
        """All the code, for a quick look (does it name torch at all?)."""
        return "".join(cell.python for cell in self.cells) if self.is_notebook else self.code


def find_files(paths: list[str]) -> Iterator[Path]:
    """Each ``.py`` and ``.ipynb`` file under ``paths``, in sorted order, files as given.

    Raises:
        FileNotFoundError: If a path does not exist.
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                relative = found.relative_to(path).parts
                if any(part in _SKIPPED_DIRS or part.startswith(".") for part in relative[:-1]):
                    continue
                if found.suffix in {".py", ".ipynb"} and found.is_file():
                    yield found
        elif path.exists():
            yield path
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")


def cell_as_python(source: str) -> str:
    """A cell's source with IPython's syntax (``%magic``, ``!cmd``, ``x?``) made Python.

    IPython's own transformer does it, line for line, so positions stay those of the cell.
    A cell without IPython syntax is returned unchanged without importing IPython.
    """
    if not any(
        line.lstrip().startswith(("%", "!")) or line.rstrip().endswith("?")
        for line in source.splitlines()
    ):
        return source
    try:
        compile(source, "<cell>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
        return source
    except (SyntaxError, ValueError):
        pass
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def units_in(path: Path) -> Iterator[CodeUnit]:
    """The code to check in one file: the file, or a notebook's code cells.

    Raises:
        ValueError: If a notebook cannot be read (the message names the file).
    """
    if path.suffix != ".ipynb":
        yield CodeUnit(str(path), path.read_text(encoding="utf-8"))
        return
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if notebook.get("nbformat", 4) < 4:
            raise ValueError(f"nbformat {notebook.get('nbformat')} (only 4 is read)")
        raw_cells = notebook["cells"]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: cannot read the notebook: {error}") from None
    cells = []
    for index, cell in enumerate(raw_cells):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = _source(cell)
            cells.append(
                Cell(cell.get("id") or f"cell-{index}", source, cell_as_python(source), index)
            )
    yield CodeUnit(str(path), cells=tuple(cells), notebook=notebook)


def write_notebook(unit: CodeUnit, sources: dict[int, str], path: Path) -> None:
    """Writes ``unit``'s notebook with new sources for some cells (by index), as nbformat does.

    A source kept as a list of lines stays one; the JSON is indented and sorted as
    nbformat writes it, so that the diff shows only the cells that changed.
    """
    notebook = unit.notebook
    for index, text in sources.items():
        cell = notebook["cells"][index]
        cell["source"] = (
            text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
        )
    path.write_text(
        json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
