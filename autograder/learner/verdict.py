"""The grader's verdict at home: ``make check`` grades a learner's notebook as the grader does.

A self-study learner has the hidden tests on disk anyway (``solutions/``), so there is
nothing to keep from them: the check runs the grading pipeline itself on their notebook
(collect, then autograde with probe and judge, the sandbox where bubblewrap is installed)
in a course of the learner's own, ``build/learner/``, and reads the points from its
gradebook, as the instructor's CSV is read. So the points it reports are the points the
grader gives, by construction; ``tests/test_check_verdict.py`` compares them over every
fixture.

Each learner's course has its own grading secret, made on first use: the hidden checks'
inputs are drawn for this learner (and drawn anew for each new version of the notebook),
as the grader draws them for each student.

A class whose students must not run the hidden checks turns this off in ``pyproject.toml``
(``[tool.autograd-pitfalls] hidden-checks-at-home = false``); so does a copy of the course
without ``solutions/``. ``make check`` then runs the visible tests only, and says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils

from autograd_pitfalls.messages import ENGLISH, language_of_metadata, translate
from autograder.course import REPO, Course, assignment_ids, exercise_name
from autograder.learner.summary import exercise_summary
from autograder.learner.workspace import assignment_of
from autograder.pipeline.judge import HIDDEN_BEGIN
from autograder.preprocessors.execute import JUDGED_BY_THE_GRADER
from autograder.submission import OK

# Where the learner's notebooks are graded: $AUTOGRAD_PITFALLS_CHECK_COURSE, else here.
LEARNER_COURSE = REPO / "build" / "learner"
COURSE_VARIABLE = "AUTOGRAD_PITFALLS_CHECK_COURSE"
# The student id the learner's notebooks are graded under (a second notebook of the same
# assignment, such as a course update saved beside, gets "learner-2").
LEARNER_ID = "learner"
SETTING = "hidden-checks-at-home"
# What the build of an assignment depends on, besides its source: rebuilt when one changes.
_BUILD_INPUTS = ("autograder/authoring/build.py", "autograder/authoring/normalize.py")


def hidden_checks_at_home(pyproject: Path = REPO / "pyproject.toml") -> bool:
    """Whether ``make check`` may run the hidden checks (the course's setting, default on)."""
    try:
        settings = tomllib.loads(pyproject.read_text()).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError):
        return True
    return bool(settings.get("autograd-pitfalls", {}).get(SETTING, True))


def holds_hidden_tests(notebook: Path) -> bool:
    """Whether a notebook's test cells hold their hidden tests: a source notebook, an author's.

    Such a notebook is checked as it is (its hidden tests run in it): graded as a
    submission, its test cells would count as edited.
    """
    try:
        cells = nbformat.read(notebook, as_version=4).cells
    except Exception:  # unreadable: grading says so
        return False
    return any(utils.is_grade(cell) and HIDDEN_BEGIN in cell.source for cell in cells)


