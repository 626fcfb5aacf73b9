"""The grading pipeline end to end on the fixture submissions, plus broken input.

The class is graded several students at a time (the background run's ``WORKERS``),
and once more one at a time in another course: both must give the same grades.
"""

from __future__ import annotations

import copy
import csv
import html
import shutil
import sys

import nbformat
import pytest
from nbgrader.preprocessors import GetGrades

from autograder import cli
from autograder.authoring.build import build
from autograder.authoring.wrong_answers import FIXTURES, load_wrong_answers
from autograder.course import Course, assignment_ids, lesson_of
from autograder.errors import AutograderError
from autograder.pipeline.executors import LocalExecutor
from autograder.pipeline.record import Recorder
from autograder.pipeline.report import write_report
from autograder.pipeline.run import (
    GradingResult,
    autograde_class,
    collect_class,
    export_class,
    feedback_class,
    grade_class,
)
from autograder.preprocessors.grades_from_notebook import (
    GradesFromNotebook,
    scored_by_autograde_alone,
)
from autograder.sandbox.bwrap import course_sandbox
from autograder.sandbox.limits import Limits
from autograder.sandbox.zygote import Zygote
from autograder.submission import load_status
from tests.support.fixtures import PACKAGED_IN

ASSIGNMENTS = assignment_ids()


def _expected(assignment: str) -> dict[str, dict[str, str]]:
    with (FIXTURES / assignment / "expected_scores.csv").open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


# Grading one at a time runs the same code as several at a time, on one core: one assignment,
# with one entry of every kind (right, blank, warning, wrong, zipped, single file,
# corrupt, empty), shows that the grades agree, at a small part of the time.
ONE_AT_A_TIME = [PACKAGED_IN]
ENTRY_KINDS = (
    "perfect",
    "blank",
    "correct_with_torch_warning",
    "zipped_perfect.zip",
    "single_file_perfect.ipynb",
    "corrupt_json",
    "empty_folder",
)
WRONG_ONE_AT_A_TIME = 3
# Wrong answers that rebind the test's helpers: tampering (the guard restores the helpers
# and says so), graded 0 by the judges all the same. Every other fixture is graded ok.
TAMPERING_FIXTURES = {
    "01b_leaf_tensors": {"rebinds_devices_to_skip_checks"},
    "02b_version_counter": {"rebinds_test_helpers"},
}
# An answer that kills the kernel: status error (the kernel died), the other tests graded.
CRASHING_FIXTURES = {"02b_version_counter": {"kernel_aborted_in_q2"}}


@pytest.fixture(scope="module")
def graded_one_at_a_time(submissions, tmp_path_factory) -> dict[str, GradingResult]:
    """Entries of every kind of the first assignment graded one at a time, in another course."""
    root = tmp_path_factory.mktemp("sequential-course")
    course = Course.at(root, release=root / "release")
    results = {}
    for assignment in ONE_AT_A_TIME:
        folder = root / "incoming"
        wrong = sorted(_expected(assignment).keys() - set(ENTRY_KINDS))
        for name in [*ENTRY_KINDS, *[w for w in wrong if "correct" not in w][:WRONG_ONE_AT_A_TIME]]:
            entry = submissions[assignment] / name
            if entry.is_dir():
                shutil.copytree(entry, folder / name)
            else:
                folder.mkdir(exist_ok=True)
                shutil.copy(entry, folder / name)
        results[assignment] = grade_class(course, assignment, folder, jobs=1)
    return results


