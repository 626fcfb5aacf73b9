"""The linter over the course: it finds exactly the pitfalls the notebooks show on purpose.

The expected list is ``course_findings.txt``, reviewed by hand; regenerate it with
``.venv/bin/python -m tests.lint.course_findings`` after editing notebooks or rules.
"""

from __future__ import annotations

from tests.lint.course_findings import course_findings, read_expected


def test_course_findings_match_the_reviewed_list():
    found, expected = course_findings(), read_expected()
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    assert found == expected, (
        f"not found any more: {missing}\nnew findings: {unexpected}\n"
        "If the notebooks changed on purpose, regenerate and review: "
        ".venv/bin/python -m tests.lint.course_findings"
    )
