"""What the class did: pass rate per exercise, the pitfalls it fell into, and a plot.

Written from the status file, the gradebook and the autograded notebooks, as
``exports/<assignment>_report.md``, ``exports/<assignment>_report.png`` and, for a
browser, ``exports/<assignment>_report.html`` (the same report, the plot inline). A failing
test's message names its pitfall (the course's helpers end it with the pitfall's marker,
``[<key>]``, see :func:`autograd_pitfalls.pitfalls.named_in`), so counting those per
exercise shows which pitfalls the class falls into. An answer that is
the same code (same syntax tree, comments and layout aside) as a plausible wrong answer
in ``autograder/fixtures/<assignment>/wrong_answers.py`` is reported by that name.
"""

from __future__ import annotations

import ast
import base64
import html
import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils

from autograd_pitfalls.pitfalls import PITFALLS, named_in
from autograder.atomic import replace_file
from autograder.authoring.wrong_answers import FIXTURES, load_wrong_answers
from autograder.course import Course, answer_id, exercise_name
from autograder.errors import ReportError
from autograder.learner.validate import failure_text
from autograder.pipeline.export import exercise_ids, grade_rows, submission_flags
from autograder.pipeline.review import Flag
from autograder.submission import STATUSES, load_status


@dataclass
class ExerciseSummary:
    """How the class did on one exercise.

    Attributes:
        name: The exercise, for example ``q1``.
        points: Points available.
        graded: Students graded on it.
        passed: Students who earned all its points.
        pitfalls: Pitfall key -> students whose failing test named it.
        wrong_answers: Name of a known wrong answer -> students who gave it.
    """

    name: str
    points: float
    graded: int = 0
    passed: int = 0
    pitfalls: Counter[str] = field(default_factory=Counter)
    wrong_answers: Counter[str] = field(default_factory=Counter)

    @property
    def pass_rate(self) -> float:
        """The share of graded students who passed, 0 when none was graded."""
        return self.passed / self.graded if self.graded else 0.0


@dataclass(frozen=True)
class Report:
    """The class report and where it was written.

    Attributes:
        markdown: The report, ``exports/<assignment>_report.md``.
        plot: The pass-rate plot, ``exports/<assignment>_report.png``.
        exercises: One summary per exercise, in notebook order.
        statuses: Students per status.
        page: The report as a web page with the plot inline,
            ``exports/<assignment>_report.html``.
    """

    markdown: Path
    plot: Path
    exercises: list[ExerciseSummary]
    statuses: Counter[str]
    page: Path | None = None


