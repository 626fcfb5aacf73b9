"""The learner's workspace: made from the release, never written over, updates put beside."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbgrader import utils

from autograder.course import REPO, assignment_ids
from autograder.learner.workspace import (
    RELEASED,
    WORKSPACE_VARIABLE,
    assignment_of,
    exercise_changes,
    exercises,
    prepare,
    released_notebooks,
    workspace_notebooks,
)

FIRST = assignment_ids()[0]


def _release(tmp_path: Path) -> Path:
    """A copy of the course's released notebooks that a test may change."""
    release = tmp_path / "release"
    shutil.copytree(REPO / "notebooks", release)
    return release


def _answer(path: Path, exercise: str, source: str) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if utils.is_solution(cell) and cell.metadata.nbgrader["grade_id"] == f"{exercise}-answer":
            cell.source = source
    nbformat.write(notebook, path)


def _edit_markdown(path: Path, old: str, new: str) -> None:
    notebook = nbformat.read(path, as_version=4)
    found = [cell for cell in notebook.cells if old in cell.source]
    assert found, f"{old!r} is not in {path.name}"
    found[0].source = found[0].source.replace(old, new)
    nbformat.write(notebook, path)


def _new_release_of(release: Path, assignment: str, sentence: str) -> None:
    """Adds a sentence to the notebook's opening cell: the course's next release of it."""
    path = release / assignment / f"{assignment}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[0].source += f"\n{sentence}"
    nbformat.write(notebook, path)


def test_first_use_copies_every_released_notebook_flat_with_its_baseline(tmp_path):
    release = _release(tmp_path)
    workspace = tmp_path / "workspace"
    updates = prepare(workspace, release)
    assert [(u.assignment, u.action) for u in updates] == [(a, "added") for a in assignment_ids()]
    assert [path.name for path in workspace_notebooks(workspace)] == [
        f"{a}.ipynb" for a in assignment_ids()
    ]
    for assignment, released in released_notebooks(release).items():
        assert (workspace / f"{assignment}.ipynb").read_bytes() == released.read_bytes()
        assert (workspace / RELEASED / f"{assignment}.ipynb").read_bytes() == released.read_bytes()
    assert prepare(workspace, release) == []  # up to date: nothing written


def test_a_new_release_replaces_an_unedited_copy_and_goes_beside_an_edited_one(tmp_path):
    release = _release(tmp_path)
    workspace = tmp_path / "workspace"
    prepare(workspace, release)
    second = assignment_ids()[1]
    mine = workspace / f"{FIRST}.ipynb"
    _answer(mine, "q2", "def hidden_and_weight_grads(x, w, loss_fn):\n    return None, None")
    answered = mine.read_bytes()
    # Running cells changes outputs, not what the learner wrote: still unedited.
    ran = nbformat.read(workspace / f"{second}.ipynb", as_version=4)
    ran.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="torch 2.13.0")]
    nbformat.write(ran, workspace / f"{second}.ipynb")
    for assignment in (FIRST, second):
        _new_release_of(release, assignment, "A sentence added.")

    updates = prepare(workspace, release)

    assert [(u.assignment, u.action, u.path.name) for u in updates] == [
        (FIRST, "beside", f"{FIRST}.new.ipynb"),
        (second, "replaced", f"{second}.ipynb"),
    ]
    assert mine.read_bytes() == answered  # the learner's work, byte for byte
    new = release / FIRST / f"{FIRST}.ipynb"
    assert (workspace / f"{FIRST}.new.ipynb").read_bytes() == new.read_bytes()
    assert assignment_of(workspace / f"{FIRST}.new.ipynb") == FIRST
    assert prepare(workspace, release) == []  # the new release is already beside it


def test_an_edited_new_version_is_kept_too_and_the_next_release_goes_further_beside(tmp_path):
    release = _release(tmp_path)
    workspace = tmp_path / "workspace"
    prepare(workspace, release)
    _answer(workspace / f"{FIRST}.ipynb", "q2", "def hidden_and_weight_grads(x, w, f):\n    1")
    _new_release_of(release, FIRST, "A sentence added.")
    prepare(workspace, release)
    _answer(workspace / f"{FIRST}.new.ipynb", "q3", "def f():\n    2")
    kept = (workspace / f"{FIRST}.new.ipynb").read_bytes()
    _new_release_of(release, FIRST, "Another sentence.")
    [update] = prepare(workspace, release)
    assert update.path.name == f"{FIRST}.new2.ipynb"
    assert (workspace / f"{FIRST}.new.ipynb").read_bytes() == kept


