"""The one-line summary of a check: which exercises pass and which do not yet.

Shared by ``autograder check`` and the lab's Validate button, so a learner reads the same
words in the terminal and in JupyterLab.
"""

from __future__ import annotations


def exercise_summary(passed: list[str], failing: list[str]) -> str:
    """Returns for example ``"1 of 5 exercises pass (q1); not yet: q2, q3, q4, q5."``.

    Args:
        passed: Names of the exercises that pass (``"q1"``), in notebook order.
        failing: Names of those that do not, in notebook order.
    """
    total = len(passed) + len(failing)
    text = f"{len(passed)} of {total} exercises pass"
    if passed and failing:
        text += f" ({', '.join(passed)})"
    if failing:
        text += f"; not yet: {', '.join(failing)}"
    return text + "."
