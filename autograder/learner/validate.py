"""Check a learner's notebook per exercise, with nbgrader's validator underneath.

``nbgrader validate`` prints the failing cells and exits 0 either way; a learner wants to
know, per exercise, what passes, what fails and why, and a script wants a non-zero exit
status when anything fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert.filters import strip_ansi
from nbgrader import utils
from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, Execute
from nbgrader.validator import Validator
from traitlets import List

from autograder.compat import changed_locked_cells, execute_for_validation
from autograder.course import exercise_name, nbgrader_config
from autograder.learner.summary import exercise_summary
from autograder.preprocessors.stderr import StderrIsNotFailure


@dataclass(frozen=True)
class ExerciseResult:
    """The outcome of one graded test cell.

    Attributes:
        grade_id: The test cell's grade id, for example ``"q1-tests"``.
        score: Points earned.
        max_score: Points available.
        error: What the failing test raised, empty when it passed.
    """

    grade_id: str
    score: float
    max_score: float
    error: str

    @property
    def exercise(self) -> str:
        """The exercise's name: the grade id without its ``-tests`` suffix."""
        return exercise_name(self.grade_id)

    @property
    def passed(self) -> bool:
        """Whether the exercise earned all its points."""
        return self.score >= self.max_score


@dataclass(frozen=True)
class CheckReport:
    """The outcome of checking one notebook.

    Attributes:
        notebook: The checked notebook.
        exercises: One result per graded test cell, in notebook order.
        changed: grade ids of locked cells whose content was edited.
        executed: The notebook as it ran, outputs included.
    """

    notebook: Path
    exercises: list[ExerciseResult]
    changed: list[str]
    executed: nbformat.NotebookNode

    @property
    def ok(self) -> bool:
        """True when every exercise passes and no locked cell was edited."""
        return not self.changed and all(result.passed for result in self.exercises)

    def _passed_and_failing(self) -> tuple[list[str], list[str]]:
        passed = [result.exercise for result in self.exercises if result.passed]
        failing = [result.exercise for result in self.exercises if not result.passed]
        return passed, failing

    def format(self, note: str = "") -> str:
        """Returns the report as text for a terminal.

        Args:
            note: Said after the notebook's name (for example why only visible tests ran).
        """
        header = f"Checking {self.notebook}" + (f": {note}" if note else "")
        lines = [header, exercise_summary(*self._passed_and_failing())]
        for grade_id in self.changed:
            lines.append(
                f"  CHANGED  {grade_id}: this cell is locked and was edited; "
                "restore it (nbgrader restores it when grading)."
            )
        for result in self.exercises:
            status = "pass" if result.passed else "FAIL"
            points = f"{_fmt(result.score)}/{_fmt(result.max_score)}"
            lines.append(f"  {status}  {result.exercise:<10} {points:>7} points")
            if result.error:
                lines.extend(f"        {line}" for line in result.error.splitlines())
        passed = sum(result.passed for result in self.exercises)
        score = sum(result.score for result in self.exercises)
        total = sum(result.max_score for result in self.exercises)
        lines.append(
            f"{passed} of {len(self.exercises)} exercises pass "
            f"({_fmt(score)}/{_fmt(total)} points)."
        )
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """The report as JSON-ready data, in the form of a grader's verdict (no hidden checks)."""
        return {
            "notebook": str(self.notebook),
            "assignment": "",
            "status": "ok",
            "message": "visible tests only",
            "score": sum(result.score for result in self.exercises),
            "max_score": sum(result.max_score for result in self.exercises),
            "changed": self.changed,
            "exercises": [
                {
                    "exercise": result.exercise,
                    "score": result.score,
                    "max_score": result.max_score,
                    "visible": "pass" if result.passed else "fail",
                    "hidden": "not run",
                    "messages": [result.error] if result.error else [],
                }
                for result in self.exercises
            ],
        }


def failure_text(cell: nbformat.NotebookNode) -> str:
    """Returns what made a test cell fail: its error's name and message, or its stderr.

    Args:
        cell: An executed code cell.
    """
    parts = []
    for output in cell.outputs:
        if output.output_type == "error" and output.ename == "NotImplementedError":
            parts.append("not answered yet: the answer cell still raises NotImplementedError")
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        elif output.output_type == "stream" and output.name == "stderr":
            parts.append(output.text)
    return strip_ansi("\n".join(parts)).strip() or "the test cell did not pass"


def _fmt(points: float) -> str:
    return f"{points:g}"


class CourseValidator(Validator):
    """nbgrader's Validator, with the grader's rule that a test fails by raising.

    nbgrader fails a test cell that wrote to stderr; the grader does not (see
    :mod:`autograder.preprocessors.stderr`), so neither do ``make check`` and the lab's
    Validate button. nbgrader's ``preprocessors`` cannot be configured: hence a subclass.
    """

    preprocessors = List([CheckCellMetadata, ClearOutput, Execute, StderrIsNotFailure])


class _ExerciseValidator(CourseValidator):
    """nbgrader's Validator, returning the executed notebook instead of printed text."""

    def run(self, path: Path) -> tuple[nbformat.NotebookNode, list[str]]:
        notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        with utils.chdir(str(path.parent)):
            executed = execute_for_validation(self, notebook)
        changed = [
            cell.metadata.nbgrader.get("grade_id", "?")
            for cell in changed_locked_cells(self, executed)
        ]
        return executed, changed


def check_notebook(path: Path, cell_timeout: int = 120) -> CheckReport:
    """Executes ``path`` as nbgrader validate does and grades each exercise.

    Args:
        path: The notebook to check.
        cell_timeout: Seconds one cell may run.

    Returns:
        The per-exercise report.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        nbformat.reader.NotJSONError: If ``path`` is not a notebook.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no notebook at {path}")
    validator = _ExerciseValidator(config=nbgrader_config(cell_timeout))
    executed, changed = validator.run(path)
    results = []
    for cell in executed.cells:
        if not (utils.is_grade(cell) and cell.cell_type == "code"):
            continue
        score, max_score = utils.determine_grade(cell, None)
        error = "" if score >= max_score else failure_text(cell)
        results.append(ExerciseResult(cell.metadata.nbgrader["grade_id"], score, max_score, error))
    return CheckReport(path, results, changed, executed)
