"""Where student code runs: inside bubblewrap when it works here, and as whom.

Student code runs in kernels forked from a zygote (see :mod:`autograder.sandbox.zygote`). When
bubblewrap (``bwrap``, Debian's ``bubblewrap`` package) works on this machine, the zygote
is started inside it: the file system is an allow-list (the system, the Python install,
the virtual environment, the two packages the kernels import) mounted read only, with a
private ``/tmp`` and one writable folder for the kernels' working copies; there is no
network, and the sandbox has its own process ids, so that everything a student started
can be killed at once. The sources, ``build/``, the gradebook and the other students'
files are simply not there. When the grader runs as root, each kernel also drops to a
uid of its own, so it cannot touch the zygote or another kernel's files.

Without bubblewrap grading still works, with the time and memory limits, and the
status file and report say that the sandbox was off.
"""

from __future__ import annotations

import fcntl
import functools
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

from autograder.course import REPO, Course
from autograder.errors import SandboxError

# Namespaces of their own: no network, own pids (kill(-1) then reaches only the
# sandbox), own IPC and hostname. The user namespace stays the host's when we are root,
# so that kernels can drop to real unprivileged uids.
UNSHARE = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts")
# What the zygote needs as root: change uid, kill and clean up after the student's uid.
ROOT_CAPABILITIES = (
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_KILL",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
)
# Uids of students' kernels: far above any real user's, one block per zygote. Every
# grading run on the machine claims its blocks with a lock (see claim_uid_block), so two
# runs at once (two courses, a regrade beside a grade) never give one uid to two students.
UID_BASE = 2_100_000_000
UID_BLOCK = 1_000_000
UID_BLOCKS = (2**32 - 2 - UID_BASE) // UID_BLOCK  # the last uid stays below 2**32 - 1
SYSTEM_DIRS = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


@dataclass(frozen=True)
class Sandbox:
    """How kernels are isolated on this machine.

    Attributes:
        bwrap: The bubblewrap executable, or None when the sandbox is off.
        separate_uids: Whether each kernel runs as a uid of its own (needs root).
        reason: Why bubblewrap is off, empty when it is on.
        packages: Folders (or files) of Python packages the kernels import from outside
            the virtual environment (mounted read only).
        hidden: Paths that must stay out of the sandbox even if under a mounted folder.
    """

    bwrap: str | None
    separate_uids: bool
    reason: str = ""
    packages: tuple[Path, ...] = field(default_factory=tuple)
    hidden: tuple[Path, ...] = field(default_factory=tuple)

    @property
    def enabled(self) -> bool:
        """Whether student code runs inside bubblewrap."""
        return self.bwrap is not None

    def describe(self) -> str:
        """Returns one line for the status file, the CSV and the report."""
        uid = "one uid per student" if self.separate_uids else "kernels share the grader's uid"
        if self.enabled:
            return f"on (bubblewrap; {uid})"
        return f"off ({self.reason}): student code ran with the grader's file access; {uid}"

    def wrap(
        self, command: list[str], writable: Path, disk_mb: int | None = None, gpu: bool = False
    ) -> list[str]:
        """Returns ``command`` run inside the sandbox, or unchanged when it is off.

        Args:
            command: The zygote's command line.
            writable: The one folder the sandbox may write to (the kernels' working
                copies); it has the same path inside and outside.
            disk_mb: What the students' code may write in all (see :func:`bwrap_arguments`).
            gpu: Whether the kernels see the GPU's device nodes.
        """
        if self.bwrap is None:
            return command
        arguments = bwrap_arguments(
            writable,
            self.packages,
            self.hidden,
            disk_mb=disk_mb,
            gpu_nodes=gpu_nodes() if gpu else (),
        )
        return [self.bwrap, *arguments, *command]


def _mounts_for_python() -> list[Path]:
    prefixes = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    return sorted(prefix for prefix in prefixes if not _under(prefix, [Path("/usr")]))


