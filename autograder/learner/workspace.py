"""The learner's workspace: their own copies of the notebooks, which no other command writes.

``notebooks/`` is what the build writes (``make notebooks``, ``make grade`` and ``make
fixtures`` rebuild it); a learner who saved answers there lost them at the next build. So
``make lab`` works in a folder of the learner's own, ``workspace/`` (ignored by git), made
from the released notebooks on first use:

* a released notebook the workspace does not have yet is copied in, flat:
  ``workspace/01_leaf_tensors.ipynb`` (the grader and ``make check`` read the assignment from
  the file name);
* beside it, ``workspace/.released/`` keeps the release each copy was made from (hidden in
  JupyterLab), so that a later release can be compared with it;
* when the course has a new release of a notebook, a copy the learner has not edited is
  replaced by it; an edited one is kept, and the new release is saved beside it as
  ``<name>.new.ipynb``. :func:`exercise_changes` (``make changes``) then shows what changed
  in the exercises the learner answered;
* when the course splits a lesson into parts (``02_version_counter`` into
  ``02a_version_counter`` and ``02b_version_counter``), each part's first copy takes in the
  answers the learner wrote in the lesson's notebook, exercise by exercise (the parts keep
  the lesson's grade ids); the lesson's notebook stays as it was.

Nothing here ever writes a notebook the learner has edited, and nothing else in the
project writes under the workspace.
"""

from __future__ import annotations

import difflib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader import utils

from autograd_pitfalls.messages import ENGLISH, translate
from autograder.course import REPO, exercise_name, lesson_of
from autograder.errors import AutograderError

# Set to use another folder than the repository's workspace/ (the tests use their own).
WORKSPACE_VARIABLE = "AUTOGRAD_PITFALLS_WORKSPACE"
RELEASED = ".released"
NEW_SUFFIX = ".new"


def default_workspace() -> Path:
    """The learner's workspace: ``$AUTOGRAD_PITFALLS_WORKSPACE``, else ``workspace/``."""
    return Path(os.environ.get(WORKSPACE_VARIABLE) or REPO / "workspace").resolve()


def released_notebooks(release: Path) -> dict[str, Path]:
    """The student notebooks of a release folder (``NN_slug/NN_slug.ipynb``), by assignment."""
    return {
        path.stem: path
        for path in sorted(release.glob("*/*.ipynb"))
        if path.stem == path.parent.name
    }


def assignment_of(notebook: Path) -> str:
    """The assignment a workspace notebook belongs to: its name without ``.new`` and suffixes.

    ``01_leaf_tensors.ipynb``, ``01_leaf_tensors.new.ipynb`` and
    ``01_leaf_tensors/01_leaf_tensors.ipynb`` (the release's layout) all give
    ``01_leaf_tensors``.
    """
    return notebook.name.split(".", 1)[0]


@dataclass(frozen=True)
class Update:
    """What :func:`prepare` did with one released notebook.

    Attributes:
        assignment: The assignment id.
        action: ``"added"`` (first copy), ``"carried"`` (first copy of a lesson's part,
            with the answers of the learner's notebook of the whole lesson), ``"replaced"``
            (a new release over an unedited copy) or ``"beside"`` (a new release saved next
            to the learner's edited copy).
        path: The notebook written.
        carried: The exercises whose answers were carried (``"carried"`` only).
    """

    assignment: str
    action: str
    path: Path
    carried: tuple[str, ...] = ()

    def describe(self, workspace: Path) -> str:
        """One line for the terminal."""
        name = self.path.relative_to(workspace)
        if self.action == "added":
            return f"  {name}: copied from the course"
        if self.action == "carried":
            return (
                f"  {name}: copied from the course, with your answers to "
                f"{', '.join(self.carried)} from your {lesson_of(self.assignment)}.ipynb "
                "(which stays as it was)"
            )
        if self.action == "replaced":
            return f"  {name}: the course's new version (you had not edited yours)"
        return (
            f"  {name}: the course's new version, saved beside your "
            f"{self.assignment}.ipynb (yours is untouched)"
        )


def _sources(path: Path) -> list[tuple[str, str]]:
    """A notebook's cells as (type, source): what a learner edits, outputs aside."""
    notebook = nbformat.read(path, as_version=4)
    return [(cell.cell_type, cell.source) for cell in notebook.cells]


def _edited(notebook: Path, baseline: Path) -> bool:
    """Whether the learner changed any cell of ``notebook`` since it was copied."""
    if not baseline.is_file():
        return True  # unknown origin: treat it as the learner's own work
    try:
        return _sources(notebook) != _sources(baseline)
    except (OSError, ValueError, nbformat.reader.NotJSONError):
        return True


