"""Entry point for ``python -m autograder``."""

import sys

from autograder.cli import main

# Guarded: ``--jobs N`` starts worker processes that import this module again.
if __name__ == "__main__":
    sys.exit(main())
