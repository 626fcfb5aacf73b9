"""``python -m autograd_pitfalls.lint``."""

import sys

from autograd_pitfalls.lint.cli import main

sys.exit(main())
