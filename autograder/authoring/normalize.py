"""Make a notebook converted by jupytext stable and complete for nbgrader.

jupytext gives random cell ids and keeps layout metadata; two builds of the same source
must give byte-identical student notebooks, so ids are derived from the content's names
and volatile metadata is dropped. The sources may also write nbgrader metadata in a short
form (``nbgrader={"grade_id": "q1-answer", "solution": true}``): the defaults are filled in.
"""

from __future__ import annotations

import copy

from nbformat import NotebookNode

NBGRADER_DEFAULTS = {
    "grade": False,
    "locked": False,
    "schema_version": 3,
    "solution": False,
    "task": False,
}
# Run All in JupyterLab (and nbclient) goes on past a cell with this tag when it raises:
# an unsolved exercise's failing test must not stop a learner's run.
RAISES_TAG = "raises-exception"
KEPT_CELL_METADATA = ("nbgrader", "tags")
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def normalize(notebook: NotebookNode) -> NotebookNode:
    """Returns a copy of ``notebook`` with stable ids and complete nbgrader metadata.

    Args:
        notebook: A notebook as jupytext reads it from a percent-format source.

    Returns:
        The normalised notebook: each cell's id is its nbgrader ``grade_id`` or
        ``cell-NNN`` (its position), cell metadata keeps only ``nbgrader`` and ``tags``,
        nbgrader metadata has every field, graded code cells carry ``raises-exception``
        and open folded (``jupyter.source_hidden``), and the notebook metadata is fixed.

    Raises:
        ValueError: If two cells share a grade_id, or a graded cell has no points.
    """
    result = copy.deepcopy(notebook)
    result.metadata = NotebookNode(copy.deepcopy(NOTEBOOK_METADATA))
    result.nbformat, result.nbformat_minor = 4, 5
    seen: set[str] = set()
    for index, cell in enumerate(result.cells):
        metadata = {key: cell.metadata[key] for key in KEPT_CELL_METADATA if key in cell.metadata}
        nbgrader = metadata.get("nbgrader")
        if nbgrader is not None:
            nbgrader = {**NBGRADER_DEFAULTS, **nbgrader}
            _check_grade_cell(nbgrader, seen)
            metadata["nbgrader"] = nbgrader
            cell.id = nbgrader["grade_id"]
            if nbgrader["grade"] and cell.cell_type == "code":
                tags = metadata.setdefault("tags", [])
                if RAISES_TAG not in tags:
                    tags.append(RAISES_TAG)
                # A test cell opens folded in JupyterLab: its result shows, not the ~60
                # lines of test code above it (a click on the fold shows them).
                metadata["jupyter"] = {"source_hidden": True}
        else:
            cell.id = f"cell-{index:03d}"
        cell.metadata = NotebookNode(metadata)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return result


def _check_grade_cell(nbgrader: dict, seen: set[str]) -> None:
    grade_id = nbgrader.get("grade_id")
    if not grade_id:
        raise ValueError(f"a cell with nbgrader metadata has no grade_id: {nbgrader}")
    if grade_id in seen:
        raise ValueError(f"grade_id {grade_id!r} is used by two cells")
    seen.add(grade_id)
    if nbgrader["grade"] and "points" not in nbgrader:
        raise ValueError(f"graded cell {grade_id!r} has no points")
