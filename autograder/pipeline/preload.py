"""Which modules the zygote imports before forking, read from the released notebooks.

A kernel forked from the zygote starts with whatever the zygote imported; what it did not
import, every student's kernel imports again (matplotlib's pyplot about 0.7 s on two cores;
the linter's LibCST took 0.9 s before the linter moved to Python's ``ast``). Rather than a
hand list that the next notebook forgets, the grader reads the imports of the assignment's
released notebooks (the course's code, never a student's) and asks the zygote to import them
once
(:meth:`autograder.sandbox.zygote.Zygote.preload_modules`).

Only imports that run when the notebook runs top to bottom are taken: ``import`` and
``from ... import`` statements at the top level of a code cell, and ``%load_ext``
lines. An import inside a function may never run, so it is left to the kernel.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from pathlib import Path

# `%load_ext name` loads an IPython extension: a module the kernel imports.
_LOAD_EXT = re.compile(r"^\s*%load_ext\s+([\w.]+)\s*$", re.MULTILINE)
# IPython's line and cell magics and shell escapes are not Python: blanked before parsing.
_NOT_PYTHON = re.compile(r"^\s*[%!].*$", re.MULTILINE)


def cell_imports(source: str) -> list[str]:
    """Returns the modules one code cell imports when it runs, in order.

    Args:
        source: The cell's source. A cell that is not valid Python (after blanking
            magics) imports nothing here: the kernel will say what is wrong with it.
    """
    modules = _LOAD_EXT.findall(source)
    try:
        tree = ast.parse(_NOT_PYTHON.sub("", source))
    except SyntaxError:
        return modules
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            modules += [alias.name for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            modules.append(statement.module)
    return modules


def notebook_imports(notebook: bytes | str) -> list[str]:
    """Returns the modules a notebook's code cells import at their top level, in order.

    Args:
        notebook: The notebook file's content (nbformat 4 JSON).
    """
    cells = json.loads(notebook).get("cells", [])
    found: dict[str, None] = {}
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            found.update(dict.fromkeys(cell_imports(source)))
    return list(found)


def files_imports(paths: Iterable[Path]) -> list[str]:
    """Returns the modules the notebook files at ``paths`` import, each once, in order.

    A file that cannot be read or parsed adds nothing: this is only what to import ahead,
    and whatever reads the notebook for real says what is wrong with it.
    """
    found: dict[str, None] = {}
    for path in paths:
        try:
            found.update(dict.fromkeys(notebook_imports(path.read_bytes())))
        except (OSError, ValueError, AttributeError):  # AttributeError: JSON, not a notebook
            continue
    return list(found)
