"""The plausible wrong answers an assignment's author lists, read for the class report.

``autograder/fixtures/<assignment>/wrong_answers.py`` names each plausible wrong answer
(``WRONG_ANSWERS = {student: {answer_grade_id: source}}``); ``expected_scores.csv`` beside
it says what each must score. The tests grade them as fixture students
(``tests/support/fixtures.py`` writes their notebooks); the class report names a
student's answer when it is one of them.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from autograder.course import REPO

FIXTURES = REPO / "autograder" / "fixtures"


def submissions_folder(assignment: str, fixtures: Path = FIXTURES) -> Path:
    """The folder of fixture submissions of ``assignment``: one subfolder per student."""
    return fixtures / assignment / "submissions"


def load_wrong_answers(assignment: str, fixtures: Path = FIXTURES) -> dict[str, dict[str, str]]:
    """Reads ``WRONG_ANSWERS`` from the assignment's ``wrong_answers.py``.

    Args:
        assignment: The assignment id.
        fixtures: The folder holding one folder per assignment.

    Returns:
        ``{student_id: {answer grade_id: replacement source}}``; empty without a spec.
    """
    spec = fixtures / assignment / "wrong_answers.py"
    if not spec.is_file():
        return {}
    return runpy.run_path(str(spec))["WRONG_ANSWERS"]
