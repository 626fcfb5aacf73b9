"""Plain nbgrader and this grader give the same grade to every test of honest submissions.

Plain nbgrader (its own Execute, a fresh kernel per notebook, no sandbox) grades fixture
students of every kind of every assignment (see ``_students``) through its command line,
with the course's ``nbgrader_config.py``; this grader (forked kernels, sandbox, restored
tests, guard) grades the same students in the class the pipeline tests grade (``graded``
in conftest.py). Every test cell must get the same score.
The hostile fixtures are left out on purpose: there the two must differ.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.authoring.build import build
from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import Course, assignment_ids
from autograder.pipeline.collect import collect
from autograder.sandbox.limits import cores_each
from tests.support.parts import one_part_per_lesson

ASSIGNMENTS = assignment_ids()


# Plain nbgrader starts a fresh kernel that imports torch for every notebook (8 s each on
# two cores): the right answers of every assignment (every test cell compared), a wrong one
# in one part of each lesson, and in the first a right answer that makes torch warn, keep
# the comparison short; every fixture's exact scores are checked elsewhere
# (test_pipeline), on this grader.
KINDS = ("perfect",)
WARNING_IN = ASSIGNMENTS[0]
WRONG_IN = one_part_per_lesson(ASSIGNMENTS)
WRONG_PER_ASSIGNMENT = 1


def _students(assignment: str) -> list[str]:
    """Fixture students of ``assignment``: right, maybe the first wrong one, one that warns."""
    every = sorted(path.name for path in submissions_folder(assignment).iterdir())
    kinds = (*KINDS, "correct_with_torch_warning") if assignment == WARNING_IN else KINDS
    wrong = [name for name in every if name not in kinds and "correct" not in name]
    wrong = wrong[:WRONG_PER_ASSIGNMENT] if assignment in WRONG_IN else []
    return sorted([name for name in every if name in kinds] + wrong)


def _course(root: Path, assignment: str) -> Course:
    course = Course.at(root, release=root / "release")
    build(course, [assignment])
    folder = root / "incoming"
    for student in _students(assignment):
        shutil.copytree(submissions_folder(assignment) / student, folder / student)
    collect(course, assignment, folder)
    return course


def _grades(course: Course, assignment: str) -> dict[tuple[str, str], float | None]:
    with Gradebook(f"sqlite:///{course.gradebook}") as gradebook:
        return {
            (student, grade.name): grade.auto_score
            for student in _students(assignment)
            for notebook in gradebook.find_submission(assignment, student).notebooks
            for grade in notebook.grades
        }


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict[str, Course]:
    """Every assignment's fixtures graded by ``nbgrader autograde``, both at once."""
    courses, runs = {}, []
    for assignment in ASSIGNMENTS:
        root = tmp_path_factory.mktemp(f"plain-{assignment}")
        courses[assignment] = _course(root, assignment)
        courses[assignment].write_nbgrader_config()
        nbgrader = Path(sys.executable).with_name("nbgrader")
        command = [str(nbgrader), "autograde", assignment, "--force"]
        runs.append(
            subprocess.Popen(
                command,
                cwd=root,
                # All at once: each its share of the cores' torch threads, or they spin.
                env={**os.environ, "OMP_NUM_THREADS": str(cores_each(len(ASSIGNMENTS)))},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for run in runs:
        _, errors = run.communicate(timeout=600)
        assert run.returncode == 0, errors[-2000:]
    return courses


@pytest.fixture(scope="module")
def ours(built_course: Course, graded) -> dict[str, Course]:
    """The same students graded by this grader: the class the pipeline tests grade."""
    for assignment, result in graded.items():
        statuses = {row["student_id"]: row["status"] for row in result.rows}
        assert all(statuses[student] == "ok" for student in _students(assignment)), statuses
    return dict.fromkeys(ASSIGNMENTS, built_course)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_test_cell_gets_the_score_plain_nbgrader_gives(plain, ours, assignment: str):
    expected = _grades(plain[assignment], assignment)
    assert expected and all(score is not None for score in expected.values())
    assert _grades(ours[assignment], assignment) == expected
