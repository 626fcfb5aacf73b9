"""Grades every fixture student twice on a machine with a GPU: on the stand-in, and on CUDA.

The grading machines have no GPU, so the hidden tests check device bugs on a CPU stand-in
for one (``autograd_pitfalls.standin``), which must agree with CUDA. ``tests/
test_gpu_standin.py`` checks that op by op; this checks it answer by answer. Each fixture
submission (``autograder/fixtures/<assignment>/submissions``) is run as ``nbgrader
autograde`` runs it (the student's cells in the student's order, each test cell replaced by
the source's, hidden tests included, judged in the same process as plain nbgrader judges
them), once with the GPU hidden (``CUDA_VISIBLE_DEVICES=``: the course's GPU is the
stand-in) and once with it visible (the course's GPU is ``cuda:0``, and ``devices()``
adds ``cuda``). The test cells that pass must be the same.

It needs torch with a CUDA device, IPython, LibCST (notebook 03 lints code) and this
repository; no Jupyter and no nbgrader. Source notebooks come from ``autograder build``
(``build/source``). From the repository's root::

    python -m tests.support.cuda_agreement [--jobs N] [ASSIGNMENT ...]

It prints one line per student whose verdicts differ, per run that failed, and per cell
outside the tests that failed for the complete answers (``perfect``: the notebook's own
demonstrations, which on CUDA take the branches that only a GPU takes), a summary, and
exits 1 on any of them. ``--students perfect`` runs only those.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "autograder" / "fixtures"
SOURCES = REPO / "build" / "source"
# A notebook that takes longer than this on either device is reported as a failed run.
NOTEBOOK_TIMEOUT_S = 600


def _grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _is_test(cell: dict) -> bool:
    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    return bool(nbgrader.get("grade")) and not nbgrader.get("solution")


def autograded_cells(source: dict, submission: dict) -> list[tuple[str | None, str, bool]]:
    """The code cells nbgrader's autograde runs: ``(grade_id, source, is_test)`` in order.

    The submission's cells, in its order; a cell whose grade_id is a locked or test cell of
    the source gets the source's text back (nbgrader's ``OverwriteCells``).
    """
    locked = {
        _grade_id(cell): cell
        for cell in source["cells"]
        if _grade_id(cell)
        and (cell["metadata"]["nbgrader"].get("locked") or _is_test(cell))
        and not cell["metadata"]["nbgrader"].get("solution")
    }
    cells = []
    for cell in submission["cells"]:
        if cell["cell_type"] != "code":
            continue
        grade_id = _grade_id(cell)
        kept = locked.get(grade_id, cell)
        text = kept["source"]
        cells.append((grade_id, "".join(text) if isinstance(text, list) else text, _is_test(kept)))
    return cells


def run_notebook(assignment: str, student: str) -> dict[str, str]:
    """Runs one submission in this process: ``{test grade_id: "pass" or the error}``.

    A test cell passes when it raises nothing. (nbgrader also fails one that writes to
    stderr; stderr is not read here, on either device, so both runs are judged alike.)

    An error in a cell that is not a test (a demonstration, a drawing) is kept too, under
    ``"cell N"`` (N counts code cells from 1): the source's own cells must run on both.
    """
    from IPython.core.interactiveshell import InteractiveShell

    source = json.loads((SOURCES / assignment / f"{assignment}.ipynb").read_text())
    folder = FIXTURES / assignment / "submissions" / student
    submission = json.loads((folder / f"{assignment}.ipynb").read_text())
    shell = InteractiveShell.instance()
    verdicts: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as work, contextlib.chdir(work):
        for number, (grade_id, text, is_test) in enumerate(autograded_cells(source, submission)):
            shown = io.StringIO()
            with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(shown):
                result = shell.run_cell(text, store_history=False)
            error = result.error_before_exec or result.error_in_exec
            said = "pass" if error is None else f"{type(error).__name__}: {error}"[:300]
            if is_test and grade_id:
                verdicts[grade_id] = said
            elif error is not None:
                verdicts[f"cell {number + 1}"] = said
    return verdicts


def _run_in_child(assignment: str, student: str, gpu_visible: bool) -> dict[str, str] | str:
    path = [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)))
    env["MPLBACKEND"] = "Agg"
    if not gpu_visible:
        env["CUDA_VISIBLE_DEVICES"] = ""
    command = [sys.executable, "-m", "tests.support.cuda_agreement", "--one", assignment, student]
    try:
        done = subprocess.run(
            command,
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=NOTEBOOK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {NOTEBOOK_TIMEOUT_S} s"
    if done.returncode != 0 or not done.stdout.strip():
        return f"exit {done.returncode}: {done.stderr.strip()[-500:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _died_alike(standin: dict | str, cuda: dict | str) -> bool:
    """Whether both runs ended their process by the same signal (``exit -6``: an abort)."""
    if not (isinstance(standin, str) and isinstance(cuda, str)):
        return False
    code = standin.split(":")[0]
    return code.startswith("exit -") and cuda.split(":")[0] == code


def _students(assignment: str, only: list[str] | None = None) -> list[str]:
    folder = FIXTURES / assignment / "submissions"
    every = sorted(path.name for path in folder.iterdir() if path.is_dir())
    return [student for student in every if not only or student in only]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="assignment ids; all by default")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--students", nargs="+", help="only these fixture students")
    parser.add_argument("--one", nargs=2, metavar=("ASSIGNMENT", "STUDENT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_notebook(*args.one)))
        return 0
    assignments = args.assignments or sorted(path.name for path in SOURCES.iterdir())
    runs = [
        (assignment, student, visible)
        for assignment in assignments
        for student in _students(assignment, args.students)
        for visible in (False, True)
    ]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(runs, pool.map(lambda run: _run_in_child(*run), runs), strict=True))
    differences = failures = cells = broken = 0
    for assignment in assignments:
        for student in _students(assignment, args.students):
            standin, cuda = (
                results[(assignment, student, False)],
                results[(assignment, student, True)],
            )
            if _died_alike(standin, cuda):
                # An answer that kills its process (a fixture does, on purpose) kills it on
                # both: they agree, and the grader grades the other exercises (execute.py).
                print(f"{assignment}/{student}: the process died on both ({standin[:40]})")
                continue
            for name, result in (("stand-in", standin), ("cuda", cuda)):
                if isinstance(result, str):
                    failures += 1
                    print(f"{assignment}/{student} on {name}: the run failed: {result}")
            if isinstance(standin, str) or isinstance(cuda, str):
                continue
            # A source cell that fails for the complete answers is a notebook bug.
            for name, result in (("stand-in", standin), ("cuda", cuda)):
                for cell in [key for key in result if key.startswith("cell ")]:
                    if student == "perfect":
                        broken += 1
                        print(f"{assignment}/{student} {cell} failed on {name}: {result[cell]}")
            tests = (key for key in standin.keys() | cuda.keys() if not key.startswith("cell "))
            for grade_id in sorted(tests):
                cells += 1
                here, there = standin.get(grade_id, "missing"), cuda.get(grade_id, "missing")
                if (here == "pass") != (there == "pass"):
                    differences += 1
                    print(f"{assignment}/{student} {grade_id}: stand-in {here!r}, cuda {there!r}")
    students = len(runs) // 2
    print(
        f"{students} students, {cells} test cells compared: {differences} verdicts differ "
        f"between the stand-in and CUDA, {failures} runs failed, {broken} cells of the "
        "complete answers (perfect) failed outside the tests"
    )
    return 1 if differences or failures or broken else 0


if __name__ == "__main__":
    sys.exit(main())
