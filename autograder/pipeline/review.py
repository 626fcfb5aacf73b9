"""Review flags: answer code that reaches for the grading machinery, for the instructor to read.

The grade is decided outside the student's process (:mod:`autograder.pipeline.judge`), so
code that inspects the caller's frames or rewires IPython earns nothing by it. It is
still worth a look: an honest answer has no reason to walk frames, touch the kernel,
walk ``gc`` or build code to ``exec``. :func:`review_flags` lists such places in a
submission's own cells (never the course's own cells as released), with the cell
and line; the class report lists them and the CSV counts them. They change no grade.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

# Attributes that only code reaching into frames, tracebacks or the kernel uses.
FRAME_ATTRIBUTES = {
    "f_back": "frame inspection",
    "f_locals": "frame inspection",
    "f_globals": "frame inspection",
    "f_builtins": "frame inspection",
    "tb_frame": "a traceback walk",
    "tb_next": "a traceback walk",
    "__traceback__": "a traceback walk",
    "gi_frame": "frame inspection",
    "cr_frame": "frame inspection",
}
KERNEL_ATTRIBUTES = {
    "showtraceback", "_showtraceback", "set_custom_exc", "custom_exceptions",
    "input_transformer_manager", "input_transformers_cleanup", "input_transformers_post",
    "ast_transformers", "control_handlers", "shell_handlers", "display_pub",
    "displayhook", "display_trap", "run_cell", "run_ast_nodes", "InteractiveTB",
    "SyntaxTB", "excepthook", "_last_traceback", "session", "iopub_socket",
}  # fmt: skip
FRAME_CALLS = {
    "sys._getframe": "frame inspection",
    "inspect.currentframe": "frame inspection",
    "inspect.stack": "frame inspection",
    "inspect.getouterframes": "frame inspection",
    "inspect.trace": "a traceback walk",
    "sys.exc_info": "a traceback walk",
    "sys.settrace": "a trace function",
    "sys.setprofile": "a trace function",
    "threading.settrace": "a trace function",
    "get_ipython": "IPython's internals",
}
MODULES = {
    "gc": "gc",
    "ctypes": "ctypes",
    "IPython": "IPython's internals",
    "ipykernel": "the kernel's internals",
    "jupyter_client": "the kernel's internals",
    "zmq": "the kernel's internals",
    "traitlets": "IPython's internals",
    "builtins": "builtins",
    "autograder": "the grader's package",
    "torch.library": "torch's dispatcher internals",
}
DYNAMIC_CODE = ("exec", "eval", "compile", "__import__")


@dataclass(frozen=True)
class Flag:
    """One place in a submission's code that reaches for grading machinery.

    Attributes:
        cell: The cell's number in the notebook (1 for the first cell).
        line: The line in that cell.
        what: What it reaches for, for example ``"frame inspection (sys._getframe)"``.
    """

    cell: int
    line: int
    what: str

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.what}"


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class _Finder(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 1), what))

    def _magic_code(self, node: ast.Call) -> None:
        for argument in node.args[1:]:
            if _is_literal(argument):
                try:
                    inner = ast.parse(argument.value)  # type: ignore[attr-defined]
                except (SyntaxError, ValueError):
                    continue
                finder = _Finder()
                finder.visit(inner)
                self.found += [(node.lineno + line - 1, what) for line, what in finder.found]

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            known = MODULES.get(alias.name) or MODULES.get(top)
            if known:
                self._add(node, f"{known} (import {alias.name})")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        known = MODULES.get(module) or MODULES.get(module.split(".")[0])
        if known:
            self._add(node, f"{known} (from {module} import ...)")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        if node.attr in FRAME_ATTRIBUTES:
            self._add(node, f"{FRAME_ATTRIBUTES[node.attr]} (.{node.attr})")
        elif node.attr in KERNEL_ATTRIBUTES:
            self._add(node, f"IPython's or the kernel's internals (.{node.attr})")
        elif dotted == "sys.modules":
            self._add(node, "sys.modules")
        elif dotted in ("torch.library", "torch._C") or dotted.startswith("torch.utils._python"):
            self._add(node, f"torch's dispatcher internals ({dotted})")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self._add(node, f"code that intercepts torch's calls ({node.name})")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self._add(node, "builtins (__builtins__)")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name.split(".")[-1] in ("run_line_magic", "run_cell_magic"):
            # %time, %%capture, ...: the magic's argument is code too.
            self._magic_code(node)
            self.generic_visit(node)
            return
        if name in FRAME_CALLS:
            self._add(node, f"{FRAME_CALLS[name]} ({name})")
        elif name in DYNAMIC_CODE and not (node.args and _is_literal(node.args[0])):
            self._add(node, f"code built at run time ({name} of a non-literal)")
        elif name in ("setattr", "delattr") and node.args:
            target = _dotted(node.args[0])
            if target.split(".")[0] in ("builtins", "__builtins__", "torch", "sys"):
                self._add(node, f"a write into {target} ({name})")
        self.generic_visit(node)


def _python(source: str) -> str:
    """The cell as Python: IPython's magics and shell escapes turned into calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:
        return source


def _unreviewable(cell: int, error: BaseException) -> Flag:
    """The flag of a cell the review could not read through (the instructor reads it)."""
    why = "nested too deeply" if isinstance(error, RecursionError) else type(error).__name__
    return Flag(cell, 1, f"code the review could not read ({why}): read this cell yourself")


def cell_flags(source: str, cell: int) -> list[Flag]:
    """Returns the flags of one cell's source (none when it is not Python).

    A cell too deeply nested for Python's parser or for the walk over its syntax tree (a
    sum of a thousand terms, say) gets a flag that says so: it is never an error.
    """
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return []
    except (RecursionError, MemoryError) as error:
        return [_unreviewable(cell, error)]
    finder = _Finder()
    try:
        finder.visit(tree)
    except (RecursionError, MemoryError) as error:
        finder.found.append((1, _unreviewable(cell, error).what))
    return [Flag(cell, line, what) for line, what in sorted(set(finder.found))]


def course_sources(released: NotebookNode) -> set[str]:
    """The sources of the released notebook's code cells other than answers: the course's.

    A demonstration cell the student left as released is the course's code (it may well
    call ``get_ipython()`` or ``gc``); one the student edited is the student's.
    """
    return {
        cell.source
        for cell in released.cells
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("solution")
    }


def review_flags(notebook: NotebookNode, course_code: set[str]) -> list[Flag]:
    """Returns the flags of a submission's own code cells.

    Args:
        notebook: The submitted notebook.
        course_code: Sources of the course's own cells (see :func:`course_sources`): a
            cell whose source is one of them is the course's, whatever its metadata says.
    """
    flags = []
    for number, cell in enumerate(notebook.get("cells", []), start=1):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") == "code" and source not in course_code:
            flags += cell_flags(source, number)
    return flags


def notebook_flags(path: Path, course_code: set[str]) -> list[Flag]:
    """Returns the flags of the notebook at ``path`` (none when it is missing or unreadable).

    Never raises: a submission the review cannot go through gets a flag saying so, and the
    export and the report go on.
    """
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception:
        return []
    try:
        return review_flags(notebook, course_code)
    except Exception as error:  # whatever a submission holds, the class is exported
        return [Flag(0, 0, f"the notebook could not be reviewed ({type(error).__name__})")]