@dataclass(frozen=True)
class ExerciseVerdict:
    """How one exercise fared, as the grader sees it.

    Attributes:
        exercise: Its name, for example ``q2``.
        score: Points the grader gives.
        max_score: Points available.
        visible: ``pass``, ``fail`` or ``not answered``: the test cell's visible tests.
        hidden: ``pass``, ``fail`` or ``not run`` (the visible tests stopped first).
        messages: Why it fails: the visible tests' errors, then the judges' verdicts.
    """

    exercise: str
    score: float
    max_score: float
    visible: str
    hidden: str
    messages: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether the exercise earned all its points."""
        return self.score >= self.max_score


@dataclass(frozen=True)
class NotebookVerdict:
    """The grader's verdict on one learner notebook.

    Attributes:
        notebook: The notebook checked.
        assignment: Its assignment.
        status: The grader's status (``ok``, ``timeout``, ``error``...).
        message: What the grader noted (a restored locked cell, a time limit...).
        exercises: One verdict per exercise, in notebook order.
        changed: Grade ids of locked cells the learner edited (the grader restores them).
        language: The notebook's edition (``"en"``, ``"zh-CN"``): the language it is told in.
    """

    notebook: Path
    assignment: str
    status: str
    message: str
    exercises: list[ExerciseVerdict] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    language: str = ENGLISH

    @property
    def score(self) -> float:
        """Points the grader gives the notebook."""
        return sum(exercise.score for exercise in self.exercises)

    @property
    def max_score(self) -> float:
        """Points available."""
        return sum(exercise.max_score for exercise in self.exercises)

    @property
    def ok(self) -> bool:
        """Whether every exercise earns all its points."""
        return self.status == OK and all(exercise.passed for exercise in self.exercises)

    def as_dict(self) -> dict:
        """The verdict as JSON-ready data (``check --json``; the Validate button reads it)."""
        return {
            "notebook": str(self.notebook),
            "assignment": self.assignment,
            "status": self.status,
            "message": self.message,
            "score": self.score,
            "max_score": self.max_score,
            "changed": self.changed,
            "language": self.language,
            "exercises": [
                {
                    "exercise": e.exercise,
                    "score": e.score,
                    "max_score": e.max_score,
                    "visible": e.visible,
                    "hidden": e.hidden,
                    "messages": list(e.messages),
                }
                for e in self.exercises
            ],
        }


def learner_course(root: Path | None = None) -> Course:
    """The learner's own course, where their notebooks are graded.

    Args:
        root: Its folder; ``$AUTOGRAD_PITFALLS_CHECK_COURSE``, else ``build/learner/``, when
            None.
    """
    root = root or Path(os.environ.get(COURSE_VARIABLE) or LEARNER_COURSE)
    return Course.at(root, release=root / "release")


@contextlib.contextmanager
def _only_check_at_a_time(course: Course) -> Iterator[None]:
    """Holds the learner course: a Validate click during a ``make check`` waits its turn."""
    course.root.mkdir(parents=True, exist_ok=True)
    with (course.root / ".check.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build_digest(course: Course, assignment: str) -> str:
    digest = hashlib.sha256(course.solution_file(assignment).read_bytes())
    for relative in _BUILD_INPUTS:
        digest.update((REPO / relative).read_bytes())
    return digest.hexdigest()


def _forget_earlier_checks(course: Course, assignments: list[str]) -> None:
    """Forgets the checks of ``assignments``' old version: their gradebook entries, their status.

    nbgrader refuses to add or remove cells of an assignment that has submissions, so a
    new version of the course with a cell more would otherwise stop every ``make check``
    of it. The learner course's gradebook holds nothing else: each check grades again.
    Its status file goes too, or the next check would take the unchanged notebook for
    graded already.
    """
    from autograder.submission import status_file

    for assignment in assignments:
        status_file(course, assignment).unlink(missing_ok=True)
    if not course.gradebook.is_file():
        return
    from nbgrader.api import MissingEntry

    with course.gradebook_db() as gradebook:
        for assignment in assignments:
            with contextlib.suppress(MissingEntry):
                gradebook.remove_assignment(assignment)


def _ensure_built(course: Course, assignments: list[str]) -> None:
    """Builds the assignments whose source changed since the learner course built them."""
    record = course.root / "built.json"
    built = json.loads(record.read_text()) if record.is_file() else {}
    stale = [
        assignment
        for assignment in assignments
        if built.get(assignment) != _build_digest(course, assignment)
        or not course.source_notebook(assignment).is_file()
    ]
    if not stale:
        return
    from autograder.authoring.build import build  # jupytext: only when something is stale

    _forget_earlier_checks(course, stale)
    build(course, stale)
    built.update({assignment: _build_digest(course, assignment) for assignment in stale})
    record.write_text(json.dumps(built, indent=2, sort_keys=True) + "\n")


def _locked_cells_edited(notebook: nbformat.NotebookNode) -> list[str]:
    """Grade ids of locked cells whose source differs from the checksum they were released with."""
    edited = []
    for cell in notebook.cells:
        if not utils.is_locked(cell):
            continue
        recorded = cell.metadata.get("nbgrader", {}).get("checksum")
        if recorded and utils.compute_checksum(cell) != recorded:
            edited.append(cell.metadata.nbgrader.get("grade_id", "?"))
    return edited


def read_exercises(
    course: Course, assignment: str, student: str
) -> tuple[list[ExerciseVerdict], bool]:
    """Each exercise's points from the gradebook, its story from the autograded notebook.

    What ``make check`` tells a learner, read from any course that graded the student: the
    learner's own, or the instructor's (the tests compare the two).

    Args:
        course: The course that graded the student.
        assignment: The assignment graded.
        student: The student's id in that course.

    Returns:
        The verdicts, and whether the gradebook holds the student's grades at all.
    """
    from nbgrader.api import MissingEntry

    scores: dict[str, tuple[float, float]] = {}
    with course.gradebook_db() as gradebook:
        try:
            submission = gradebook.find_submission(assignment, student)
        except MissingEntry:
            return [], False
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                scores[grade.name] = (grade.score, grade.max_score)
    path = course.autograded_notebook(student, assignment)
    graded = nbformat.read(path, as_version=4) if path.is_file() else None
    verdicts = []
    for cell in graded.cells if graded else []:
        if not (cell.cell_type == "code" and utils.is_grade(cell)):
            continue
        grade_id = cell.metadata.nbgrader["grade_id"]
        score, max_score = scores.get(grade_id, (0.0, cell.metadata.nbgrader.get("points", 0)))
        verdicts.append(_exercise_verdict(cell, score, max_score))
    return verdicts, True


def _exercise_verdict(
    cell: nbformat.NotebookNode, score: float, max_score: float
) -> ExerciseVerdict:
    errors = [output for output in cell.outputs if output.output_type == "error"]
    judged = [e for e in errors if e.get("evalue", "").startswith(JUDGED_BY_THE_GRADER)]
    visible_errors = [e for e in errors if e not in judged]
    if any(e.ename == "NotImplementedError" for e in visible_errors):
        visible, messages = "not answered", []  # said by the exercise's line itself
    elif visible_errors:
        visible = "fail"
        messages = [f"{e.ename}: {e.evalue}" for e in visible_errors]
    else:
        visible, messages = "pass", []
    if cell.metadata.get("autograder", {}).get("judged"):
        hidden = "pass"
    elif visible != "pass":
        hidden = "not run"
    else:
        hidden = "fail"
    if hidden == "fail":
        messages += [
            "hidden checks: " + error.evalue.removeprefix(JUDGED_BY_THE_GRADER) for error in judged
        ]
    name = exercise_name(cell.metadata.nbgrader["grade_id"])
    return ExerciseVerdict(name, float(score), float(max_score), visible, hidden, tuple(messages))


def grade_at_home(
    notebooks: list[Path],
    *,
    course: Course | None = None,
    jobs: int = 1,
    cell_timeout: int | None = None,
    sandbox: bool = True,
) -> list[NotebookVerdict]:
    """Grades the learner's notebooks as the grader would; returns one verdict each.

    Args:
        notebooks: Workspace notebooks, each named after its assignment
            (``01_leaf_tensors.ipynb``, ``01_leaf_tensors.new.ipynb``...).
        course: Where to grade (the learner's own course when None).
        jobs: Notebooks graded at once.
        cell_timeout: Seconds one cell may run (the grader's default when None).
        sandbox: Run the notebooks in bubblewrap where it is installed (as the grader).

    Returns:
        The verdicts, in the order given.

    Raises:
        ValueError: If a notebook's name names no assignment of the course.
        FileNotFoundError: If a notebook does not exist.
    """
    from autograder.pipeline.executors import LocalExecutor
    from autograder.pipeline.run import autograde_class, collect_class
    from autograder.sandbox.bwrap import course_sandbox
    from autograder.sandbox.limits import Limits

    course = course or learner_course()
    known = set(assignment_ids(course))
    students: dict[str, dict[str, Path]] = {}
    for notebook in notebooks:
        notebook = Path(notebook).resolve()
        if not notebook.is_file():
            raise FileNotFoundError(f"no notebook at {notebook}")
        assignment = assignment_of(notebook)
        if assignment not in known:
            raise ValueError(
                f"{notebook.name} is not named after an assignment of the course "
                f"({', '.join(sorted(known))}): the grader reads the assignment from it"
            )
        taken = students.setdefault(assignment, {})
        student = LEARNER_ID if not taken else f"{LEARNER_ID}-{len(taken) + 1}"
        taken[student] = notebook
    limits = Limits() if cell_timeout is None else Limits(cell_timeout=cell_timeout)
    verdicts: dict[Path, NotebookVerdict] = {}
    with _only_check_at_a_time(course), tempfile.TemporaryDirectory() as folder:
        _ensure_built(course, list(students))
        executor = LocalExecutor(jobs, None, course_sandbox(course, enabled=sandbox), keep=True)
        try:
            for assignment, by_student in students.items():
                incoming = Path(folder) / assignment
                for student, notebook in by_student.items():
                    (incoming / student).mkdir(parents=True)
                    target = incoming / student / f"{assignment}.ipynb"
                    target.write_bytes(notebook.read_bytes())
                collect_class(course, assignment, incoming)
                graded = autograde_class(
                    course, assignment, limits=limits, sandbox=sandbox, executor=executor
                )
                by_id = {submission.student_id: submission for submission in graded}
                for student, notebook in by_student.items():
                    verdicts[notebook] = _verdict(course, assignment, student, notebook, by_id)
        finally:
            executor.close()
    return [verdicts[Path(notebook).resolve()] for notebook in notebooks]


def _verdict(course, assignment, student, notebook, by_id) -> NotebookVerdict:
    submission = by_id[student]
    exercises, recorded = read_exercises(course, assignment, student)
    try:
        changed = _locked_cells_edited(nbformat.read(notebook, as_version=4))
    except Exception:  # unreadable: the grader's status says so
        changed = []
    message = submission.message if recorded or submission.message else "not graded"
    language = ENGLISH
    with contextlib.suppress(Exception):  # unreadable: told in English
        language = language_of_metadata(nbformat.read(notebook, as_version=4).metadata)
    return NotebookVerdict(
        notebook, assignment, submission.status, message, exercises, changed, language
    )


def _points(value: float) -> str:
    return f"{value:g}"


def _wrapped(message: str, indent: str, width: int) -> list[str]:
    lines = []
    for paragraph in message.splitlines() or [""]:
        lines += textwrap.wrap(
            paragraph, width, initial_indent=indent, subsequent_indent=indent
        ) or [indent]
    return lines


# The lines of format_verdict as templates of the message catalog (autograder/i18n/messages.py).
MESSAGES = (
    "not answered yet (the answer cell still raises NotImplementedError)",
    "visible tests fail (hidden checks not run)",
    "visible tests pass; hidden checks {0}",
    "Checking {0} as the grader grades it (visible tests and hidden checks)",
    "grader's status: {0}: {1}",
    "grader's note: {0}",
    "CHANGED  {0}: this cell is locked and was edited; the grader uses the course's version "
    "instead (restore it to see what is graded)",
    "pass",
    "FAIL",
    "{0} points",
    "Points: {0}, as the grader would give them.",
    "fail",
    "not run",
)


def _exercise_line(verdict: ExerciseVerdict) -> str:
    if verdict.visible == "not answered":
        return "not answered yet (the answer cell still raises NotImplementedError)"
    if verdict.visible == "fail":
        return "visible tests fail (hidden checks not run)"
    return f"visible tests pass; hidden checks {verdict.hidden}"


def format_verdict(verdict: NotebookVerdict, shown: str, width: int = 100) -> str:
    """The verdict as text for a terminal: a summary line, each exercise, the points.

    Args:
        verdict: The notebook's verdict.
        shown: How to name the notebook (a path relative to where the learner is).
        width: Where long messages wrap.
    """

    def said(text: str) -> str:
        return translate(text, verdict.language)

    passed = [e.exercise for e in verdict.exercises if e.passed]
    failing = [e.exercise for e in verdict.exercises if not e.passed]
    lines = [
        said(f"Checking {shown} as the grader grades it (visible tests and hidden checks)"),
        exercise_summary(passed, failing, verdict.language),
    ]
    if verdict.status != OK:
        status = said(f"grader's status: {verdict.status}: {verdict.message}")
        lines += _wrapped(status, "  ", width)
    elif verdict.message:
        lines += _wrapped(said(f"grader's note: {verdict.message}"), "  ", width)
    for grade_id in verdict.changed:
        lines += _wrapped(
            said(
                f"CHANGED  {grade_id}: this cell is locked and was edited; the grader uses the "
                "course's version instead (restore it to see what is graded)"
            ),
            "  ",
            width,
        )
    column = max((len(e.exercise) for e in verdict.exercises), default=2)
    for exercise in verdict.exercises:
        status = said("pass" if exercise.passed else "FAIL")
        points = f"{_points(exercise.score)}/{_points(exercise.max_score)}"
        lines.append(
            f"  {status}  {exercise.exercise:<{column}}  {said(f'{points:>5} points')}  "
            f"{said(_exercise_line(exercise))}"
        )
        if not exercise.passed:
            for message in exercise.messages:
                lines += _wrapped(message, "        ", width)
    lines.append(
        said(
            f"Points: {_points(verdict.score)}/{_points(verdict.max_score)}, "
            "as the grader would give them."
        )
    )
    return "\n".join(lines)
