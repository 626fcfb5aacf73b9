"""A process that imports torch once and forks a fresh kernel for every student.

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

The grader talks to the zygote through its stdin and stdout, one JSON object per line:
``spawn``, ``poll``, ``signal`` and ``reap``. :class:`Zygote` is that client;
:mod:`autograder.sandbox.provisioner` plugs it into jupyter_client.

Run as ``python -m autograder.sandbox.zygote`` (this module imports nothing heavy at import time;
the packages are imported in :func:`serve`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.kernel.fs import remove_tree
from autograder.sandbox.bwrap import UID_BASE, UID_BLOCK, Sandbox, claim_uid_block
from autograder.sandbox.limits import Limits

# Imported once in the zygote; every kernel starts with them loaded. torch._dynamo is
# what the first torch.optim optimiser imports (about 1.5 s).
PRELOAD = (
    "numpy",
    "torch",
    "torch._dynamo",
    "autograd_pitfalls",
    "IPython",
    "ipykernel.ipkernel",
    "ipykernel.kernelapp",
    "ipykernel.debugger",  # imports pdb, debugpy: a third of a kernel's start-up
    "sqlite3",
    "autograder.kernel.guard",
)
# Kernels get only these variables of the grader's environment (no tokens, no secrets).
ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "SHELL", "USER", "LOGNAME")
ENV_KEPT_PREFIXES = ("LC_", "JPY_", "NBGRADER_", "OMP_", "MKL_", "OPENBLAS_")
START_TIMEOUT = 180  # seconds; the zygote imports torch inside the sandbox

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38


# The kernel keyring (keyctl(2)): a key of a uid's user keyring outlives its processes,
# and the next student (or run) with that uid could read it.
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_JOIN_SESSION_KEYRING = 1
_KEYCTL_CLEAR = 7
_KEYCTL_GET_PERSISTENT = 22
_KEY_SPEC_PROCESS_KEYRING = -2
_KEY_SPEC_USER_KEYRING = -4
_KEY_SPEC_USER_SESSION_KEYRING = -5


class ZygoteError(RuntimeError):
    """The zygote did not start, or died, or refused a request."""


def _prctl(option: int, value: int) -> None:
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _keyctl(*args: int) -> int:
    """Calls keyctl(2) through libc's syscall (keyutils may not be installed)."""
    number = _SYS_KEYCTL.get(os.uname().machine)
    if sys.platform != "linux" or number is None:
        return -1
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(number, *(ctypes.c_long(arg) for arg in args))


def clear_own_keys() -> None:
    """Empties the keyrings this process's uid keeps beyond its processes.

    The user keyring, the user session keyring and the persistent keyring belong to the
    uid, not to a process: cleared before a student's code runs and after it is reaped,
    no key passes from one student (or run) to the next one with the same uid. Errors
    (no keyring yet, no keyctl in this kernel) leave nothing to clear.
    """
    _keyctl(_KEYCTL_CLEAR, _KEY_SPEC_USER_KEYRING)
    _keyctl(_KEYCTL_CLEAR, _KEY_SPEC_USER_SESSION_KEYRING)
    persistent = _keyctl(_KEYCTL_GET_PERSISTENT, -1, _KEY_SPEC_PROCESS_KEYRING)
    if persistent > 0:
        _keyctl(_KEYCTL_CLEAR, persistent)


# --------------------------------------------------------------------------------------
# The zygote process (runs inside the sandbox)


