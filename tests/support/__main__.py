"""Write the fixture and adversarial submissions: ``python -m tests.support [assignment ...]``.

``make fixtures`` runs it after an author edits ``solutions/`` or a fixture spec; the
tests fail while the committed submissions are stale.
"""

from __future__ import annotations

import argparse
import sys

from autograder.authoring.build import build
from autograder.course import Course, assignment_ids
from autograder.errors import AutograderError
from autograder.i18n.catalog import LANGUAGES
from tests.support.adversarial import JUDGE_ATTACKS, load_attacks, write_adversarial
from tests.support.fixtures import write_edition_fixtures, write_fixtures


def main(argv: list[str] | None = None) -> int:
    """Builds each assignment and writes its fixture submissions; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m tests.support", description=__doc__)
    parser.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    args = parser.parse_args(argv)
    course = Course.repository()
    try:
        for assignment in args.assignments or assignment_ids(course):
            build(course, [assignment], LANGUAGES)
            written = write_fixtures(course, assignment)
            for language in LANGUAGES:
                written += write_edition_fixtures(course, assignment, language)
            if assignment == load_attacks()[0]:
                written += write_adversarial(course)
            if assignment == load_attacks(JUDGE_ATTACKS)[0]:
                written += write_adversarial(course, JUDGE_ATTACKS)
            for path in written:
                print(f"wrote {path.relative_to(course.root)}")
    except AutograderError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
