"""Shared fixtures: one course built from solutions/ in a temporary folder per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.build import build
from autograder.course import Course, assignment_ids

ASSIGNMENTS = assignment_ids()


@pytest.fixture(scope="session")
def built_course(tmp_path_factory: pytest.TempPathFactory) -> Course:
    """A course whose sources and student notebooks were built from solutions/ (not notebooks/)."""
    root = tmp_path_factory.mktemp("course")
    course = Course.at(root, release=root / "release")
    build(course)
    return course


@pytest.fixture(scope="session")
def repo_course() -> Course:
    """The instructor's course: the repository, read only in the tests."""
    return Course.repository()


def pytest_report_header() -> list[str]:
    return [
        f"assignments: {', '.join(ASSIGNMENTS)}",
        f"repository: {Path(__file__).parent.parent.name}",
    ]