def test_changes_shows_the_exercises_answered_whose_text_or_tests_changed(tmp_path):
    release = _release(tmp_path)
    workspace = tmp_path / "workspace"
    prepare(workspace, release)
    mine = workspace / f"{FIRST}.ipynb"
    _answer(mine, "q1", "def predict_snippet():\n    return {}")
    _answer(mine, "q2", "def hidden_and_weight_grads(x, w, loss_fn):\n    return 1, 2")
    source = release / FIRST / f"{FIRST}.ipynb"
    texts = exercises(nbformat.read(source, as_version=4))
    q1_line = texts["q1"].text.splitlines()[-1]
    q3_line = texts["q3"].text.splitlines()[-1]
    _edit_markdown(source, q1_line, q1_line + " (changed)")
    _edit_markdown(source, q3_line, q3_line + " (changed)")  # q3 is not answered

    lines = exercise_changes(mine, workspace, release)

    assert lines[0] == "q1: changed in the course's new version (text)"
    stripped = [line.strip() for line in lines]
    assert f"+{q1_line} (changed)" in stripped and f"-{q1_line}" in stripped
    assert not any(line.startswith(("q2", "q3")) for line in lines)  # q2 same, q3 unanswered


def test_make_changes_says_when_nothing_answered_changed(tmp_path):
    workspace = tmp_path / "workspace"
    prepare(workspace, REPO / "notebooks")
    command = [sys.executable, "-m", "autograder", "changes", f"--workspace={workspace}"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "Nothing you answered has changed in the course's notebooks."


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.slow
def test_a_learners_saved_answer_survives_build_grade_fixtures_and_the_tests(tmp_path):
    """In a copy of the repository, with its default workspace: the commands write elsewhere.

    ``make notebooks``, ``make grade``, ``make fixtures`` and the tests that look at the
    repository's files run as their Makefile recipes run them (for one assignment, to
    keep this short), and the learner's answer is still there, every byte.
    """
    copy = tmp_path / "repo"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    for name in listed:
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    workspace = copy / "workspace"  # the default: no variable points elsewhere below
    prepare(workspace, copy / "notebooks")
    _answer(workspace / f"{FIRST}.ipynb", "q2", "def hidden_and_weight_grads(x, w, f):\n    42")
    before = _tree(workspace)
    one = tmp_path / "class"
    shutil.copytree(REPO / "autograder" / "fixtures" / FIRST / "submissions" / "perfect", one / "p")
    env = {key: value for key, value in os.environ.items() if key != WORKSPACE_VARIABLE}
    commands = [
        ["-m", "autograder", "build", FIRST],  # make notebooks
        # make grade; unsandboxed: the sandbox mounts the copy's grader, which the editable
        # install (pointing at this repository) does not import from.
        ["-m", "autograder", "grade", FIRST, str(one), "--jobs", "1", "--no-sandbox"],
        ["-m", "tests.support", FIRST],  # make fixtures
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_layout.py"],  # make test
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_build.py", "-k", FIRST],
    ]
    for command in commands:
        done = subprocess.run(
            [sys.executable, *command], cwd=copy, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert _tree(workspace) == before, f"{command} wrote in the learner's workspace"


def test_changes_in_a_zh_cn_workspace_compares_the_zh_cn_release_and_speaks_chinese(tmp_path):
    release = tmp_path / "release"
    shutil.copytree(REPO / "notebooks" / "zh-CN", release)
    workspace = tmp_path / "workspace" / "zh-CN"
    prepare(workspace, release)
    mine = workspace / f"{FIRST}.ipynb"
    _answer(mine, "q1", "def predict_snippet():\n    return {}")
    source = release / FIRST / f"{FIRST}.ipynb"
    q1_line = exercises(nbformat.read(source, as_version=4))["q1"].text.splitlines()[-1]
    _edit_markdown(source, q1_line, q1_line + "（改动）")

    lines = exercise_changes(mine, workspace, release, "zh-CN")

    assert lines[0] == "q1：课程的新版本改动了这个练习（说明文字）"
    assert "q1 说明文字（你的版本）" in lines[1]
    assert f"+{q1_line}（改动）" in [line.strip() for line in lines]


def test_make_changes_lang_zh_cn_reads_the_zh_cn_workspace(tmp_path):
    workspace = tmp_path / "workspace"
    prepare(workspace / "zh-CN", REPO / "notebooks" / "zh-CN")
    command = [
        sys.executable,
        "-m",
        "autograder",
        "changes",
        "--lang=zh-CN",
        f"--workspace={workspace}",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "你作答过的练习在课程的笔记本中都没有改动。"
    empty = tmp_path / "empty"
    command[-1] = f"--workspace={empty}"
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0 and "中没有笔记本" in done.stderr


# --- a lesson split into parts ------------------------------------------------------------

LESSON, PARTS = "02_version_counter", ("02a_version_counter", "02b_version_counter")


def _whole_lesson(release: Path) -> nbformat.NotebookNode:
    """The lesson's notebook as the course released it before the split: its parts, joined."""
    first, second = (nbformat.read(release / p / f"{p}.ipynb", as_version=4) for p in PARTS)
    for cell in second.cells:
        cell.id = f"b-{cell.id}"  # ids stay unique in the joined notebook
    first.cells += second.cells
    return first


def _old_learner(tmp_path: Path, answers: dict[str, str]) -> tuple[Path, Path]:
    """A workspace made before the split, holding the whole lesson with ``answers`` written."""
    release = _release(tmp_path)
    workspace = tmp_path / "workspace"
    (workspace / RELEASED).mkdir(parents=True)
    nbformat.write(_whole_lesson(release), workspace / RELEASED / f"{LESSON}.ipynb")
    nbformat.write(_whole_lesson(release), workspace / f"{LESSON}.ipynb")
    for exercise, source in answers.items():
        _answer(workspace / f"{LESSON}.ipynb", exercise, source)
    return workspace, release


def test_the_parts_of_a_split_lesson_take_in_the_answers_written_in_the_whole_lesson(tmp_path):
    workspace, release = _old_learner(tmp_path, {"q1": "# my q1", "q3": "# my q3"})
    lesson = (workspace / f"{LESSON}.ipynb").read_bytes()

    updates = {update.assignment: update for update in prepare(workspace, release)}

    assert (updates[PARTS[0]].action, updates[PARTS[0]].carried) == ("carried", ("q1",))
    assert (updates[PARTS[1]].action, updates[PARTS[1]].carried) == ("carried", ("q3",))
    assert "with your answers to q3 from your 02_version_counter.ipynb" in updates[
        PARTS[1]
    ].describe(workspace)
    first, second = (
        exercises(nbformat.read(workspace / f"{p}.ipynb", as_version=4)) for p in PARTS
    )
    released_second = exercises(
        nbformat.read(release / PARTS[1] / f"{PARTS[1]}.ipynb", as_version=4)
    )
    assert first["q1"].stub == "# my q1" and second["q3"].stub == "# my q3"
    assert second["q2"].stub == released_second["q2"].stub  # not answered: as released
    assert (workspace / f"{LESSON}.ipynb").read_bytes() == lesson  # the learner's, untouched
    # The parts now hold the learner's work: the next run leaves them, a new release goes beside.
    assert prepare(workspace, release) == []
    _new_release_of(release, PARTS[1], "A new sentence.")
    assert [(u.assignment, u.action) for u in prepare(workspace, release)] == [(PARTS[1], "beside")]


def test_an_unanswered_whole_lesson_gives_its_parts_as_released(tmp_path):
    workspace, release = _old_learner(tmp_path, {})
    actions = {u.assignment: u.action for u in prepare(workspace, release)}
    assert actions[PARTS[0]] == actions[PARTS[1]] == "added"
    for part in PARTS:
        assert (workspace / f"{part}.ipynb").read_bytes() == (
            release / part / f"{part}.ipynb"
        ).read_bytes()


def test_make_check_points_from_a_split_lesson_to_its_parts(tmp_path, capsys):
    from autograder.cli import main

    workspace, _ = _old_learner(tmp_path, {"q1": "# my q1"})
    assert main(["check", str(workspace / f"{LESSON}.ipynb")]) == 0
    said = capsys.readouterr().out
    assert "02_version_counter.ipynb: not checked: the course splits this lesson into" in said
    assert "02a_version_counter, 02b_version_counter" in said


def test_without_the_lessons_release_only_answers_unlike_the_parts_stubs_are_carried(tmp_path):
    workspace, release = _old_learner(tmp_path, {"q3": "# my q3"})
    (workspace / RELEASED / f"{LESSON}.ipynb").unlink()  # where it came from is unknown
    updates = {update.assignment: update for update in prepare(workspace, release)}
    assert updates[PARTS[0]].action == "added"  # q1 still the stub: nothing of the learner's
    assert (updates[PARTS[1]].action, updates[PARTS[1]].carried) == ("carried", ("q3",))
