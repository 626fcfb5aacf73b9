"""How much time, memory and output one student's code may use while it is graded, and where."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace

DEVICES = ("cpu", "cuda")


def cores_each(kernels_at_once: int) -> int:
    """Returns the cores each of ``kernels_at_once`` kernels gets on this machine (at least 1).

    The grader's ``OMP_NUM_THREADS``, when set, is taken as the answer instead.
    """
    given = os.environ.get("OMP_NUM_THREADS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    # The cores this process may run on (a container's or taskset's); all of them where
    # the system does not say (macOS).
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else os.cpu_count() or 1
    return max(1, cores // max(1, kernels_at_once))


@dataclass(frozen=True)
class Limits:
    """The limits on one student's kernel.

    Attributes:
        cell_timeout: Seconds one cell may run before it is interrupted.
        notebook_timeout: Seconds the whole notebook may run; cells after that are not run.
        memory_mb: Memory the student's code may add to what the kernel starts with,
            all of its processes and its System V shared memory together (the zygote's
            watch, :mod:`autograder.kernel.watch`), and each process alone: address space
            (RLIMIT_AS) on the CPU; on the GPU, where CUDA reserves far more address space
            than it uses, the data segment and private mappings (RLIMIT_DATA).
        output_chars: Characters of output kept per cell; the rest is dropped.
        file_mb: Largest file the student's code may write (RLIMIT_FSIZE).
        disk_mb: What the student's code may write in its folder, and again in /tmp and
            in /dev/shm: each is a tmpfs of this size in the sandbox (with a uid of its
            own, the student cannot write to the last two at all); without the sandbox
            only the per-file limit holds.
        processes: Processes (threads included) the student's uid may run at once
            (RLIMIT_NPROC; only with one uid per student): few, so that forking cannot
            outrun the zygote's watch of the student's memory as a whole.
        device: Where the tests run: ``cpu`` (the default: grades do not depend on the
            grading machine) or ``cuda`` (the kernels see the GPU).
        torch_threads: Threads torch may use in each kernel (OpenMP, MKL); 0 until the
            grader knows how many kernels share the machine (:meth:`sharing`). Two kernels
            each running torch's default (one thread per core) on the same cores made
            grading two at a time cost half as much CPU again: OpenMP threads that wait
            for a busy core spin.
    """

    cell_timeout: int = 120
    notebook_timeout: int = 900
    memory_mb: int = 4096
    output_chars: int = 100_000
    file_mb: int = 256
    disk_mb: int = 1024
    processes: int = 64
    device: str = "cpu"
    torch_threads: int = 0

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {self.device!r}")

    def sharing(self, kernels_at_once: int) -> Limits:
        """Returns these limits with ``torch_threads`` set for ``kernels_at_once`` kernels.

        Threads already chosen are kept; otherwise each kernel gets its share of this
        machine's cores (see :func:`cores_each`).
        """
        if self.torch_threads > 0:
            return self
        return replace(self, torch_threads=cores_each(kernels_at_once))

    def as_dict(self) -> dict[str, int | str]:
        """Returns the limits as a plain dict (for the status file and the zygote)."""
        return asdict(self)
