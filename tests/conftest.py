"""Shared fixtures: one course built from solutions/ in a temporary folder per test session."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.authoring.build import build
from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import REPO, Course, assignment_ids
from autograder.i18n.catalog import LANGUAGES
from autograder.pipeline.run import GradingResult
from tests.support.fixtures import (
    PACKAGED_IN,
    edition_folder,
    edition_student_id,
    edition_students,
)

ASSIGNMENTS = assignment_ids()
# Grading the class alone takes about five minutes on two idle cores.
BACKGROUND_GRADING_TIMEOUT = 3600


@pytest.fixture(scope="session", autouse=True)
def own_temporary_folder(tmp_path_factory: pytest.TempPathFactory):
    """Points this run's temporary files (the grader's kernel folders too) into its own folder.

    Another run on the same machine (an instructor grading, a second CI job) makes
    ``/tmp/autograder-*`` folders of its own: a test that looks for what the grader left
    behind must see only what this run made. Grading workers and zygotes start after
    this (they read TMPDIR when they start), and pytest keeps the folder as it keeps
    every ``tmp_path``.
    """
    folder = tmp_path_factory.mktemp("tmp")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(folder))
        patch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
        yield folder


@pytest.fixture(scope="session", autouse=True)
def no_warm_grading_service():
    """Makes each grading command the tests start grade in processes of its own.

    A command's grading service stays warm for minutes after it (with its zygotes: torch,
    hundreds of MB each); the tests grade many courses, each once or twice, and check
    that a command leaves no process behind. ``tests/test_service.py`` starts services
    on purpose (``--keep-warm``) and stops them.
    """
    from autograder.pipeline.service import KEEP_WARM_VARIABLE

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEEP_WARM_VARIABLE, "0")
        yield


@pytest.fixture(scope="session", autouse=True)
def own_learner_folders(tmp_path_factory: pytest.TempPathFactory):
    """Points the learner's workspace and check course into this run's folders.

    No test may write the repository's ``workspace/`` (a learner's answers) or
    ``build/learner/`` (their check course, with its secret): what a test starts (a lab,
    a check) inherits these.
    """
    from autograder.learner.verdict import COURSE_VARIABLE
    from autograder.learner.workspace import WORKSPACE_VARIABLE

    folder = tmp_path_factory.mktemp("learner")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WORKSPACE_VARIABLE, str(folder / "workspace"))
        patch.setenv(COURSE_VARIABLE, str(folder / "check-course"))
        yield folder


@pytest.fixture(scope="session")
def built_course(tmp_path_factory: pytest.TempPathFactory) -> Course:
    """A course whose sources and student notebooks were built from solutions/ (not notebooks/)."""
    root = tmp_path_factory.mktemp("course")
    course = Course.at(root, release=root / "release")
    build(course, languages=LANGUAGES)
    return course


@pytest.fixture(scope="session")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each assignment's fixtures (its editions' too), a corrupt and an empty submission
    (and, in :data:`PACKAGED_IN`, a zipped and a single-file one)."""
    folders = {}
    for assignment in ASSIGNMENTS:
        folder = tmp_path_factory.mktemp(f"submissions-{assignment}")
        shutil.copytree(submissions_folder(assignment), folder, dirs_exist_ok=True)
        # Each edition's fixtures are graded in the same batch, as students of their own
        # (zh-CN_perfect...): one grader for both editions, and no second run to wait for.
        for language in LANGUAGES:
            for student in edition_students(assignment):
                shutil.copytree(
                    edition_folder(assignment, language) / student,
                    folder / edition_student_id(language, student),
                )
        (folder / "corrupt_json").mkdir()
        (folder / "corrupt_json" / f"{assignment}.ipynb").write_text('{"cells": [')
        (folder / "empty_folder").mkdir()
        if assignment == PACKAGED_IN:
            perfect = folder / "perfect" / f"{assignment}.ipynb"
            with zipfile.ZipFile(folder / "zipped_perfect.zip", "w") as archive:
                archive.write(perfect, f"my work/{assignment}.ipynb")
            shutil.copy(perfect, folder / "single_file_perfect.ipynb")
        folders[assignment] = folder
    return folders


def pytest_collection_modifyitems(config, items) -> None:
    """Runs the tests that wait for the class graded in the background late, the browser last.

    The class (:func:`class_graded_in_the_background`) takes minutes of both cores: a test
    that waits for it early leaves the foreground idle while every other test could run.
    Run after them, those tests find it graded, and it took the cores the other tests
    left idle (their sleeps, their waits for servers and kernels). A module's other tests
    stay where they were: those of ``test_pipeline.py`` grade one student at a time, and
    late in the run they would leave a core idle. (A module-scoped fixture used on both
    sides would be set up twice; today none is.)

    The browser test comes last: it times a learner's Run All, on a machine left alone. By
    then the background class is done, as is every other grading run of the suite.
    """

    def place(item) -> int:
        if item.path.name == "test_browser.py":
            return 2
        return 1 if "graded" in item.fixturenames else 0

    items.sort(key=place)  # stable: each group keeps the order it was collected in


