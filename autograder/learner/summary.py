"""The one-line summary of a check: which exercises pass and which do not yet.

Shared by ``autograder check`` and the lab's Validate button, so a learner reads the same
words in the terminal and in JupyterLab.
"""

from __future__ import annotations

from autograd_pitfalls.messages import ENGLISH, translate

# The line's forms, as templates of the message catalog (autograder/i18n/messages.py).
MESSAGES = (
    "{0} of {1} exercises pass.",
    "{0} of {1} exercises pass; not yet: {2}.",
    "{0} of {1} exercises pass ({2}); not yet: {3}.",
)


def exercise_summary(passed: list[str], failing: list[str], language: str = ENGLISH) -> str:
    """Returns for example ``"1 of 5 exercises pass (q1); not yet: q2, q3, q4, q5."``.

    Args:
        passed: Names of the exercises that pass (``"q1"``), in notebook order.
        failing: Names of those that do not, in notebook order.
        language: The language of the notebook (its edition).
    """
    total = len(passed) + len(failing)
    text = f"{len(passed)} of {total} exercises pass"
    if passed and failing:
        text += f" ({', '.join(passed)})"
    if failing:
        text += f"; not yet: {', '.join(failing)}"
    return translate(text + ".", language)