def _rows_of(path) -> dict[str, dict[str, str]]:
    with path.open() as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def _rows(result: GradingResult) -> dict[str, dict[str, str]]:
    return _rows_of(result.csv)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_fixtures_get_exactly_their_expected_scores(graded, assignment: str):
    rows = _rows(graded[assignment])
    expected = _expected(assignment)
    assert {"perfect", "blank"} <= set(expected)
    assert len(set(expected) - {"perfect", "blank", "correct_with_torch_warning"}) >= 3
    for student, want in expected.items():
        got = {column: rows[student][column] for column in want}
        assert got == want, f"{assignment}/{student}: {rows[student]['message']}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_perfect_gets_full_marks_and_blank_zero(graded, assignment: str):
    rows = _rows(graded[assignment])
    assert float(rows["perfect"]["score"]) == float(rows["perfect"]["max_score"]) > 0
    assert float(rows["blank"]["score"]) == 0
    assert rows["perfect"]["status"] == rows["blank"]["status"] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_csv_has_ids_scores_then_one_column_per_exercise(graded, assignment: str):
    with graded[assignment].csv.open() as handle:
        header = next(csv.reader(handle))
    assert graded[assignment].csv.name == f"{assignment}_grades.csv"
    assert header[:4] == ["student_id", "assignment", "score", "max_score"]
    exercises = header[4:-5]
    assert exercises and all(name.startswith("q") for name in exercises)
    assert header[-5:] == ["status", "message", "sandbox", "device", "review_flags"]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_broken_submissions_are_reported_and_the_rest_graded(graded, assignment: str):
    rows = _rows(graded[assignment])
    assert rows["corrupt_json"]["status"] == "unreadable"
    assert "not a readable notebook" in rows["corrupt_json"]["message"]
    assert rows["empty_folder"]["status"] == "missing"
    packaged = {"zipped_perfect", "single_file_perfect"}
    if assignment != PACKAGED_IN:
        assert not packaged & set(rows)
        return
    for student in packaged:
        assert rows[student]["status"] == "ok"
        assert rows[student]["score"] == rows["perfect"]["score"]


# The parts with a fixture whose correct answers make PyTorch warn: one in every lesson.
WARNED = [a for a in ASSIGNMENTS if "correct_with_torch_warning" in load_wrong_answers(a)]


def test_every_lesson_has_a_correct_answer_that_makes_pytorch_warn():
    assert {lesson_of(a) for a in WARNED} == {lesson_of(a) for a in ASSIGNMENTS}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", WARNED)
def test_a_pytorch_warning_in_a_correct_answer_costs_nothing(built_course, graded, assignment):
    rows = _rows(graded[assignment])
    assert float(rows["correct_with_torch_warning"]["score"]) > 0
    autograded = built_course.root / "autograded" / "correct_with_torch_warning" / assignment
    notebook = nbformat.read(autograded / f"{assignment}.ipynb", as_version=4)
    printed = [
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream"
    ]
    # The warning really fired during grading, and went to stdout, not stderr.
    assert any("Warning" in text for text in printed)


@pytest.mark.slow
def test_each_graded_notebook_records_where_its_time_went(built_course, graded):
    # benchmarks/grading_bench.py reads these to split a notebook's time into phases.
    assignment = ASSIGNMENTS[0]
    autograded = built_course.root / "autograded" / "perfect" / assignment
    notebook = nbformat.read(autograded / f"{assignment}.ipynb", as_version=4)
    seconds = notebook.metadata["autograder"]["seconds"]
    assert set(seconds) == {"kernel_ready", "guard", "judge", "run"}
    assert 0 < seconds["kernel_ready"] < seconds["run"]
    # Every test asks the guard twice and has its observations judged.
    assert 0 < seconds["guard"] + seconds["judge"] < seconds["run"]


def _hidden_test_lines(course: Course, assignment: str) -> list[str]:
    """Lines only the hidden tests have (a judge may repeat a visible test's message)."""
    source = nbformat.read(course.source / assignment / f"{assignment}.ipynb", as_version=4)
    lines, visible, hidden = [], [], False
    for cell in source.cells:
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                hidden = "BEGIN" in line
            elif hidden and len(line.strip()) > 20:
                lines.append(line.strip())
            elif not hidden:
                visible.append(line)
    shown = "\n".join(visible)
    return [line for line in lines if line not in shown]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_is_written_per_student_without_hidden_tests(built_course, graded, assignment):
    hidden = _hidden_test_lines(built_course, assignment)
    assert hidden, "every notebook has hidden tests"
    for student in ("perfect", "blank"):
        feedback = built_course.root / "feedback" / student / assignment / f"{assignment}.html"
        text = html.unescape(feedback.read_text())
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"hidden tests visible in {student}'s feedback: {leaked[:3]}"


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_reads_as_the_student_wrote_it(built_course, graded, assignment):
    """No grading machine's path, whole messages that wrap, a blank exercise called blank."""
    folder = built_course.root / "feedback"
    warned = ("correct_with_torch_warning",) if assignment in WARNED else ()
    for student in ("perfect", "blank", *warned):
        page = (folder / student / assignment / f"{assignment}.html").read_text()
        text = html.unescape(page)
        for leak in ("/tmp/", "ipykernel_", str(built_course.root), sys.prefix):
            assert leak not in text, f"{student}'s feedback shows {leak}"
        assert "white-space: pre-wrap" in page  # long messages wrap instead of running off
    blank = html.unescape((folder / "blank" / assignment / f"{assignment}.html").read_text())
    assert "not judged: the exercise is not answered yet" in blank
    assert "sent no observations" not in blank


