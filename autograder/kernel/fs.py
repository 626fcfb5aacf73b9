"""Removing what a student left on disk, however it is shaped.

A student's code can leave a folder tree thousands of levels deep. ``shutil.rmtree``
recurses once per level and raises ``RecursionError`` on such a tree (Python 3.11), which
would stop a whole batch and leave the student's files on the host. ``rm -rf`` walks any
depth without recursion, so it takes over when ``rmtree`` gives up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["chown_tree", "remove_tree"]


def remove_tree(path: str | Path) -> None:
    """Removes ``path`` and everything under it; never raises.

    Args:
        path: A folder (or file) to remove; nothing happens when it does not exist.
    """
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        # Deeper than Python's recursion limit: coreutils' rm walks it iteratively.
        subprocess.run(["rm", "-rf", "--", str(path)], check=False, capture_output=True)


def chown_tree(path: Path, uid: int) -> None:
    """Makes ``uid`` (and its group) the owner of ``path`` and, for a folder, all under it."""
    for folder, _, files in os.walk(path) if path.is_dir() else [(path, [], [])]:
        os.chown(folder, uid, uid)
        for name in files:
            os.chown(Path(folder) / name, uid, uid, follow_symlinks=False)
