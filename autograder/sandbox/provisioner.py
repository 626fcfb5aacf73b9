"""A jupyter_client kernel provisioner that forks kernels from the grader's zygote.

jupyter_client starts kernels through provisioners (its ``LocalProvisioner`` runs the
kernelspec's command with ``subprocess``). This one keeps everything jupyter_client does
around the launch (ports, keys, the connection file, the client) and replaces the launch
itself: the kernel is a fork of :mod:`autograder.sandbox.zygote`, in a fresh folder of its own,
talking over IPC sockets in that folder (so it needs no network). It is registered as
the entry point ``autograder-zygote`` and selected with
``KernelProvisionerFactory.default_provisioner_name`` while the grader runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import time
from pathlib import Path
from queue import Empty
from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from autograder.compat import kernel_is_alive, record_kernel_info
from autograder.kernel.fs import remove_tree
from autograder.sandbox import zygote
from autograder.sandbox.zygote import KernelSlot, ZygoteError, kernel_environment

NAME = "autograder-zygote"
LAUNCHER = "ipykernel_launcher"
# How soon the kernel client's sockets try again to reach a kernel not listening yet, and
# the longest they back off to (milliseconds). See ReadyClient.start_channels.
RECONNECT_MS, RECONNECT_MAX_MS = 5, 100


def ipykernel_arguments(cmd: list[str]) -> list[str]:
    """Returns the arguments for ``IPKernelApp`` from a kernelspec command line.

    Args:
        cmd: For example ``[python, "-m", "ipykernel_launcher", "-f", file, ...]``.

    Raises:
        ValueError: If the command does not start an ipykernel: only Python kernels can
            be forked from the zygote.
    """
    if LAUNCHER not in cmd or cmd[cmd.index(LAUNCHER) - 1] != "-m":
        raise ValueError(f"the zygote forks ipykernel kernels only, not: {' '.join(cmd)}")
    return cmd[cmd.index(LAUNCHER) + 1 :]


def copy_working_files(source: Path | None, target: Path, max_bytes: int = 100 * 2**20) -> None:
    """Copies the assignment's files (not its notebooks) into the kernel's working copy.

    Args:
        source: The folder nbgrader runs the notebook in (its autograded folder), which
            holds the assignment's data files and the graded notebook.
        target: The kernel's working folder.
        max_bytes: Stop copying past this size (a runaway folder must not fill the disk).
    """
    if source is None or not Path(source).is_dir():
        return
    source = Path(source).resolve()
    if source == target or source in target.parents:
        return
    copied = 0
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        # The notebook being graded holds the hidden tests: it stays out.
        hidden = any(part.startswith(".") for part in relative.parts)
        if path.suffix == ".ipynb" or hidden or path.is_symlink() or not path.is_file():
            continue
        copied += path.stat().st_size
        if copied > max_bytes:
            return
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / relative)


class ZygoteProvisioner(LocalProvisioner):  # type: ignore[misc]
    """Starts each kernel as a fork of the current zygote, in its own folder and uid."""

    slot: KernelSlot | None = None
    kernel_pid: int | None = None
    exit_code: int | None = None
    stopped_for: str = ""  # why the zygote killed the kernel (memory past the cap), if it did

    @property
    def has_process(self) -> bool:
        """Whether a kernel was forked and has not been waited for."""
        return self.kernel_pid is not None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Prepares the kernel's folder, then lets jupyter_client write the connection file."""
        self.zygote = zygote.current()
        self.slot = self.zygote.new_slot()
        manager = self.parent
        manager.transport = "ipc"
        manager.ip = str(self.slot.ipc / "kernel")
        manager.connection_file = str(self.slot.connection_file)
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        """Forks the kernel from the zygote instead of running ``cmd``."""
        assert self.slot is not None
        arguments = ipykernel_arguments(cmd)
        cwd = kwargs.get("cwd")
        copy_working_files(Path(cwd) if cwd else None, self.slot.files)
        env = kernel_environment(kwargs.get("env") or {}, self.slot, self.zygote.limits.device)
        self.kernel_pid = self.zygote.spawn(self.slot, arguments, env)
        self.exit_code = None
        self.pid = self.kernel_pid
        self.cwd = str(self.slot.work)
        return self.connection_info

    async def poll(self) -> int | None:
        """Returns the kernel's exit code, or None while it runs.

        A kernel whose zygote is gone is gone too (it dies with its parent): killed, as far
        as jupyter_client is concerned, which then reports a dead kernel at once.
        """
        if self.kernel_pid is None:
            return self.exit_code if self.exit_code is not None else 0
        try:
            self.exit_code = self.zygote.poll(self.kernel_pid)
        except ZygoteError:
            self.exit_code = -signal.SIGKILL
        self.stopped_for = self.zygote.stopped.get(self.kernel_pid, "")
        return self.exit_code

    async def wait(self) -> int | None:
        """Waits until the kernel has exited."""
        while self.kernel_pid is not None and await self.poll() is None:
            await asyncio.sleep(0.01)
        self.kernel_pid = None
        return self.exit_code

    async def send_signal(self, signum: int) -> None:
        """Sends ``signum`` to the kernel's process group (SIGINT interrupts a cell)."""
        if self.kernel_pid is not None and self.zygote.alive():
            # A zygote that died took its kernels with it.
            with contextlib.suppress(ZygoteError):
                self.zygote.signal(self.kernel_pid, signum)

    async def kill(self, restart: bool = False) -> None:
        """Kills the kernel, and waits the few milliseconds until it is gone.

        jupyter_client then finds it dead at once, instead of polling every 0.1 s.
        """
        await self.send_signal(signal.SIGKILL)
        for _ in range(100):
            if self.kernel_pid is None or await self.poll() is not None:
                return
            await asyncio.sleep(0.005)

    async def terminate(self, restart: bool = False) -> None:
        """Asks the kernel to stop."""
        await self.send_signal(signal.SIGTERM)

    async def cleanup(self, restart: bool = False) -> None:
        """Kills everything the student's code left running and removes its folder."""
        if self.slot is not None:
            if self.exit_code not in (None, 0, -signal.SIGKILL) and self.slot.log.is_file():
                # A kernel that failed on its own: its last words go to nbgrader's log.
                lines = self.slot.log.read_text(errors="replace").strip().splitlines()[-5:]
                self.log.error("the kernel exited with %s:\n%s", self.exit_code, "\n".join(lines))
            try:
                self.zygote.reap(self.slot)
            except ZygoteError:  # gone, with every process of the sandbox: only folders left
                remove_tree(self.slot.root)
                remove_tree(self.slot.work)
            self.slot = None
        self.kernel_pid = None

    def get_shutdown_wait_time(self, recommended: float = 5.0) -> float:
        """Waits briefly for a polite shutdown: the kernel's state is thrown away anyway."""
        return min(recommended, 1.0)