def _scored(preprocessor, notebook: nbformat.NotebookNode, resources: dict):
    scored, resources = preprocessor.preprocess(copy.deepcopy(notebook), copy.deepcopy(resources))
    cells = [cell.metadata.get("nbgrader", {}) for cell in scored.cells]
    totals = {key: resources["nbgrader"][key] for key in ("score", "max_score", "late_penalty")}
    return cells, totals


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_scores_read_from_a_graded_notebook_are_those_the_gradebook_gives_back(
    built_course, graded, assignment
):
    """A worker scores feedback from the notebook: as nbgrader reads them from the gradebook.

    Every student of the class, each exercise's score, points and comment, and the totals
    the feedback page shows (``GradesFromNotebook`` against nbgrader's ``GetGrades``).
    """
    compared = 0
    for row in graded[assignment].rows:
        path = built_course.autograded_notebook(row["student_id"], assignment)
        if not path.is_file():
            continue  # not graded: no feedback
        notebook = nbformat.read(path, as_version=4)
        resources = {
            "nbgrader": {
                "notebook": assignment,
                "assignment": assignment,
                "student": row["student_id"],
                "db_url": built_course.gradebook_url(),
            }
        }
        assert scored_by_autograde_alone(notebook)
        from_gradebook = _scored(GetGrades(), notebook, resources)
        assert _scored(GradesFromNotebook(), notebook, resources) == from_gradebook, row
        compared += 1
    assert compared >= 5


@pytest.mark.slow
def test_feedback_rendered_by_a_worker_is_what_the_gradebook_renders(built_course, graded):
    """The class's feedback pages, rendered by the workers, rendered again from the gradebook."""
    assignment = ASSIGNMENTS[0]
    with Recorder(built_course, assignment) as recorder:
        for student in ("perfect", "blank", "grad_written_by_hand", "alternative_correct_answers"):
            page = built_course.feedback / student / assignment / f"{assignment}.html"
            files, problem = recorder.render_feedback(student)
            assert files is not None, problem
            assert files[f"{assignment}.html"] == page.read_bytes(), student


def test_a_notebook_with_an_answer_graded_by_hand_is_not_scored_from_itself():
    cell = nbformat.v4.new_code_cell("answer = 1")
    cell.metadata["nbgrader"] = {
        "grade": True,
        "solution": True,
        "grade_id": "written",
        "points": 2,
        "checksum": "not this cell's",
    }
    notebook = nbformat.v4.new_notebook(cells=[cell])
    assert not scored_by_autograde_alone(notebook)
    resources = {"nbgrader": {}}
    with pytest.raises(ValueError, match="graded by hand"):
        GradesFromNotebook().preprocess(notebook, resources)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ONE_AT_A_TIME)
