"""The course's grading pipeline: nbgrader as a Python library with a command line."""

from autograder.course import Course, assignment_ids

__all__ = ["Course", "assignment_ids"]
