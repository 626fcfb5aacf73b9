"""Hidden checks as a probe and a judge: the student's process observes, the grader decides.

A hidden check is three functions and one call, written in the test cell between
nbgrader's hidden-test markers::

    ### BEGIN HIDDEN TESTS
    def hidden_cases(rng):            # both sides: the inputs, drawn from rng
        return [{"x": torch.randn(3, generator=rng)} for _ in range(5)]

    def observe(case):                # the student's kernel: call the answer, look
        y = double(case["x"])
        return {"y": y, "is_leaf": y.is_leaf}

    ### BEGIN JUDGE
    def judge(seen, case):            # the grader's process: decide
        assert torch.allclose(seen["y"].values, 2 * case["x"]), "double(x) should be 2 x"
    ### END JUDGE
    probe_and_judge("q1", hidden_cases, observe, judge)
    ### END HIDDEN TESTS

Where the notebook runs as it is (the source notebook, plain ``nbgrader autograde``),
:func:`probe_and_judge` runs all of it in one process, from a fixed seed. The course's
grader instead cuts each ``### BEGIN JUDGE`` ... ``### END JUDGE`` section out of the
cell before the student's kernel sees it and binds the names it defined to
:func:`judged_by_grader` with a seed of its own (one per student and submission); then
:func:`probe_and_judge` only draws the cases, calls ``observe`` on each and sends what it
saw as JSON text (:mod:`autograd_pitfalls.observations`) in a display output of type
:data:`MIME`. The grader judges those observations in its own process with
:func:`judge_observations`, on cases it draws again from the same seed, so no expected
value or oracle is ever in the student's process.

Rules for authors: ``hidden_cases`` and ``judge`` see only the setup cell's names, the
functions, classes and imports the cell's visible tests define, and the hidden block's
own definitions (the hidden block holds definitions and ``probe_and_judge`` calls, no
other statement); ``hidden_cases``
must give the same cases on every machine (draw from ``rng`` on the CPU); ``observe``
returns tensors, numbers, strings, None, lists and dicts with string keys; include the
visible tests' examples among the cases, so the judge checks at least what they check.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from autograd_pitfalls import observations, torch_state
from autograd_pitfalls.pitfalls import explain

__all__ = [
    "MIME",
    "GraderJudge",
    "HiddenCheck",
    "judge_observations",
    "judged_by_grader",
    "probe_and_judge",
    "recording",
]

# The display output a probe sends its observations in (JSON text, never code).
MIME = "application/vnd.autograd-pitfalls.observations.v1"

Cases = Callable[[torch.Generator], list[Any]]
Observe = Callable[[Any], Any]
Judge = Callable[[Any, Any], None]


@dataclass(frozen=True)
class GraderJudge:
    """Stands for a judge that runs in the grader's process (what the kernel gets instead).

    Attributes:
        seed: The seed the grader draws this student's hidden cases from.
    """

    seed: int

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Refuses to run: the real judge is not in this process."""
        raise RuntimeError("this judge runs in the grader's process, not in the kernel")


def judged_by_grader(seed: int) -> GraderJudge:
    """Returns the stand-in the grader binds a judge section's names to."""
    return GraderJudge(int(seed))


@dataclass(frozen=True)
class HiddenCheck:
    """A hidden check as the grader records it: its name, its cases and its judge."""

    name: str
    cases: Cases
    judge: Judge


_recorder: list[HiddenCheck] | None = None


@contextlib.contextmanager
def recording() -> Iterator[list[HiddenCheck]]:
    """Within this block :func:`probe_and_judge` records its check instead of running it.

    The grader executes a test cell's hidden block (definitions only) in its own process
    under this, to find each check's cases and judge.
    """
    global _recorder
    previous, _recorder = _recorder, []
    try:
        yield _recorder
    finally:
        _recorder = previous


def default_seed(name: str) -> int:
    """The seed of a check where no grader gives one: fixed, from the check's name."""
    return zlib.crc32(name.encode())


def draw_cases(cases: Cases, seed: int) -> list[Any]:
    """Calls ``cases`` with a CPU generator seeded with ``seed``; returns a list."""
    drawn = cases(torch.Generator().manual_seed(seed))
    return list(drawn)


