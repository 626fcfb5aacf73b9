"""How much time, memory and output one student's code may use while it is graded."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """The limits on one student's kernel.

    Attributes:
        cell_timeout: Seconds one cell may run before it is interrupted.
        notebook_timeout: Seconds the whole notebook may run; cells after that are not run.
        memory_mb: Address space the kernel may add to what it starts with (RLIMIT_AS).
        output_chars: Characters of output kept per cell; the rest is dropped.
        file_mb: Largest file the student's code may write (RLIMIT_FSIZE).
        disk_mb: All the student's code may write at once, in its folder, /tmp and
            /dev/shm together (size-limited tmpfs in the sandbox; without it, only the
            per-file limit holds).
        processes: Processes the student's uid may own (RLIMIT_NPROC; only with one uid
            per student).
    """

    cell_timeout: int = 120
    notebook_timeout: int = 900
    memory_mb: int = 4096
    output_chars: int = 100_000
    file_mb: int = 256
    disk_mb: int = 1024
    processes: int = 256

    def as_dict(self) -> dict[str, int]:
        """Returns the limits as a plain dict (for the status file and the zygote)."""
        return asdict(self)