def _place(source: Path, path: Path) -> None:
    """Copies ``source`` to ``path`` whole: written beside it, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    shutil.copyfile(source, draft)
    os.replace(draft, path)


def _copy_in(source: Path, target: Path, baseline: Path) -> None:
    # The baseline first: a copy interrupted half-way leaves a notebook that is still
    # compared with the release it came from.
    _place(source, baseline)
    _place(source, target)


def _carry_answers(
    released: Path, lesson: Path, lesson_baseline: Path, target: Path, baseline: Path
) -> tuple[str, ...]:
    """Copies in a lesson's part with the answers the learner wrote in the whole lesson.

    An answer is the learner's when its cell differs from the release the lesson's notebook
    was copied from (every answer cell, when that release is unknown): an exercise left as
    released takes the part's own stub.

    Returns:
        The exercises whose answers were carried (nothing written when there are none).
    """
    try:
        mine = nbformat.read(lesson, as_version=4)
        before = nbformat.read(lesson_baseline, as_version=4) if lesson_baseline.is_file() else None
    except (OSError, ValueError, nbformat.reader.NotJSONError):
        return ()  # a lesson notebook that cannot be read: the part comes as released
    stubs = _answer_sources(before) if before is not None else {}
    answers = {
        name: source
        for name, source in _answer_sources(mine).items()
        if name not in stubs or source != stubs[name]
    }
    part = nbformat.read(released, as_version=4)
    carried = []
    for cell in part.cells:
        if cell.cell_type == "code" and utils.is_solution(cell):
            name = exercise_name(cell.metadata.nbgrader["grade_id"])
            if name in answers and answers[name] != cell.source:  # not the part's own stub
                cell.source = answers[name]
                carried.append(name)
    if not carried:
        return ()
    _place(released, baseline)  # the part as released, to compare the learner's with later
    draft = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    nbformat.write(part, draft)
    os.replace(draft, target)
    return tuple(carried)


def baseline_of(workspace: Path, notebook: Path) -> Path:
    """Where the release a workspace notebook was copied from is kept."""
    return workspace / RELEASED / notebook.name


def _new_version_path(workspace: Path, assignment: str) -> Path:
    """``<assignment>.new.ipynb``, or ``.new2``, ``.new3``... past edited ones."""
    number = 1
    while True:
        suffix = NEW_SUFFIX if number == 1 else f"{NEW_SUFFIX}{number}"
        path = workspace / f"{assignment}{suffix}.ipynb"
        if not path.exists() or not _edited(path, baseline_of(workspace, path)):
            return path
        number += 1


def prepare(workspace: Path, release: Path) -> list[Update]:
    """Makes the workspace hold every released notebook, never writing over the learner's work.

    Args:
        workspace: The learner's folder (created when missing).
        release: The released notebooks, ``NN_slug/NN_slug.ipynb`` each.

    Returns:
        What was copied, in assignment order (nothing when the workspace is up to date).
    """
    workspace.mkdir(parents=True, exist_ok=True)
    updates = []
    for assignment, released in released_notebooks(release).items():
        mine = workspace / f"{assignment}.ipynb"
        baseline = baseline_of(workspace, mine)
        if not mine.exists():
            lesson = workspace / f"{lesson_of(assignment)}.ipynb"
            if lesson != mine and lesson.is_file():
                lesson_baseline = baseline_of(workspace, lesson)
                carried = _carry_answers(released, lesson, lesson_baseline, mine, baseline)
                if carried:
                    updates.append(Update(assignment, "carried", mine, carried))
                    continue
            _copy_in(released, mine, baseline)
            updates.append(Update(assignment, "added", mine))
            continue
        if baseline.is_file() and baseline.read_bytes() == released.read_bytes():
            continue  # the release this copy came from is still the course's
        if not _edited(mine, baseline):
            _copy_in(released, mine, baseline)
            updates.append(Update(assignment, "replaced", mine))
            continue
        beside = _new_version_path(workspace, assignment)
        beside_baseline = baseline_of(workspace, beside)
        if beside.exists() and beside_baseline.read_bytes() == released.read_bytes():
            continue  # this release is already beside it
        _copy_in(released, beside, beside_baseline)
        updates.append(Update(assignment, "beside", beside))
    return updates


def edition_folders(
    workspace: Path, language: str, release: Path = REPO / "notebooks"
) -> tuple[Path, Path]:
    """The workspace and the release of an edition (``make lab``, ``make changes``).

    English's are the folders themselves; another edition's are ``<workspace>/<language>/``
    and ``<release>/<language>/``.

    Raises:
        AutograderError: If the course has no such edition.
    """
    if language == ENGLISH:
        return workspace, release
    from autograder.i18n.catalog import LANGUAGES  # Babel and jupytext: only for an edition

    if language not in LANGUAGES or not (release / language).is_dir():
        raise AutograderError(
            f"no edition {language!r}: the course has en and {', '.join(LANGUAGES)}"
        )
    return workspace / language, release / language


def workspace_notebooks(workspace: Path) -> list[Path]:
    """The notebooks of the workspace, in order (hidden folders and checkpoints left out)."""
    return sorted(path for path in workspace.glob("*.ipynb") if not path.name.startswith("."))


# --- what changed in the exercises a learner answered ----------------------------------

# What ``make changes`` says, as templates of the message catalog (a zh-CN workspace reads
# them in Chinese: autograd_pitfalls/locale/zh-CN.po).
MESSAGES = (
    "{0}: no longer in the course's new version",
    "{0}: changed in the course's new version ({1})",
    "new exercises: {0}",
    "{0} (your version)",
    "{0} (the course's new version)",
    "text",
    "function to complete",
    "visible tests",
    "Nothing you answered has changed in the course's notebooks.",
    "no notebook in {0}: `make lab` makes it on first use",
)


@dataclass(frozen=True)
class Exercise:
    """An exercise as a notebook presents it.

    Attributes:
        name: ``q1``, ``q2``...
        text: The markdown cells from the exercise's heading to its answer cell.
        stub: The answer cell as released (the function to complete).
        tests: The visible test cell.
    """

    name: str
    text: str
    stub: str
    tests: str


def exercises(notebook: nbformat.NotebookNode) -> dict[str, Exercise]:
    """The exercises of a notebook, by name: each answer cell with its text and tests."""
    found: dict[str, Exercise] = {}
    text: list[str] = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            if cell.source.lstrip().startswith("#"):
                text = []  # a heading starts what the next exercise's text may be
            text.append(cell.source)
            continue
        if not utils.is_solution(cell):
            continue
        name = exercise_name(cell.metadata.nbgrader.get("grade_id", f"cell-{index}"))
        tests = next(
            (
                later.source
                for later in notebook.cells[index + 1 :]
                if later.cell_type == "code"
                and utils.is_grade(later)
                and exercise_name(later.metadata.nbgrader.get("grade_id", "")) == name
            ),
            "",
        )
        found[name] = Exercise(name, "\n\n".join(text), cell.source, tests)
        text = []
    return found


def _answer_sources(notebook: nbformat.NotebookNode) -> dict[str, str]:
    return {
        exercise_name(cell.metadata.nbgrader["grade_id"]): cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and utils.is_solution(cell)
    }


def _diff(name: str, before: str, after: str, language: str) -> list[str]:
    return list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            translate(f"{name} (your version)", language),
            translate(f"{name} (the course's new version)", language),
            lineterm="",
        )
    )


def exercise_changes(
    notebook: Path, workspace: Path, release: Path, language: str = ENGLISH
) -> list[str]:
    """What changed in the course's release for the exercises this notebook answers.

    Compares the release the learner's notebook was copied from with the course's current
    one, for each exercise whose answer the learner changed: its text, its function stub and
    its visible tests, as unified diffs. Exercises added by the new release are named.

    Args:
        notebook: A notebook of the workspace.
        workspace: The workspace.
        release: The course's released notebooks (of the workspace's edition).
        language: The edition's language: what this function says is in it (the diffs
            show the notebooks' own text).

    Returns:
        Lines to print; empty when nothing the learner answered has changed.
    """
    assignment = assignment_of(notebook)
    current = released_notebooks(release).get(assignment)
    baseline = baseline_of(workspace, notebook)
    if current is None or not baseline.is_file():
        return []
    before = exercises(nbformat.read(baseline, as_version=4))
    after = exercises(nbformat.read(current, as_version=4))
    stubs = {name: exercise.stub for name, exercise in before.items()}
    mine = _answer_sources(nbformat.read(notebook, as_version=4))
    answered = [name for name, source in mine.items() if source != stubs.get(name)]
    lines: list[str] = []
    for name in answered:
        old, new = before.get(name), after.get(name)
        if old is None or new is None:
            if new is None:
                lines.append(translate(f"{name}: no longer in the course's new version", language))
            continue
        parts = [
            (translate("text", language), old.text, new.text),
            (translate("function to complete", language), old.stub, new.stub),
            (translate("visible tests", language), old.tests, new.tests),
        ]
        changed = [(part, a, b) for part, a, b in parts if a != b]
        if not changed:
            continue
        parts_changed = ", ".join(part for part, *_ in changed)
        said = f"{name}: changed in the course's new version ({parts_changed})"
        lines.append(translate(said, language))
        for part, a, b in changed:
            lines.extend(f"    {line}" for line in _diff(f"{name} {part}", a, b, language))
    added = [name for name in after if name not in before]
    if added:
        lines.append(translate(f"new exercises: {', '.join(added)}", language))
    return lines