def _under(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _parents(path: Path, made: set[Path]) -> list[str]:
    # bubblewrap creates missing mount points as root-only (0700) folders: the kernels'
    # uid could not get through them to the Python install or to their working copy.
    arguments = []
    for parent in reversed(path.parents):
        if parent not in made and parent != Path("/"):
            arguments += ["--perms", "0755", "--dir", str(parent)]
            made.add(parent)
    return arguments


def bwrap_arguments(
    writable: Path,
    packages: Iterable[Path] = (),
    hidden: Iterable[Path] = (),
    disk_mb: int | None = None,
    gpu_nodes: Iterable[Path] = (),
) -> list[str]:
    """Returns bubblewrap's options for the zygote's sandbox.

    Args:
        writable: The folder mounted read-write (same path inside). Its subfolder
            ``work`` (the students' working folders) is a private tmpfs inside.
        packages: Package folders to mount read only (for example an editable install's
            source folders, which live outside the virtual environment).
        hidden: Paths covered by an empty tmpfs (folders) or /dev/null (files) when they
            lie under a mounted folder, for example the autograder's fixtures.
        disk_mb: The size of each tmpfs the students can write to (``work``, ``/tmp``,
            ``/dev/shm``), so that a student cannot fill the host's disk or memory;
            None leaves tmpfs's default (half the memory).
        gpu_nodes: Device files to bind into the sandbox's ``/dev`` (see :func:`gpu_nodes`).

    Returns:
        The options, to be followed by the command to run.
    """
    arguments: list[str] = []
    for directory in SYSTEM_DIRS:
        arguments += ["--ro-bind", directory, directory]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            arguments += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            arguments += ["--ro-bind", link, link]
    # The private /tmp comes before the binds: a later mount covers an earlier one,
    # and the virtual environment or the course may well live under /tmp.
    size = ["--size", str(disk_mb * 2**20)] if disk_mb else []
    arguments += ["--dev", "/dev", "--proc", "/proc", *size, "--tmpfs", "/tmp"]
    arguments += [*size, "--tmpfs", "/dev/shm"]
    for node in gpu_nodes:
        arguments += ["--dev-bind", str(node), str(node)]
    mounted = [Path(directory) for directory in SYSTEM_DIRS]
    made: set[Path] = {Path("/tmp")}
    for folder in [*_mounts_for_python(), *(Path(p).resolve() for p in packages)]:
        if not _under(folder, mounted):
            arguments += _parents(folder, made)
            arguments += ["--ro-bind", str(folder), str(folder)]
            mounted.append(folder)
    for path in hidden:
        path = Path(path).resolve()
        if path.exists() and _under(path, mounted):
            if path.is_dir():
                arguments += ["--tmpfs", str(path)]
            else:
                arguments += ["--ro-bind", os.devnull, str(path)]
    writable = Path(writable).resolve()
    arguments += _parents(writable, made)
    arguments += ["--bind", str(writable), str(writable), "--chdir", str(writable)]
    # The kernels' working folders: what a student writes stays inside the sandbox,
    # in memory bounded by disk_mb, and never reaches the host's disk.
    arguments += [*size, "--tmpfs", str(writable / "work")]
    arguments += [*UNSHARE, "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:
        arguments += ["--cap-drop", "ALL"]
        for capability in ROOT_CAPABILITIES:
            arguments += ["--cap-add", capability]
    return arguments


def _open_to_others(path: Path) -> bool:
    """Whether a uid other than the owner can reach and read ``path``."""
    path = Path(path).resolve()
    for folder in [path, *path.parents]:
        if not folder.exists() or not folder.stat().st_mode & 0o001:
            return False
    return bool(path.stat().st_mode & 0o004)


@functools.cache
def _can_switch_to_student_uids() -> bool:
    """Whether this process may run a program as the students' uids.

    Root inside a container whose user namespace maps only some uids cannot.
    """
    for uid in (UID_BASE, UID_BASE + 10 * UID_BLOCK, UID_BASE + UID_BLOCKS * UID_BLOCK - 1):
        try:
            subprocess.run(["true"], user=uid, group=uid, extra_groups=[], check=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return False
    return True


@functools.cache
def _bwrap_problem(bwrap: str) -> str:
    """Returns why ``bwrap`` cannot start a sandbox here, or "" when it can."""
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *UNSHARE]
    try:
        result = subprocess.run(
            [*probe, "--die-with-parent", "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap does not start: {error}"
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        return "bubblewrap does not start here: " + (lines[-1] if lines else "no error message")
    return ""


def detect_sandbox(
    enabled: bool = True, packages: Iterable[Path] = (), hidden: Iterable[Path] = ()
) -> Sandbox:
    """Finds out how student code can be isolated on this machine.

    Args:
        enabled: False to turn bubblewrap off even where it works.
        packages: Package folders the kernels import from outside the environment.
        hidden: Paths to keep out of the sandbox even under a mounted folder.

    Returns:
        The sandbox to use; ``bwrap`` is None, with a reason, when it is off.
    """
    packages = tuple(Path(p) for p in packages)
    separate_uids = sys.platform == "linux" and os.geteuid() == 0 and _can_switch_to_student_uids()
    found = shutil.which("bwrap")
    if not enabled:
        reason = "turned off with --no-sandbox"
    elif sys.platform != "linux":
        reason = f"bubblewrap needs Linux, this is {sys.platform}"
    elif found is None:
        reason = "bubblewrap is not installed (Debian: apt install bubblewrap)"
    else:
        reason = _bwrap_problem(found)
    if reason and separate_uids:
        # Outside bubblewrap the kernels' uid must read Python where it really is
        # (inside, bubblewrap's mount points are open to it).
        needed = [Path(sys.base_prefix), Path(sys.prefix), *packages]
        separate_uids = all(_open_to_others(path) for path in needed)
    return Sandbox(
        bwrap=None if reason else found,
        separate_uids=separate_uids,
        reason=reason,
        packages=packages,
        hidden=tuple(Path(p) for p in hidden),
    )


def course_sandbox(course: Course, enabled: bool = True) -> Sandbox:
    """Returns the sandbox for ``course``: its packages in, its private files out.

    Args:
        course: The course being graded.
        enabled: False to grade without bubblewrap.
    """
    # Found, not imported: importing autograd_pitfalls would import torch here. Of the
    # grader, only autograder.kernel (and the package's lazy __init__) runs inside: the
    # pipeline, the fixtures and the course's sources are simply not there.
    helpers = Path(find_spec("autograd_pitfalls").origin).parent  # type: ignore[union-attr, arg-type]
    grader = Path(find_spec("autograder").origin)  # type: ignore[union-attr, arg-type]
    packages = [helpers, grader, grader.parent / "kernel"]
    hidden = [course.root, course.solutions, course.source, REPO / ".git"]
    return detect_sandbox(enabled, packages=packages, hidden=hidden)


def machine_lock_folder() -> Path:
    """Where the locks shared by every grading run on this machine live.

    Every run must look in the same place: /run/lock where it exists, else the
    temporary folder.
    """
    run_lock = Path("/run/lock")
    if run_lock.is_dir() and os.access(run_lock, os.W_OK):
        return run_lock
    return Path(tempfile.gettempdir())


def claim_uid_block(folder: Path | None = None) -> tuple[int, object]:
    """Claims a block of student uids that no other grading run on this machine holds.

    The claim is an exclusive ``flock`` on a file per block, held while the returned
    handle stays open: a run that ends, or dies, gives its blocks back.

    Args:
        folder: Where the lock files are (the default is shared by every run here).

    Returns:
        ``(block, handle)``: uids ``UID_BASE + block * UID_BLOCK + n`` are this run's;
        close ``handle`` to give them back.

    Raises:
        RuntimeError: If every block is held.
    """
    folder = folder or machine_lock_folder()
    for block in random.sample(range(UID_BLOCKS), UID_BLOCKS):
        handle = open(folder / f"autograder-uids-{block}.lock", "a")  # noqa: SIM115
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return block, handle
    raise SandboxError(f"all {UID_BLOCKS} blocks of student uids are held by other runs")


# What CUDA opens: the control and UVM devices, one node per GPU, and the capability files.
GPU_NODE_PATTERNS = ("nvidia[0-9]*", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps/*")


def gpu_nodes(dev: Path = Path("/dev")) -> list[Path]:
    """Returns the NVIDIA device files on this machine, for grading with ``--device cuda``.

    Args:
        dev: Where device files live.
    """
    return sorted({path for pattern in GPU_NODE_PATTERNS for path in dev.glob(pattern)})