@pytest.fixture(scope="session", autouse=True)
def class_graded_in_the_background(
    request: pytest.FixtureRequest, own_temporary_folder: Path
) -> Iterator[tuple[subprocess.Popen, Path] | None]:
    """Starts grading the class (``graded``) at once, in a process of its own, when a test needs it.

    See ``tests/support/background_grading.py``: it takes the core that the tests in the
    foreground leave idle, at a lower priority. A run that needs no ``graded`` starts
    nothing.
    """
    if not any("graded" in item.fixturenames for item in request.session.items):
        yield None
        return
    course: Course = request.getfixturevalue("built_course")
    folders: dict[str, Path] = request.getfixturevalue("submissions")
    work = own_temporary_folder / "background-grading"
    (work / "tmp").mkdir(parents=True)
    spec = {
        "root": str(course.root),
        "release": str(course.release),
        "submissions": {assignment: str(folders[assignment]) for assignment in ASSIGNMENTS},
        "fixtures": [str(path) for path in fixture_notebook_paths()],
        "check_course": str(work / "check-course"),
    }
    (work / "spec.json").write_text(json.dumps(spec))
    with (work / "log.txt").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.background_grading",
                str(work / "spec.json"),
                str(work / "results.pickle"),
            ],
            cwd=REPO,
            env={**os.environ, "TMPDIR": str(work / "tmp")},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    yield process, work
    if process.poll() is None:  # the session ended early (a failure with -x, Ctrl-C)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def fixture_notebook_paths() -> list[Path]:
    """Every fixture submission's notebook, assignment by assignment, student by student."""
    return [
        folder / f"{assignment}.ipynb"
        for assignment in ASSIGNMENTS
        for folder in sorted(submissions_folder(assignment).iterdir())
        if (folder / f"{assignment}.ipynb").is_file()
    ]


@pytest.fixture(scope="session")
def background_checks(graded, class_graded_in_the_background) -> dict[str, dict]:
    """What the background run wrote beside the class: ``{"class": ..., "at_home": ...}``.

    Read once, after ``graded`` (which waits for the whole run).
    """
    from tests.support.background_grading import CHECKS

    _, work = class_graded_in_the_background
    return pickle.loads((work / CHECKS).read_bytes())


@pytest.fixture(scope="session")
def checked_at_home(background_checks) -> dict[str, dict]:
    """The verdicts of a sample of the fixture notebooks from the learner's check, by path.

    The sample is ``sample_to_check_at_home``'s.
    """
    return background_checks["at_home"]


@pytest.fixture(scope="session")
def told_in_class(background_checks) -> dict[str, list[dict]]:
    """What ``make check`` would tell each fixture's learner, read from the class graded.

    Every fixture notebook's exercise verdicts (``ExerciseVerdict`` as dicts), by path, as
    ``read_exercises`` reads them from the instructor's course after ``graded``.
    """
    return background_checks["class"]


@pytest.fixture(scope="session")
def graded(
    class_graded_in_the_background: tuple[subprocess.Popen, Path] | None,
) -> dict[str, GradingResult]:
    """Every assignment graded on its submissions, several students at a time, in the sandbox.

    Shared by the pipeline tests and the comparison with plain nbgrader: grading the
    class is the slowest step of the suite, so it happens once, started in the background
    when the session began (:func:`class_graded_in_the_background`, which starts it
    whenever a selected test needs this fixture).
    """
    assert class_graded_in_the_background is not None, "the class was not being graded"
    process, work = class_graded_in_the_background
    code = process.wait(timeout=BACKGROUND_GRADING_TIMEOUT)
    log = (work / "log.txt").read_text(errors="replace")
    assert code == 0, f"grading the class in the background failed ({code}):\n{log[-4000:]}"
    return pickle.loads((work / "results.pickle").read_bytes())


@pytest.fixture(scope="session")
def repo_course() -> Course:
    """The instructor's course: the repository, read only in the tests."""
    return Course.repository()


def pytest_report_header() -> list[str]:
    return [
        f"assignments: {', '.join(ASSIGNMENTS)}",
        f"repository: {Path(__file__).parent.parent.name}",
    ]


def pytest_terminal_summary(terminalreporter, config) -> None:
    """Says where the browser test left its screenshots, and how long each Run All took."""
    folder = getattr(config, "browser_screenshots", None)
    if folder is not None:
        terminalreporter.write_line(f"browser test screenshots: {folder}")
    run_all = getattr(config, "run_all_seconds", {})
    if run_all:
        timings = ", ".join(
            f"{name} {seconds:.1f} s (kernel ready {ready:.1f} s after opening)"
            for name, (seconds, ready) in run_all.items()
        )
        terminalreporter.write_line(f"Run All in JupyterLab (fresh kernel): {timings}")
