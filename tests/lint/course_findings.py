"""The findings of the linter (every rule) over the course's notebooks and sources.

Each line of ``course_findings.txt`` is one finding: the file, the notebook cell's id (``-``
for a ``.py`` source), the line (within the cell for a notebook), and the code. The course
shows these pitfalls on purpose; the test compares the linter's findings with the reviewed
list, so a rule that starts or stops firing on the course shows up in review.

Regenerate after editing the notebooks or the rules, then review the diff:

    .venv/bin/python -m tests.lint.course_findings
"""

from __future__ import annotations

from pathlib import Path

from autograd_pitfalls.lint.engine import lint_unit
from autograd_pitfalls.lint.sources import find_files, units_in

REPO = Path(__file__).resolve().parents[2]
EXPECTED = Path(__file__).with_name("course_findings.txt")
HEADER = (
    "# The pitfalls the course's notebooks and sources show on purpose, as the linter finds\n"
    "# them with every rule selected: file, cell id (- for .py), line, code.\n"
    "# Regenerate with: .venv/bin/python -m tests.lint.course_findings (then review the diff)\n"
)


def course_findings() -> list[str]:
    """One ``path cell line code`` line per finding in notebooks/ and solutions/.

    A notebook's cells are read in order as one program, as the notebook runs. The other
    editions' notebooks (``notebooks/zh-CN/``) are left out: their code is the English
    notebooks', byte for byte (``tests/test_i18n.py``), so are their findings.
    """
    from autograder.i18n.catalog import LANGUAGES

    editions = [REPO / "notebooks" / language for language in LANGUAGES]
    lines = []
    for path in find_files([str(REPO / "notebooks"), str(REPO / "solutions")]):
        if any(path.is_relative_to(folder) for folder in editions):
            continue
        relative = path.relative_to(REPO).as_posix()
        for unit in units_in(path):
            findings, errors = lint_unit(unit, select=["ALL"])
            assert not errors, errors
            for finding in findings:
                lines.append(f"{relative} {finding.cell or '-'} {finding.line} {finding.code}")
    return lines


def read_expected() -> list[str]:
    """The reviewed list, without its comment lines."""
    text = EXPECTED.read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


if __name__ == "__main__":
    EXPECTED.write_text(HEADER + "".join(f"{line}\n" for line in course_findings()))
    print(f"wrote {EXPECTED.relative_to(REPO)}")
