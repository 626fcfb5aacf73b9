"""Grading a class: collect, autograde, feedback, export, report, and all in one run."""
