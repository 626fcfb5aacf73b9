"""Where a course's files live, and the nbgrader configuration every step shares.

One :class:`Course` describes one course directory in nbgrader's sense: the repository
itself for an instructor, a temporary folder for the tests. Every nbgrader call in the
pipeline gets its configuration from :func:`nbgrader_config`, and so does the
``nbgrader`` command line through ``nbgrader_config.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from traitlets.config import Config

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

REPO = Path(__file__).resolve().parent.parent

# Started in every kernel that nbgrader runs: a warning PyTorch prints while a correct
# answer runs must not reach stderr, where nbgrader would score the test cell 0.
KERNEL_STARTUP = "__import__('autograd_pitfalls.checks').checks.show_warnings_on_stdout()"

# What an answer cell holds until the learner answers it. nbgrader's default ends a red
# traceback with a bare `NotImplementedError:`, which reads like a crash; this says what
# is going on (autograder.learner.validate recognises the error by its type, not its message).
CODE_STUB = (
    "# YOUR CODE HERE\n"
    'raise NotImplementedError("Exercise not answered yet: replace this line with your answer.")'
)


# Seconds a new kernel may take to answer (nbclient's startup_timeout, 60 by default). A
# kernel that imports torch on a machine busy with other grading runs (two other classes,
# a test suite) took more than a minute: a kernel that never starts is still caught, later.
KERNEL_START_TIMEOUT = 300


def nbgrader_config(cell_timeout: int = 120) -> Config:
    """Returns the nbgrader settings shared by validate, generate and autograde.

    Args:
        cell_timeout: Seconds one cell may run before nbgrader interrupts it.

    Returns:
        A traitlets Config for nbgrader's apps and preprocessors.
    """
    from autograder.pipeline.feedback import feedback_config  # imports nbconvert: only when used

    config = Config()
    config.CourseDirectory.course_id = "autograd-pitfalls"
    config.Execute.timeout = cell_timeout
    config.Execute.startup_timeout = KERNEL_START_TIMEOUT
    # Encrypt kernel traffic (the kernel warns on stderr about plain TCP otherwise).
    config.KernelManager.transport_encryption = "auto"
    config.Execute.extra_arguments = [f"--IPKernelApp.exec_lines={[KERNEL_STARTUP]!r}"]
    config.ClearSolutions.code_stub = {"python": CODE_STUB}
    # nbconvert checks the notebook against its schema after each of a step's ten or so
    # preprocessors; once, after the last, finds the same invalid notebooks. Per graded
    # student that was 0.25 s of the grader's 1.45 s of CPU (10 students of 02, --jobs 1).
    config.Exporter.optimistic_validation = True
    config.merge(feedback_config())
    return config


@dataclass(frozen=True)
class Course:
    """The folders of one nbgrader course.

    Attributes:
        root: The course directory: submitted/, autograded/, feedback/, exports/ and
            gradebook.db live here.
        solutions: The sources, ``NN_slug/NN_slug.py`` in jupytext percent format.
        source: Where the sources become nbgrader source notebooks.
        release: Where the student notebooks are generated.
        db_url: The gradebook's database URL (nbgrader's ``db_url``), for a gradebook that
            instructors share in formgrader (PostgreSQL, say); ``gradebook.db`` in
            ``root`` (SQLite) when None.
    """

    root: Path
    solutions: Path
    source: Path
    release: Path
    db_url: str | None = None

    @classmethod
    def at(cls, root: Path, release: Path | None = None, db_url: str | None = None) -> Course:
        """Returns the course rooted at ``root``, with the repository's solutions.

        Args:
            root: The course directory.
            release: Where student notebooks go; ``root / "notebooks"`` when None.
            db_url: The gradebook's database URL; SQLite in ``root`` when None.
        """
        root = root.resolve()
        return cls(
            root=root,
            solutions=REPO / "solutions",
            source=root / "build" / "source",
            release=(release or root / "notebooks").resolve(),
            db_url=db_url,
        )

    @classmethod
    def repository(cls) -> Course:
        """Returns the instructor's course: the repository itself."""
        return cls.at(REPO)

    @property
    def gradebook(self) -> Path:
        """The SQLite file of this course's gradebook (unused when ``db_url`` is set)."""
        return self.root / "gradebook.db"

    def gradebook_url(self, timeout: int | None = None) -> str:
        """The gradebook's SQLAlchemy URL: ``db_url``, or the SQLite file in the course.

        Args:
            timeout: Seconds SQLite waits for another process's write instead of failing.
        """
        if self.db_url:
            return self.db_url
        return f"sqlite:///{self.gradebook}" + (f"?timeout={timeout}" if timeout else "")

    def gradebook_db(self) -> Gradebook:
        """Opens the course's gradebook (created when missing); use it in a ``with``."""
        from nbgrader.api import Gradebook

        from autograder.compat import read_gradebook_schema_in_process

        read_gradebook_schema_in_process()
        return Gradebook(self.gradebook_url())

    @property
    def grading_secret_file(self) -> Path:
        """Where the course's grading secret is kept (beside the gradebook, never in git)."""
        return self.root / "grading_secret"

    def grading_secret(self) -> str:
        """Returns the course's grading secret (hex), made on first use.

        The grader draws each student's hidden inputs from it (see
        :mod:`autograder.pipeline.judge`). The sandbox does not mount the course folder,
        so a student's kernel cannot read it; keep it as private as the gradebook.
        """
        path = self.grading_secret_file
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written whole, then linked into place: a second run starting at the same
            # moment reads the first one's secret, never a half-written file.
            draft = path.with_name(f".{path.name}.{os.getpid()}")
            descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_hex(32))
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)
            draft.unlink()
        secret = path.read_text().strip()
        if len(secret) != 64 or not all(char in "0123456789abcdef" for char in secret):
            raise ValueError(f"{path} is not a grading secret (64 hex digits); remove it")
        return secret

    @property
    def exports(self) -> Path:
        """Where grade exports are written."""
        return self.root / "exports"

    def write_nbgrader_config(self) -> Path:
        """Writes ``nbgrader_config.py`` into the course folder, for the ``nbgrader`` command.

        Plain ``nbgrader autograde`` run there then uses this course's folders and the
        settings of :func:`nbgrader_config` (used to compare with plain nbgrader).
        """
        path = self.root / "nbgrader_config.py"
        path.write_text(
            "from autograder.course import nbgrader_config\n\n"
            "c = get_config()  # noqa: F821\n"
            "c.merge(nbgrader_config())\n"
            f"c.CourseDirectory.root = {str(self.root)!r}\n"
            f"c.CourseDirectory.source_directory = {str(self.source)!r}\n"
            f"c.CourseDirectory.release_directory = {str(self.release)!r}\n"
            f"c.CourseDirectory.db_url = {self.gradebook_url()!r}\n"
        )
        return path

    def solution_file(self, assignment: str) -> Path:
        """The source file of ``assignment``."""
        return self.solutions / assignment / f"{assignment}.py"

    def source_notebook(self, assignment: str) -> Path:
        """The built source notebook of ``assignment`` (solutions and hidden tests)."""
        return self.source / assignment / f"{assignment}.ipynb"

    def require_built(self, assignment: str) -> None:
        """Stops with a BuildError that says how to build ``assignment`` if it is not built.

        Raises:
            BuildError: If ``assignment`` has no source notebook here.
        """
        if not self.source_notebook(assignment).is_file():
            from autograder.authoring.build import BuildError  # jupytext: only when it fails

            raise BuildError(
                f"{assignment} is not built in {self.root}: run `python -m autograder build "
                f"{assignment}` (or `grade`, which builds) first"
            )

    @property
    def submitted(self) -> Path:
        """The folder of collected submissions (nbgrader's ``submitted/``), one per student."""
        return self.root / "submitted"

    def submitted_folder(self, student: str, assignment: str) -> Path:
        """Where ``collect`` puts a student's submission."""
        return self.submitted / student / assignment

    def autograded_notebook(self, student: str, assignment: str) -> Path:
        """A student's notebook as autograde ran it (nbgrader's ``autograded/``)."""
        return self.root / "autograded" / student / assignment / f"{assignment}.ipynb"

    @property
    def feedback(self) -> Path:
        """Where each student's feedback is written (``feedback/<student>/<assignment>/``)."""
        return self.root / "feedback"

    def student_notebook(self, assignment: str) -> Path:
        """The generated student notebook of ``assignment``."""
        return self.release / assignment / f"{assignment}.ipynb"

    def settings(self, config: Config | None = None) -> Config:
        """Returns the nbgrader settings of this course: :func:`nbgrader_config`, its folders.

        Args:
            config: Extra settings merged over them.
        """
        merged = nbgrader_config()
        merged.CourseDirectory.root = str(self.root)
        merged.CourseDirectory.source_directory = str(self.source)
        merged.CourseDirectory.release_directory = str(self.release)
        merged.CourseDirectory.db_url = self.gradebook_url()
        if config is not None:
            merged.merge(config)
        return merged

    def api(self, config: Config | None = None) -> NbGraderAPI:
        """Returns nbgrader's Python API bound to this course's folders.

        Args:
            config: Extra settings merged over :meth:`settings`.
        """
        # Imported here: nbgrader takes seconds to import, and the grader starts its
        # zygotes before it needs nbgrader (see autograder.cli).
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory

        from autograder.compat import read_gradebook_schema_in_process

        read_gradebook_schema_in_process()  # the API creates the gradebook when missing

        merged = self.settings(config)
        put_interpreter_bin_on_path()
        coursedir = CourseDirectory(config=merged)
        return NbGraderAPI(coursedir=coursedir, config=merged)


