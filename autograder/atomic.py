"""Writing a file whole or not at all.

The grader's outputs (the CSV, the report and its plot, the status file, feedback pages)
are read by people and by other programs while a class is graded, and a disk fills up
or a folder loses its permissions at the worst moment. :func:`replace_file` writes to a
temporary file beside the target, flushes it to disk, and renames it over the target:
a reader sees the old file or the new one, never half of one, and a write that fails
leaves the old file as it was (and no temporary file). The failure is a
:class:`WriteError`: one line naming the file, what went wrong and what was kept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

from autograder.errors import AutograderError

# Errors that say the machine cannot take the write (not that one input is bad).
MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
# What a write may fail with that the user can do something about: said in one line.
WRITE_ERRNOS = MACHINE_ERRNOS | {errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}


class WriteError(AutograderError):
    """A file could not be written; the message names it and says what was kept.

    Attributes:
        path: The file.
        cause: The error the system gave.
    """

    def __init__(self, path: Path, cause: OSError, kept: bool) -> None:
        reason = cause.strerror or str(cause)
        what = "the previous one was kept" if kept else "nothing was written there"
        super().__init__(f"cannot write {path}: {reason}; {what}")
        self.path = path
        self.cause = cause


def _sync_folder(folder: Path) -> None:
    """Makes a rename in ``folder`` survive a power cut (best effort)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def replace_file(path: Path, content: bytes | str, mode: int = 0o644) -> Path:
    """Writes ``content`` to ``path`` whole, through a temporary file renamed over it.

    Args:
        path: The file to write (its folder is created when missing).
        content: Bytes, or text (written as UTF-8).
        mode: The new file's permissions.

    Returns:
        ``path``.

    Raises:
        WriteError: If it cannot be written (full disk, no permission, ...); the file
            that was there is left as it was.
    """
    path = Path(path)
    data = content.encode() if isinstance(content, str) else content
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        temporary = Path(name)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        temporary.chmod(mode)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            with contextlib.suppress(OSError):
                temporary.unlink()
        raise WriteError(path, error, kept=path.exists()) from error
    _sync_folder(path.parent)
    return path


def one_line(error: OSError) -> str:
    """An OSError the system gave on a write, as the one line the command line prints."""
    where = f" {error.filename}" if error.filename else ""
    return f"cannot write{where}: {error.strerror or error}; the command stopped there"
