"""Hidden checks decided in the grader's process: cut the judges out, judge what probes saw.

A graded test cell's hidden block holds probes and judges (see
:mod:`autograd_pitfalls.probe`). Before the cell reaches the student's kernel,
:func:`kernel_source` cuts each ``### BEGIN JUDGE`` ... ``### END JUDGE`` section out
and binds the names it defined to :func:`~autograd_pitfalls.probe.judged_by_grader`
with this student's seed. After the cell ran, :class:`Judges` judges the observations
the probes sent, here, with the judges and oracles the kernel never saw, on cases drawn
again from the same seed.

Seeds come from :func:`seed_for`: an HMAC of the course's secret over the assignment, the
student, the submission's code and the check, so that hidden inputs differ between
students and between two submissions of one student, and grading the same submission
again gives the same grade.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import hmac
import io
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autograd_pitfalls import probe

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
JUDGE_BEGIN = "### BEGIN JUDGE"
JUDGE_END = "### END JUDGE"
_JUDGE_SECTION = re.compile(
    rf"^[ \t]*{re.escape(JUDGE_BEGIN)}[^\n]*\n(?P<body>.*?)^[ \t]*{re.escape(JUDGE_END)}[^\n]*$",
    re.M | re.S,
)
_HIDDEN_BLOCK = re.compile(
    rf"^[ \t]*{re.escape(HIDDEN_BEGIN)}[^\n]*\n(?P<body>.*?)^[ \t]*{re.escape(HIDDEN_END)}",
    re.M | re.S,
)


# The judges' own sentences as templates of the message catalog (autograder/i18n/messages.py):
# a learner of another edition reads them translated (autograd_pitfalls.messages).
MESSAGES = (
    "{0}: not judged: the exercise is not answered yet",
    "{0}: not judged: the visible tests above failed first ({1})",
    "{0}: the hidden tests sent no observations (the cell stopped before them, or its "
    "output was replaced)",
    "{0}: observations sent {1} times",
    "{0}: the observations could not be judged ({1})",
    "observations of an unknown check {0}",
)


class JudgeSetupError(ValueError):
    """A test cell's hidden block is not laid out as probes and judges (an author's error)."""


def hidden_block(source: str) -> str:
    """Returns the code between a test cell's hidden-test markers ("" when it has none)."""
    found = _HIDDEN_BLOCK.search(source)
    return found.group("body") if found else ""


