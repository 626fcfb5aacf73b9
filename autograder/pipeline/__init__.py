"""Grading a class: collect, autograde, feedback, export, report, and all in one run."""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver

# The module every grading process runs (and imports nbgrader once, in the forkserver).
WORKER_MODULE = "autograder.pipeline.executors"
# Imported first in the forkserver: it then ends without tearing its modules down.
FORKSERVER_EXIT = "autograder.pipeline.forkserver_preload"
# Seconds without a Dask scheduler, or with no worker, before a run stops (--lost-after).
# Here, not in the executors' module: the command line reads it for its help, and that
# module imports nbgrader, which a grading command needs only once its students are sent.
LOST_AFTER = 60
# What each worker's judges import (they run the notebook's setup cell in the grader's
# process): imported once in the forkserver, not once per worker per run (2-3 s each; the
# benchmark showed the judges costing 0.7 s per notebook with two workers).
JUDGE_MODULES = ["torch", "autograd_pitfalls", "matplotlib.pyplot"]


def worker_context(start: bool = False) -> multiprocessing.context.ForkServerContext:
    """Returns the context grading processes start from: a forkserver importing nbgrader.

    Workers fork from a server that has imported nbgrader once (not N times), and that
    never ran an event loop or opened the gradebook.

    Args:
        start: Start the server now (the command line does, while the zygotes import
            torch), rather than with the first worker.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([FORKSERVER_EXIT, WORKER_MODULE, *JUDGE_MODULES])
    if start:
        multiprocessing.forkserver.ensure_running()
    return context  # type: ignore[return-value]


def import_judge_modules() -> None:
    """Imports what the judges import, in this process: it grades alone (``--jobs 1``).

    The command line calls it while the zygote imports torch: otherwise the first judge
    would import torch in the middle of the first student.
    """
    for name in JUDGE_MODULES:
        importlib.import_module(name)
