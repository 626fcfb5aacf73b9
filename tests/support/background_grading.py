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

Then it checks every fixture notebook as a learner's ``make check`` does, in a learner
course of its own (about five core-minutes more): ``tests/test_check_verdict.py``
compares those points with the grader's.

``SPEC`` is a JSON file: ``{"root": ..., "release": ..., "submissions": {assignment:
folder}, "checked_at_home": [notebook, ...], "check_course": folder}``; ``OUTPUT``
receives the pickled ``{assignment: GradingResult}``, and :data:`CHECKS` beside it the
pickled ``{notebook: verdict}``.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import warnings
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
    # Then every fixture as a learner checks it (make check), in a learner course of its
    # own: tests/test_check_verdict.py compares its points with the grader's above.
    from autograder.learner.verdict import grade_at_home, learner_course

    notebooks = [Path(path) for path in spec["checked_at_home"]]
    verdicts = grade_at_home(
        notebooks, course=learner_course(Path(spec["check_course"])), jobs=WORKERS
    )
    checks = {
        str(notebook): verdict.as_dict()
        for notebook, verdict in zip(notebooks, verdicts, strict=True)
    }
    _write_whole(output.with_name(CHECKS), checks)
    _write_whole(output, results)  # last: the waiting fixture reads both once this exists
    return 0


def _write_whole(path: Path, data: object) -> None:
    partial = path.with_suffix(".partial")
    partial.write_bytes(pickle.dumps(data))
    partial.replace(path)  # whole or absent: the waiting fixture never reads half


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
