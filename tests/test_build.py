"""The build: normalisation, determinism, and notebooks/ (and fixtures) up to date."""

from __future__ import annotations

import dataclasses

import nbformat
import pytest
from nbformat import v4

from autograder.authoring.build import BuildError, write_source_notebook
from autograder.authoring.normalize import normalize
from autograder.authoring.wrong_answers import submissions_folder
from autograder.course import Course, assignment_ids
from tests.support.fixtures import fixture_notebooks

ASSIGNMENTS = assignment_ids()


def _notebook(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    notebook = v4.new_notebook(cells=list(cells))
    notebook.metadata["jupytext"] = {"text_representation": {"format_name": "percent"}}
    return notebook


def test_normalize_sets_ids_from_grade_ids_and_positions():
    answer = v4.new_code_cell(
        "x = 1", metadata={"nbgrader": {"grade_id": "q1-answer", "solution": True}}
    )
    prose = v4.new_markdown_cell("Hello", metadata={"lines_to_next_cell": 2})
    result = normalize(_notebook(prose, answer))
    assert [cell.id for cell in result.cells] == ["cell-000", "q1-answer"]
    assert result.cells[0].metadata == {}
    assert "jupytext" not in result.metadata


def test_normalize_fills_nbgrader_defaults_and_tags_graded_cells():
    tests = v4.new_code_cell(
        "assert True", metadata={"nbgrader": {"grade_id": "q1-tests", "grade": True, "points": 2}}
    )
    cell = normalize(_notebook(tests)).cells[0]
    assert cell.metadata.nbgrader == {
        "grade": True,
        "grade_id": "q1-tests",
        "locked": False,
        "points": 2,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    assert cell.metadata.tags == ["raises-exception"]
    assert cell.metadata.jupyter == {"source_hidden": True}  # opens folded in JupyterLab


def test_normalize_rejects_duplicate_grade_ids_and_missing_points():
    twice = [v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "a"}}) for _ in range(2)]
    with pytest.raises(ValueError, match="used by two cells"):
        normalize(_notebook(*twice))
    pointless = v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "b", "grade": True}})
    with pytest.raises(ValueError, match="no points"):
        normalize(_notebook(pointless))


def test_write_source_notebook_reports_a_missing_source(built_course: Course):
    with pytest.raises(BuildError, match="no source"):
        write_source_notebook(built_course, "99_missing")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_is_up_to_date(built_course: Course, repo_course: Course, assignment: str):
    fresh = built_course.student_notebook(assignment).read_bytes()
    committed = repo_course.student_notebook(assignment)
    assert committed.is_file(), f"{committed} is missing: run `make notebooks`"
    assert committed.read_bytes() == fresh, (
        f"{committed} is stale: run `make notebooks` and commit (it rewrites notebooks/ "
        "only: a learner's own work is in workspace/)"
    )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_build_is_byte_identical_twice(built_course: Course, tmp_path, assignment: str):
    again = Course.at(tmp_path, release=tmp_path / "release")
    write_source_notebook(again, assignment)
    first = (built_course.source / assignment / f"{assignment}.ipynb").read_bytes()
    assert (again.source / assignment / f"{assignment}.ipynb").read_bytes() == first


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_fixture_notebooks_are_up_to_date(built_course: Course, assignment: str):
    for student, notebook in fixture_notebooks(built_course, assignment).items():
        committed = submissions_folder(assignment) / student / f"{assignment}.ipynb"
        assert committed.is_file(), f"{committed} is missing: run `make fixtures`"
        assert nbformat.read(committed, as_version=4) == notebook, (
            f"{committed} is stale: run `make fixtures` and commit"
        )


def test_a_full_build_removes_the_notebooks_of_assignments_without_a_source(tmp_path):
    from autograder.authoring.build import remove_retired

    course = dataclasses.replace(
        Course.at(tmp_path, release=tmp_path / "release"), solutions=tmp_path / "solutions"
    )
    course.solutions.mkdir()
    (course.solutions / "01a_kept").mkdir()
    (course.solutions / "01a_kept" / "01a_kept.py").write_text("")
    built = {
        "01a_kept": "01a_kept.ipynb",  # has a source
        "01_retired": "01_retired.ipynb",  # the build's, no source: goes
        "zh-CN/01_retired": "01_retired.ipynb",  # an edition's too
        "notes": "mine.txt",  # not a built notebook: stays
    }
    for folder, name in built.items():
        (course.release / folder).mkdir(parents=True)
        (course.release / folder / name).write_text("{}")

    removed = remove_retired(course, ("zh-CN",))

    assert sorted(p.relative_to(course.release).as_posix() for p in removed) == [
        "01_retired",
        "zh-CN/01_retired",
    ]
    assert sorted(p.name for p in course.release.iterdir()) == ["01a_kept", "notes", "zh-CN"]
