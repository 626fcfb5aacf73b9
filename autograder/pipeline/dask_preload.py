"""Loaded by each worker of the local Dask cluster a grading command starts (Dask's preload).

The cluster's worker processes share the command's process group, so a Ctrl-C in the
terminal reaches them too: they ignore it (and SIGTERM), as the local pool's processes
do, and the command stops them itself (:mod:`autograder.interrupts`), once their
students' kernels are killed and their folders removed.
"""

from __future__ import annotations

import contextlib

from autograder.interrupts import ignore_in_worker


def dask_setup(worker: object) -> None:
    """Dask's preload hook: the worker process ignores SIGINT and SIGTERM."""
    with contextlib.suppress(ValueError):  # not the main thread: leave the signals alone
        ignore_in_worker()
