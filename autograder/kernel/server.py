"""The zygote: a process that imports torch once and forks a fresh kernel for every student.

Runs inside the sandbox (see :mod:`autograder.sandbox.bwrap`), started by the grader's
client :class:`autograder.sandbox.zygote.Zygote` as ``python -m autograder.kernel.server``.
Like everything in :mod:`autograder.kernel`, it imports nothing else from ``autograder``:
this package is all of the grader the sandbox mounts.

A fresh kernel spends about 2 s importing torch (and more on the first optimiser, which
imports ``torch._dynamo``) before it runs a single line of the student's notebook. The
zygote imports torch, IPython, ipykernel and the course's helpers once, and never runs
student code; each kernel is a ``fork()`` of it, so it starts with those modules loaded
and with nothing any other student did: a forked child gets a copy of the zygote's
memory, never a share of another child's. No ZeroMQ context, event loop or torch thread
pool exists before the fork (the kernel creates its own after it).

The child then becomes that student's kernel: it gets a session of its own, resource
limits (address space, file size, processes), a working copy as its folder, its own
unprivileged uid when the zygote runs as root, and runs ``IPKernelApp`` with the
connection file jupyter_client wrote. When the grader is done with a student, the zygote
kills every process the student left behind (``kill(-1)`` in the sandbox's own pid
namespace, else every process of the student's uid and every descendant, which stay
ours because the zygote is a child subreaper) and removes the student's folder.

The grader talks to the zygote through its stdin and stdout, one JSON object per line
(see :mod:`autograder.kernel.protocol`): ``spawn``, ``poll``, ``signal`` and ``reap``.
This module imports nothing heavy at import time; the packages are imported in
:func:`serve`.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import select
import shutil
import signal
import sys
import threading
import time
import traceback
import warnings
from pathlib import Path

import psutil

from autograder.kernel import keyring, protocol
from autograder.kernel.fs import chown_tree, remove_tree
from autograder.kernel.watch import MemoryWatch, remove_ipc_objects_of

# Imported once in the zygote; every kernel starts with them loaded. torch._dynamo is
# what the first torch.optim optimiser imports (about 1.5 s); torch.distributed.tensor is
# what torch imports at the first op on a tensor subclass, the GPU stand-in's (about 1 s).
PRELOAD = (
    "numpy",
    "torch",
    "torch._dynamo",
    "torch.distributed.tensor",
    "autograd_pitfalls",
    "IPython",
    "ipykernel.ipkernel",
    "ipykernel.kernelapp",
    "ipykernel.debugger",  # imports pdb, debugpy: a third of a kernel's start-up
    "sqlite3",
    "autograder.kernel.guard",
)
# How often the zygote measures the memory of the student it serves (autograder.kernel.watch).
WATCH_SECONDS = 0.2
# The backend ipykernel sets for a kernel's matplotlib (ipykernel/kernelapp.py).
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38


def _prctl(option: int, value: int) -> None:
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _memory_now(kind: str) -> int:
    """Returns this process's address space (``"vms"``) or data segment (``"data"``), bytes."""
    return getattr(psutil.Process().memory_info(), kind)


def _set_limits(limits: dict[str, int], own_uid: bool) -> None:
    import resource

    def cap(which: int, value: int) -> None:
        # soft == hard: the student's code cannot raise it again.
        resource.setrlimit(which, (value, value))

    mib = 1024 * 1024
    # The fork starts with torch mapped: the cap is on what the student adds to that.
    if limits.get("device", "cpu") == "cuda":
        # CUDA reserves terabytes of address space (PROT_NONE, never written), so an
        # address-space cap would stop it from starting. RLIMIT_DATA counts what can be
        # written (heap and private writable mappings: every tensor on the host).
        cap(resource.RLIMIT_DATA, _memory_now("data") + limits["memory_mb"] * mib)
    else:
        cap(resource.RLIMIT_AS, _memory_now("vms") + limits["memory_mb"] * mib)
    cap(resource.RLIMIT_FSIZE, limits["file_mb"] * mib)
    cap(resource.RLIMIT_CORE, 0)
    # A backstop for the wall-clock limit the grader enforces; CPU time, all threads.
    cap(resource.RLIMIT_CPU, 2 * limits["notebook_timeout"] + 60)
    if own_uid:
        # Threads count too: room for torch's pool of threads on a machine with many cores.
        threads = int(limits.get("torch_threads", 0))
        cap(resource.RLIMIT_NPROC, max(limits["processes"], 2 * threads + 32))