def _status_bytes(field: str) -> int:
    """Returns a size from /proc/self/status, for example ``VmSize`` or ``VmData``."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    return 0


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
        cap(resource.RLIMIT_DATA, _status_bytes("VmData") + limits["memory_mb"] * mib)
    else:
        cap(resource.RLIMIT_AS, _status_bytes("VmSize") + limits["memory_mb"] * mib)
    cap(resource.RLIMIT_FSIZE, limits["file_mb"] * mib)
    cap(resource.RLIMIT_CORE, 0)
    # A backstop for the wall-clock limit the grader enforces; CPU time, all threads.
    cap(resource.RLIMIT_CPU, 2 * limits["notebook_timeout"] + 60)
    if own_uid:
        cap(resource.RLIMIT_NPROC, limits["processes"])


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
            clear_own_keys()
            # A new anonymous session keyring: not the zygote's, not a previous kernel's.
            _keyctl(_KEYCTL_JOIN_SESSION_KEYRING, 0)
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # ipykernel echoes captured output to the terminal when it has no parent, which
        # here would feed its own captured stdout back to itself; with a parent it does
        # not, and it exits when the zygote does.
        os.environ["JPY_PARENT_PID"] = str(os.getppid())
        os.umask(0o077)
        _reseed()
        from ipykernel.kernelapp import IPKernelApp

        from autograder.kernel import guard as kernel_guard

        sys.argv = ["ipykernel_launcher", *request["argv"]]
        app = IPKernelApp.instance()
        app.initialize(request["argv"])
        kernel_guard.install(app.kernel)
        app.start()
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        # Never return into the zygote's loop, and skip its atexit handlers.
        os._exit(code)


class _Server:
    """The zygote's request loop."""

    def __init__(self, own_pid_namespace: bool) -> None:
        self.own_pid_namespace = own_pid_namespace
        self.exit_codes: dict[int, int] = {}

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
        return {"pid": pid}

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
        parents: dict[int, int] = {}
        owners: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
            except OSError:
                continue
            if fields.get("State", "").split()[:1] == ["Z"]:
                continue  # a zombie: already dead, reaped below
            parents[int(entry)] = int(fields["PPid"])
            owners[int(entry)] = int(fields["Uid"].split()[0])
        me = os.getpid()
        found = {pid for pid, owner in owners.items() if uid is not None and owner == uid}
        frontier = [me]
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, ppid in parents.items() if ppid == parent]
            found.update(children)
            frontier.extend(children)
        found.discard(me)
        found.discard(1)
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
                clear_own_keys()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    def reap(self, folder: str, uid: int | None, work: str | None = None) -> dict:
        """Kills everything the student left running and removes their folders."""
        deadline = time.monotonic() + 10
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
                break
            time.sleep(0.01)
        if uid is not None and os.geteuid() == 0:
            # Once nothing of the uid runs: no process of it can add a key after this.
            self._kill_as(uid)
        remove_tree(folder)
        if work is not None:
            remove_tree(work)
        if self.own_pid_namespace:
            _empty_scratch_dirs(keep=Path(folder).parent)
        return {"killed": killed, "left": left}


def _mount_points() -> set[Path]:
    """Returns where something is mounted in this process's view of the file system."""
    points = set()
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            # Spaces and the like in a path are written as octal escapes (\040).
            point = line.split()[1].encode().decode("unicode_escape")
            points.add(Path(point))
    return points


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
    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # a stray print must not corrupt the protocol
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of kernels stay our descendants
    _prctl(_PR_SET_DUMPABLE, 0)  # a kernel of the same uid cannot ptrace us
    loaded = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in preload:
            try:
                importlib.import_module(name)
            except ImportError as error:
                print(f"zygote: cannot preload {name}: {error}", file=sys.stderr)
            else:
                loaded.append(name)
    server = _Server(own_pid_namespace)
    channel = (requests.fileno(), replies.fileno())

    def reply(**fields: object) -> None:
        replies.write(json.dumps(fields) + "\n")
        replies.flush()

    reply(ok=True, pid=os.getpid(), preloaded=loaded)
    for line in requests:
        try:
            request = json.loads(line)
            op = request.pop("op")
            if op == "spawn":
                reply(ok=True, **server.spawn(request, channel))
            elif op == "poll":
                reply(ok=True, status=server.poll(request["pid"]))
            elif op == "signal":
                server.signal(request["pid"], request["signum"])
                reply(ok=True)
            elif op == "reap":
                reply(
                    ok=True,
                    **server.reap(request["folder"], request.get("uid"), request.get("work")),
                )
            else:
                reply(ok=False, error=f"unknown request {op!r}")
        except Exception as error:
            reply(ok=False, error=f"{type(error).__name__}: {error}")


# --------------------------------------------------------------------------------------
# The grader's side