def _shape(source: str) -> str | None:
    """The answer's syntax tree without docstrings: equal for the same code, however laid out.

    None when it does not parse, or is nested too deeply to compare (it is then no known
    wrong answer, which are all a few lines).
    """
    try:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                node.body = body[1:] or [ast.Pass()]
        return ast.dump(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def known_wrong_answers(assignment: str, fixtures: Path = FIXTURES) -> dict[str, dict[str, str]]:
    """Returns ``{answer grade_id: {code shape: wrong answer name}}`` from the fixture spec."""
    shapes: dict[str, dict[str, str]] = {}
    for name, answers in load_wrong_answers(assignment, fixtures).items():
        for grade_id, source in answers.items():
            shape = _shape(source)
            if shape is not None:
                shapes.setdefault(grade_id, {})[shape] = name
    return shapes


def summarize(
    course: Course, assignment: str, fixtures: Path = FIXTURES
) -> tuple[list[ExerciseSummary], Counter[str], dict]:
    """Reads the graded class: per-exercise summaries, students per status, grading details."""
    students, grading = load_status(course, assignment)
    rows = {row["student_id"]: row for row in grade_rows(course, assignment, students)}
    test_ids = exercise_ids(course, assignment)
    source = nbformat.read(course.source_notebook(assignment), as_version=4)
    points = {
        cell.metadata.nbgrader["grade_id"]: float(cell.metadata.nbgrader["points"])
        for cell in source.cells
        if utils.is_grade(cell)
    }
    summaries = {
        test_id: ExerciseSummary(exercise_name(test_id), points[test_id]) for test_id in test_ids
    }
    shapes = known_wrong_answers(assignment, fixtures)
    for student in students:
        if not student.graded:
            continue
        path = course.autograded_notebook(student.student_id, assignment)
        cells = {
            cell.metadata.nbgrader["grade_id"]: cell
            for cell in nbformat.read(path, as_version=4).cells
            if "nbgrader" in cell.metadata and "grade_id" in cell.metadata.nbgrader
        }
        for test_id, summary in summaries.items():
            summary.graded += 1
            if float(rows[student.student_id][summary.name]) >= summary.points:
                summary.passed += 1
                continue
            if test_id in cells:
                summary.pitfalls.update(named_in(failure_text(cells[test_id])))
            answer = cells.get(answer_id(test_id))
            known = shapes.get(answer_id(test_id), {})
            if answer is not None and (name := known.get(_shape(answer.source) or "")):
                summary.wrong_answers[name] += 1
    statuses = Counter(student.status for student in students)
    return list(summaries.values()), statuses, grading


def plot_pass_rates(exercises: list[ExerciseSummary], path: Path, title: str) -> Path:
    """Draws the pass rate of each exercise as horizontal bars (PNG, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    names = [summary.name for summary in exercises]
    rates = [100 * summary.pass_rate for summary in exercises]
    figure, axes = plt.subplots(figsize=(6, 0.5 * len(names) + 1.2))
    bars = axes.barh(names, rates, color="#4c72b0")
    axes.bar_label(bars, labels=[f"{rate:.0f}%" for rate in rates], padding=3)
    axes.set_xlim(0, 110)
    axes.invert_yaxis()  # q1 on top, as in the notebook
    axes.set_xlabel("students who passed (%)")
    axes.set_title(title)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100, metadata={"Software": None})
    plt.close(figure)
    return replace_file(path, image.getvalue())


def _counts(
    exercises: list[ExerciseSummary], counter: str, shown: Callable[[str], str]
) -> list[str]:
    """One line per exercise and counted item, most frequent first."""
    return [
        f"- {summary.name}: {shown(item)} ({count} student{'' if count == 1 else 's'})"
        for summary in exercises
        for item, count in getattr(summary, counter).most_common()
    ]


def _pitfall_shown(key: str) -> str:
    pitfall = PITFALLS[key]
    return f"{pitfall.title} (`{key}`, taught in {pitfall.notebook})"


def _markdown(
    assignment: str,
    exercises: list[ExerciseSummary],
    statuses: Counter[str],
    grading: dict,
    attention: list[tuple[str, str, str]],
    plot: Path,
    flags: dict[str, list[Flag]] | None = None,
) -> str:
    lines = [f"# {assignment}: class report", ""]
    lines.append(f"Sandbox: {grading.get('sandbox', 'unknown (not autograded yet)')}.")
    if grading.get("limits"):
        limits = grading["limits"]
        lines.append(
            f"Limits: {limits['cell_timeout']} s per cell, {limits['notebook_timeout']} s "
            f"per notebook, {limits['memory_mb']} MB of memory; "
            f"tests run on {limits.get('device', 'cpu')}."
        )
    lines += ["", "## Students per status", "", "| status | students |", "|---|---|"]
    lines += [f"| {status} | {statuses.get(status, 0)} |" for status in STATUSES]
    lines += ["", "## Exercises", "", f"![pass rates]({plot.name})", ""]
    lines += ["| exercise | points | passed | pass rate |", "|---|---|---|---|"]
    for summary in exercises:
        lines.append(
            f"| {summary.name} | {summary.points:g} | {summary.passed}/{summary.graded} "
            f"| {100 * summary.pass_rate:.0f}% |"
        )
    lines += ["", "## Pitfalls the class fell into", ""]
    lines += _counts(exercises, "pitfalls", _pitfall_shown) or ["None named by a failing test."]
    lines += ["", "## Recognised wrong answers", ""]
    lines += _counts(exercises, "wrong_answers", "`{}`".format) or [
        "None of the known wrong answers."
    ]
    lines += ["", "## Students to look at", ""]
    lines += [f"- {student}: {status}: {message}" for student, status, message in attention]
    lines += [] if attention else ["Every student was graded with status ok."]
    lines += ["", "## Code to review", ""]
    lines.append(
        "Places in a student's own cells that reach for grading machinery (frames, "
        "tracebacks, IPython or the kernel, `gc`, `ctypes`, `sys.modules`, builtins, code "
        "built at run time). They change no grade: the hidden tests are judged outside "
        "the student's process. Read them."
    )
    lines.append("")
    flagged = {student: found for student, found in sorted((flags or {}).items()) if found}
    for student, found in flagged.items():
        lines.append(f"- {student}: " + "; ".join(str(flag) for flag in found[:20]))
        if len(found) > 20:
            lines[-1] += f"; and {len(found) - 20} more"
    lines += [] if flagged else ["None."]
    return "\n".join(lines) + "\n"


def write_report(course: Course, assignment: str, fixtures: Path = FIXTURES) -> Report:
    """Writes the class report and its plot to ``exports/``.

    Args:
        course: A course where the assignment has been graded.
        assignment: The assignment id.
        fixtures: Where the known wrong answers are specified.

    Returns:
        The report, with the paths written.
    """
    try:
        exercises, statuses, grading = summarize(course, assignment, fixtures)
    except (FileNotFoundError, KeyError) as error:
        raise ReportError(f"cannot report on {assignment}: {error}") from error
    plot = plot_pass_rates(
        exercises, course.exports / f"{assignment}_report.png", f"{assignment}: pass rates"
    )
    students, _ = load_status(course, assignment)
    attention = [
        (student.student_id, student.status, student.message)
        for student in students
        if student.status != "ok"
    ]
    flags = submission_flags(course, assignment, [student.student_id for student in students])
    markdown = course.exports / f"{assignment}_report.md"
    text = _markdown(assignment, exercises, statuses, grading, attention, plot, flags)
    replace_file(markdown, text)
    page = course.exports / f"{assignment}_report.html"
    replace_file(page, report_page(f"{assignment}: class report", text, plot))
    return Report(markdown, plot, exercises, statuses, page)


# The page's look: readable widths, tables with lines, light or dark as the reader's system.
PAGE_STYLE = """
body { font-family: system-ui, sans-serif; line-height: 1.5; max-width: 56rem;
  margin: 2rem auto; padding: 0 1rem; color: #1b1b1b; background: #ffffff; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #c8c8c8; padding: 0.3rem 0.7rem; text-align: left; }
th { background: #f0f0f0; }
code { font-size: 0.95em; }
li { overflow-wrap: break-word; }
img { max-width: 100%; height: auto; background: #ffffff; }
@media (prefers-color-scheme: dark) {
  body { color: #e6e6e6; background: #161616; }
  th { background: #2a2a2a; }
  th, td { border-color: #555555; }
  a { color: #8ab4f8; }
}
"""


def report_page(title: str, markdown: str, plot: Path) -> str:
    """The report as one self-contained HTML page: its Markdown rendered, the plot inline.

    Raw HTML in the Markdown is not passed through: student ids and messages end up in
    the report, and a page an instructor opens must not run what a student wrote.

    Args:
        title: The page's title.
        markdown: The report's Markdown (:func:`_markdown`).
        plot: The pass-rate plot (PNG), which the Markdown shows by its file name.
    """
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = renderer.render(markdown)
    inline = "data:image/png;base64," + base64.b64encode(plot.read_bytes()).decode()
    body = body.replace(f'src="{plot.name}"', f'src="{inline}"')
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{PAGE_STYLE}</style>\n</head>\n"
        f"<body>\n{body}</body>\n</html>\n"
    )