def keep_priority_in_new_session() -> None:
    """Gives this process's scheduling group its own ``nice``, after it began a session.

    On Linux with ``sched_autogroup`` (the default of most distributions) every session is
    a scheduling group of its own, and a new group starts at nice 0 whatever its process's
    nice: a kernel that calls ``setsid`` (as every kernel here does, and bubblewrap's
    ``--new-session``) would take a full share of the CPU even when the grader was started
    with ``nice``. Where there is no autogroup, or the process is not niced, it does nothing.
    """
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    if niceness <= 0:
        return
    # OSError: no autogroup here, or /proc not writable.
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as autogroup:
        autogroup.write(str(niceness))


def _reseed() -> None:
    # A fresh process draws new seeds; a fork would repeat the zygote's.
    import random

    random.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()


def _become_kernel(request: dict, channel_fds: tuple[int, ...]) -> None:
    """Turns this freshly forked child into the student's kernel; never returns."""
    code = 1
    try:
        os.setsid()
        keep_priority_in_new_session()
        for fd in channel_fds:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDWR)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL)
        uid = request.get("uid")
        _set_limits(request["limits"], own_uid=uid is not None)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            keyring.clear_own_keys()
            keyring.join_fresh_session_keyring()
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # As jupyter_client sets it for a kernel it starts. ipykernel read it when the
        # zygote imported ipykernel.kernelapp, so the kernel polls no parent: the
        # PDEATHSIG above is what ends it with the zygote.
        os.environ["JPY_PARENT_PID"] = str(os.getppid())
        os.umask(0o077)
        _reseed()
        from ipykernel.kernelapp import IPKernelApp

        from autograder.kernel import guard

        sys.argv = ["ipykernel_launcher", *request["argv"]]
        app = IPKernelApp.instance()
        app.initialize(request["argv"])
        guard.install(app.kernel)
        app.start()
        code = 0
    except BaseException:
        # To the kernel's log: once initialised, ipykernel's sys.stderr goes to IOPub,
        # where nobody listens to a kernel that failed to start.
        traceback.print_exc(file=sys.__stderr__)
        sys.__stderr__.flush()
    finally:
        # Never return into the zygote's loop, and skip its atexit handlers.
        os._exit(code)