def test_grading_several_at_a_time_gives_the_grades_of_one_at_a_time(
    graded, graded_one_at_a_time, assignment: str
):
    one_at_a_time = graded_one_at_a_time[assignment].rows
    students = {row["student_id"] for row in one_at_a_time}
    assert len(students) == len(ENTRY_KINDS) + WRONG_ONE_AT_A_TIME
    several_at_a_time = [row for row in graded[assignment].rows if row["student_id"] in students]
    assert several_at_a_time == one_at_a_time


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_honest_fixture_is_graded_ok_in_the_sandbox(graded, assignment: str):
    rows = _rows(graded[assignment])
    for student in _expected(assignment):
        status = "tampered" if student in TAMPERING_FIXTURES.get(assignment, ()) else "ok"
        status = "error" if student in CRASHING_FIXTURES.get(assignment, ()) else status
        assert rows[student]["status"] == status, f"{student}: {rows[student]['message']}"
        assert rows[student]["sandbox"] in ("on", "off")
        assert rows[student]["device"] == "cpu"  # the default: grades never depend on a GPU


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_report_gives_pass_rates_and_recognises_the_wrong_answers(graded, assignment: str):
    report = graded[assignment].report
    assert report is not None
    assert report.plot.read_bytes().startswith(b"\x89PNG")
    text = report.markdown.read_text()
    rows = _rows(graded[assignment])
    for summary in report.exercises:
        passed = sum(
            float(row[summary.name]) >= summary.points
            for row in rows.values()
            if row["sandbox"] != "not run"
        )
        assert summary.passed == passed
        assert f"| {summary.name} | {summary.points:g} | {passed}/{summary.graded} |" in text
    failing = {
        name
        for name, answers in load_wrong_answers(assignment).items()
        if any(float(rows[name][grade_id.removesuffix("-answer")]) == 0 for grade_id in answers)
    }
    assert failing, "the fixtures have wrong answers"
    for name in failing:
        assert f"`{name}`" in text, f"{name} is not recognised in the report"
    assert "| missing | 1 |" in text and "| unreadable | 1 |" in text
    # The same report as a page: its tables rendered, the plot inside it.
    page = report.page.read_text()
    assert report.page.name == f"{assignment}_report.html"
    assert "<table>" in page and '<img src="data:image/png;base64,' in page
    assert f"<td>{report.exercises[0].name}</td>" in page


@pytest.mark.slow
def test_grading_step_by_step_gives_the_grades_of_grade(graded, submissions, tmp_path):
    assignment = ASSIGNMENTS[0]
    folder = tmp_path / "few"
    for student in ("perfect", "blank", "corrupt_json"):
        shutil.copytree(submissions[assignment] / student, folder / student)
    course = Course.at(tmp_path / "course", release=tmp_path / "course" / "release")
    build(course, [assignment])
    collected = collect_class(course, assignment, folder)
    assert [s.status for s in collected] == ["ok", "unreadable", "ok"]
    autograde_class(course, assignment, jobs=2)
    students, grading = load_status(course, assignment)
    assert grading["sandbox"].startswith(("on", "off"))
    assert [s.graded for s in students] == [True, False, True]
    feedback_class(course, assignment)
    assert (course.root / "feedback" / "perfect" / assignment / f"{assignment}.html").is_file()
    rows, _ = export_class(course, assignment)
    expected = {row["student_id"]: row for row in graded[assignment].rows}
    for row in rows:
        assert row == expected[row["student_id"]]
    assert write_report(course, assignment).markdown.is_file()


@pytest.mark.slow
def test_without_the_sandbox_grades_are_the_same_and_every_output_says_it_was_off(
    graded, submissions, tmp_path
):
    # What an instructor without bubblewrap gets (here turned off on purpose).
    assignment = ASSIGNMENTS[0]
    folder = tmp_path / "few"
    for student in ("perfect", "blank"):
        shutil.copytree(submissions[assignment] / student, folder / student)
    course = Course.at(tmp_path / "course", release=tmp_path / "course" / "release")
    result = grade_class(course, assignment, folder, sandbox=False)
    expected = {row["student_id"]: row for row in graded[assignment].rows}
    for row in result.rows:
        assert row["sandbox"] == "off"
        assert {**row, "sandbox": "on"} == {**expected[row["student_id"]], "sandbox": "on"}
    assert result.report is not None
    assert "Sandbox: off (turned off with --no-sandbox)" in result.report.markdown.read_text()


