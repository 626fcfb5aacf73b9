"""Record in-place writes with the line of your code that made them.

``backward()`` only says that a saved tensor "is at version 1; expected version 0". The
version counter knows *that* a tensor was written in place, not *where*. Inside
``track_inplace()`` every in-place write is recorded with the versions it moved the tensor
from and to, and the first line of the call stack outside PyTorch, so that
:func:`diagnose` and :func:`draw` can name the line that made a saved tensor stale.

Writes are seen below autograd, as the ATen ops that really run (a
``torch.utils._python_dispatch.TorchDispatchMode``): ``x.add_(1)``, ``x[i] = v``
(``copy_``, ``fill_``, ``index_put_``), ``out=`` arguments, and in-place ops inside
``nn`` modules such as ``nn.Embedding(max_norm=...)``'s ``embedding_renorm_``.

What version counters cannot see, this cannot connect either. A write through ``.data``
or numpy does not move the tensor's version counter (``.data`` is a new tensor with a
counter of its own), so ``backward()`` does not notice it and no saved tensor turns
stale: the gradient is silently computed from the new values. Such a write is recorded
against the alias's own counter, never matched to the tensor it corrupted. Ops that write
without moving any counter (``resize_``, some ``_foreach_`` ops) are not recorded.
"""

from __future__ import annotations

import linecache
import os
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from autograd_pitfalls.compat import DispatchMode, OpOverload, op_arguments, op_name

__all__ = ["InplaceLog", "InplaceWrite", "latest_log", "track_inplace"]

# Frames inside these folders are PyTorch's or ours, never the line a learner wrote.
_SKIPPED_FOLDERS = (
    str(Path(torch.__file__).parent) + os.sep,
    str(Path(__file__).parent) + os.sep,
)
# How many writes to remember per storage: a parameter updated by an optimiser in a long
# loop would otherwise grow the log forever. Only the write right after a tensor was saved
# matters, and a graph is rarely older than this many writes.
_WRITES_PER_STORAGE = 64

_latest: InplaceLog | None = None


@dataclass(frozen=True)
class InplaceWrite:
    """One in-place write, as recorded by :func:`track_inplace`.

    Attributes:
        op: The ATen op that wrote, for example ``"fill_"``, ``"copy_"``,
            ``"embedding_renorm_"``, or ``"add (out=)"`` for an ``out=`` argument.
        filename: The file of the first frame outside PyTorch (your code).
        lineno: The line in that file.
        version_before: The tensor's ``_version`` before the write.
        version: Its ``_version`` right after the write (usually ``version_before + 1``).
        shape: The shape of the tensor written (a view, for ``x[0] = 1``).
    """

    op: str
    filename: str
    lineno: int
    version_before: int
    version: int
    shape: tuple[int, ...]

    @property
    def location(self) -> str:
        """Where the write is, named as IPython's tracebacks name it.

        ``"Cell In[16], line 5"`` for a notebook cell (its file is a temporary
        ``/tmp/ipykernel_NNN/NNNN.py`` that means nothing to a learner),
        ``"path/to/file.py:12"`` for a file.
        """
        cell = _cell_name(self.filename)
        if cell is not None:
            return f"{cell}, line {self.lineno}"
        return f"{self.filename}:{self.lineno}"

    @property
    def code(self) -> str:
        """The source line, stripped; empty when the file cannot be read.

        IPython registers every cell with ``linecache``, so this works in notebooks too.
        """
        return linecache.getline(self.filename, self.lineno).strip()


def _cell_name(filename: str) -> str | None:
    """``"Cell In[16]"`` when ``filename`` is a cell of the running IPython, else None."""
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: there are no cells
        return None
    # IPython's caching compiler maps each cell's file to its execution count; its
    # tracebacks name cells with the same method (IPython.core.tbtools).
    format_code_name = getattr(getattr(get_ipython(), "compile", None), "format_code_name", None)
    named = format_code_name(filename) if format_code_name is not None else None
    return " ".join(named) if named else None


