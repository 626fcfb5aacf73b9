"""The kernel keyring (keyctl(2)): emptied for each student's uid, before and after.

A key in a uid's user keyring outlives its processes: the next student (or another
run) given the same uid could read it. The zygote clears the uid's keyrings before a
student's code runs and after the student is reaped, and each kernel joins a fresh
anonymous session keyring. keyctl is called through libc's ``syscall`` (keyutils may
not be installed).
"""

from __future__ import annotations

import ctypes
import os
import sys

_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_JOIN_SESSION_KEYRING = 1
_KEYCTL_CLEAR = 7
_KEYCTL_GET_PERSISTENT = 22
_KEY_SPEC_PROCESS_KEYRING = -2
_KEY_SPEC_USER_KEYRING = -4
_KEY_SPEC_USER_SESSION_KEYRING = -5


def _keyctl(*args: int) -> int:
    """Calls keyctl(2); returns -1 where there is none (not Linux, unknown machine)."""
    number = _SYS_KEYCTL.get(os.uname().machine)
    if sys.platform != "linux" or number is None:
        return -1
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(number, *(ctypes.c_long(arg) for arg in args))


def clear_own_keys() -> None:
    """Empties the keyrings this process's uid keeps beyond its processes.

    The user keyring, the user session keyring and the persistent keyring belong to the
    uid, not to a process. Errors (no keyring yet, no keyctl in this kernel) leave
    nothing to clear.
    """
    _keyctl(_KEYCTL_CLEAR, _KEY_SPEC_USER_KEYRING)
    _keyctl(_KEYCTL_CLEAR, _KEY_SPEC_USER_SESSION_KEYRING)
    persistent = _keyctl(_KEYCTL_GET_PERSISTENT, -1, _KEY_SPEC_PROCESS_KEYRING)
    if persistent > 0:
        _keyctl(_KEYCTL_CLEAR, persistent)


def join_fresh_session_keyring() -> None:
    """Gives this process a new anonymous session keyring: not the zygote's, nor a kernel's."""
    _keyctl(_KEYCTL_JOIN_SESSION_KEYRING, 0)
