"""Inside each student's kernel: put back what the student's code replaced, around each test.

nbgrader runs the tests in the same Python process as the answers, so an answer cell can
replace what the tests rely on: ``torch.allclose = lambda *a, **k: True``, a test helper
rebound in the notebook, ``builtins.isinstance``, an IPython input transformer that
empties later cells, a kernel method that reports every cell as passed. Plain nbgrader
then gives the points.

When the kernel starts (before any student code), :func:`install` records what those
things are: the dictionaries of the modules and classes the tests use, the methods of
the kernel, shell and session objects, IPython's transformer lists and hooks, and the
trace functions. The grader asks the guard, over the kernel's control channel (which
student code does not go through), to restore all of it before each test cell, and to
check again after it:

* ``before``: whatever differs is put back and reported; the test then runs against the
  real torch, helpers and kernel. IPython's event callbacks (which a student may use to
  patch again right before a cell) are swapped out for the original ones during the test.
* ``after``: whatever changed while the test ran (the answer patched something when the
  test called it) is put back and reported; the grader then fails that test.

Some attacks leave nothing to restore from the control thread: a torch function or
dispatch mode, a trace function (both per thread), a thread or an event callback that
patches only while a test runs, a kernel registered in torch's dispatcher, a tensor
subclass that lies. So the guard also checks at the moment of each comparison:
``torch.allclose`` and ``torch.equal`` are the guard's wrappers, which refuse tensors of
any class but ``torch.Tensor`` and ``nn.Parameter``, compute the answer again with every
mode and ``__torch_function__`` disabled, and look for a trace or profile function, a
thread the kernel did not start, a changed test helper and a kernel that student code
registered for the ops they use. An audit hook (which Python cannot remove) blocks and
reports ``gc``'s object walks, trace and profile functions, and changes to the code or
defaults of the protected functions. What these find fails the test being run.

This stops the generic attacks; it is not a proof against a student who targets this
module itself from inside the process (the sandbox still confines the damage to their
own grade).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from autograd_pitfalls.compat import (
    dispatcher_fingerprint,
    pop_torch_modes,
    python_kernels,
    torch_modes_off,
)
from autograder.kernel.protocol import GUARD_REPLY, GUARD_REQUEST

# Modules whose contents the tests use: their dictionaries are restored, additions kept.
MODULES = (
    "builtins",
    "_thread",
    "threading",
    "math",
    "operator",
    "warnings",
    "torch",
    "torch.autograd",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.testing",
    "numpy",
)
MODULE_PREFIXES = ("autograd_pitfalls",)
# Classes whose methods the tests call: changed entries restored, shadowing additions removed.
CLASSES = (("torch", "Tensor"), ("torch.nn", "Parameter"), ("torch.nn", "Module"))
# List attributes of the shell and its transformer manager that rewrite cells.
SHELL_LISTS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")
MANAGER_LISTS = ("cleanup_transforms", "line_transforms", "token_transformers")
_FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")
_MISSING = object()
# Builtins that IPython itself swaps in while a cell runs: not checked at a comparison.
_SWAPPED_BY_IPYTHON = frozenset({"exit", "quit", "input", "raw_input", "get_ipython", "display"})
# The comparisons the tests make, replaced by checking wrappers (see _Comparisons).
COMPARISONS = ("allclose", "equal")
# The only tensor classes an answer may hand to a comparison (a Parameter where asked).
TENSOR_CLASSES = (("torch", "Tensor"), ("torch.nn", "Parameter"))
# Threads of these packages are the kernel's own; any other thread is the student's.
KERNEL_PACKAGES = ("ipykernel", "IPython", "jupyter_client", "zmq", "tornado", "traitlets")
# Audit events that no answer needs and that reach the grader's state: blocked, reported.
BLOCKED_EVENTS = frozenset(
    {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile"}
)
# The ops behind allclose and equal, checked at each comparison (all ops: before and after).
COMPARISON_OPS = tuple(
    f"aten::{op}"
    for op in (
        "allclose", "isclose", "equal", "eq.Tensor", "sub.Tensor", "abs", "mul.Tensor",
        "le.Tensor", "all", "isfinite", "logical_and", "logical_or", "where.self",
        "is_nonzero", "_local_scalar_dense",
    )
)  # fmt: skip
# The kernels torch itself registers from Python, read once where this module is imported:
# in the zygote, before any kernel is forked (see autograder.kernel.server.PRELOAD).
KERNELS_AT_IMPORT = python_kernels()
DISPATCHER_AT_IMPORT = dispatcher_fingerprint()


def _is_python_class(cls: type) -> bool:
    return cls is not object and cls.__module__ != "builtins" and hasattr(cls, "__dict__")


def _function_parts(value: Any) -> tuple | None:
    if isinstance(value, types.FunctionType):
        # A copy of __kwdefaults__: an answer can change the live dict in place.
        kwdefaults = dict(value.__kwdefaults__) if value.__kwdefaults__ is not None else None
        return value.__code__, value.__defaults__, kwdefaults
    return None


def _is_api(key: str, value: Any) -> bool:
    """Whether an entry is part of what the tests call, rather than the module's own state.

    Functions, classes, modules and descriptors are restored, and so is public data; a
    module's private data (``_cache``, ``__warningregistry__``) changes as it works.
    """
    if callable(value) or isinstance(value, types.ModuleType) or hasattr(value, "__get__"):
        return True
    return not key.startswith("_")


class _Namespace:
    """One dictionary (a module's or a class's) as it was, and how to put it back."""

    def __init__(self, label: str, owner: Any, is_class: bool) -> None:
        self.label = label
        self.owner = owner
        self.is_class = is_class
        self.keys = set(vars(owner))
        self.entries = {key: value for key, value in vars(owner).items() if _is_api(key, value)}
        self.functions = {
            key: parts
            for key, value in self.entries.items()
            if (parts := _function_parts(value)) is not None
        }

    def restore(self, changes: list[str]) -> None:
        current = vars(self.owner)
        for key, value in self.entries.items():
            if current.get(key, _MISSING) is not value:
                self._set(key, value)
                changes.append(f"{self.label}.{key}")
            parts = self.functions.get(key)
            if parts is not None and _function_parts(value) != parts:
                for part, original in zip(_FUNCTION_PARTS, parts, strict=True):
                    # A fresh copy, so that the recorded one stays as it was.
                    setattr(value, part, dict(original) if isinstance(original, dict) else original)
                changes.append(f"{self.label}.{key} (its code or defaults)")
        if self.is_class:
            for key in [key for key in current if key not in self.keys]:
                # An addition that hides an inherited method changes what tests call.
                if any(key in vars(base) for base in self.owner.__mro__[1:]):
                    delattr(self.owner, key)
                    changes.append(f"{self.label}.{key}")

    def check(self, changes: list[str]) -> None:
        """Lists what differs, without restoring it (the guard's checks at a comparison)."""
        current = vars(self.owner)
        for key, value in self.entries.items():
            if self.label == "builtins" and key in _SWAPPED_BY_IPYTHON:
                continue
            if current.get(key, _MISSING) is not value:
                changes.append(f"{self.label}.{key}")
            parts = self.functions.get(key)
            if parts is not None and _function_parts(value) != parts:
                changes.append(f"{self.label}.{key} (its code or defaults)")

    def _set(self, key: str, value: Any) -> None:
        if self.is_class:
            setattr(self.owner, key, value)
        else:
            vars(self.owner)[key] = value


class _Methods:
    """The callables of one object (the kernel, the shell, ...) and of its classes."""

    def __init__(self, label: str, obj: Any) -> None:
        self.label = label
        self.obj = obj
        self.cls = type(obj)
        self.instance = {key: value for key, value in vars(obj).items() if callable(value)}
        self.classes = [
            _Namespace(f"{label}:{cls.__name__}", cls, is_class=True)
            for cls in self.cls.__mro__
            if _is_python_class(cls)
        ]

    def restore(self, changes: list[str]) -> None:
        if type(self.obj) is not self.cls:
            self.obj.__class__ = self.cls
            changes.append(f"{self.label}.__class__")
        current = vars(self.obj)
        for key, value in self.instance.items():
            if current.get(key, _MISSING) is not value:
                current[key] = value
                changes.append(f"{self.label}.{key}")
        for key in [key for key in current if key not in self.instance]:
            if callable(current[key]) and hasattr(self.cls, key):
                del current[key]  # an instance attribute hiding a method
                changes.append(f"{self.label}.{key}")
        for namespace in self.classes:
            namespace.restore(changes)


class _List:
    """A list attribute (transformers), kept by identity and by content."""

    def __init__(self, label: str, owner: Any, attribute: str) -> None:
        self.label = label
        self.owner = owner
        self.attribute = attribute
        self.value = getattr(owner, attribute)
        self.items = list(self.value)

    def restore(self, changes: list[str]) -> None:
        if getattr(self.owner, self.attribute, None) is not self.value:
            setattr(self.owner, self.attribute, self.value)
            changes.append(self.label)
        if len(self.value) != len(self.items) or any(
            a is not b for a, b in zip(self.value, self.items, strict=False)
        ):
            self.value[:] = self.items
            changes.append(self.label)


class Guard:
    """What a kernel looked like before the student's code ran, and how to restore it.

    Args:
        kernel: The ipykernel kernel, fully initialised, before any execute request.
    """

    def __init__(self, kernel: Any) -> None:
        # Registered first, so that the recorded (and restored) handlers include it.
        kernel.control_handlers[GUARD_REQUEST] = self.handle
        self.kernel = kernel
        shell = kernel.shell
        self.shell = shell
        # What the checks below find between two guard requests; the next one reports it.
        self.problems: list[str] = []
        self._testing = False
        self._own_threads: set[int] = set()  # threads where the guard itself is working
        self.threads_started = 0
        self._threads_before = 0
        # Before anything is recorded, so that the wrappers count as the originals.
        self._wrap_thread_start()
        self.comparisons = self._wrap_comparisons()
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)
        self.threads_at_start = set(sys._current_frames())
        # Read in the zygote, before the fork (the same for every kernel, and a tenth of a
        # second each would spend), again only if the kernel's start registered something.
        self.dispatcher_at_start = dispatcher_fingerprint()
        unchanged = self.dispatcher_at_start == DISPATCHER_AT_IMPORT
        self.kernels_at_start = KERNELS_AT_IMPORT if unchanged else python_kernels()
        self.tensor_classes_at_start = set(_tensor_classes())
        self.sys_modules = dict(sys.modules)
        names = [name for name in MODULES if name in sys.modules]
        names += sorted(name for name in sys.modules if name.startswith(MODULE_PREFIXES))
        self.namespaces = [_Namespace(name, sys.modules[name], is_class=False) for name in names]
        for module_name, class_name in CLASSES:
            module = sys.modules.get(module_name)
            cls = getattr(module, class_name, None) if module else None
            if isinstance(cls, type):
                label = f"{module_name}.{class_name}"
                self.namespaces.append(_Namespace(label, cls, is_class=True))
        manager = shell.input_transformer_manager
        self.objects = [
            _Methods(label, obj)
            for label, obj in (
                ("kernel", kernel),
                ("session", kernel.session),
                ("shell", shell),
                ("shell.compile", shell.compile),
                ("shell.displayhook", shell.displayhook),
                ("shell.display_pub", shell.display_pub),
                ("shell.events", shell.events),
                ("input_transformer_manager", manager),
                ("sys.stdout", sys.stdout),
                ("sys.stderr", sys.stderr),
            )
        ]
        self.lists = [_List(f"shell.{name}", shell, name) for name in SHELL_LISTS]
        self.lists += [
            _List(f"input_transformer_manager.{name}", manager, name)
            for name in MANAGER_LISTS
            if isinstance(getattr(manager, name, None), list)
        ]
        self.handlers = {
            "kernel.shell_handlers": (kernel.shell_handlers, dict(kernel.shell_handlers)),
            "kernel.control_handlers": (kernel.control_handlers, dict(kernel.control_handlers)),
        }
        self.sys_hooks = {
            name: getattr(sys, name)
            for name in ("stdout", "stderr", "displayhook", "excepthook", "breakpointhook")
        }
        self.custom_exceptions = (shell.custom_exceptions, shell.CustomTB)
        self.callbacks = {event: list(funcs) for event, funcs in shell.events.callbacks.items()}
        self._student_callbacks: dict[str, list] | None = None
        # Functions whose code or defaults no one may set: the helpers, the guard's own.
        self.protected = {
            id(value)
            for namespace in self.namespaces
            if namespace.label.startswith(MODULE_PREFIXES)
            for value in namespace.entries.values()
            if isinstance(value, types.FunctionType)
        }
        self.protected |= {id(value) for value in self.comparisons.values()}
        self.protected |= {
            id(value)
            for value in [*vars(Guard).values(), *globals().values()]
            if isinstance(value, types.FunctionType)
        }
        self._live_namespaces = [
            namespace
            for namespace in self.namespaces
            if namespace.label.startswith(MODULE_PREFIXES)
        ]
        # Last: an audit hook cannot be removed, not even by the guard.
        sys.addaudithook(self._audit)

    @contextlib.contextmanager
    def _own(self) -> Iterator[None]:
        """Lets the guard itself do what the audit hook refuses to student code."""
        ident = threading.get_ident()
        self._own_threads.add(ident)
        try:
            yield
        finally:
            self._own_threads.discard(ident)

    def _audit(self, event: str, args: tuple) -> None:
        """Blocks (and reports) what no answer needs and what reaches the grader's state."""
        if event == "object.__setattr__":
            if not (args and id(args[0]) in self.protected and args[1] in _FUNCTION_PARTS):
                return
            event = f"setting {getattr(args[0], '__qualname__', '?')}.{args[1]}"
        elif event not in BLOCKED_EVENTS:
            return
        if threading.get_ident() in self._own_threads:
            return
        self.problems.append(f"{event} (refused)")
        raise RuntimeError(f"{event} is not allowed in a graded notebook")

    def _wrap_thread_start(self) -> None:
        """Counts the threads started, so that one started and gone within a test shows."""
        thread_module = sys.modules["_thread"]
        original = thread_module.start_new_thread
        guard = self

        def start_new_thread(function: Any, *args: Any, **kwargs: Any) -> int:
            thread = getattr(function, "__self__", None)  # Thread.start passes _bootstrap
            if isinstance(thread, threading.Thread):
                origin = _thread_origin(thread)
            else:
                origin = getattr(function, "__module__", "") or ""
            if not origin.startswith(KERNEL_PACKAGES):
                guard.threads_started += 1
            return original(function, *args, **kwargs)

        for module, name in ((thread_module, "start_new_thread"), (thread_module, "start_new")):
            if getattr(module, name, None) is original:
                setattr(module, name, start_new_thread)
        if getattr(threading, "_start_new_thread", None) is original:
            threading._start_new_thread = start_new_thread  # what Thread.start calls

    def _wrap_comparisons(self) -> dict[str, Callable]:
        """Replaces torch's comparisons by wrappers that check the kernel at each call."""
        torch = sys.modules.get("torch")
        if torch is None:
            return {}
        self.tensor_base = torch.Tensor
        self.tensor_classes = tuple(
            getattr(sys.modules[module], name) for module, name in TENSOR_CLASSES
        )
        wrapped = {}
        for name in COMPARISONS:
            wrapped[name] = self._checked(name, getattr(torch, name))
            setattr(torch, name, wrapped[name])
        return wrapped

    def _checked(self, name: str, original: Callable) -> Callable:
        guard = self

        def compare(*args: Any, **kwargs: Any) -> Any:
            return guard.compare(name, original, args, kwargs)

        compare.__name__ = compare.__qualname__ = name
        compare.__doc__ = original.__doc__
        return compare

    def compare(self, name: str, original: Callable, args: tuple, kwargs: dict) -> Any:
        """Runs ``torch.<name>`` as asked, checks the kernel, and returns the honest answer.

        The answer is computed again with every torch function and dispatch mode and every
        ``__torch_function__`` disabled: a mode or a tensor that lies shows as a difference.
        """
        problems = self.live_problems()
        for value in (*args, *kwargs.values()):
            if isinstance(value, self.tensor_base) and type(value) not in self.tensor_classes:
                problems.append(f"a {type(value).__name__} (a tensor subclass) in torch.{name}")
        result = original(*args, **kwargs)
        try:
            with torch_modes_off():
                honest = original(*args, **kwargs)
        except Exception as error:
            problems.append(f"torch.{name} failed with modes off ({type(error).__name__})")
            self.problems += problems
            raise
        if type(honest) is not type(result) or honest != result:
            problems.append(f"a torch mode or __torch_function__ changed torch.{name}'s answer")
        self.problems += problems
        return honest

    def live_problems(self) -> list[str]:
        """What is wrong in the kernel right now, seen from the thread that calls this."""
        problems = []
        if sys.gettrace() is not None or sys.getprofile() is not None:
            problems.append("a trace or profile function")
        problems += self._foreign_threads()
        problems += sorted(python_kernels(COMPARISON_OPS) - self.kernels_at_start)
        changes: list[str] = []
        # The helpers and their code and defaults (changed in place while a test runs):
        # the rest is checked around the test (here it would cost ten times as much).
        for namespace in self._live_namespaces:
            namespace.check(changes)
        problems += [f"{change} (while in use)" for change in changes]
        return problems

    def _foreign_threads(self) -> list[str]:
        objects = {thread.ident: thread for thread in threading.enumerate()}
        found = []
        for ident in sys._current_frames():
            if ident in self.threads_at_start:
                continue
            thread = objects.get(ident)
            origin = _thread_origin(thread) if thread is not None else ""
            if not origin.startswith(KERNEL_PACKAGES):
                label = thread.name if thread is not None else ident
                found.append(f"a thread the kernel did not start ({label})")
        return found

    def _state_problems(self, every_op: bool) -> list[str]:
        """What the guard cannot put back: reported (and failing tests) while it lasts.

        Args:
            every_op: Look at the dispatcher's kernels for every op (a tenth of a second),
                not only those of the comparisons.
        """
        if not self.comparisons:
            return []
        problems = self._foreign_threads()
        # Every op's kernels only when the dispatcher's summary moved: reading them all
        # costs a tenth of a second per test, the summary a few milliseconds.
        every_op = every_op and dispatcher_fingerprint() != self.dispatcher_at_start
        kernels = python_kernels() if every_op else python_kernels(COMPARISON_OPS)
        problems += [
            f"a kernel registered in torch's dispatcher: {kernel}"
            for kernel in sorted(kernels - self.kernels_at_start)
        ]
        problems += [
            f"a tensor subclass defined in the notebook ({cls.__qualname__})"
            for cls in _tensor_classes()
            if cls not in self.tensor_classes_at_start
            and not cls.__module__.startswith(("torch", *MODULE_PREFIXES))
        ]
        return problems

    def _pre_run_cell(self, *args: Any) -> None:
        """In the main thread, before a test cell: pops modes an answer left active."""
        if self._testing:
            with self._own():
                popped = pop_torch_modes()
                if popped:
                    self.problems.append(f"torch modes left active ({', '.join(popped)})")
                if sys.gettrace() is not None or sys.getprofile() is not None:
                    sys.settrace(None)
                    sys.setprofile(None)
                    self.problems.append("a trace or profile function in the main thread")

    def _post_run_cell(self, *args: Any) -> None:
        """In the main thread, after a test cell: modes still active were left by an answer."""
        if self._testing:
            self._pre_run_cell()
            # A callback added while the test ran may still undo what it did, later in
            # this same event; this one runs first.
            self.problems += self._changed_callbacks()

    def _changed_callbacks(self) -> list[str]:
        """IPython's event callbacks that differ from the originals (a test runs with those)."""
        changed = []
        for event, funcs in self.callbacks.items():
            live = self.shell.events.callbacks.get(event, [])
            if len(live) != len(funcs) or any(
                a is not b for a, b in zip(live, funcs, strict=False)
            ):
                changed.append(f"IPython's {event} callbacks (changed while the test ran)")
        return changed

    def _restore_hooks(self, changes: list[str]) -> None:
        for name, value in self.sys_hooks.items():
            if getattr(sys, name) is not value:
                setattr(sys, name, value)
                changes.append(f"sys.{name}")
        if sys.gettrace() is not None:
            sys.settrace(None)
            changes.append("sys.settrace")
        if sys.getprofile() is not None:
            sys.setprofile(None)
            changes.append("sys.setprofile")
        for hook in ("_trace_hook", "_profile_hook"):
            if getattr(threading, hook, None) is not None:
                setattr(threading, hook, None)
                changes.append(f"threading.{hook}")
        if (self.shell.custom_exceptions, self.shell.CustomTB) != self.custom_exceptions:
            self.shell.custom_exceptions, self.shell.CustomTB = self.custom_exceptions
            changes.append("shell.set_custom_exc")
        for label, (live, saved) in self.handlers.items():
            if live != saved or any(live[key] is not value for key, value in saved.items()):
                live.clear()
                live.update(saved)
                changes.append(label)

    def _restore_names(self, names: dict[str, str], changes: list[str]) -> None:
        """Rebinds the notebook's names for the modules and helpers the tests import."""
        user_ns = self.shell.user_ns
        expected: dict[str, Any] = {"__builtins__": self.sys_modules.get("builtins")}
        for name, target in names.items():
            module_name, _, attribute = target.partition(":")
            module = self.sys_modules.get(module_name)
            if module is None:
                continue  # not loaded when the kernel started: cannot vouch for it
            value = getattr(module, attribute, _MISSING) if attribute else module
            if value is not _MISSING:
                expected[name] = value
        for name, value in expected.items():
            if name in user_ns and user_ns[name] is not value:
                user_ns[name] = value
                changes.append(f"the notebook's {name}")

    def restore(self, names: dict[str, str]) -> list[str]:
        """Puts back every recorded thing that differs; returns what differed.

        Args:
            names: Notebook names the tests use, ``{name: "module"}`` or
                ``{name: "module:attribute"}``, for example
                ``{"assert_grad_close": "autograd_pitfalls:assert_grad_close"}``.

        Returns:
            A sorted list of what was restored, empty when nothing was touched.
        """
        changes: list[str] = []
        for name, module in self.sys_modules.items():
            protected = name in MODULES or name.startswith(MODULE_PREFIXES)
            if protected and sys.modules.get(name) is not module:
                sys.modules[name] = module
                changes.append(f"sys.modules[{name!r}]")
        for obj in self.objects:
            obj.restore(changes)
        for namespace in self.namespaces:
            namespace.restore(changes)
        for lst in self.lists:
            lst.restore(changes)
        self._restore_hooks(changes)
        self._restore_names(names, changes)
        return sorted(set(changes))

    def before_test(self, names: dict[str, str]) -> list[str]:
        """Restores everything, and runs the test with the original event callbacks."""
        # The ops of the comparisons only: an override of another op fails the test after.
        changes = self.restore(names) + self._state_problems(every_op=False)
        callbacks = self.shell.events.callbacks
        self._student_callbacks = {event: list(funcs) for event, funcs in callbacks.items()}
        for event, funcs in self.callbacks.items():
            callbacks[event][:] = funcs
        self._threads_before = self.threads_started
        self._testing = True
        return changes

    def handle(self, stream: Any, ident: Any, parent: dict) -> None:
        """Answers one guard request (a control-channel handler of ipykernel)."""
        content = parent.get("content", {})
        names = content.get("names", {})
        try:
            with self._own():
                if content.get("phase") == "after":
                    changes = self.after_test(names)
                else:
                    changes = self.before_test(names)
            # Found by the checks at comparisons, the main-thread callbacks, the audit hook.
            changes = sorted({*changes, *self.problems})
            self.problems.clear()
        except Exception as error:  # the grader counts a failed check as tampering
            changes = [f"the integrity check itself ({type(error).__name__}: {error})"]
        # The session was restored above: the reply goes through the real one.
        self.kernel.session.send(stream, GUARD_REPLY, {"changes": changes}, parent, ident)

    def after_test(self, names: dict[str, str]) -> list[str]:
        """Reports (and restores) what changed while the test ran; puts callbacks back."""
        self._testing = False
        changes = self.restore(names) + self._state_problems(every_op=True)
        if self.threads_started != self._threads_before:
            changes.append("a thread started while the test ran")
        changes += self._changed_callbacks()
        if self._student_callbacks is not None:
            for event, funcs in self._student_callbacks.items():
                self.shell.events.callbacks[event][:] = funcs
            self._student_callbacks = None
        return changes


def _thread_origin(thread: threading.Thread) -> str:
    """The module that made a thread: its class's, or its target's for a plain Thread."""
    if type(thread) is threading.Thread:
        return getattr(getattr(thread, "_target", None), "__module__", "") or ""
    return type(thread).__module__


def _tensor_classes() -> list[type]:
    """Every subclass of ``torch.Tensor`` now alive (``nn.Parameter`` and its own included)."""
    found: list[type] = []
    pending = [sys.modules["torch"].Tensor]
    while pending:
        for cls in type.__subclasses__(pending.pop()):
            if cls not in found:
                found.append(cls)
                pending.append(cls)
    return found


def install(kernel: Any) -> Guard:
    """Records the kernel's state and answers the grader's guard requests.

    Called in the kernel process after ``IPKernelApp.initialize()``, before any cell.

    Args:
        kernel: The ipykernel kernel.

    Returns:
        The guard, whose :meth:`Guard.handle` answers on the control channel.
    """
    return Guard(kernel)