def put_interpreter_bin_on_path() -> None:
    """Puts this interpreter's ``bin`` folder on PATH, where nbgrader looks for ``alembic``."""
    # nbgrader runs the `alembic` command by name to create a gradebook; when the pipeline
    # runs as `.venv/bin/python -m autograder`, .venv/bin is not on PATH by itself.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


# nbgrader grade ids of an exercise's cells: "q1-answer" (the learner's) and "q1-tests".
ANSWER_SUFFIX = "-answer"
TESTS_SUFFIX = "-tests"


def exercise_name(grade_id: str) -> str:
    """Returns the exercise a cell belongs to: ``"q1"`` for ``"q1-tests"`` or ``"q1-answer"``."""
    return grade_id.removesuffix(TESTS_SUFFIX).removesuffix(ANSWER_SUFFIX)


def lesson_of(assignment: str) -> str:
    """The lesson an assignment is a part of: ``02a_version_counter`` gives ``02_version_counter``.

    An assignment that is no part (its number has no letter) is its own lesson.
    """
    return re.sub(r"^(\d+)[a-z]_", r"\1_", assignment)


def parts_of(lesson: str, assignments: Iterable[str]) -> list[str]:
    """The assignments of ``lesson``, in the order given: its parts, or the whole lesson."""
    return [assignment for assignment in assignments if lesson_of(assignment) == lesson]


def answer_id(grade_id: str) -> str:
    """Returns the grade id of the answer cell of an exercise (given by name or cell id)."""
    return exercise_name(grade_id) + ANSWER_SUFFIX


def assignment_ids(course: Course | None = None) -> list[str]:
    """Returns the assignment ids that have a source in ``solutions/``, sorted.

    Args:
        course: The course to look in; the repository's when None.
    """
    course = course or Course.repository()
    return sorted(
        folder.name
        for folder in course.solutions.iterdir()
        if (folder / f"{folder.name}.py").is_file()
    )
