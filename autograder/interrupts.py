"""Stopping a grading command cleanly on SIGINT (Ctrl-C) or SIGTERM.

A grading command records each student as their result comes back: a signal must not
cut a gradebook write in half, nor leave the pool grading the students still queued. So
the command's main thread handles both signals itself (:func:`stopping_on_signals`):

* the handler notes the signal and runs the **stop callbacks** registered with
  :func:`on_stop` at once (they kill what is grading now: the zygotes, so every kernel
  dies with them, and tell the worker processes to start nobody else), then raises
  :class:`Interrupted` in the main thread;
* inside a :func:`critical` block (a student being recorded, a file being written) the
  raise waits until the block ends; the grading loop, which waits for results in short
  steps, calls :func:`check` between them.

Only the first signal raises: a second Ctrl-C while the command records what it has
(a few seconds) is noted and ignored, so the clean-up is never cut short either.
The grading processes of a local pool ignore SIGINT, and a local Dask cluster's workers
both signals (:func:`ignore_in_worker`): pressed in a terminal, Ctrl-C reaches the whole
process group, and only the command decides what to keep.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_log = logging.getLogger(__name__)

_received: int | None = None  # the first signal of this command, once it came
_raised = False  # Interrupted was raised for it (only once)
_depth = 0  # nested critical() blocks now running in the main thread
_callbacks: list[Callable[[], None]] = []


class Interrupted(BaseException):
    """The command was asked to stop by a signal (a BaseException, as KeyboardInterrupt is).

    ``except Exception`` in the pipeline lets it through; the grading steps catch it to
    record what was done and mark the rest ``interrupted``.

    Attributes:
        signum: The signal received.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """What a shell expects of a command the signal stopped: 130 (SIGINT), 143 (SIGTERM)."""
        return 128 + self.signum

    @property
    def name(self) -> str:
        """The signal's name, for example ``SIGINT``."""
        return signal.Signals(self.signum).name


def received() -> int | None:
    """The signal that asked this command to stop, or None."""
    return _received


_stop_event: object | None = None  # a grading process's: set when its command stops


def follow(event: object) -> None:
    """Makes :func:`stopping` in this grading process follow ``event`` (a multiprocessing Event)."""
    global _stop_event
    _stop_event = event


def stopping() -> bool:
    """Whether this command, or the command that started this grading process, is stopping."""
    if _received is not None:
        return True
    return _stop_event is not None and _stop_event.is_set()  # type: ignore[attr-defined]


def check() -> None:
    """Raises :class:`Interrupted` if a signal came and was not raised yet (outside blocks).

    Raises:
        Interrupted: Once per command, for the first signal.
    """
    global _raised
    if _received is not None and not _raised and _depth == 0:
        _raised = True
        raise Interrupted(_received)


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """A block that a signal does not cut: it is raised when the block ends.

    Raises:
        Interrupted: At the end of the block, if a signal came meanwhile.
    """
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
    check()


@contextlib.contextmanager
def deferring() -> Iterator[None]:
    """A block that a signal does not cut, and that leaves raising it to the caller.

    The grading loop runs in one: it looks at :func:`received` between two results,
    records what it has, and its caller raises with :func:`check`.
    """
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


def on_stop(callback: Callable[[], None]) -> Callable[[], None]:
    """Registers ``callback`` to run in the signal handler; returns a function that removes it.

    A callback must be quick and must not raise: it runs between two bytecodes of
    whatever the main thread is doing (kill a process group, set an event). It also
    runs at once when a signal already came.
    """
    _callbacks.append(callback)
    if _received is not None:
        _run(callback)

    def remove() -> None:
        with contextlib.suppress(ValueError):
            _callbacks.remove(callback)

    return remove


def _run(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # a stop callback must not keep the others from running
        _log.exception("stopping: %r failed", callback)


def _handle(signum: int, frame: object) -> None:
    global _received
    if _received is not None:
        return  # the command is stopping already
    _received = signum
    for callback in list(_callbacks):
        _run(callback)
    check()


def reset() -> None:
    """Forgets a signal received (a command run again in the same process, as tests do)."""
    global _received, _raised, _depth
    _received, _raised, _depth = None, False, 0
    _callbacks.clear()


@contextlib.contextmanager
def stopping_on_signals() -> Iterator[None]:
    """Within this block, SIGINT and SIGTERM stop the command as this module says.

    Outside the main thread (a command run from a thread) the signals are left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reset()
    previous = {signum: signal.signal(signum, _handle) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        reset()


def ignore_in_worker() -> None:
    """Makes a Dask worker ignore SIGINT and SIGTERM: the command that started it decides."""
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
