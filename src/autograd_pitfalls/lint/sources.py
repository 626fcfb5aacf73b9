"""Where code comes from: files, folders, notebooks' code cells, IPython cells with magics."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CodeUnit", "cell_as_python", "find_files", "units_in"]

# Folders never worth walking into (environments, caches, build output).
_SKIPPED_DIRS = frozenset(
    {".git", ".venv", "venv", "__pycache__", ".ipynb_checkpoints", "node_modules", "build"}
)


@dataclass(frozen=True)
class CodeUnit:
    """One piece of Python to check: a file, or one code cell of a notebook.

    A notebook's code cells are checked as one module, in order (a name defined in one
    cell and misused in another is found, as when the notebook runs); ``cells`` maps the
    module's lines back to the cells.

    Attributes:
        path: The file it came from.
        code: Python source (magics already turned into calls, line for line).
        cell: The cell's id when the unit is one cell, else None.
        cells: For a whole notebook, ``(first line, cell id)`` of each code cell.
    """

    path: str
    code: str
    cell: str | None = None
    cells: tuple[tuple[int, str], ...] = ()

    def cell_at(self, line: int) -> tuple[str | None, int]:
        """The cell id and the line within that cell of the module's ``line``."""
        if not self.cells:
            return self.cell, line
        first, cell = max((start, cell) for start, cell in self.cells if start <= line)
        return cell, line - first + 1

    def split(self) -> list[CodeUnit]:
        """A notebook's unit as one unit per cell (when the cells do not parse together)."""
        lines = self.code.splitlines(keepends=True)
        starts = [start for start, _ in self.cells] + [len(lines) + 1]
        return [
            CodeUnit(self.path, "".join(lines[start - 1 : end - 1]), cell)
            for (start, cell), end in zip(self.cells, starts[1:], strict=True)
        ]


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
    Plain Python is returned unchanged without importing IPython.
    """
    try:
        compile(source, "<cell>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
        return source
    except (SyntaxError, ValueError):
        pass
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def units_in(path: Path) -> Iterator[CodeUnit]:
    """The code to check in one file: the file, or each code cell of a notebook.

    Raises:
        ValueError: If a notebook cannot be read (the message names the file).
    """
    if path.suffix != ".ipynb":
        yield CodeUnit(str(path), path.read_text(encoding="utf-8"))
        return
    import nbformat

    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several kinds for a corrupt file
        raise ValueError(f"{path}: cannot read the notebook: {error}") from None
    code, cells = "", []
    for index, cell in enumerate(notebook.cells):
        if cell.get("cell_type") == "code":
            cells.append((code.count("\n") + 1, cell.get("id") or f"cell-{index}"))
            source = cell_as_python(cell.source)
            code += source if source.endswith("\n") else source + "\n"
    yield CodeUnit(str(path), code, cells=tuple(cells))
