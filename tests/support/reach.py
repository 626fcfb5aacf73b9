"""Answer code that reaches for the grading machinery from inside the student's kernel.

Each attack of issue 19, written once and used by the adversarial specs of more than
one assignment (``autograder/fixtures/adversarial/attacks.py`` and
``autograder/fixtures/judge_attacks/attacks.py``). Every one earned points from a blank
notebook while the tests decided inside the kernel; with the hidden checks judged in the
grader's process each must earn nothing, and the report must flag it for review.
"""

from __future__ import annotations

from tests.support.adversarial import Attack

# --- Errors swallowed: how IPython shows an exception, replaced -------------------------

# The error output is never sent: nbgrader sees a test cell without an error.
SWALLOW_SHOWTRACEBACK = """
_ip = get_ipython()
_ip.showtraceback = lambda *args, **kwargs: None
_ip._showtraceback = lambda *args, **kwargs: None
"""

# IPython calls this handler instead of showing the error.
SWALLOW_CUSTOM_EXC = """
get_ipython().set_custom_exc(
    (BaseException,), lambda shell, etype, value, tb, tb_offset=None: None
)
"""

# Every later cell is rewritten to catch whatever it raises.
SWALLOW_TRANSFORMER_MANAGER = """
import textwrap


class _CatchEverything:
    def __init__(self, real):
        self.real = real

    def transform_cell(self, cell):
        body = self.real.transform_cell(cell)
        return "try:\\n" + textwrap.indent(body, "    ") + "\\nexcept BaseException:\\n    pass\\n"

    def __getattr__(self, name):
        return getattr(self.real, name)


_ip = get_ipython()
_ip.input_transformer_manager = _CatchEverything(_ip.input_transformer_manager)
"""

# The kernel's shell, reached through the kernel's traitlets: an AST transformer list set
# as a new trait value wraps every later cell in try/except.
SWALLOW_KERNEL_SHELL_TRAITLET = """
import ast as _ast


class _TryEverything(_ast.NodeTransformer):
    def visit_Module(self, node):
        handler = _ast.ExceptHandler(type=_ast.Name("BaseException", _ast.Load()), name=None,
                                     body=[_ast.Pass()])
        wrapped = _ast.Try(body=node.body or [_ast.Pass()], handlers=[handler], orelse=[],
                           finalbody=[])
        node.body = [wrapped]
        return _ast.fix_missing_locations(node)


_shell = get_ipython().kernel.shell
_shell.set_trait("ast_transformers", [_TryEverything()])
"""

SWALLOWERS = {
    "swallows_errors_showtraceback": SWALLOW_SHOWTRACEBACK,
    "swallows_errors_custom_exc": SWALLOW_CUSTOM_EXC,
    "swallows_errors_transformer_manager": SWALLOW_TRANSFORMER_MANAGER,
    "swallows_errors_kernel_shell_traitlet": SWALLOW_KERNEL_SHELL_TRAITLET,
}

# --- The guard neutered through the kernel's control handlers ---------------------------

# Every integrity check answers "nothing changed", and the comparisons always agree.
NEUTER_GUARD = """
import torch as _torch

_kernel = get_ipython().kernel


def _all_clear(stream, ident, parent):
    _kernel.session.send(stream, "autograder_guard_reply", {"changes": []}, parent, ident)


_kernel.control_handlers["autograder_guard_request"] = _all_clear
_torch.allclose = lambda *args, **kwargs: True
_torch.equal = lambda *args, **kwargs: True
"""

# --- The test's own knowledge read ------------------------------------------------------

# Walks the callers' frames for the first value a test holds under a telling name.
_FRAME_SEARCH = """
def _from_the_test(start, want):
    names = ("expected", "truth", "values", "reference", "want", "grad", "features")
    frame = start
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name in names:
                value = scope.get(name)
                if value is not None and want(value):
                    return value
        frame = frame.f_back
    raise NotImplementedError("nothing found in the test")
"""

