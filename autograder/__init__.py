"""The course's grading pipeline: nbgrader as a Python library with a command line."""

import sys
from importlib import import_module

__all__ = ["Course", "assignment_ids"]

# jsonschema, which nbformat imports to validate notebooks, adds an "iri" format checker
# when rfc3987_syntax is installed (jupyter_events asks for it), and that module builds 38
# Lark parsers when imported: 2.2 s in every process that reads a notebook (the command
# line, the grading workers, each test run), measured with `python -X importtime`. Nothing
# here validates IRIs, and nbformat checks no formats: the import is made to fail, as if
# the package were absent, which jsonschema allows for (tests/test_layout.py).
sys.modules.setdefault("rfc3987_syntax", None)


def __getattr__(name: str) -> object:
    # Lazy: the sandbox mounts this file with autograder/kernel/ only, and the zygote
    # and the kernels (autograder.kernel.server, .guard) import it without nbgrader.
    if name in __all__:
        return getattr(import_module("autograder.course"), name)
    raise AttributeError(f"module 'autograder' has no attribute {name!r}")