@dataclass(frozen=True)
class KernelSlot:
    """The folders of one student's kernel, under the zygote's writable folder.

    Attributes:
        root: ``<run>/kNNNN``: removed when the student is done.
        work: The kernel's working directory (its fresh working copy).
        ipc: Where the kernel's ZeroMQ sockets live (IPC transport: no network needed).
        connection_file: The connection file jupyter_client writes for the kernel.
        log: The kernel's stdout and stderr outside ZeroMQ (start-up errors).
        uid: The kernel's own uid, or None when kernels share the grader's.
    """

    root: Path
    work: Path
    ipc: Path
    connection_file: Path
    log: Path
    uid: int | None

    @property
    def files(self) -> Path:
        """The assignment's data files for the kernel, copied into ``work`` at its start.

        ``work`` is a tmpfs that only the sandbox sees, so the grader puts them here.
        """
        return self.root / "files"

    def hand_over(self) -> None:
        """Gives the student's uid its sockets folder and connection file.

        The working copy is the zygote's to hand over (see ``_Server.spawn``): in the
        sandbox it lies in a tmpfs only the zygote sees.
        """
        if self.uid is None:
            return
        for path in (self.ipc, self.connection_file):
            chown_tree(path, self.uid)


def chown_tree(path: Path, uid: int) -> None:
    """Makes ``uid`` (and its group) the owner of ``path`` and, for a folder, all under it."""
    for folder, _, files in os.walk(path) if path.is_dir() else [(path, [], [])]:
        os.chown(folder, uid, uid)
        for name in files:
            os.chown(Path(folder) / name, uid, uid, follow_symlinks=False)


def kernel_environment(
    base: dict[str, str], slot: KernelSlot, device: str = "cpu"
) -> dict[str, str]:
    """Returns the environment of a student's kernel: a few of ``base``'s variables.

    Args:
        base: The environment jupyter_client would give the kernel.
        slot: The kernel's folders: HOME and TMPDIR point into its working copy.
        device: ``cpu`` hides every GPU from the kernel; ``cuda`` leaves them visible.
    """
    env = {
        key: value
        for key, value in base.items()
        if key in ENV_KEPT or key.startswith(ENV_KEPT_PREFIXES)
    }
    env.update(
        HOME=str(slot.work),
        TMPDIR=str(slot.work),
        PWD=str(slot.work),
        PYTHONDONTWRITEBYTECODE="1",
    )
    if device == "cpu":
        # Grades must not depend on the grader's hardware, and CUDA cannot start under
        # the address-space cap (it reserves far more than it uses): the tests run on
        # the CPU, decided here rather than by a failing CUDA initialisation.
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


@dataclass(frozen=True)
class Handoff:
    """A started zygote, passed to the grading process that will use it.

    Attributes:
        channel: The grader's end of the zygote's socket (picklable for a worker process).
        run_dir: The zygote's writable folder.
        uid_block: The block of student uids the starting process claimed, or None.
    """

    channel: socket.socket
    run_dir: Path
    uid_block: int | None = None


