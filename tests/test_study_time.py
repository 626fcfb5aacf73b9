"""The README's time per notebook is what benchmarks/study_time.py estimates, and fits a sitting."""

from __future__ import annotations

import re

import pytest

from autograder.course import REPO, Course, assignment_ids
from benchmarks.study_time import ONE_SITTING, study_time

ASSIGNMENTS = assignment_ids()
COURSE = Course.repository()  # its release is notebooks/, the notebooks a learner opens
# A row of the README's table: "| `01a_x`, `01b_x` | 50 + 41 min | ...".
_ROW = re.compile(r"^\| (`\w+`(?:, `\w+`)*) \| ([\d + ]+) min \|", re.MULTILINE)


def _readme_minutes() -> dict[str, int]:
    minutes = {}
    for names, times in _ROW.findall((REPO / "README.md").read_text()):
        notebooks = re.findall(r"`(\w+)`", names)
        values = [int(value) for value in times.split("+")]
        assert len(notebooks) == len(values), f"one time per notebook: {names} | {times}"
        minutes.update(zip(notebooks, values, strict=True))
    return minutes


def test_the_readme_gives_each_notebook_its_estimated_time():
    readme = _readme_minutes()
    assert sorted(readme) == ASSIGNMENTS
    for assignment in ASSIGNMENTS:
        minutes = study_time(COURSE.student_notebook(assignment)).minutes
        assert readme[assignment] == round(minutes), assignment


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_notebook_asks_for_more_than_one_sitting(assignment: str):
    assert study_time(COURSE.student_notebook(assignment)).minutes <= ONE_SITTING