class ReadyClient(AsyncKernelClient):  # type: ignore[misc]
    """jupyter_client's kernel client, told faster that a fresh kernel is ready.

    jupyter_client waits for a kernel_info reply and then for 0.2 s without IOPub
    messages, a fifth of a forked kernel's whole run. The kernel's ``idle`` status for
    that very request says the same (the kernel answers, and IOPub is connected).
    """

    def start_channels(self, *args: Any, **kwargs: Any) -> None:
        """Connects to the kernel, trying again within milliseconds while it is not listening.

        nbclient connects as soon as the zygote has forked the kernel, which binds its
        sockets some 30 ms later; a connection that finds nothing there is retried after
        ZeroMQ's default of 100 ms, so every student's kernel answered its first request
        0.12-0.18 s after the fork instead of 0.06 s. These are defaults of this client's
        ZeroMQ context, for the sockets made from it afterwards (all of them kernel
        clients in a grading process).
        """
        self.context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_MS)
        self.context.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_MAX_MS)
        super().start_channels(*args, **kwargs)

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))
        while True:
            request = self.kernel_info()
            # IOPub may connect after the first status is sent: ask again soon.
            if await self._idle_after(request, min(0.1, deadline - time.monotonic())):
                break
            if not await kernel_is_alive(self):
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")
        while True:  # the reply; earlier retries' replies are skipped
            reply = await self.shell_channel.get_msg(timeout=max(1.0, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == request:
                record_kernel_info(self, reply)
                return

    wait_for_ready = _async_wait_for_ready  # the name nbclient calls

    async def _idle_after(self, request: str, timeout: float) -> bool:
        """Whether IOPub reports the kernel idle after ``request`` within ``timeout``."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                msg = await self.iopub_channel.get_msg(timeout=left)
            except Empty:
                return False
            idle = msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"
            if idle and msg["parent_header"].get("msg_id") == request:
                return True
        return False