@pytest.mark.slow
def test_a_late_student_is_graded_alone_and_joins_the_class(submissions, tmp_path):
    assignment = ASSIGNMENTS[0]
    root = tmp_path / "course"
    course = Course.at(root, release=root / "release")
    early = tmp_path / "early"
    for student in ("perfect", "blank"):
        shutil.copytree(submissions[assignment] / student, early / student)
    first = grade_class(course, assignment, early)
    graded_at = {
        student: (root / "autograded" / student).stat().st_mtime_ns for student in ("perfect",)
    }

    late = tmp_path / "late"
    shutil.copytree(submissions[assignment] / "perfect", late / "late_perfect")
    shutil.copytree(submissions[assignment] / "blank", late / "not_asked_for")
    seen = []

    class Seen:
        def start(self, total):
            seen.append(("start", total))

        def done(self, submission):
            seen.append((submission.student_id, submission.status))

        def close(self):
            seen.append(("close",))

    result = grade_class(course, assignment, late, only={"late_perfect", "absent"}, progress=Seen())
    rows = _rows(result)
    # The class is all there; only the late student was graded now.
    assert set(rows) == {"perfect", "blank", "late_perfect", "absent"}
    assert (
        rows["late_perfect"]["score"]
        == rows["perfect"]["score"]
        == _rows(first)["perfect"]["score"]
    )
    assert rows["late_perfect"]["status"] == "ok"
    assert rows["absent"]["status"] == "missing"
    assert not (root / "submitted" / "not_asked_for").exists()
    assert (root / "autograded" / "perfect").stat().st_mtime_ns == graded_at["perfect"]
    assert seen == [("start", 1), ("late_perfect", "ok"), ("close",)]


def test_progress_is_quiet_unless_on_a_terminal():
    import io

    from autograder.pipeline.progress import Progress
    from autograder.submission import Submission

    quiet = io.StringIO()
    progress = Progress(quiet)  # a StringIO is not a terminal
    progress.start(2)
    progress.done(Submission("ada", "ok"))
    progress.close()
    assert quiet.getvalue() == ""

    shown = io.StringIO()
    progress = Progress(shown, enabled=True)
    progress.start(2)
    progress.done(Submission("ada", "timeout", "cell 3 ran past its 120 s limit"))
    progress.done(Submission("bob", "ok"))
    progress.close()
    text = shown.getvalue()
    assert "ada  timeout  (cell 3 ran past its 120 s limit)" in text
    assert "bob  ok" in text
    assert "2/2" in text


def test_every_fixture_named_an_attack_on_the_grading_exists():
    from tests.support.fixtures import GRADER_ATTACKS

    names = {name for assignment in ASSIGNMENTS for name in load_wrong_answers(assignment)}
    assert names >= GRADER_ATTACKS


def test_a_failed_autograde_is_reported_by_its_cause(tmp_path, monkeypatch):
    """A step that raises (a judge's own bug) fails that student, with the cause in the CSV."""
    from autograder.pipeline.autograde import Grader
    from autograder.pipeline.payloads import StudentNotebook
    from autograder.pipeline.reference import AssignmentReference
    from autograder.sandbox.bwrap import Sandbox
    from autograder.submission import Submission

    grader = Grader(
        AssignmentReference("01a_leaf_tensors", {}, {}, {}, ()),
        Limits(),
        Sandbox(bwrap=None, separate_uids=False, reason="a test"),
    )
    grader.course = Course.at(tmp_path)

    class Steps:
        def run(self, content, resources):
            raise NameError(f"name 'stream' is not defined in {tmp_path}")

    grader.steps = Steps()
    student = StudentNotebook(Submission("ada", "ok"), b"{}")
    result = grader.grade(student)
    assert result.notebook is None
    assert result.submission.status == "error"
    assert result.submission.message == (
        "autograde failed: NameError: name 'stream' is not defined in <course>"
    )


@pytest.mark.slow
def test_a_kept_executor_grades_assignment_after_assignment_with_the_same_zygotes(
    submissions, tmp_path
):
    # What the background grading of the class does for every assignment (conftest.py).
    course = Course.at(tmp_path / "course", release=tmp_path / "course" / "release")
    executor = LocalExecutor(2, sandbox=course_sandbox(course), keep=True)
    seen = []
    try:
        for assignment in ASSIGNMENTS[:2]:
            folder = tmp_path / assignment
            for student in ("perfect", "blank"):
                shutil.copytree(submissions[assignment] / student, folder / student)
            result = grade_class(course, assignment, folder, executor=executor)
            rows = _rows(result)
            for student in ("perfect", "blank"):
                assert rows[student]["score"] == _expected(assignment)[student]["score"]
                assert rows[student]["status"] == "ok"
            zygotes = executor.kept_zygotes
            assert len(zygotes) == 2 and all(zygote.alive() for zygote in zygotes)
            seen.append([zygote.process.pid for zygote in zygotes])
        with pytest.raises(AutograderError, match="limits and sandbox settings of its first"):
            folder = tmp_path / "other_limits"
            shutil.copytree(submissions[ASSIGNMENTS[0]] / "perfect", folder / "perfect")
            grade_class(
                course, ASSIGNMENTS[0], folder, executor=executor, limits=Limits(cell_timeout=7)
            )
    finally:
        executor.close()
    assert seen[0] == seen[1], "the second assignment started zygotes of its own"
    assert not any(zygote.alive() for zygote in zygotes) and executor.kept_zygotes == []


