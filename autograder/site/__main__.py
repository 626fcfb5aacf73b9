"""``python -m autograder.site``: build the course's website (``make site``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder.errors import AutograderError
from autograder.site.build import SITE, WORK, build_site
from autograder.site.editions import EDITIONS, edition
from autograder.site.execute import CACHE
from autograder.site.pages import Repository


def main(argv: list[str] | None = None) -> int:
    """Builds the site; prints its build time and size, or what went wrong.

    Args:
        argv: The command line's arguments (``sys.argv[1:]`` when None).

    Returns:
        The exit status: 0 when built, 1 when the build failed or found a leak.
    """
    parser = argparse.ArgumentParser(prog="python -m autograder.site", description=__doc__)
    parser.add_argument("--out", type=Path, default=SITE, help="the site's folder (replaced)")
    parser.add_argument(
        "--repository",
        default=os.environ.get("SITE_REPOSITORY") or None,
        help="the repository's public address, e.g. https://github.com/owner/name: adds the "
        "clone command and the Open in Colab links (default: $SITE_REPOSITORY)",
    )
    parser.add_argument(
        "--branch",
        default=os.environ.get("SITE_BRANCH") or "main",
        help="the branch the links point to (default: $SITE_BRANCH, else main)",
    )
    parser.add_argument(
        "--work", type=Path, default=WORK, help="staged sources and Sphinx's files (kept)"
    )
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help="executed notebooks, by what they depend on"
    )
    parser.add_argument(
        "--language",
        action="append",
        choices=[e.language for e in EDITIONS],
        help="build only this edition (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    repository = Repository(args.repository, args.branch) if args.repository else None
    editions = [edition(code) for code in args.language] if args.language else list(EDITIONS)
    try:
        report = build_site(args.out, repository, editions, cache=args.cache, work=args.work)
    except AutograderError as error:
        print(f"make site: {error}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
