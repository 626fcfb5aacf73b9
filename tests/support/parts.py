"""Which parts of the lessons a test that need not see every notebook runs on."""

from __future__ import annotations

from autograder.course import lesson_of, parts_of


def one_part_per_lesson(assignments: list[str]) -> list[str]:
    """One part of each lesson, a and b in turn: ``01a``, ``02b``, ``03a``...

    For the tests whose subject does not depend on the notebook (the browser, the cluster):
    both kinds of part are seen, at half the cost. Every notebook is still run and graded
    elsewhere. An assignment that is no part (``07_x``) is kept.
    """
    lessons = dict.fromkeys(lesson_of(assignment) for assignment in assignments)
    chosen = []
    for turn, lesson in enumerate(lessons):
        parts = parts_of(lesson, assignments)
        chosen.append(parts[min(turn % 2, len(parts) - 1)])
    return chosen
