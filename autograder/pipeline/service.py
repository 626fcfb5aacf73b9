"""A per-course grading service: the grading processes and their zygotes, kept warm.

Each ``autograde`` or ``grade`` command used to start its own grading processes and
zygotes: each zygote imports torch and the notebooks' modules, and the processes' server
imports nbgrader and torch again, seconds of both cores before the first student, paid
again by the next command (an instructor grades one assignment per command). The service
pays them once for a run of commands on one course:

* the first grading command of a course starts it (``python -m autograder.pipeline.service``,
  in a session of its own) and grades through it; the next commands find it running and
  grade through it at once;
* it grades only: it reads the assignment's reference for a command (it has nbgrader
  imported; the command then sends its students before importing nbgrader itself),
  receives the students' notebooks, grades them with a kept
  :class:`~autograder.pipeline.executors.LocalExecutor` (the same processes, zygotes and
  sandbox as a command's own) and sends the results back. It never
  writes the course: the command that holds the course's lock (:mod:`autograder.lock`)
  records every result, as it records its own workers' results;
* it ends after ``--keep-warm`` seconds without a command (an idle timeout), when the
  command using it is stopped or loses it (Ctrl-C, SIGTERM, SIGKILL: the connection closes
  and the service kills the students being graded, as a command's own stop does), when a
  grading process dies, and when a command needs other settings (``--jobs``, limits, the
  sandbox, another version of the grader's code): that command ends it and starts another.

It listens on an abstract Unix socket (no file to leave behind) and answers only a
client that proves it knows the key written, readable by the instructor alone, in the
course folder's ``.autograder-service/`` (hidden from the students' kernels like the rest
of the course folder); its log is there too.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from importlib.util import find_spec
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.atomic import replace_file
from autograder.course import Course
from autograder.errors import AutograderError
from autograder.sandbox.limits import Limits
from autograder.sandbox.zygote import ZygoteError

if TYPE_CHECKING:  # nbgrader: seconds, which a new service spends meanwhile
    from autograder.pipeline.payloads import GradedNotebook, StudentNotebook, WorkerSettings
    from autograder.pipeline.reference import AssignmentReference
    from autograder.sandbox.bwrap import Sandbox

# Seconds a service waits for the next command before it ends (--keep-warm's default).
KEEP_WARM = 600
# Overrides --keep-warm's default (0: every command starts and stops its own processes).
KEEP_WARM_VARIABLE = "AUTOGRADER_KEEP_WARM"
# The service's folder in the course folder: its address and key, and its log.
FOLDER = ".autograder-service"
START_TIMEOUT = 60  # seconds for a new service to listen (its zygotes start after)
QUIT_TIMEOUT = 15  # seconds a replaced service has to end before it is killed
# Named, not __name__: the service runs as ``python -m`` this module (see the end).
_log = logging.getLogger("autograder.pipeline.service")


def keep_warm_default() -> float:
    """Seconds a service stays warm: ``$AUTOGRADER_KEEP_WARM``, else :data:`KEEP_WARM`."""
    given = os.environ.get(KEEP_WARM_VARIABLE, "").strip()
    try:
        return max(0.0, float(given)) if given else float(KEEP_WARM)
    except ValueError:
        return float(KEEP_WARM)


def code_digest() -> str:
    """What the grader's code is now: its files' names, sizes and times, hashed.

    A service runs the code it started with: a command whose code changed since (an
    update of the course's repository) must not grade with the old one.
    """
    roots = [Path(find_spec(name).origin).parent for name in ("autograder", "autograd_pitfalls")]  # type: ignore[arg-type, union-attr]
    digest = hashlib.sha256(sys.executable.encode())
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def service_key(jobs: int, limits: Limits, sandbox: bool) -> str:
    """What a service must have been started with to grade a command's students."""
    about = json.dumps([jobs, limits.as_dict(), sandbox, code_digest()], sort_keys=True)
    return hashlib.sha256(about.encode()).hexdigest()[:16]


def _folder(course: Course) -> Path:
    return course.root / FOLDER


def _info_file(course: Course) -> Path:
    return _folder(course) / "service.json"


def _read_info(course: Course) -> dict:
    try:
        info = json.loads(_info_file(course).read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _alive(pid: int, course: Course) -> bool:
    """Whether ``pid`` is this course's service still (not a process that took its pid)."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"autograder.pipeline.service" in arguments and str(course.root).encode() in arguments


# ---------------------------------------------------------------------------------------
# The command's side


class ServiceExecutor:
    """Grades a command's students through the course's grading service.

    It is a local executor as far as the run is concerned (the same processes, sandbox
    and limits, on this machine), whose processes outlive the command. Made by
    :func:`open_service`.

    Args:
        connection: An authenticated connection to the service.
        jobs: How many students the service grades at once.
        sandbox: The course's sandbox (the service detected the same).
        pid: The service's process id.
    """

    name = "local"

    def __init__(self, connection: Connection, jobs: int, sandbox: Sandbox, pid: int) -> None:
        self.connection = connection
        self.jobs = jobs
        self.workers = jobs
        self.sandbox = sandbox
        self.pid = pid
        # A second handle on the same socket: stop() shuts it down from a signal handler
        # (a system call; nothing of the connection's own state is touched there).
        self._socket = socket.fromfd(connection.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
        self._stopping = False

    def reference(self, course: Course, assignment: str) -> AssignmentReference:
        """Reads what the workers need of ``assignment`` in the service.

        The service has nbgrader imported, which reading the gradebook takes: this
        process then sends its students without importing it first (half a second of a
        core, spent while they are graded, to record them). Where the service cannot read
        it, it is read here, which raises what is wrong.

        Raises:
            ZygoteError: If the service stopped answering.
        """
        course.grading_secret()  # made here if it is missing: the service writes nothing
        try:
            self.connection.send({"op": "reference", "course": course, "assignment": assignment})
            kind, payload = self.connection.recv()
        except (EOFError, OSError) as error:
            raise ZygoteError(
                f"the grading service (pid {self.pid}) stopped answering: {error or 'it ended'}"
            ) from error
        if kind == "reference":
            return payload
        from autograder.pipeline.reference import read_reference

        return read_reference(course, assignment)

    def sandbox_line(self, seen: set[str]) -> str:
        """How student code was isolated, for the status file."""
        return self.sandbox.describe()

    def sandbox_enabled(self, requested: bool) -> bool:
        """Whether student code ran in bubblewrap."""
        return self.sandbox.enabled

    def stop(self) -> None:
        """Ends the students being graded: the service sees the connection close, and stops.

        Safe in a signal handler: one system call. The service kills its zygotes (every
        kernel dies with them), its grading processes start nobody else, and it ends.
        """
        self._stopping = True
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)

    def grade(
        self,
        reference: AssignmentReference,
        students: Sequence[StudentNotebook],
        settings: WorkerSettings,
    ) -> Iterator[list[GradedNotebook]]:
        """Grades ``students`` in the service; yields each one's result as it is done.

        Raises:
            ZygoteError: If the service died or a grading process of it failed.
        """
        if not students:
            return
        try:
            self.connection.send(
                {
                    "op": "grade",
                    "reference": reference,
                    "students": list(students),
                    "settings": settings,
                }
            )
            while True:
                kind, payload = self.connection.recv()
                if kind == "results":
                    yield payload
                elif kind == "done":
                    return
                else:  # "error": what stopped the service's grading, in one line
                    raise ZygoteError(payload)
        except (EOFError, OSError) as error:
            if self._stopping:
                return  # stop() closed it: the run says it was stopped
            raise ZygoteError(
                f"the grading service (pid {self.pid}) stopped answering: {error or 'it ended'}"
            ) from error

    def close(self) -> None:
        """Hangs up; the service stays warm for the next command."""
        with contextlib.suppress(OSError):
            self.connection.close()
        with contextlib.suppress(OSError):
            self._socket.close()


def _connect(info: dict) -> Connection | None:
    """Connects to the service ``info`` describes; None if it does not answer as one."""
    try:
        connection = Client(info["address"], "AF_UNIX", authkey=bytes.fromhex(info["authkey"]))
    except (OSError, EOFError, KeyError, ValueError, TypeError):
        return None
    except Exception:  # multiprocessing.AuthenticationError: not our service any more
        return None
    return connection


def _hello(connection: Connection) -> dict | None:
    try:
        connection.send({"op": "hello"})
        if not connection.poll(START_TIMEOUT):
            return None
        kind, payload = connection.recv()
    except (OSError, EOFError):
        return None
    return payload if kind == "hello" else None


def stop_service(course: Course, timeout: float = QUIT_TIMEOUT) -> bool:
    """Ends the course's grading service, if one runs; returns whether one did.

    Asked first; killed (its process group: its sandboxes and kernels too) when it does
    not end within ``timeout`` seconds.
    """
    info = _read_info(course)
    pid = info.get("pid")
    if not isinstance(pid, int) or not _alive(pid, course):
        return False
    connection = _connect(info)
    if connection is not None:
        with contextlib.suppress(OSError):
            connection.send({"op": "quit"})
        with contextlib.suppress(OSError):
            connection.close()
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid, course) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid, course):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    return True


def open_service(
    course: Course,
    jobs: int,
    limits: Limits,
    sandbox: Sandbox,
    requested: bool = True,
    imports: tuple[str, ...] = (),
    keep_warm: float = KEEP_WARM,
) -> ServiceExecutor:
    """Returns an executor on the course's grading service, started now if none runs.

    A service started with other settings (or other code) is ended and replaced. The
    caller holds the course's lock, so no other command does this at the same time.

    Args:
        course: The course being graded.
        jobs: Students graded at once.
        limits: Limits on each kernel, with the threads each kernel's torch gets.
        sandbox: The course's sandbox, as detected here.
        requested: Whether the sandbox was asked for (False: ``--no-sandbox``).
        imports: What the notebooks to grade import (a new service's zygotes import it).
        keep_warm: Seconds a new service waits for the next command before it ends.

    Raises:
        AutograderError: If a new service does not start.
    """
    key = service_key(jobs, limits, requested)
    info = _read_info(course)
    pid = info.get("pid")
    if isinstance(pid, int) and _alive(pid, course):
        connection = _connect(info)
        hello = _hello(connection) if connection is not None else None
        if connection is not None and hello is not None and hello.get("key") == key:
            _log.debug("grading through the warm service, pid %s", pid)
            return ServiceExecutor(connection, jobs, sandbox, pid)
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()
        stop_service(course)  # other settings, or not answering: a new one replaces it
    return _start(course, jobs, limits, sandbox, requested, imports, keep_warm, key)


def _start(
    course: Course,
    jobs: int,
    limits: Limits,
    sandbox: Sandbox,
    requested: bool,
    imports: tuple[str, ...],
    keep_warm: float,
    key: str,
) -> ServiceExecutor:
    folder = _folder(course)
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o700)  # its key file: the instructor's alone
    command = [
        sys.executable,
        "-m",
        "autograder.pipeline.service",
        "--course",
        str(course.root),
        "--jobs",
        str(jobs),
        "--limits",
        json.dumps(limits.as_dict()),
        "--imports",
        ",".join(imports),
        "--keep-warm",
        str(keep_warm),
        "--key",
        key,
    ]
    if not requested:
        command.append("--no-sandbox")
    with (folder / "service.log").open("ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # Ctrl-C in the terminal reaches the command, not it
            close_fds=True,  # the course lock's descriptor above all: the command's alone
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        info = _read_info(course)
        if info.get("pid") == process.pid:
            connection = _connect(info)
            if connection is not None:
                return ServiceExecutor(connection, jobs, sandbox, process.pid)
        if process.poll() is not None:
            break
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    tail = (folder / "service.log").read_text(errors="replace").strip().splitlines()[-10:]
    raise AutograderError(
        "the grading service did not start (--keep-warm 0 grades without it): " + " / ".join(tail)
    )


# ---------------------------------------------------------------------------------------
# The service's side


class _IdleError(Exception):
    """No command came for the idle timeout."""


class _QuitError(Exception):
    """A command asked the service to end (or a grading process of it died)."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _IdleError


def _serve_one(connection: Connection, executor, key: str) -> None:
    """Answers one command until it hangs up.

    Raises:
        _QuitError: If the command asks the service to end, is stopped, or grading failed.
    """
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return  # the command is done
        op = request.get("op") if isinstance(request, dict) else None
        if op == "hello":
            connection.send(("hello", {"key": key, "pid": os.getpid()}))
        elif op == "quit":
            raise _QuitError("asked to end")
        elif op == "grade":
            _grade(connection, executor, request)
        elif op == "reference":
            _send_reference(connection, request)
        else:
            connection.send(("error", f"unknown request {op!r}"))


def _send(connection: Connection, message: tuple) -> None:
    """Sends ``message`` to the command.

    Raises:
        _QuitError: If the command went away (an error of grading is not one: it is said
            as such).
    """
    try:
        connection.send(message)
    except (OSError, EOFError) as error:
        raise _QuitError(f"the command went away: {error}") from error


def _send_reference(connection: Connection, request: dict) -> None:
    """Reads an assignment's reference for a command, or says in one line why it cannot.

    The command holds the course's lock; reading its gradebook and release writes nothing.
    """
    from autograder.pipeline.reference import read_reference

    try:
        answer = ("reference", read_reference(request["course"], request["assignment"]))
    except Exception as error:  # the command reads it itself, and raises the real error
        _log.warning("could not read the reference of %r", request.get("assignment"))
        answer = ("error", f"{type(error).__name__}: {error}")
    with contextlib.suppress(OSError):  # a command gone: its next read ends the exchange
        connection.send(answer)


def _watch_hang_up(
    connection: Connection, executor, finished: threading.Event, hung_up: threading.Event
) -> None:
    """Stops the run in progress when the command's end of the connection closes.

    The command sends nothing while its students are graded: the connection becomes
    readable only when it closes (the command was stopped, or died). After the run, the
    next request wakes this thread, which then sees the run finished and ends.
    """
    with contextlib.suppress(OSError, ValueError):
        connection.poll(None)
    if not finished.is_set():
        hung_up.set()
        executor.stop()  # kills the zygotes: the students being graded end


def _grade(connection: Connection, executor, request: dict) -> None:
    """Grades one command's students and sends each result as it comes.

    Raises:
        _QuitError: If the command went away or was stopped meanwhile, or a grading
            process died (the pool is broken: a new service starts whole).
    """
    from autograder import interrupts

    finished, hung_up = threading.Event(), threading.Event()
    threading.Thread(
        target=_watch_hang_up,
        args=(connection, executor, finished, hung_up),
        name="service-hang-up",
        daemon=True,
    ).start()
    try:
        for results in executor.grade(
            request["reference"], request["students"], request["settings"]
        ):
            if hung_up.is_set():
                break
            _send(connection, ("results", results))
        else:
            finished.set()
            _send(connection, ("done", None))
    except _QuitError:
        raise
    except Exception as error:  # a grading process died: the pool is broken
        _log.exception("grading failed")
        with contextlib.suppress(OSError):
            connection.send(("error", f"{error}"))
        raise _QuitError(f"grading failed: {error}") from error
    finally:
        finished.set()
    if hung_up.is_set() or interrupts.stopping():
        raise _QuitError("the command was stopped")


def serve(
    course: Course,
    jobs: int,
    limits: Limits,
    sandbox_enabled: bool,
    imports: tuple[str, ...],
    keep_warm: float,
    key: str,
) -> None:
    """Runs the service until it is idle for ``keep_warm`` seconds or told to end."""
    from autograder import interrupts
    from autograder.pipeline import import_judge_modules, worker_context
    from autograder.pipeline.executors import LocalExecutor
    from autograder.sandbox.bwrap import course_sandbox
    from autograder.sandbox.zygote import launch_zygotes

    authkey = secrets.token_bytes(32)
    address = f"\0autograder-service-{secrets.token_hex(12)}"
    listener = Listener(address, "AF_UNIX", authkey=authkey)
    sandbox = course_sandbox(course, enabled=sandbox_enabled)
    zygotes = launch_zygotes(sandbox, limits, jobs, imports)
    executor = LocalExecutor(jobs, zygotes, sandbox, keep=True)
    interrupts.follow(executor.stop_event())  # with --jobs 1 this process grades
    info = {"pid": os.getpid(), "key": key, "address": address, "authkey": authkey.hex()}
    replace_file(_info_file(course), json.dumps(info), mode=0o600)

    def end(signum: int, frame: object) -> None:
        executor.stop()
        raise _QuitError(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command decides
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        if jobs > 1:
            worker_context(start=True)  # while the zygotes import torch
        else:
            import_judge_modules()
        while True:
            signal.setitimer(signal.ITIMER_REAL, keep_warm)
            try:
                connection = listener.accept()
            except _IdleError:
                _log.info("idle for %g s: ending", keep_warm)
                return
            except Exception:  # a client that failed the key: wait for the next one
                _log.warning("a connection was refused", exc_info=True)
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            try:
                _serve_one(connection, executor, key)
            finally:
                with contextlib.suppress(OSError):
                    connection.close()
    except _QuitError as why:
        _log.info("ending: %s", why)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if _read_info(course).get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                _info_file(course).unlink()
        listener.close()
        executor.close()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m autograder.pipeline.service``: started by a grading command, not by hand."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", required=True)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--limits", required=True, help="the kernels' limits, as JSON")
    parser.add_argument("--imports", default="")
    parser.add_argument("--keep-warm", type=float, default=KEEP_WARM)
    parser.add_argument("--key", required=True)
    parser.add_argument("--no-sandbox", dest="sandbox", action="store_false")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("autograder").setLevel(logging.INFO)
    import warnings

    warnings.filterwarnings("ignore", module="nbgrader")  # as in the command line
    serve(
        Course.at(Path(args.course)),
        args.jobs,
        Limits(**json.loads(args.limits)),
        args.sandbox,
        tuple(name for name in args.imports.split(",") if name),
        args.keep_warm,
        args.key,
    )


if __name__ == "__main__":
    # The module's own copy, not __main__'s: its classes are the ones the rest imports.
    from autograder.pipeline.service import main as service_main

    service_main()
