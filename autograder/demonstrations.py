"""Demonstrations the grader does not run: cells an author marked, that no test reads.

A notebook's demonstrations (a training curve, a memory measurement, a graph drawn) are
most of the time a grading kernel spends in a notebook, and they judge nothing. An
author marks one with the tag :data:`SKIP_TAG` in ``solutions/``; learners still run it,
and the grader does not. Only a cell the student cannot edit may be skipped: a locked
nbgrader cell (a ``grade_id``, ``locked``, neither graded nor an answer), whose source the
grader puts back from the release before the notebook runs
(:class:`~autograder.preprocessors.restore.RestoreFromSource`, nbgrader's OverwriteCells).
Which cells those are is read from the released notebook, never from the submission.

Skipping must not change what the student's own cells see. The author checks that no
later cell of the source reads what a marked cell defines (``tests/test_demonstrations.py``
checks every notebook with :func:`unsafe_marks`, and that every fixture scores the same);
a student's own cell may still read one of those names, so the grader looks, after the
run, for a ``NameError`` on a name a skipped cell would have defined
(:func:`skipped_names_read`) and then runs the notebook again with every cell.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from nbformat import NotebookNode
from nbgrader import utils

# The tag an author gives a demonstration that grading need not run.
SKIP_TAG = "grading-skip"
# Where RestoreFromSource records the skippable cells' grade ids (metadata.autograder).
SKIPPABLE = "skippable"
# The output a skipped cell gets in the graded notebook and the feedback.
SKIPPED_NOTE = "[a demonstration: not run when grading; it changes no test]\n"
_NOT_PYTHON = re.compile(r"^\s*[%!].*$", re.MULTILINE)  # IPython magics, shell escapes
_NAME_ERROR = re.compile(r"name '([A-Za-z_]\w*)' is not defined")


def skippable(cell: NotebookNode, tagged: bool = True) -> bool:
    """Whether ``cell`` is a demonstration the grader may skip.

    Args:
        cell: A cell of the released notebook, or of a submission once its nbgrader
            metadata was restored from the release.
        tagged: Require the tag (the release's cell). A submission's tags are the
            student's: the grader asks the release which grade ids are marked, then this
            with ``tagged=False`` whether the restored cell is still one nobody edits.
    """
    return (
        cell.cell_type == "code"
        and (not tagged or SKIP_TAG in cell.metadata.get("tags", []))
        and bool(cell.metadata.get("nbgrader", {}).get("grade_id"))
        and utils.is_locked(cell)
        and not utils.is_grade(cell)
        and not utils.is_solution(cell)
    )


def skippable_ids(cells: Iterable[NotebookNode]) -> list[str]:
    """The grade ids of the released notebook's cells that the grader may skip."""
    return [cell.metadata.nbgrader["grade_id"] for cell in cells if skippable(cell)]


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(_NOT_PYTHON.sub("", source))
    except SyntaxError:
        return None


def bound_names(source: str) -> set[str]:
    """Every name a cell may bind when it runs (more rather than fewer).

    Assignments anywhere (a function's locals too), ``global`` names, functions, classes
    and imports: a name counted here that the cell does not define at the top level only
    makes the grader run a notebook whole more often.
    """
    tree = _tree(source)
    if tree is None:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def defined_names(source: str) -> set[str]:
    """The names a cell defines in the notebook's namespace when it runs.

    Top-level assignments, loop and ``with`` targets, imports, functions and classes, a
    walrus anywhere outside a function, and the names a function declares ``global``;
    not a function's locals nor a comprehension's variables.
    """
    tree = _tree(source)
    if tree is None:
        return set()
    names: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                names.add(node.name)
            # Their bodies bind their own names, but for a `global` statement.
            pending.extend(inner for inner in ast.walk(node) if isinstance(inner, ast.Global))
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        if isinstance(node, _COMPREHENSIONS):
            # Only a walrus inside binds outside it (its loop variables are its own).
            pending.extend(inner for inner in ast.walk(node) if isinstance(inner, ast.NamedExpr))
            continue
        pending.extend(ast.iter_child_nodes(node))
    return names


def read_names(source: str) -> set[str]:
    """Every name a cell reads (loads) anywhere in its code."""
    tree = _tree(source)
    if tree is None:
        return set()
    return {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _reads_before_defining(source: str, names: set[str]) -> set[str]:
    """Those of ``names`` that a cell reads before (or without) defining them itself.

    By position in the source: a cell that assigns ``figure`` on its first line and
    reads it below reads its own, not a skipped cell's.
    """
    tree = _tree(source)
    if tree is None:
        return set()
    mine = defined_names(source)
    first_store: dict[str, tuple[int, int]] = {}
    first_load: dict[str, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            where = (node.lineno, node.col_offset)
            seen = first_load if isinstance(node.ctx, ast.Load) else first_store
            seen[node.id] = min(seen.get(node.id, where), where)
    return {
        name
        for name, load in first_load.items()
        if name not in mine or name not in first_store or load < first_store[name]
    }


def unsafe_marks(cells: list[NotebookNode]) -> list[str]:
    """What is wrong with a source notebook's marks: one line per problem ([] when none).

    A marked cell must be one the grader may skip (:func:`skippable`), and no later cell
    that runs when grading (unmarked) may read a name a marked cell defines before it
    defines that name again itself.
    """
    problems = []
    defined: dict[str, str] = {}  # name -> the marked cell that defines it last
    for index, cell in enumerate(cells):
        if cell.cell_type != "code":
            continue
        marked = SKIP_TAG in cell.metadata.get("tags", [])
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index + 1}"
        if marked and not skippable(cell):
            problems.append(
                f"{where} is tagged {SKIP_TAG} but is not a locked nbgrader cell (a grade_id, "
                "locked, not graded, not an answer): a student could edit it"
            )
        if marked:
            defined.update(dict.fromkeys(defined_names(cell.source), where))
            continue
        for name in sorted(_reads_before_defining(cell.source, set(defined))):
            problems.append(f"{where} reads {name!r}, which {defined[name]} defines")
        for name in defined_names(cell.source):
            defined.pop(name, None)  # defined again here: later cells read this one's
    return problems


def _texts(output: NotebookNode) -> Iterable[str]:
    if output.output_type == "error":
        yield output.get("evalue", "")
        yield from output.get("traceback", [])
    elif output.output_type == "stream":
        yield output.get("text", "")
    else:
        yield str(output.get("data", {}).get("text/plain", ""))


def skipped_names_read(cells: Iterable[NotebookNode], skipped: set[str]) -> list[str]:
    """The names a skipped cell would have defined that the run says were missing.

    Looks for Python's ``name '...' is not defined`` in every output (errors, printed
    text, a judge's verdict on what the answer raised).
    """
    missing: dict[str, None] = {}
    for cell in cells:
        for output in cell.get("outputs", []):
            for text in _texts(output):
                for name in _NAME_ERROR.findall(text):
                    if name in skipped:
                        missing[name] = None
    return list(missing)