READ_CALLER_FRAME = "import sys\n" + _FRAME_SEARCH
READ_TRACEBACK = (
    _FRAME_SEARCH
    + """

def _caller_through_a_traceback():
    try:
        raise RuntimeError
    except RuntimeError as error:
        return error.__traceback__.tb_frame.f_back.f_back
"""
)

# Calls whatever oracle-looking function the test defined in the notebook.
CALL_HIDDEN_ORACLE = """
import sys


def _oracle(*args, **kwargs):
    scope = sys._getframe(2).f_globals
    for name, value in list(scope.items()):
        telling = ("expect", "truth", "reference", "oracle")
        if callable(value) and any(word in name.lower() for word in telling):
            return value(*args, **kwargs)
    raise NotImplementedError("no oracle found")
"""

# Rebinds, in the caller's globals, what the test uses to check and to report.
REBIND_TEST_HELPERS = """
import sys


def _rebind_the_test():
    scope = sys._getframe(2).f_globals
    for name in ("assert_grad_close", "assert_is_leaf", "assert_version", "probe_and_judge",
                 "explain", "on_gpu", "_check_features"):
        if name in scope:
            scope[name] = lambda *args, **kwargs: None
"""

# A mapping whose lookups answer from the test's frames at the moment they are made.
LAZY_DICT = """
import sys


class _Lazy(dict):
    def __getitem__(self, key):
        frame = sys._getframe(1)
        while frame is not None:
            for scope in (frame.f_locals, frame.f_globals):
                truth = scope.get("truth")
                if isinstance(truth, dict) and key in truth:
                    return truth[key]
            frame = frame.f_back
        return dict.__getitem__(self, key)
"""

# --- Honest code that the old guard took for tampering ----------------------------------

# A progress bar (tqdm starts a monitor thread and writes to stderr), a thread pool it
# joins and a log line on stderr, in the notebook and inside an answer the tests call:
# not tampering, and no lost point.
HONEST_THREADS = """
import logging
from concurrent.futures import ThreadPoolExecutor

from tqdm.auto import tqdm

with ThreadPoolExecutor(max_workers=2) as pool:
    squares = list(pool.map(lambda n: n * n, range(8)))
for _ in tqdm(range(3), desc="warming up"):
    pass
print(sum(squares))
logging.basicConfig(level=logging.INFO)
_log = logging.getLogger("my_answers")


def _busy(function):
    def wrapped(*args, **kwargs):
        with ThreadPoolExecutor(max_workers=2) as pool:
            pool.submit(sum, range(10)).result()
        for _ in tqdm(range(2), desc=function.__name__, leave=False):
            pass
        _log.info("calling %s", function.__name__)
        return function(*args, **kwargs)

    wrapped.__name__ = function.__name__
    return wrapped
"""


def kernel_attacks() -> dict[str, Attack]:
    """The attacks on the kernel that need no exercise: errors swallowed, the guard neutered.

    Each runs right after the setup cell of a blank submission, so every test after it is
    affected; each must earn nothing.
    """
    attacks = {
        name: Attack(base="blank", cells_after={"setup": code}) for name, code in SWALLOWERS.items()
    }
    # The guard answers "nothing changed", comparisons always agree, errors are not shown.
    attacks["neuters_the_guard"] = Attack(
        base="blank", cells_after={"setup": NEUTER_GUARD + SWALLOW_SHOWTRACEBACK}
    )
    return attacks


def honest_busy_answers(answers: list[str], first: int = 1) -> Attack:
    """The perfect submission with :data:`HONEST_THREADS`, each answer wrapped in ``_busy``.

    Args:
        answers: The answer functions' names, in exercise order.
        first: The number of the first one's exercise (a lesson's second part goes on from
            its first part's numbers).
    """
    wrapped = {
        f"q{number}-answer": f"{name} = _busy({name})" for number, name in enumerate(answers, first)
    }
    return Attack(base="perfect", cells_after={"setup": HONEST_THREADS, **wrapped})