class _Server:
    """The zygote's request loop."""

    def __init__(self, own_pid_namespace: bool) -> None:
        self.own_pid_namespace = own_pid_namespace
        self.exit_codes: dict[int, int] = {}
        # The memory of each live kernel's student, all processes together.
        self.watches: dict[int, tuple[MemoryWatch, int | None]] = {}

    def spawn(self, request: dict, channel_fds: tuple[int, ...]) -> dict:
        # In the sandbox the working folder lies in a tmpfs only this side sees.
        work, uid = Path(request["cwd"]), request.get("uid")
        work.mkdir(mode=0o700, parents=True, exist_ok=True)
        files = request.get("files")
        if files and Path(files).is_dir():
            shutil.copytree(files, work, symlinks=True, dirs_exist_ok=True)
        if uid is not None and os.geteuid() == 0:
            chown_tree(work, uid)
        pid = os.fork()
        if pid == 0:
            _become_kernel(request, channel_fds)
        # The kernel's pid may be one an earlier child had (pids wrap at pid_max, 32768
        # on many hosts): that child's exit code is not this kernel's.
        self.exit_codes.pop(pid, None)
        memory_mb = request.get("limits", {}).get("memory_mb")
        if memory_mb:
            # In bubblewrap the IPC namespace is this zygote's: its objects are the student's.
            watch = MemoryWatch(int(memory_mb) * 2**20, self.own_pid_namespace, uid)
            watch.over([pid])  # what the kernel holds as it starts: a fork of this process
            self.watches[pid] = (watch, uid)
        return {"pid": pid}

    def watch(self) -> None:
        """Measures each live student's memory; kills the processes of one past the cap."""
        for pid, (watch, uid) in list(self.watches.items()):
            if watch.stopped or self.poll(pid) is not None:
                continue
            reason = watch.over([pid, *(other for other in self._others(uid) if other != pid)])
            if reason:
                watch.stopped = reason
                print(f"zygote: {reason}: stopped", file=sys.stderr)
                self._kill_student(uid, deadline=time.monotonic() + 10)

    def stopped(self, pid: int) -> str:
        """Why the watch killed the kernel ``pid`` ("" when it did not)."""
        watched = self.watches.get(pid)
        return watched[0].stopped if watched else ""

    def poll(self, pid: int) -> int | None:
        if pid in self.exit_codes:
            return self.exit_codes[pid]
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return self.exit_codes.setdefault(pid, -signal.SIGKILL)
        if done == 0:
            return None
        self.exit_codes[pid] = os.waitstatus_to_exitcode(status)
        return self.exit_codes[pid]

    def signal(self, pid: int, signum: int) -> None:
        # The kernel leads its own session and process group, like jupyter_client's
        # local provisioner, so this also reaches what it started in the foreground.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    def _reap_children(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.exit_codes[pid] = os.waitstatus_to_exitcode(status)

    def _others(self, uid: int | None) -> list[int]:
        """Processes to kill: descendants of the zygote, and any process of ``uid``."""
        children: dict[int, list[int]] = {}
        found = set()
        for process in psutil.process_iter(["ppid", "uids", "status"]):
            info = process.info
            if info["status"] == psutil.STATUS_ZOMBIE or info["ppid"] is None:
                continue  # a zombie is already dead (reaped below); None: it just exited
            children.setdefault(info["ppid"], []).append(process.pid)
            if uid is not None and info["uids"] is not None and info["uids"].real == uid:
                found.add(process.pid)
        frontier = [os.getpid()]
        while frontier:
            below = children.get(frontier.pop(), [])
            found.update(below)
            frontier.extend(below)
        found -= {os.getpid(), 1}
        return sorted(found)

    def _kill_as(self, uid: int) -> None:
        # kill(-1) from a process of the student's uid reaches exactly that uid's
        # processes, however they were started.
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                with contextlib.suppress(OSError):
                    os.kill(-1, signal.SIGKILL)
                keyring.clear_own_keys()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    def _kill_student(self, uid: int | None, deadline: float) -> tuple[int, list[int]]:
        """Kills every process the student has, until none is left or ``deadline``."""
        killed = 0
        while True:
            if self.own_pid_namespace:
                # In our own pid namespace every process but init and us is a kernel's.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(-1, signal.SIGKILL)
            elif uid is not None and os.geteuid() == 0:
                self._kill_as(uid)
            for pid in self._others(uid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
            self._reap_children()
            left = self._others(uid)
            if not left or time.monotonic() > deadline:
                return killed, left
            time.sleep(0.01)

    def reap(self, folder: str, uid: int | None, work: str | None = None) -> dict:
        """Kills everything the student left running and removes their folders."""
        killed, left = self._kill_student(uid, deadline=time.monotonic() + 10)
        if uid is not None and os.geteuid() == 0:
            # Once nothing of the uid runs: no process of it can add a key after this.
            self._kill_as(uid)
        self.watches.clear()  # one student at a time: theirs is over
        # Shared memory, message queues and semaphores outlive their processes: the
        # namespace is this zygote's in the sandbox (all of it is the student's);
        # outside, only the student's uid's objects are known to be theirs.
        if self.own_pid_namespace or uid is not None:
            remove_ipc_objects_of(None if self.own_pid_namespace else uid)
        remove_tree(folder)
        if work is not None:
            remove_tree(work)
        if self.own_pid_namespace:
            _empty_scratch_dirs(keep=Path(folder).parent)
        return {"killed": killed, "left": left}


def _mount_points() -> set[Path]:
    """Returns where something is mounted in this process's view of the file system."""
    # psutil decodes the mount table's octal escapes and non-ASCII paths (a course under
    # /tmp/josé) as the file system names them.
    return {Path(partition.mountpoint) for partition in psutil.disk_partitions(all=True)}


def _empty_scratch_dirs(keep: Path) -> None:
    # The sandbox's /tmp and /dev/shm are shared by the kernels this zygote forks, one
    # after another: nothing a student wrote there may reach the next one. What the
    # sandbox mounted there (the writable folder, a virtual environment or the course
    # when they live under /tmp) is not the students' and stays; the folders leading to
    # it are emptied of anything else.
    mounted = _mount_points() | {keep}
    leading = {parent for point in mounted for parent in point.parents}

    def empty(folder: Path) -> None:
        for entry in folder.iterdir():
            if entry in mounted:
                continue
            if entry in leading:
                empty(entry)
            elif entry.is_dir() and not entry.is_symlink():
                remove_tree(entry)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()

    for scratch in (Path("/tmp"), Path("/dev/shm")):
        if scratch.is_dir():
            empty(scratch)


class _Lines:
    """The grader's requests, one line at a time, waiting for the next at most ``timeout``."""

    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor
        self.buffer = b""

    def next(self, timeout: float | None) -> str | None:
        """Returns the next line; None when ``timeout`` passed first, "" at the end."""
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.descriptor], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(self.descriptor, 1 << 16)
            if not chunk:
                return ""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8") + "\n"


