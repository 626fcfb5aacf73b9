"""The memory of all of a student's processes together, watched by the zygote.

Each process of a student's kernel has its own address-space limit (RLIMIT_AS), but a
student who forks eight children can use eight times the cap, and SysV shared memory
outlives the processes that made it. Where the host gives no cgroup per student, the
zygote watches the student as a whole: every few hundred milliseconds it adds up what
the student's processes hold (their proportional set size, which counts a page shared by
N processes as 1/N in each) and the System V shared memory of the sandbox's IPC
namespace (the zygote's own, which only this zygote's students use, one at a time), and
kills every process of the student once the total has grown past the cap since the
kernel started. When the student is reaped, every System V object left in the namespace
(shared memory, message queues, semaphores) is removed, so none reaches the next student.

Like everything in :mod:`autograder.kernel`, it imports nothing else from ``autograder``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")
_IPC_RMID = 0
# /proc/sysvipc/<kind>: the column of each object's id, its owner's uid, and its bytes in
# memory (None: messages and semaphores are bounded by the system's small defaults).
_SYSV = {
    "shm": ("shmid", "uid", "rss"),
    "msg": ("msqid", "uid", "cbytes"),
    "sem": ("semid", "uid", None),
}
_REMOVE = {"shm": "shmctl", "msg": "msgctl", "sem": "semctl"}


@dataclass(frozen=True)
class IpcObject:
    """One System V IPC object: shared memory, a message queue or a semaphore set."""

    kind: str
    ident: int
    uid: int
    bytes: int


def rss_bytes(pid: int) -> int:
    """A process's resident memory, shared pages counted whole (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def pss_bytes(pid: int) -> int:
    """A process's proportional set size: a page shared by N processes counts 1/N here.

    Slower to read than :func:`rss_bytes` (the kernel walks the process's mappings), so
    the watch reads it only when the resident total is past the cap.
    """
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return rss_bytes(pid)


def ipc_objects() -> list[IpcObject]:
    """The System V IPC objects of this process's IPC namespace."""
    found = []
    for kind, (ident, owner, size) in _SYSV.items():
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        header = lines[0].split()
        for line in lines[1:]:
            fields = dict(zip(header, line.split(), strict=False))
            with contextlib.suppress(KeyError, ValueError):
                held = int(fields[size]) if size else 0
                found.append(IpcObject(kind, int(fields[ident]), int(fields[owner]), held))
    return found


def remove_ipc_objects(objects: list[IpcObject]) -> None:
    """Removes System V IPC objects (this process must own them, or be their creator)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for item in objects:
        getattr(libc, _REMOVE[item.kind])(item.ident, _IPC_RMID, None)


def remove_ipc_objects_of(uid: int | None) -> None:
    """Removes the namespace's System V objects: those of ``uid``, or all when it is None.

    As root, each is removed from a child that takes its owner's uid: removing one takes
    its owner, or CAP_SYS_ADMIN, which the zygote has not.
    """
    objects = [item for item in ipc_objects() if uid is None or item.uid == uid]
    for owner in sorted({item.uid for item in objects}):
        mine = [item for item in objects if item.uid == owner]
        if os.geteuid() in (0, owner) and owner != os.geteuid():
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgid(owner)
                    os.setuid(owner)
                    remove_ipc_objects(mine)
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
        else:
            remove_ipc_objects(mine)


def _mib(count: int) -> str:
    return f"{count / 2**20:,.0f} MB"


@dataclass
class MemoryWatch:
    """The memory of one student's processes, against what they may add to it.

    Attributes:
        cap: The bytes the student may add to what the kernel held when it started.
        own_namespace: Whether the IPC namespace is the sandbox's (every object in it is
            the student's); outside the sandbox only the objects of ``uid`` count.
        uid: The student's uid, or None when kernels share the grader's.
        start: What the kernel held when first measured (None until then).
        stopped: Why the watch killed the student ("" while it has not).
    """

    cap: int
    own_namespace: bool
    uid: int | None
    start: int | None = None
    stopped: str = ""

    def _shared(self) -> tuple[int, int]:
        """The bytes and the number of the student's System V shared memory segments."""
        if not self.own_namespace and self.uid is None:
            return 0, 0  # the host's namespace, and no uid to tell the student's apart
        segments = [
            item
            for item in ipc_objects()
            if item.kind != "sem" and (self.own_namespace or item.uid == self.uid)
        ]
        return sum(item.bytes for item in segments), len(segments)

    def over(self, pids: list[int]) -> str:
        """Measures the student's processes ``pids``; returns why they are over the cap, or "".

        The resident total (cheap) is an upper bound of the proportional one: only when it
        is past the cap is the proportional total read to decide.
        """
        shared, segments = self._shared()
        if self.start is None:
            self.start = sum(pss_bytes(pid) for pid in pids) + shared
            return ""
        allowed = self.start + self.cap
        if sum(rss_bytes(pid) for pid in pids) + shared <= allowed:
            return ""
        held = sum(pss_bytes(pid) for pid in pids)
        if held + shared <= allowed:
            return ""
        parts = [f"{len(pids)} process{'es' if len(pids) != 1 else ''} held {_mib(held)}"]
        if segments:
            parts.append(f"{segments} shared memory segments {_mib(shared)}")
        return (
            f"the student's code used {_mib(held + shared - self.start)} in all "
            f"({', '.join(parts)}), more than the {_mib(self.cap)} it may use"
        )
