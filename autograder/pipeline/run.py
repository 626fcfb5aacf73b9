"""Grade a class step by step (collect, autograde, feedback, export, report) or end to end.

Each step reads and updates the class's status file (:mod:`autograder.submission`), so the
steps can run as separate commands; :func:`grade_class` runs them all after a build.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import interrupts
from autograder.atomic import WriteError
from autograder.course import Course
from autograder.pipeline.collect import collect
from autograder.pipeline.parallel import AUTOGRADE, FEEDBACK, Executor, grade_students
from autograder.pipeline.payloads import WorkerSettings
from autograder.pipeline.progress import Progress
from autograder.sandbox.bwrap import course_sandbox
from autograder.sandbox.limits import Limits
from autograder.sandbox.zygote import Zygote
from autograder.submission import INTERRUPTED, OK, Submission, load_status, save_status

if TYPE_CHECKING:
    from autograder.pipeline.report import Report

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GradingResult:
    """What grading a class produced.

    Attributes:
        rows: One row per student, as written to the CSV.
        csv: The grades file, ``exports/<assignment>_grades.csv``.
        feedback: The folder of per-student feedback HTML.
        report: The class report (its Markdown file and plot).
    """

    rows: list[dict]
    csv: Path
    feedback: Path
    report: Report | None = None


def collect_class(
    course: Course, assignment: str, submissions: Path, only: Collection[str] | None = None
) -> list[Submission]:
    """Collects a folder of submissions into ``submitted/`` and records each student's status.

    Args:
        course: The course to collect into.
        assignment: The assignment id.
        submissions: The folder with one entry per student.
        only: Collect these students only: the others keep what the status file says
            (a late submission joins a class graded earlier).

    A student graded before keeps what grading recorded: autograde compares their
    notebook with the one it graded, and grades only a changed one again.

    Returns:
        The students collected now.
    """
    with interrupts.critical():
        collected = collect(course, assignment, submissions, only=only)
        earlier = {s.student_id: s for s in load_status(course, assignment)[0]}
        collected = [_keep_grading(s, earlier.get(s.student_id)) for s in collected]
        everyone = collected
        if only is not None:
            now = {submission.student_id for submission in collected}
            everyone = [s for s in earlier.values() if s.student_id not in now] + collected
        save_status(course, assignment, everyone)
    return collected


def _keep_grading(collected: Submission, earlier: Submission | None) -> Submission:
    """A student collected again, with what grading recorded for them before (if anything)."""
    if collected.status != OK or earlier is None or not earlier.graded:
        return collected
    return dataclasses.replace(earlier, note=collected.note)


def autograde_class(
    course: Course,
    assignment: str,
    *,
    jobs: int = 1,
    limits: Limits | None = None,
    sandbox: bool = True,
    feedback: bool = False,
    zygotes: list[Zygote] | None = None,
    only: Collection[str] | None = None,
    regrade: bool = False,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> list[Submission]:
    """Autogrades every collected student on workers, in the sandbox; records them here.

    Only what is missing is graded: a student whose notebook was graded against the same
    tests keeps that grade (``regrade`` grades everyone again). A signal stops the run
    between two students (:mod:`autograder.interrupts`): the students recorded stay, the
    others are saved ``interrupted``, and then the signal is raised.

    Args:
        course: The course, with the assignment built.
        assignment: The assignment id.
        jobs: How many students to grade at once (with the default, local executor).
        limits: Limits on each kernel (the defaults when None).
        sandbox: False to run student code without bubblewrap.
        feedback: Also write each student's feedback right after grading them.
        zygotes: Zygotes launched early for the local executor (see
            :func:`autograder.sandbox.zygote.launch_zygotes`), closed when done; launched
            here when None.
        only: Grade these students only; the others keep their earlier grades.
        regrade: Grade every collected student again, even those graded as they are.
        progress: Shows each student as they are done (nothing when None).
        executor: Where to grade: a :class:`~autograder.pipeline.executors.DaskExecutor`
            (left open: the caller closes it), or ``jobs`` local processes when None.

    Returns:
        Every student with their status after grading.

    Raises:
        BuildError: If the assignment has not been built.
        Interrupted: After saving, if a signal stopped the run.
    """
    course.require_built(assignment)
    limits = limits or Limits()
    students, _ = load_status(course, assignment)
    steps = (AUTOGRADE, FEEDBACK) if feedback else (AUTOGRADE,)
    if executor is None:
        from autograder.pipeline.executors import LocalExecutor  # nbgrader: only to grade here

        executor = LocalExecutor(jobs, zygotes, course_sandbox(course, enabled=sandbox))
    remote = executor.name != "local"  # the name of the local pool, and of the grading service
    if not remote:
        limits = limits.sharing(executor.workers)  # Dask workers choose on their machine
    settings = WorkerSettings(limits, sandbox=sandbox, require_sandbox=remote, feedback=feedback)
    seen: set[str] = set()

    def save(graded: list[Submission]) -> None:
        save_status(
            course,
            assignment,
            graded,
            sandbox=executor.sandbox_line(seen),
            sandbox_enabled=executor.sandbox_enabled(sandbox),
            limits=limits.as_dict(),
            jobs=executor.workers,
            executor=executor.name,
        )

    graded = grade_students(
        course,
        assignment,
        students,
        executor=executor,
        steps=steps,
        limits=limits,
        settings=settings,
        only=only,
        regrade=regrade,
        progress=progress,
        seen_sandboxes=seen,
        save=save,
    )
    interrupts.check()
    return graded


def feedback_class(course: Course, assignment: str) -> list[Submission]:
    """Writes feedback HTML for every autograded student (hidden tests removed).

    This process writes it, one student after the other: feedback/ has one writer, as the
    gradebook has.
    """
    course.require_built(assignment)
    students, _ = load_status(course, assignment)
    done = grade_students(
        course,
        assignment,
        students,
        steps=(FEEDBACK,),
        save=lambda everyone: save_status(course, assignment, everyone),
    )
    interrupts.check()
    return done


def export_class(course: Course, assignment: str) -> tuple[list[dict], Path]:
    """Writes ``exports/<assignment>_grades.csv``; returns its rows and path."""
    course.require_built(assignment)
    students, grading = load_status(course, assignment)
    sandbox = {True: "on", False: "off"}.get(grading.get("sandbox_enabled"), "")
    limits = grading.get("limits")  # none before autograde: nothing ran anywhere yet
    device = limits.get("device", "cpu") if limits else ""
    from autograder.pipeline.export import grade_rows, write_csv  # nbgrader: not to grade

    rows = grade_rows(course, assignment, students, sandbox=sandbox, device=device)
    with interrupts.critical():
        return rows, write_csv(rows, course.exports / f"{assignment}_grades.csv")


def mark_interrupted(course: Course, assignment: str, why: str) -> None:
    """Marks the collected students not graded yet ``interrupted``: the run stopped before them.

    Args:
        course: The course.
        assignment: The assignment id.
        why: What stopped the run, for their message.
    """
    with interrupts.deferring():
        students, _ = load_status(course, assignment)
        message = f"not graded: {why}; run the command again to grade this student"
        marked = [
            dataclasses.replace(s, status=INTERRUPTED, message=message)
            if s.status == OK and not s.graded
            else s
            for s in students
        ]
        if marked != students:
            save_status(course, assignment, marked)


def grade_class(
    course: Course,
    assignment: str,
    submissions: Path,
    *,
    jobs: int = 1,
    limits: Limits | None = None,
    sandbox: bool = True,
    zygotes: list[Zygote] | None = None,
    only: Collection[str] | None = None,
    regrade: bool = False,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> GradingResult:
    """Grades every submission of ``assignment`` found in ``submissions``, end to end.

    Builds the assignment (so the gradebook has the current tests and points), collects,
    autogrades with feedback, exports the CSV and writes the report. Students graded
    before, as they are and against the same tests, keep their grades (``regrade``
    grades everyone again). Stopped by a signal or by a lost executor, it still writes
    the CSV and the report, the students it did not finish marked ``interrupted``, and
    then raises.

    Args:
        course: The course to grade in (its gradebook, submitted/, autograded/, ...).
        assignment: The assignment id.
        submissions: A folder with one entry (folder, notebook or zip) per student.
        jobs: How many students to grade at once.
        limits: Limits on each kernel (the defaults when None).
        sandbox: False to run student code without bubblewrap.
        zygotes: Zygotes launched early, closed when done; launched here when None.
        only: Collect and grade these students only (late submissions); the CSV and the
            report still cover the whole class.
        regrade: Grade every collected student again.
        progress: Shows each student as they are done (nothing when None).
        executor: Where to grade (``jobs`` local processes when None); see
            :func:`autograde_class`.

    Returns:
        The grade rows and where the CSV, the feedback and the report were written.

    Raises:
        Interrupted: After the CSV and the report, if a signal stopped the run.
    """
    from autograder.authoring.build import build  # jupytext, which autograde does not need

    stopped: BaseException | None = None
    try:
        with interrupts.critical():
            build(course, [assignment])
        collect_class(course, assignment, submissions, only=only)
        autograde_class(
            course,
            assignment,
            jobs=jobs,
            limits=limits,
            sandbox=sandbox,
            feedback=True,
            zygotes=zygotes,
            only=only,
            regrade=regrade,
            progress=progress,
            executor=executor,
        )
    except (Exception, interrupts.Interrupted) as error:
        stopped = error
        if not course.source_notebook(assignment).is_file():
            raise  # not built: there is nothing to export
        try:
            mark_interrupted(course, assignment, stopped_why(error))
        except WriteError as failed:  # the CSV then says "not graded" for them
            _log.error("%s", failed)
    # Whatever stopped the batch, it ends with a CSV and a report; students not graded
    # say so. Nothing here is cut by a second signal (it is raised once, above).
    with interrupts.deferring():
        try:
            rows, csv_path = export_class(course, assignment)
        except WriteError as failed:
            if stopped is None:
                raise
            _log.error("%s", failed)  # said, and what stopped the run is raised below
            raise stopped from None
        report = _report(course, assignment, stopped)
    if stopped is not None:
        raise stopped
    return GradingResult(rows, csv_path, course.feedback, report)


def stopped_why(error: BaseException) -> str:
    """What stopped a run, as a student's message says it."""
    if isinstance(error, interrupts.Interrupted):
        return f"the run was stopped ({error.name})"
    return f"grading stopped: {type(error).__name__}: {error}"


def _report(course: Course, assignment: str, stopped: BaseException | None) -> Report | None:
    """Writes the class report; after a failure, one that fails too is logged, not raised."""
    # Imported for the report only: it reads the course's pitfalls, which import torch,
    # and the process that only records the workers' results needs nothing else of it.
    from autograder.pipeline.report import write_report

    if stopped is None:
        return write_report(course, assignment)
    try:
        return write_report(course, assignment)
    except WriteError as failed:
        _log.error("%s", failed)
    except Exception:
        _log.exception("the class report could not be written")
    return None