def _defined_names(code: str) -> list[str]:
    """The names a judge section defines at its top level, in order."""
    names: list[str] = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names += [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    return list(dict.fromkeys(names))


def _definitions(code: str) -> ast.Module:
    """The imports, functions and classes a cell's visible tests define: what judges may use.

    The visible tests' other statements call the student's answers, which do not exist in
    the grader's process.
    """
    kinds = (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    tree = ast.parse(code)
    tree.body = [node for node in tree.body if isinstance(node, kinds)]
    return tree


def kernel_source(source: str, seed: int) -> str:
    """Returns a test cell's source as the student's kernel runs it: without its judges.

    Each judge section becomes one line binding the names it defined to the grader's
    stand-in, padded with blank lines so that line numbers stay those of the source.

    Args:
        source: The test cell's source, hidden tests included.
        seed: The seed of this student's hidden cases.
    """

    def replace(section: re.Match) -> str:
        names = _defined_names(section.group("body"))
        bound = " = ".join(names) if names else "_"
        line = (
            f"{bound} = __import__('autograd_pitfalls.probe', fromlist=['_'])"
            f".judged_by_grader({seed})"
        )
        return line + "\n" * section.group(0).count("\n")

    return _JUDGE_SECTION.sub(replace, source)


def judge_sections(source: str) -> list[str]:
    """The code of each judge section of a cell's source."""
    return [found.group("body") for found in _JUDGE_SECTION.finditer(source)]


def seed_for(secret: bytes, assignment: str, student: str, submission: str, check: str) -> int:
    """Returns the seed of one student's hidden cases for one check (48 bits).

    Args:
        secret: The course's grading secret (never in a student's kernel).
        assignment: The assignment id.
        student: The student id.
        submission: A digest of the submission's code: a new submission draws new cases.
        check: The test cell's grade id.
    """
    message = "\0".join((assignment, student, submission, check)).encode()
    return int.from_bytes(hmac.new(secret, message, hashlib.sha256).digest()[:6], "big")


def submission_digest(sources: list[str]) -> str:
    """A digest of a submission's code cells, in order."""
    return hashlib.sha256("\0".join(sources).encode()).hexdigest()


@dataclass(frozen=True)
class Verdict:
    """What the judges of one test cell decided.

    Attributes:
        failures: One message per failing check (empty: every check passed).
    """

    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Whether every check of the cell passed."""
        return not self.failures


class Judges:
    """The judges of one notebook, built in the grader's process from the source's cells.

    Args:
        setup_source: The source of the notebook's locked setup cell (its imports and
            helpers), run here once so that the judges see the names it defines.
    """

    def __init__(self, setup_source: str) -> None:
        self._setup = setup_source
        self._namespace: dict[str, Any] | None = None
        self._checks: dict[str, list[probe.HiddenCheck]] = {}  # by grade id and source

    def _base(self) -> dict[str, Any]:
        if self._namespace is None:
            namespace: dict[str, Any] = {"__name__": "__judge__"}
            with _quiet():
                exec(compile(self._setup, "<setup cell>", "exec"), namespace)
            self._namespace = namespace
        return self._namespace

    def checks(self, grade_id: str, source: str) -> list[probe.HiddenCheck]:
        """Returns the checks a test cell's hidden block defines (found once, then kept).

        The grader's process runs the setup cell, then the definitions (imports, functions,
        classes) of the cell's visible tests, then its hidden block, where each
        ``probe_and_judge`` call is recorded instead of run.

        Raises:
            JudgeSetupError: If the hidden block fails to run here or defines no check.
        """
        key = grade_id + "\0" + source
        if key not in self._checks:
            from autograd_pitfalls import probe  # torch: imported where judging starts

            namespace = dict(self._base())
            try:
                with _quiet(), probe.recording() as recorded:
                    visible = _definitions(source.split(HIDDEN_BEGIN)[0])
                    exec(compile(visible, f"<visible tests of {grade_id}>", "exec"), namespace)
                    code = hidden_block(source)
                    exec(compile(code, f"<hidden tests of {grade_id}>", "exec"), namespace)
            except Exception as error:
                raise JudgeSetupError(
                    f"the hidden tests of {grade_id} do not run in the grader: "
                    f"{type(error).__name__}: {error}"
                ) from error
            if not recorded:
                raise JudgeSetupError(f"the hidden tests of {grade_id} define no probe_and_judge")
            self._checks[key] = list(recorded)
        return self._checks[key]

    def judge(
        self,
        grade_id: str,
        source: str,
        sent: dict[str, list[Any]],
        seed: int,
        stopped_by: str = "",
    ) -> Verdict:
        """Judges what the probes of one test cell sent.

        Args:
            grade_id: The test cell's grade id.
            source: Its source, hidden tests and judges included.
            sent: The observations received, by check name, in the order they came.
            seed: The seed the kernel was given for this cell.
            stopped_by: The name of the error the cell raised before its hidden tests
                ("" when it raised none): what a check that received nothing says.
        """
        failures = []
        with warnings.catch_warnings():  # what torch says of odd observations: not here
            warnings.simplefilter("ignore")
            for check in self.checks(grade_id, source):
                failure = self._judge_one(check, sent.get(check.name, []), seed, stopped_by)
                if failure:
                    failures.append(failure)
        unknown = sorted(set(sent) - {check.name for check in self.checks(grade_id, source)})
        failures += [f"observations of an unknown check {name!r}" for name in unknown[:3]]
        return Verdict(tuple(failures))

    @staticmethod
    def _judge_one(
        check: probe.HiddenCheck, received: list[Any], seed: int, stopped_by: str = ""
    ) -> str:
        """Judges one check's observations; returns why it fails ("" when it passes).

        Whatever arrived (malformed, oversized, of another check), this check fails with a
        message and the cell's other checks are judged as usual.
        """
        from autograd_pitfalls import probe

        if not received:
            return f"{check.name}: {_not_observed(stopped_by)}"
        if len(received) > 1:
            return f"{check.name}: observations sent {len(received)} times"
        try:
            probe.judge_observations(check, received[0], seed)
        except probe.HiddenCheckError as error:
            return str(error)
        except Exception as error:
            return (
                f"{check.name}: the observations could not be judged "
                f"({type(error).__name__}: {str(error)[:200]})"
            )
        return ""


def _not_observed(stopped_by: str) -> str:
    """Why a hidden check received no observations, in the words a student needs."""
    if stopped_by == "NotImplementedError":
        return "not judged: the exercise is not answered yet"
    if stopped_by:
        return f"not judged: the visible tests above failed first ({stopped_by})"
    return (
        "the hidden tests sent no observations (the cell stopped before them, or its output "
        "was replaced)"
    )


@contextlib.contextmanager
def _quiet():
    """The setup cell prints (torch's version) and torch may warn: not on the grader's terminal."""
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        yield
