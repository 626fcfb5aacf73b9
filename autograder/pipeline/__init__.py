"""Grading a class: collect, autograde, feedback, export, report, and all in one run."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver

# The module every grading process runs (and imports nbgrader once, in the forkserver).
WORKER_MODULE = "autograder.pipeline.executors"


def worker_context(start: bool = False) -> multiprocessing.context.ForkServerContext:
    """Returns the context grading processes start from: a forkserver importing nbgrader.

    Workers fork from a server that has imported nbgrader once (not N times), and that
    never ran an event loop or opened the gradebook.

    Args:
        start: Start the server now (the command line does, while the zygotes import
            torch), rather than with the first worker.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([WORKER_MODULE])
    if start:
        multiprocessing.forkserver.ensure_running()
    return context  # type: ignore[return-value]
