"""The findings of the linter (every rule) over the course's notebooks and sources.

Each line of ``course_findings.txt`` is one finding: the file, the notebook cell's id (``-``
for a ``.py`` source), the line (within the cell for a notebook), and the code. The course
shows these pitfalls on purpose; the test compares the linter's findings with the reviewed
list, so a rule that starts or stops firing on the course shows up in review.

Regenerate after editing the notebooks or the rules, then review the diff:

    .venv/bin/python -m tests.lint.course_findings
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from autograd_pitfalls.lint.engine import lint_source
from autograd_pitfalls.lint.sources import find_files, units_in

REPO = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).with_name("course_findings.txt")
HEADER = (
    "# The pitfalls the course's notebooks and sources show on purpose, as the linter finds\n"
    "# them with every rule selected: file, cell id (- for .py), line, code.\n"
    "# Regenerate with: .venv/bin/python -m tests.lint.course_findings (then review the diff)\n"
)


def _file_findings(path: Path) -> list[str]:
    lines = []
    for unit in units_in(path):
        relative = Path(unit.path).relative_to(REPO).as_posix()
        for finding in lint_source(unit.code, relative, select=["ALL"], cell=unit.cell):
            lines.append(f"{relative} {finding.cell or '-'} {finding.line} {finding.code}")
    return lines


def course_findings() -> list[str]:
    """One ``path cell line code`` line per finding in notebooks/ and solutions/.

    The files are linted in parallel, one process per core (about 4 s each on one core:
    LibCST's walk is pure Python), and their findings joined in file order.
    """
    files = list(find_files([str(REPO / "notebooks"), str(REPO / "solutions")]))
    # spawn, not fork: the test process has torch (and its thread pools) loaded.
    context = multiprocessing.get_context("spawn")
    workers = max(1, min(len(files), os.cpu_count() or 1))
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        # The largest first, so that no core is left with a large file at the end.
        futures = {
            path: pool.submit(_file_findings, path)
            for path in sorted(files, key=lambda path: path.stat().st_size, reverse=True)
        }
        return [line for path in files for line in futures[path].result()]


def read_expected() -> list[str]:
    """The reviewed list, without its comment lines."""
    text = EXPECTED.read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


if __name__ == "__main__":
    EXPECTED.write_text(HEADER + "".join(f"{line}\n" for line in course_findings()))
    print(f"wrote {EXPECTED.relative_to(REPO)}")