class InplaceLog:
    """The in-place writes recorded by one :func:`track_inplace` block.

    Writes are grouped by the memory (storage) they wrote to, because views share their
    base's version counter: ``d[:] = 0`` writes a view of ``d``, and a saved ``d`` is
    stale. Each storage is held by a weak reference, which keeps its address from being
    reused while the log lives, so a write is never matched to a later tensor that
    happens to sit at the same address.
    """

    def __init__(self) -> None:
        self._count = 0  # orders writes across storages
        self._by_storage: dict[int, deque[tuple[int, InplaceWrite]]] = {}
        self._storages: dict[int, StorageWeakRef] = {}
        self._prune_at = 1024
        # Writes whose op has run but whose version bump was not visible yet.
        self._pending: list[tuple[torch.Tensor, int, str, tuple[str, int]]] = []

    @property
    def writes(self) -> list[InplaceWrite]:
        """The writes remembered, oldest first (those to freed memory are forgotten)."""
        self._settle()
        ordered = sorted(entry for entries in self._by_storage.values() for entry in entries)
        return [write for _, write in ordered]

    def find(self, tensor: torch.Tensor, version: int) -> InplaceWrite | None:
        """The recorded write that brought ``tensor``'s memory to ``version``.

        Args:
            tensor: The tensor (or any view of its memory), for example a saved tensor.
            version: The version to explain; for a tensor saved at version ``v``, the
                write that made it stale is the one that moved it past ``v``, to ``v + 1``.

        Returns:
            The latest write on that memory that moved its version from below ``version``
            to ``version`` or above, or None when none was recorded.
        """
        self._settle()
        key = _storage_key(tensor)
        for _, write in reversed(self._by_storage.get(key, ())):
            if write.version_before < version <= write.version:
                return write
        return None

    def _expect(self, tensor: torch.Tensor, before: int, op: str, frame: tuple[str, int]) -> None:
        """Notes a write that has run; it is recorded once its version has moved."""
        self._pending.append((tensor, before, op, frame))

    def _settle(self) -> None:
        """Records the pending writes, now that autograd has bumped their versions.

        The bump happens above the dispatch mode, after the op has returned through it,
        so it is read at the next op or when the log is read, never inside the op.
        """
        pending, self._pending = self._pending, []
        for tensor, before, op, (filename, lineno) in pending:
            after = tensor._version
            key = _storage_key(tensor)
            if after == before or key is None:
                continue  # autograd did not see it: it cannot make a saved tensor stale
            if key not in self._by_storage:
                if len(self._storages) >= self._prune_at:
                    self._prune()
                self._by_storage[key] = deque(maxlen=_WRITES_PER_STORAGE)
                self._storages[key] = StorageWeakRef(tensor.untyped_storage())
            self._count += 1
            write = InplaceWrite(op, filename, lineno, before, after, tuple(tensor.shape))
            self._by_storage[key].append((self._count, write))

    def _prune(self) -> None:
        """Forgets storages that were freed: no live tensor, saved or not, can use them."""
        for key in [key for key, ref in self._storages.items() if ref.expired()]:
            del self._storages[key], self._by_storage[key]
        self._prune_at = max(1024, 2 * len(self._storages))


@contextmanager
def track_inplace() -> Iterator[InplaceLog]:
    """Records every in-place write made inside the block, with your file and line.

    :func:`diagnose` and :func:`draw` then name the line that modified a saved tensor.
    They use the latest block's log unless given another one (``writes=``). Every PyTorch
    op in the block goes through Python, so it runs slower: wrap the forward pass you
    want to understand, not a whole training run.

    Yields:
        The log of this block's writes.

    Example:
        >>> x = torch.tensor([[1.0, 2.0]])
        >>> w1 = torch.tensor([[2.0], [1.0]], requires_grad=True)
        >>> with track_inplace() as log:
        ...     d = x @ w1
        ...     d[:] = 0
        >>> [write.op for write in log.writes]
        ['fill_']
    """
    global _latest
    log = InplaceLog()
    _latest = log
    try:
        with _RecordWrites(log):
            yield log
    finally:
        log._settle()  # the last write's bump is visible now; stop holding its tensor


def latest_log() -> InplaceLog | None:
    """The log of the latest :func:`track_inplace` block (open or closed), or None."""
    return _latest


class _RecordWrites(DispatchMode):
    """Sees every ATen op below autograd and records those that write a tensor in place."""

    def __init__(self, log: InplaceLog) -> None:
        super().__init__()
        self.log = log

    def __torch_dispatch__(
        self,
        func: OpOverload,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        self.log._settle()  # the previous op has returned through autograd: bumps are in
        kwargs = kwargs or {}
        written = _written_arguments(func)
        if not written:
            return func(*args, **kwargs)
        frame = _user_frame()
        targets = []
        for index, name, op in written:
            value = args[index] if index < len(args) else kwargs.get(name)
            for tensor in value if isinstance(value, list | tuple) else (value,):
                if isinstance(tensor, torch.Tensor) and not tensor.is_inference():
                    targets.append((tensor, tensor._version, op))  # inference: no counter
        result = func(*args, **kwargs)  # an op that raises wrote nothing: noted after it
        for tensor, before, op in targets:
            self.log._expect(tensor, before, op, frame)
        return result


_WRITTEN: dict[Any, tuple[tuple[int, str, str], ...]] = {}


def _written_arguments(func: OpOverload) -> tuple[tuple[int, str, str], ...]:
    """(position, name, op label) of each argument the op writes, cached per op.

    The schema marks them: ``add_(Tensor(a!) self, ...)``, ``add.out(..., Tensor(a!)
    out)``. The ``!`` is ``alias_info.is_write``.
    """
    if func not in _WRITTEN:
        _WRITTEN[func] = tuple(
            (
                index,
                argument.name,
                f"{op_name(func)} (out=)" if argument.kwarg_only else op_name(func),
            )
            for index, argument in enumerate(op_arguments(func))
            if argument.alias_info is not None and argument.alias_info.is_write
        )
    return _WRITTEN[func]


def _user_frame() -> tuple[str, int]:
    """File and line of the first caller outside PyTorch and this package."""
    frame = sys._getframe(1)  # cheaper than inspect.stack(): no source is read
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED_FOLDERS):
        frame = frame.f_back
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


def _storage_key(tensor: torch.Tensor) -> int | None:
    """The address of the tensor's storage object (shared by all its views), or None.

    None for tensors without a plain storage (sparse, and some tensor subclasses).
    """
    try:
        return tensor.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None
