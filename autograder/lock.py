"""One writer per course: a lock that a second grading command finds, and says who holds.

Two commands writing one course at once (two ``grade`` runs, an ``export`` during a
``grade``) would record one student twice and write the CSV from a gradebook the other
is changing. Every command that writes a course takes :func:`course_lock` first: an
exclusive ``flock`` on ``.autograder.lock`` in the course folder, and, when the gradebook
is a database of its own (``--db-url``), on a lock file named after that database in the
machine's lock folder, so that two course folders sharing one gradebook do not write it
at once either (on this machine: another machine's command is not seen).

The lock file holds who holds it (pid, host, start time, command line). The kernel
releases a ``flock`` when its process dies, however it dies, so a lock can never be held
by a dead process; the record it leaves behind is how the next command knows it took the
place of one (it says so).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from autograder.course import Course
from autograder.errors import AutograderError

LOCK_NAME = ".autograder.lock"
_log = logging.getLogger(__name__)


class CourseLockedError(AutograderError):
    """Another command holds the lock of the course (or of its gradebook)."""


def _record() -> dict[str, object]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime()),
        "command": " ".join(["python -m autograder", *sys.argv[1:]])[:300],
    }


def _holder(handle) -> dict[str, object]:
    """What the lock file says of its holder ({} when it says nothing readable)."""
    handle.seek(0)
    try:
        record = json.loads(handle.read() or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def _describe(holder: dict[str, object]) -> str:
    if not holder:
        return "another command (it left no record)"
    where = f" on {holder['host']}" if holder.get("host") != socket.gethostname() else ""
    return (
        f"pid {holder.get('pid')}{where}, started {holder.get('started')} "
        f"(`{holder.get('command')}`)"
    )


def database_lock_file(db_url: str, folder: Path | None = None) -> Path:
    """The lock file of a gradebook database: one per URL on this machine.

    Args:
        db_url: The gradebook's SQLAlchemy URL.
        folder: Where lock files are kept (the machine's lock folder when None).
    """
    from autograder.sandbox.bwrap import machine_lock_folder  # shared with the uid blocks

    digest = hashlib.sha256(db_url.encode()).hexdigest()[:16]
    return (folder or machine_lock_folder()) / f"autograder-gradebook-{digest}.lock"


@contextlib.contextmanager
def _locked(path: Path, what: str, wait: bool) -> Iterator[None]:
    """Holds an exclusive lock on ``path`` for the block (see :func:`course_lock`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115  (held for the whole block)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(_holder(handle))
            if not wait:
                raise CourseLockedError(
                    f"{what} is being written by {holder}: wait until it ends, or add --wait "
                    "to start when it does"
                ) from None
            print(f"waiting for {holder}, which is writing {what}", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)  # a signal still stops the wait
        left = _holder(handle)
        if left:  # a holder that did not release the lock: it died
            print(
                f"note: took over the lock of {what} from {_describe(left)}, which is no "
                "longer running",
                file=sys.stderr,
            )
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(_record()))
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()  # released cleanly: no record left to take over
            handle.flush()
    finally:
        handle.close()  # releases the flock


@contextlib.contextmanager
def course_lock(course: Course, wait: bool = False) -> Iterator[None]:
    """Holds the course's lock (and its database's, with a ``db_url``) for the block.

    Args:
        course: The course the command writes.
        wait: Wait for the holder to finish instead of refusing at once.

    Raises:
        CourseLockedError: If another command holds it and ``wait`` is False; the
            message names the holder's pid, start time and command.
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(_locked(course.root / LOCK_NAME, f"the course {course.root}", wait))
        if course.db_url:
            shown = course.db_url.split("@")[-1]  # no password in the message
            stack.enter_context(
                _locked(database_lock_file(course.db_url), f"the gradebook {shown}", wait)
            )
        yield