def _first_line(error: BaseException) -> str:
    """``Name: first line of the message``, even when the exception's ``__str__`` raises."""
    try:
        text = str(error)
    except Exception:
        text = "(its message could not be read)"
    lines = text.strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def observe_all(name: str, cases: Cases, observe: Observe, seed: int) -> str:
    """Runs ``observe`` on every case; returns the observations as JSON text.

    An error raised while observing one case is recorded for that case (the judge
    reports it) and the other cases are still observed. So is a change the case left in
    PyTorch's settings for the whole process (grad mode, default dtype, ...: see
    :mod:`autograd_pitfalls.torch_state`), which is then put back.
    """
    seen = []
    # What the visible tests' calls left is not this check's to judge: start from torch's
    # defaults, then see what each case's call changes (and put it back).
    torch_state.restore(torch_state.DEFAULTS)
    for case in draw_cases(cases, seed):
        with torch_state.kept_settings() as changed:
            try:
                entry = {"value": observe(case)}
            except Exception as error:
                entry = {"error": _first_line(error)}
        if changed:
            entry["settings_changed"] = changed
        seen.append(entry)
    return observations.dumps({"check": name, "cases": seen})


class HiddenCheckError(AssertionError):
    """A judge's verdict against the observations (its message says why)."""


def judge_observations(check: HiddenCheck, text: Any, seed: int) -> None:
    """Judges what a probe sent, on the cases drawn again from ``seed``.

    Args:
        check: The check, as recorded from the source.
        text: The observations' JSON text, as received.
        seed: The seed the kernel was given.

    Raises:
        HiddenCheckError: With the judge's message (or what was wrong with the
            observations) and the case it concerns.
    """
    try:
        payload = observations.decode(observations.loads(text))
    except observations.ObservationError as error:
        raise HiddenCheckError(f"{check.name}: {error}") from None
    except Exception as error:  # data the schema lets through but no tensor can hold
        raise HiddenCheckError(
            f"{check.name}: malformed observations ({_first_line(error)})"
        ) from None
    cases = draw_cases(check.cases, seed)
    if not isinstance(payload, dict):
        raise HiddenCheckError(f"{check.name}: the observations are not this check's")
    sent = payload.get("cases")
    if payload.get("check") != check.name or not isinstance(sent, list):
        raise HiddenCheckError(f"{check.name}: the observations are not this check's")
    if len(sent) != len(cases):
        raise HiddenCheckError(
            f"{check.name}: observations for {len(sent)} cases, the check has {len(cases)}"
        )
    for number, (case, entry) in enumerate(zip(cases, sent, strict=True), start=1):
        where = f"hidden case {number} of {len(cases)}"
        if not isinstance(entry, dict) or not ({"value"} <= entry.keys() or "error" in entry):
            raise HiddenCheckError(f"{check.name}, {where}: malformed observations")
        if "error" in entry:
            raise HiddenCheckError(f"{where}: the answer raised {entry['error']}")
        changed = entry.get("settings_changed")
        if changed:
            said = "; ".join(str(item) for item in changed) if isinstance(changed, list) else ""
            raise HiddenCheckError(
                f"{where}: the answer changed PyTorch's settings for the whole process and "
                f"left them so ({said}). " + explain("global-state-changed")
            )
        try:
            check.judge(entry["value"], case)
        except AssertionError as error:
            raise HiddenCheckError(f"{where}: {error}") from None
        except Exception as error:
            raise HiddenCheckError(
                f"{where}: the answer's results are not of the expected form ({_first_line(error)})"
            ) from None


def _send(name: str, text: str) -> None:
    from IPython.display import publish_display_data

    publish_display_data({MIME: text}, metadata={MIME: {"check": name}})


def probe_and_judge(name: str, cases: Cases, observe: Observe, judge: Judge) -> None:
    """Runs one hidden check: in one process, or as a probe whose judge is the grader.

    Args:
        name: The check's name, unique in its notebook (for example ``"q2"``).
        cases: ``cases(rng)`` returns the inputs, drawn from ``rng`` (a CPU generator).
        observe: ``observe(case)`` calls the answer and returns what it saw.
        judge: ``judge(seen, case)`` raises AssertionError when ``seen`` is wrong for
            ``case``; or the grader's stand-in (:func:`judged_by_grader`).

    Raises:
        AssertionError: When the judge runs here and fails.
    """
    if _recorder is not None:
        _recorder.append(HiddenCheck(name, cases, judge))
        return
    if isinstance(judge, GraderJudge):
        _send(name, observe_all(name, cases, observe, judge.seed))
        return
    seed = default_seed(name)
    judge_observations(
        HiddenCheck(name, cases, judge), observe_all(name, cases, observe, seed), seed
    )