class Zygote:
    """The grader's handle on one zygote process: start it, fork kernels, clean up.

    One zygote serves one grading process, one kernel at a time (the grader runs one
    notebook at a time per process; ``--jobs N`` runs N processes). It talks over a
    socket pair, so that the process that starts it (early, while the grader is still
    importing nbgrader) can hand it to the worker process that uses it.

    Args:
        sandbox: Whether and how to wrap the zygote in bubblewrap.
        run_dir: A folder for the kernels' working copies (created if missing).
        limits: The limits applied to every kernel.
        worker: This grading process's number.
        preload: Modules to import before forking.
        uid_block: The block of kernel uids to use, claimed by the process that started
            the zygote; by default one is claimed here (when kernels get uids of their own)
            and given back by :meth:`close`.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        run_dir: Path,
        limits: Limits,
        worker: int = 0,
        preload: tuple[str, ...] = PRELOAD,
        uid_block: int | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.run_dir = Path(run_dir).resolve()
        self.limits = limits
        self.worker = worker
        self.uid_block = uid_block
        self._uid_claim = None
        if uid_block is None and sandbox.separate_uids:
            self.uid_block, self._uid_claim = claim_uid_block()
        self.preload = preload
        self.process: subprocess.Popen[bytes] | None = None
        self.channel: socket.socket | None = None
        self.kernels = 0
        self._ready = False
        self._dead = False
        self._lock = threading.Lock()

    def launch(self) -> None:
        """Starts the zygote process and returns at once (it imports torch for seconds)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir.chmod(0o755)
        # The kernels' working folders (a tmpfs in the sandbox); their uids pass through.
        (self.run_dir / "work").mkdir(mode=0o711, exist_ok=True)
        command = [sys.executable, "-m", "autograder.sandbox.zygote"]
        if self.sandbox.enabled:
            command.append("--own-pid-namespace")
        command += ["--preload", ",".join(self.preload)]
        env = {
            key: value
            for key, value in os.environ.items()
            if key in ENV_KEPT or key.startswith(ENV_KEPT_PREFIXES)
        }
        env.update(PYTHONDONTWRITEBYTECODE="1", HOME=str(self.run_dir))
        ours, theirs = socket.socketpair()
        with (self.run_dir / "zygote.log").open("a") as log:
            self.process = subprocess.Popen(
                self.sandbox.wrap(
                    command, self.run_dir, self.limits.disk_mb, gpu=self.limits.device == "cuda"
                ),
                stdin=theirs,
                stdout=theirs,
                stderr=log,
                env=env,
                cwd=self.run_dir,
                start_new_session=True,
            )
        theirs.close()
        self._attach(ours)

    def _attach(self, channel: socket.socket) -> None:
        self.channel = channel
        self._reader = channel.makefile("r", encoding="utf-8")
        self._writer = channel.makefile("w", encoding="utf-8")
        self._ready, self._dead = False, False

    def handoff(self) -> Handoff:
        """Returns what a worker process needs to use this zygote (see :meth:`adopt`)."""
        assert self.channel is not None
        return Handoff(self.channel, self.run_dir, self.uid_block)

    @classmethod
    def adopt(cls, handoff: Handoff, sandbox: Sandbox, limits: Limits, worker: int) -> Zygote:
        """Returns a handle on a zygote another process started (the process stays theirs)."""
        zygote = cls(sandbox, handoff.run_dir, limits, worker=worker, uid_block=handoff.uid_block)
        zygote._attach(handoff.channel)
        return zygote

    def wait_ready(self) -> None:
        """Waits until the zygote has imported everything and answers.

        Raises:
            ZygoteError: If it exits or says nothing within START_TIMEOUT seconds.
        """
        if not self._ready:
            ready = self._read(timeout=START_TIMEOUT)
            if not ready.get("ok"):
                raise ZygoteError(f"the zygote did not start: {ready}")
            self._ready = True

    def start(self) -> None:
        """Starts the zygote and waits until it is ready."""
        self.launch()
        self.wait_ready()

    def _read(self, timeout: float | None = None) -> dict:
        assert self.channel is not None
        self.channel.settimeout(timeout)
        try:
            line = self._reader.readline()
        except (TimeoutError, OSError) as error:
            self._dead = True
            message = f"the zygote said nothing for {timeout} s:\n{self.log_tail()}"
            raise ZygoteError(message) from error
        finally:
            self.channel.settimeout(None)
        if not line:
            self._dead = True
            raise ZygoteError(f"the zygote exited:\n{self.log_tail()}")
        return json.loads(line)

    def log_tail(self, lines: int = 20) -> str:
        """Returns the end of the zygote's log (its stderr, and bubblewrap's)."""
        log = self.run_dir / "zygote.log"
        if not log.is_file():
            return ""
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])

    def request(self, op: str, **fields: object) -> dict:
        """Sends one request and returns the reply.

        Raises:
            ZygoteError: If the zygote is gone or answers with an error.
        """
        with self._lock:
            if not self.alive():
                raise ZygoteError(f"the zygote is not running:\n{self.log_tail()}")
            self.wait_ready()
            try:
                self._writer.write(json.dumps({"op": op, **fields}) + "\n")
                self._writer.flush()
            except OSError as error:
                self._dead = True
                raise ZygoteError(f"the zygote died:\n{self.log_tail()}") from error
            reply = self._read()
        if not reply.pop("ok", False):
            raise ZygoteError(f"zygote {op}: {reply.get('error')}")
        return reply

    def new_slot(self) -> KernelSlot:
        """Creates the folders of the next kernel and picks its uid."""
        self.kernels += 1
        root = self.run_dir / f"k{self.kernels:04d}"
        if root.exists():
            remove_tree(root)
        # work/ is a tmpfs inside the sandbox (see bwrap_arguments): the zygote makes the
        # kernel's folder there; this one on the host is used only without the sandbox.
        work, ipc = self.run_dir / "work" / root.name, root / "ipc"  # work/: made by launch
        if work.exists():
            remove_tree(work)
        for folder in (root, work, ipc):
            folder.mkdir(mode=0o700)
        root.chmod(0o711)  # the kernel's uid may pass through to ipc/
        uid = None
        if self.sandbox.separate_uids:
            uid = UID_BASE + self.uid_block * UID_BLOCK + self.kernels % UID_BLOCK
        return KernelSlot(root, work, ipc, root / "connection.json", root / "kernel.log", uid)

    def spawn(self, slot: KernelSlot, argv: list[str], env: dict[str, str]) -> int:
        """Forks a kernel for ``slot``; returns its pid (in the zygote's namespace)."""
        slot.hand_over()
        reply = self.request(
            "spawn",
            argv=argv,
            env=env,
            cwd=str(slot.work),
            files=str(slot.files),
            log=str(slot.log),
            uid=slot.uid,
            limits=self.limits.as_dict(),
        )
        return int(reply["pid"])

    def poll(self, pid: int) -> int | None:
        """Returns the kernel's exit code, or None while it runs."""
        return self.request("poll", pid=pid)["status"]

    def signal(self, pid: int, signum: int) -> None:
        """Sends ``signum`` to the kernel's process group."""
        self.request("signal", pid=pid, signum=int(signum))

    def reap(self, slot: KernelSlot) -> dict:
        """Kills every process the student left and removes the slot's folders."""
        reply = self.request("reap", folder=str(slot.root), uid=slot.uid, work=str(slot.work))
        remove_tree(slot.root)
        remove_tree(slot.work)
        return reply

    def alive(self) -> bool:
        """Whether the zygote can still be asked (its process runs, its socket is open)."""
        if self.channel is None or self._dead:
            return False
        return self.process is None or self.process.poll() is None

    def restart(self) -> None:
        """Starts a new zygote of our own in place of one that died."""
        self.close()
        self.start()

    def close(self) -> None:
        """Closes our end of the socket; the zygote (and bubblewrap) ends when all are closed.

        The process that started the zygote also waits for it, and kills it after 5 s.
        """
        if self.channel is not None:
            for stream in (self._reader, self._writer, self.channel):
                with contextlib.suppress(OSError):
                    stream.close()
            self.channel = None
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            self.process = None
        if self._uid_claim is not None:
            self._uid_claim.close()  # gives the block of uids back
            self._uid_claim = None

    def __enter__(self) -> Zygote:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def launch_zygotes(sandbox: Sandbox, limits: Limits, count: int) -> list[Zygote]:
    """Starts ``count`` zygotes without waiting: they import torch while the grader starts.

    Args:
        sandbox: How kernels are isolated.
        limits: Limits on each kernel.
        count: How many (one per grading process).

    Returns:
        The zygotes; close them, and remove their ``run_dir``, when done.
    """
    zygotes = []
    for worker in range(1, count + 1):
        run_dir = Path(tempfile.mkdtemp(prefix="autograder-"))
        zygotes.append(Zygote(sandbox, run_dir, limits, worker=worker))
        zygotes[-1].launch()
    return zygotes


def close_zygotes(zygotes: list[Zygote]) -> None:
    """Stops the zygotes and removes their folders."""
    for kernels in zygotes:
        kernels.close()
        remove_tree(kernels.run_dir)


_current: Zygote | None = None


@contextlib.contextmanager
def using(zygote: Zygote) -> Iterator[Zygote]:
    """Makes ``zygote`` the one that :mod:`autograder.sandbox.provisioner` forks kernels from."""
    global _current
    previous, _current = _current, zygote
    try:
        yield zygote
    finally:
        _current = previous


def current() -> Zygote:
    """Returns the zygote set by :func:`using`.

    Raises:
        ZygoteError: If none is set (the provisioner was used outside the grader).
    """
    if _current is None:
        raise ZygoteError("no zygote: kernels of this provisioner start inside the grader")
    return _current


def main(argv: list[str] | None = None) -> None:
    """Command line of the zygote process (started by :meth:`Zygote.start`)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m autograder.sandbox.zygote")
    parser.add_argument("--own-pid-namespace", action="store_true")
    parser.add_argument("--preload", default=",".join(PRELOAD))
    args = parser.parse_args(argv)
    serve(args.own_pid_namespace, tuple(name for name in args.preload.split(",") if name))


if __name__ == "__main__":
    main()
