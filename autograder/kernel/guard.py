"""Inside each student's kernel: put back what the student's code replaced, around each test.

The grade is not decided here: each test cell's hidden checks are a probe, which runs in
this kernel and only observes, and a judge, which runs in the grader's own process
(:mod:`autograd_pitfalls.probe`, :mod:`autograder.pipeline.judge`). Values the judge
checks on inputs drawn for this student cannot be faked from here without solving the
exercise. What the probes observe about *method* (a tensor's ``_version``, its
``grad_fn``, a Parameter's identity, forward passes counted) is read in this process,
where an answer could have replaced torch or the course's helpers. This guard keeps that
honest against the generic ways of doing so:

When the kernel starts (before any student code), :func:`install` records the
dictionaries of the modules and classes the tests use, the methods of the kernel, shell
and session objects, IPython's transformer lists and hooks, and the kernel's handlers.
The grader asks the guard, over the kernel's control channel (which student code does
not go through), to restore all of it before each test cell, and to check again after it:

* ``before``: whatever differs is put back and reported; the test then runs against the
  real torch, helpers and kernel, with IPython's original event callbacks and no torch
  mode left active.
* ``after``: whatever changed while the test ran (the answer patched something when the
  test called it) is put back and reported; the grader then fails that test.

An audit hook (which Python cannot remove) refuses ``gc``'s object walks, trace and
profile functions, and changes to the code or defaults of the helpers and of the guard.

What it no longer does (the judge made it pointless, and some of it failed honest
students): check every comparison, watch threads (an honest ``tqdm`` bar or thread pool
starts one), read torch's dispatcher, or look for tensor subclasses. A student who
targets this module from inside the process can still forge method observations; the
report's review flags point the instructor at such code.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import torch

from autograd_pitfalls.compat import pop_torch_modes
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
CLASSES = (
    ("torch", "Tensor"),
    ("torch.nn", "Parameter"),
    ("torch.nn", "Module"),
    # The probes' own instruments: the GPU stand-in and the counters they observe with.
    ("autograd_pitfalls.standin", "StandInTensor"),
    ("autograd_pitfalls.passes", "CountForwardProducts"),
    ("autograd_pitfalls.watch", "WatchWrites"),
)
# List attributes of the shell and its transformer manager that rewrite cells.
SHELL_LISTS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")
MANAGER_LISTS = ("cleanup_transforms", "line_transforms", "token_transformers")
_FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")
_MISSING = object()
# Audit events that no answer needs and that reach the grader's state: blocked, reported.
BLOCKED_EVENTS = frozenset(
    {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile"}
)


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
        # What the main-thread callbacks and the audit hook find between two guard
        # requests; the next one reports it.
        self.problems: list[str] = []
        self._testing = False
        self._own_threads: set[int] = set()  # threads where the guard itself is working
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)
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
        self.protected |= {
            id(value)
            for value in [*vars(Guard).values(), *globals().values()]
            if isinstance(value, types.FunctionType)
        }
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

    def _pre_run_cell(self, *args: Any) -> None:
        """In the main thread, before a test cell: pops modes an answer left active."""
        if self._testing:
            with self._own():
                popped = pop_modes_left_active()
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
        changes = self.restore(names)
        callbacks = self.shell.events.callbacks
        self._student_callbacks = {event: list(funcs) for event, funcs in callbacks.items()}
        for event, funcs in self.callbacks.items():
            callbacks[event][:] = funcs
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
            # Found by the main-thread callbacks and the audit hook.
            changes = sorted({*changes, *self.problems})
            self.problems.clear()
        except Exception as error:  # the grader counts a failed check as tampering
            changes = [f"the integrity check itself ({type(error).__name__}: {error})"]
        # The session was restored above: the reply goes through the real one.
        self.kernel.session.send(stream, GUARD_REPLY, {"changes": changes}, parent, ident)

    def after_test(self, names: dict[str, str]) -> list[str]:
        """Reports (and restores) what changed while the test ran; puts callbacks back."""
        self._testing = False
        changes = self.restore(names) + self._changed_callbacks()
        if self._student_callbacks is not None:
            for event, funcs in self._student_callbacks.items():
                self.shell.events.callbacks[event][:] = funcs
            self._student_callbacks = None
        return changes


def pop_modes_left_active() -> list[str]:
    """Pops the torch modes left active; returns those that are not torch's own default.

    ``torch.set_default_device(...)`` keeps a mode active for the whole process: a setting
    an answer may have left (the test cell puts torch's defaults back), not tampering. It
    is left as torch leaves it, ``torch.set_default_device(None)``; any other mode is
    popped and named.
    """
    torch.set_default_device(None)
    return pop_torch_modes()


def install(kernel: Any) -> Guard:
    """Records the kernel's state and answers the grader's guard requests.

    Called in the kernel process after ``IPKernelApp.initialize()``, before any cell.

    Args:
        kernel: The ipykernel kernel.

    Returns:
        The guard, whose :meth:`Guard.handle` answers on the control channel.
    """
    return Guard(kernel)