@pytest.mark.slow
def test_one_autograde_command_grades_several_assignments_with_one_zygote(
    submissions, tmp_path, monkeypatch, capsys
):
    course = Course.at(tmp_path / "course")  # as the command line finds it
    assignments = ASSIGNMENTS[:2]
    build(course, assignments)
    for assignment in assignments:
        folder = tmp_path / assignment
        for student in ("perfect", "blank"):
            shutil.copytree(submissions[assignment] / student, folder / student)
        collect_class(course, assignment, folder)
    launched = []
    launch = Zygote.launch

    def counted_launch(zygote: Zygote) -> None:
        launched.append(zygote)
        launch(zygote)

    monkeypatch.setattr(Zygote, "launch", counted_launch)
    argv = ["autograde", *assignments, "--course", str(course.root), "--jobs", "1"]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert len(launched) == 1, "an assignment started a zygote of its own"
    for assignment in assignments:
        assert f"{assignment}:\nblank    ok\nperfect  ok\n" in printed
        students, _ = load_status(course, assignment)
        assert [(s.student_id, s.graded) for s in students] == [("blank", True), ("perfect", True)]
    # The next steps take several assignments too.
    assert cli.main(["export", *assignments, "--course", str(course.root)]) == 0
    printed = capsys.readouterr().out
    for assignment in assignments:
        assert f"{assignment}:\n" in printed
        assert f"grades: exports/{assignment}_grades.csv" in printed
        expected = _expected(assignment)
        for student, row in _rows_of(course.exports / f"{assignment}_grades.csv").items():
            assert float(row["score"]) == float(expected[student]["score"]), assignment


def test_autograde_of_several_assignments_grades_none_when_one_is_not_built(tmp_path, capsys):
    course = Course.at(tmp_path)
    built, not_built = ASSIGNMENTS[:2]
    course.source_notebook(built).parent.mkdir(parents=True)
    course.source_notebook(built).write_text("{}")  # only its presence is checked first
    (course.submitted_folder("ada", built)).mkdir(parents=True)
    assert cli.main(["autograde", built, not_built, "--course", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert f"run `python -m autograder build {not_built}`" in error
    assert not (tmp_path / "autograded").exists()
    assert not (tmp_path / "exports").exists()


@pytest.mark.parametrize("failing", [0, 1])
def test_autograde_of_several_assignments_says_which_were_not_graded_when_one_fails(
    failing, tmp_path, monkeypatch, capsys
):
    course = Course.at(tmp_path)
    named = ASSIGNMENTS[:3]
    for assignment in named:
        course.source_notebook(assignment).parent.mkdir(parents=True)
        course.source_notebook(assignment).write_text("{}")
    graded = []

    def autograde_class(course, assignment, **options):
        if assignment == named[failing]:
            raise AutograderError("the zygote died")
        graded.append(assignment)
        return []

    monkeypatch.setattr("autograder.pipeline.run.autograde_class", autograde_class)
    assert cli.main(["autograde", *named, "--course", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert graded == named[:failing]
    assert all(f"{assignment}:" in captured.out for assignment in graded)
    assert f"error: not graded: {', '.join(named[failing:])}" in captured.err
    assert "error: the zygote died" in captured.err


def test_grading_an_assignment_that_is_not_built_says_how_to_build_it(tmp_path):
    from autograder.authoring.build import BuildError
    from autograder.pipeline.run import autograde_class

    with pytest.raises(BuildError, match=r"run `python -m autograder build 01a_leaf_tensors`"):
        autograde_class(Course.at(tmp_path), "01a_leaf_tensors")