def preload_modules(names: tuple[str, ...]) -> dict[str, object]:
    """Imports ``names`` here, so that every kernel forked afterwards starts with them.

    A module that fails to import is reported, not fatal: the kernel that needs it will
    import it (and fail) itself, where the student sees why. A fork copies only the
    forking thread, so a lock another thread holds would stay held in every kernel: the
    imports stop at the first module that leaves a thread running, and say which.

    Returns:
        ``loaded`` (the names imported), ``failed`` (name: why), and ``threaded``: the
        module after which a thread ran (the zygote must be replaced), or "".
    """
    loaded, failed = [], {}
    running = set(threading.enumerate())  # none in the zygote; some where tests call this
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            try:
                importlib.import_module(name)
            except Exception as error:  # an import may raise anything; the kernel will too
                failed[name] = f"{type(error).__name__}: {error}"
                print(f"zygote: cannot preload {name}: {error}", file=sys.stderr)
                continue
            if set(threading.enumerate()) - running:
                print(f"zygote: importing {name} started a thread", file=sys.stderr)
                return {"loaded": loaded, "failed": failed, "threaded": name}
            loaded.append(name)
    return {"loaded": loaded, "failed": failed, "threaded": ""}


def serve(own_pid_namespace: bool, preload: tuple[str, ...] = PRELOAD) -> None:
    """Imports ``preload``, then answers requests on stdin until it is closed.

    Args:
        own_pid_namespace: True inside bubblewrap: ``kill(-1)`` stays in the sandbox.
        preload: Modules every kernel should start with.
    """
    if own_pid_namespace and os.getpid() != 2:
        # kill(-1) and emptying /tmp are only safe inside bubblewrap, where the zygote
        # is pid 2 of a fresh pid namespace (bubblewrap's init is pid 1).
        raise SystemExit("zygote: --own-pid-namespace outside a fresh pid namespace")
    keep_priority_in_new_session()  # bubblewrap's --new-session
    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # a stray print must not corrupt the protocol
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of kernels stay our descendants
    _prctl(_PR_SET_DUMPABLE, 0)  # a kernel of the same uid cannot ptrace us
    # ipykernel points matplotlib at its inline backend when a kernel starts, unless
    # MPLBACKEND says otherwise; matplotlib reads MPLBACKEND once, when it is imported. A
    # matplotlib preloaded here must read what every kernel's ipykernel would set, or the
    # kernels' figures are never shown.
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    loaded = preload_modules(preload)["loaded"]
    server = _Server(own_pid_namespace)
    channel = (requests.fileno(), replies.fileno())

    def reply(**fields: object) -> None:
        replies.write(protocol.encode(fields))
        replies.flush()

    reply(ok=True, pid=os.getpid(), preloaded=loaded)
    lines = _Lines(requests.fileno())
    next_watch = time.monotonic()
    while True:
        # While a kernel runs, its student's memory is measured every WATCH_SECONDS,
        # between requests, however often they come.
        if server.watches and time.monotonic() >= next_watch:
            server.watch()
            next_watch = time.monotonic() + WATCH_SECONDS
        timeout = max(0.0, next_watch - time.monotonic()) if server.watches else None
        line = lines.next(timeout=timeout)
        if line is None:
            continue  # time to measure
        if not line:
            break  # the grader closed its end
        try:
            request = protocol.decode(line)
            op = request.pop("op")
            if op == protocol.SPAWN:
                reply(ok=True, **server.spawn(request, channel))
            elif op == protocol.POLL:
                pid = request["pid"]
                reply(ok=True, status=server.poll(pid), stopped=server.stopped(pid))
            elif op == protocol.SIGNAL:
                server.signal(request["pid"], request["signum"])
                reply(ok=True)
            elif op == protocol.PRELOAD:
                reply(ok=True, **preload_modules(tuple(map(str, request["modules"]))))
            elif op == protocol.REAP:
                reply(
                    ok=True,
                    **server.reap(request["folder"], request.get("uid"), request.get("work")),
                )
            else:
                reply(ok=False, error=f"unknown request {op!r}")
        except Exception as error:
            reply(ok=False, error=f"{type(error).__name__}: {error}")


def main(argv: list[str] | None = None) -> None:
    """Command line of the zygote process (started by the client's ``Zygote.launch``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m autograder.kernel.server")
    parser.add_argument("--own-pid-namespace", action="store_true")
    parser.add_argument("--preload", default=",".join(PRELOAD))
    args = parser.parse_args(argv)
    serve(args.own_pid_namespace, tuple(name for name in args.preload.split(",") if name))
    # Every kernel was reaped on request; what is left is the interpreter's own teardown of
    # torch, matplotlib and the rest, about a second that the grader waits for at the end
    # of every run. Nothing of it needs doing (every reply was flushed as it was sent).
    os._exit(0)


if __name__ == "__main__":
    main()
