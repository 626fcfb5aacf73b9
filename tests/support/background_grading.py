"""Grades the session's class in a process of its own, at a lower priority, while tests run.

Grading every fixture of every assignment is the suite's largest piece of work (about ten
core-minutes), and most other tests leave one of two cores idle: the linter's, the
helpers', the sandbox's. ``conftest.py`` starts this module at the beginning of a session
that needs the ``graded`` fixture; the fixture waits for it. It runs at ``nice`` 10, so
that the tests in the foreground keep the cores they use and it takes what they leave
(its session's scheduling group too: see ``keep_priority_in_new_session``); its kernels'
time limits (minutes) are far above what that costs a notebook.

It grades exactly what the fixture used to grade in the test process: each assignment of
``built_course`` on its ``submissions``, :data:`WORKERS` students at a time, in the sandbox. Its
temporary files go to a folder of its own, so that a test that looks for what its own
grading left behind (``tests/test_adversarial.py``) does not see this run's live kernels.

    python -m tests.support.background_grading SPEC OUTPUT

Then it reads what ``make check`` would tell each fixture's learner from the class just
graded (``read_exercises`` on the instructor's course), and checks a sample of the fixture
notebooks as a learner's ``make check`` does, in a learner course of its own (its own
secret, so other hidden inputs): ``tests/test_check_verdict.py`` compares those points with
the grader's. The sample (:func:`sample_to_check_at_home`) is every fixture whose points
the hidden checks decided somewhere, since only those can depend on the hidden inputs, and
enough of the others for every outcome the class shows; checking all of them at home cost
about five core-minutes, the sample about half.

``SPEC`` is a JSON file: ``{"root": ..., "release": ..., "submissions": {assignment:
folder}, "fixtures": [notebook, ...], "check_course": folder}``; ``OUTPUT`` receives the
pickled ``{assignment: GradingResult}``, and :data:`CHECKS` beside it the pickled
``{"class": {notebook: [exercise verdict, ...]}, "at_home": {notebook: verdict}}``.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

NICENESS = 10
# Students graded at once, as `make grade JOBS=2` does. Four at a time was tried (make test
# of 2026-11-27): the class was graded before any test waited for it, but every other test
# ran slower beside it, and the run took 38 s longer in all. (So did moving plain
# nbgrader's run of tests/test_differential.py before the class was graded: the class
# then took longer, and the tests that wait for it waited 39 s instead of 30.)
WORKERS = 2
# Written beside OUTPUT: every fixture's verdict from the learner's check, by notebook path.
CHECKS = "checks.pickle"


def main(argv: list[str]) -> int:
    """Grades the class described by ``argv[0]`` and pickles the results to ``argv[1]``."""
    spec_path, output = Path(argv[0]), Path(argv[1])
    spec = json.loads(spec_path.read_text())
    os.nice(NICENESS)  # inherited by its grading processes, zygotes and kernels
    from autograder.kernel.server import keep_priority_in_new_session

    keep_priority_in_new_session()  # started in a session of its own (conftest.py)
    # As the command line does: nbgrader's gradebook warns about its own internals.
    warnings.filterwarnings("ignore", module="nbgrader")
    from autograder.course import Course
    from autograder.pipeline.executors import LocalExecutor
    from autograder.pipeline.run import grade_class
    from autograder.sandbox.bwrap import course_sandbox

    course = Course.at(Path(spec["root"]), release=Path(spec["release"]))
    started = time.monotonic()
    # WORKERS students at a time, in the sandbox, as `make grade JOBS=2` does. The
    # processes and their zygotes are started once for every assignment, not once each.
    executor = LocalExecutor(WORKERS, sandbox=course_sandbox(course), keep=True)
    try:
        results = {
            assignment: grade_class(course, assignment, Path(folder), executor=executor)
            for assignment, folder in spec["submissions"].items()
        }
    finally:
        executor.close()
    graded_at = time.monotonic()
    _say("the class", sum(len(result.rows) for result in results.values()), started, graded_at)
    # What make check would tell each fixture's learner, as the class was graded; then a
    # sample as a learner checks it, in a learner course of its own:
    # tests/test_check_verdict.py compares its points with the grader's above.
    from autograder.learner.verdict import grade_at_home, learner_course, read_exercises

    in_class = {}
    for notebook in map(Path, spec["fixtures"]):
        exercises, _ = read_exercises(course, notebook.stem, notebook.parent.name)
        in_class[str(notebook)] = [asdict(exercise) for exercise in exercises]
    notebooks = [Path(path) for path in sample_to_check_at_home(in_class)]
    verdicts = grade_at_home(
        notebooks, course=learner_course(Path(spec["check_course"])), jobs=WORKERS
    )
    at_home = {
        str(notebook): verdict.as_dict()
        for notebook, verdict in zip(notebooks, verdicts, strict=True)
    }
    _say("checked at home", len(at_home), graded_at, time.monotonic())
    _write_whole(output.with_name(CHECKS), {"class": in_class, "at_home": at_home})
    _write_whole(output, results)  # last: the waiting fixture reads both once this exists
    return 0


def outcomes(notebook: str, exercises: list[dict]) -> set[tuple[str, str, str, str, float]]:
    """Each exercise's (assignment, name, visible tests, hidden checks, points) in a verdict."""
    assignment = Path(notebook).stem
    return {(assignment, e["exercise"], e["visible"], e["hidden"], e["score"]) for e in exercises}


def sample_to_check_at_home(in_class: dict[str, list[dict]]) -> list[str]:
    """The fixture notebooks to check as a learner does, from their verdicts in the class.

    Every notebook in which the hidden checks ran (an exercise passed its visible tests):
    their points come from hidden inputs, which a learner's course draws from another
    secret. Then, chosen greedily, other notebooks until every outcome of every exercise that the
    class shows (:func:`outcomes`) is in the sample: the rest failed their visible tests or
    were not answered, which no secret changes.

    Args:
        in_class: Each notebook's exercise verdicts (``ExerciseVerdict`` as dicts), as
            ``make check`` would read them from the course that graded the class; the
            notebooks are named after their assignment.

    Returns:
        The sample's notebooks, in the order of ``in_class``.
    """
    shown = {notebook: outcomes(notebook, exercises) for notebook, exercises in in_class.items()}
    chosen = {
        notebook
        for notebook, exercises in in_class.items()
        if any(exercise["visible"] == "pass" for exercise in exercises)
    }
    missing = set().union(*shown.values()) - set().union(*(shown[name] for name in chosen))
    while missing:  # greedy: the notebook that shows most of what is still missing
        notebook = max(shown, key=lambda name: len(shown[name] & missing))
        chosen.add(notebook)
        missing -= shown[notebook]
    return [notebook for notebook in in_class if notebook in chosen]


def _say(what: str, notebooks: int, start: float, end: float) -> None:
    """Logs a phase's notebooks and wall seconds (its kernels' CPU is not this process's)."""
    print(f"{what}: {notebooks} notebooks in {end - start:.0f} s", flush=True)


def _write_whole(path: Path, data: object) -> None:
    partial = path.with_suffix(".partial")
    partial.write_bytes(pickle.dumps(data))
    partial.replace(path)  # whole or absent: the waiting fixture never reads half


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
