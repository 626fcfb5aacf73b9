"""The grader's handle on a zygote: start it in the sandbox, fork kernels, clean up.

The zygote itself (:mod:`autograder.kernel.server`) runs inside the sandbox, imports
torch once and forks a fresh kernel for every student. This module is its client: it
starts the zygote inside bubblewrap, asks it for kernels over a socket, one JSON object
per line (:mod:`autograder.kernel.protocol`), and prepares each kernel's folders and uid.
:mod:`autograder.sandbox.provisioner` plugs it into jupyter_client.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import AutograderError
from autograder.kernel import protocol
from autograder.kernel.fs import chown_tree, remove_tree
from autograder.kernel.server import PRELOAD
from autograder.sandbox.bwrap import UID_BASE, UID_BLOCK, Sandbox, claim_uid_block
from autograder.sandbox.limits import Limits

# Kernels get only these variables of the grader's environment (no tokens, no secrets).
ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "SHELL", "USER", "LOGNAME")
ENV_KEPT_PREFIXES = ("LC_", "JPY_", "NBGRADER_", "OMP_", "MKL_", "OPENBLAS_")
_log = logging.getLogger(__name__)
START_TIMEOUT = 180  # seconds; the zygote imports torch inside the sandbox


class ZygoteError(AutograderError):
    """The zygote did not start, or died, or refused a request."""


# The zygotes this process started and has not closed: a command that is told to stop
# kills them (kill_launched), and every kernel forked from them dies with them.
_launched: weakref.WeakSet[Zygote] = weakref.WeakSet()


def kill_launched() -> None:
    """Kills every zygote this process started, with its sandbox and kernels; never raises.

    Safe in a signal handler: it sends signals and waits for nothing (:meth:`Zygote.close`
    reaps them later). Whoever was using one sees its kernel die.
    """
    for kernels in list(_launched):
        kernels.kill()


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


def kept_environment(base: dict[str, str]) -> dict[str, str]:
    """Returns the variables of ``base`` that the zygote and the kernels may see."""
    return {
        key: value
        for key, value in base.items()
        if key in ENV_KEPT or key.startswith(ENV_KEPT_PREFIXES)
    }


def kernel_environment(
    base: dict[str, str], slot: KernelSlot, device: str = "cpu"
) -> dict[str, str]:
    """Returns the environment of a student's kernel: a few of ``base``'s variables.

    Args:
        base: The environment jupyter_client would give the kernel.
        slot: The kernel's folders: HOME and TMPDIR point into its working copy.
        device: ``cpu`` hides every GPU from the kernel; ``cuda`` leaves them visible.
    """
    env = kept_environment(base)
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
        preload: The modules the zygote was started with.
        asked: Modules the starting process asked the zygote to import (:meth:`Zygote.ask_preload`),
            whose reply comes after the zygote's ready message: the worker reads both.
    """

    channel: socket.socket
    run_dir: Path
    uid_block: int | None = None
    preload: tuple[str, ...] = PRELOAD
    asked: tuple[str, ...] = ()


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
        # Why the zygote stopped a kernel, by pid: its student's memory past the cap.
        self.stopped: dict[int, str] = {}
        self._ready = False
        self._dead = False
        self._asked: tuple[str, ...] = ()  # a preload request sent, its reply not read yet
        self._lock = threading.RLock()  # wait_ready may preload again, inside request()

    def launch(self) -> None:
        """Starts the zygote process and returns at once (it imports torch for seconds)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir.chmod(0o755)
        # The kernels' working folders (a tmpfs in the sandbox); their uids pass through.
        (self.run_dir / "work").mkdir(mode=0o711, exist_ok=True)
        command = [sys.executable, "-m", "autograder.kernel.server"]
        if self.sandbox.enabled:
            command.append("--own-pid-namespace")
        command += ["--preload", ",".join(self.preload)]
        env = kept_environment(dict(os.environ))
        env.update(PYTHONDONTWRITEBYTECODE="1", HOME=str(self.run_dir))
        if self.limits.device == "cpu":
            # The zygote imports autograd_pitfalls, which picks the course's GPU once: the
            # stand-in, as in the kernels, not a GPU this machine may have.
            env["CUDA_VISIBLE_DEVICES"] = ""
        if self.limits.torch_threads > 0:
            # Read once, when torch loads its OpenMP and MKL here: the kernels inherit it.
            threads = str(self.limits.torch_threads)
            env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
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
        _launched.add(self)

    def kill(self) -> None:
        """Kills the zygote's process group (bubblewrap, so the whole sandbox) without waiting."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    def _attach(self, channel: socket.socket) -> None:
        self.channel = channel
        self._reader = channel.makefile("r", encoding="utf-8")
        self._writer = channel.makefile("w", encoding="utf-8")
        self._ready, self._dead = False, False
        self._asked = ()  # a new zygote: nothing asked of it yet

    def handoff(self) -> Handoff:
        """Returns what a worker process needs to use this zygote (see :meth:`adopt`)."""
        assert self.channel is not None
        return Handoff(self.channel, self.run_dir, self.uid_block, self.preload, self._asked)

    @classmethod
    def adopt(cls, handoff: Handoff, sandbox: Sandbox, limits: Limits, worker: int) -> Zygote:
        """Returns a handle on a zygote another process started (the process stays theirs)."""
        zygote = cls(
            sandbox,
            handoff.run_dir,
            limits,
            worker=worker,
            preload=handoff.preload,
            uid_block=handoff.uid_block,
        )
        zygote._attach(handoff.channel)
        zygote._asked = handoff.asked
        return zygote

    def ask_preload(self, modules: tuple[str, ...]) -> None:
        """Asks a zygote that is still starting to import ``modules`` next, without waiting.

        The zygote imports them as soon as its own imports are done, while the grading
        process is still starting, instead of when that process asks (its first student
        waited for both, one after the other: 0.7 s with two workers on two cores). The
        reply is read after the ready message (:meth:`wait_ready`), by whichever process
        holds the zygote then, and taken as :meth:`preload_modules` takes it.

        Args:
            modules: Module names (the released notebooks' imports: the course's code).
        """
        pending = tuple(name for name in modules if name not in self.preload)
        if self._ready or self._asked or not pending:
            return  # ready: preload_modules asks and waits; asked already: one at a time
        try:
            self._writer.write(protocol.encode({"op": protocol.PRELOAD, "modules": pending}))
            self._writer.flush()
        except OSError:
            return  # a zygote that died says so at wait_ready
        self._asked = pending

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
            asked, self._asked = self._asked, ()
            if asked:
                reply = self._read(timeout=START_TIMEOUT)
                if not reply.pop("ok", False):
                    raise ZygoteError(f"zygote {protocol.PRELOAD}: {reply.get('error')}")
                self.preload_modules(self._take_preload_reply(list(asked), reply))

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
        return protocol.decode(line)

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
                self._writer.write(protocol.encode({"op": op, **fields}))
                self._writer.flush()
            except OSError as error:
                self._dead = True
                raise ZygoteError(f"the zygote died:\n{self.log_tail()}") from error
            reply = self._read()
        if not reply.pop("ok", False):
            raise ZygoteError(f"zygote {op}: {reply.get('error')}")
        return reply

    def preload_modules(self, modules: tuple[str, ...]) -> list[str]:
        """Imports ``modules`` in the zygote, so that every kernel forked later has them.

        Modules already imported cost nothing; a restarted zygote imports them again.
        What fails to import is logged and left to the kernels that import it. A module
        that starts a thread when imported is left to the kernels too: the zygote that
        imported it is replaced by one without it (forking a process that runs other
        threads may leave locks held forever in the kernels).

        Args:
            modules: Module names (the released notebooks' imports: the course's code).

        Returns:
            The modules imported now.
        """
        loaded: list[str] = []
        pending = [name for name in modules if name not in self.preload]
        while pending:
            reply = self.request(protocol.PRELOAD, modules=pending)
            loaded += reply["loaded"]
            pending = self._take_preload_reply(pending, reply)
        return loaded

    def _take_preload_reply(self, pending: list[str], reply: dict) -> list[str]:
        """Records what a preload request imported; returns what is left to ask.

        The zygote stops at a module that starts a thread: this one is then replaced by a
        zygote without it, and the modules after it are left to ask that one.
        """
        for name, why in reply["failed"].items():
            _log.warning("the zygote could not preload %s: %s", name, why)
        done = [*reply["loaded"], *reply["failed"]]
        self.preload = self.preload + tuple(reply["loaded"])
        threaded = reply["threaded"]
        if not threaded:
            return []
        _log.warning("importing %s starts a thread: kernels import it themselves", threaded)
        self.restart()  # launched with self.preload, which leaves it out
        return pending[len(done) + 1 :]

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
            protocol.SPAWN,
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
        """Returns the kernel's exit code, or None while it runs.

        Why the zygote's memory watch stopped it, if it did, is kept in :attr:`stopped`.
        """
        reply = self.request(protocol.POLL, pid=pid)
        if reply.get("stopped"):
            self.stopped[pid] = str(reply["stopped"])
        return reply["status"]

    def signal(self, pid: int, signum: int) -> None:
        """Sends ``signum`` to the kernel's process group."""
        self.request(protocol.SIGNAL, pid=pid, signum=int(signum))

    def reap(self, slot: KernelSlot) -> dict:
        """Kills every process the student left and removes the slot's folders."""
        reply = self.request(
            protocol.REAP, folder=str(slot.root), uid=slot.uid, work=str(slot.work)
        )
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

    def hang_up(self) -> None:
        """Closes our end of the socket: the zygote ends once every end is closed."""
        if self.channel is not None:
            for stream in (self._reader, self._writer, self.channel):
                with contextlib.suppress(OSError):
                    stream.close()
            self.channel = None

    def close(self) -> None:
        """Closes our end of the socket; the zygote (and bubblewrap) ends when all are closed.

        The process that started the zygote also waits for it, and kills it after 5 s.
        """
        self.hang_up()
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            self.process = None
        _launched.discard(self)
        if self._uid_claim is not None:
            self._uid_claim.close()  # gives the block of uids back
            self._uid_claim = None

    def __enter__(self) -> Zygote:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def launch_zygotes(
    sandbox: Sandbox, limits: Limits, count: int, imports: tuple[str, ...] = ()
) -> list[Zygote]:
    """Starts ``count`` zygotes without waiting: they import torch while the grader starts.

    Args:
        sandbox: How kernels are isolated.
        limits: Limits on each kernel.
        count: How many (one per grading process).
        imports: What the notebooks to grade import: each zygote imports it right after
            torch (:meth:`Zygote.ask_preload`).

    Returns:
        The zygotes; close them, and remove their ``run_dir``, when done.
    """
    zygotes = []
    for worker in range(1, count + 1):
        run_dir = Path(tempfile.mkdtemp(prefix="autograder-"))
        zygotes.append(Zygote(sandbox, run_dir, limits, worker=worker))
        zygotes[-1].launch()
        zygotes[-1].ask_preload(imports)
    return zygotes


def close_zygotes(zygotes: list[Zygote]) -> None:
    """Stops the zygotes and removes their folders."""
    for kernels in zygotes:
        kernels.hang_up()  # all at once: each then ends while the others are waited for
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
