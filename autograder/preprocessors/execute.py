"""nbgrader's Execute step, hardened for hostile notebooks.

nbgrader's ``Execute`` runs a notebook top to bottom with a time limit per cell. With
student code that is not enough:

* an interrupted cell that swallows ``KeyboardInterrupt`` keeps the kernel busy, and
  every later cell waits its full time limit (or nbgrader gives up on the student);
* a kernel that exits (``os._exit``) makes nbgrader drop the whole submission;
* a test cell that never ran has no error output, and nbgrader scores it as passed;
* 50 MB printed on one line is kept whole in the graded notebook and the feedback;
* an answer can replace ``torch.allclose`` or a test helper before the tests run;
* everything in the student's process can be reached by the student's code, the test's
  own expected values and its error display included.

:class:`SandboxedExecute` adds a time limit for the whole notebook, replaces a kernel that
died (the cell it died in fails; a new kernel runs the cells before it again, and the
notebook goes on: one crashing answer costs its own test only), stops at a kernel that
does not come back from an interrupt or dies again and again, marks every cell it did not
run with a ``NotRun`` error (so its test scores 0), caps the output kept per cell, and asks
the kernel's guard (:mod:`autograder.kernel.guard`) to restore the test's environment
before each test and to check it after. Each test cell's hidden checks are a probe and
a judge (:mod:`autograd_pitfalls.probe`): the kernel gets the cell without its judges and
a seed of this student's own; what its probes send back is judged here, in the grader's
process (:mod:`autograder.pipeline.judge`), and a failing verdict is written into the
cell's outputs as an error before nbgrader saves the scores. What happened is recorded in
the notebook's metadata under ``autograder`` (see :mod:`autograder.submission`).
"""

from __future__ import annotations

import copy
import re
from queue import Empty
from time import monotonic
from typing import Any

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, Unicode

from autograd_pitfalls.messages import ENGLISH, language_of_metadata, translate_errors
from autograder.course import exercise_name
from autograder.demonstrations import (
    SKIPPABLE,
    SKIPPED_NOTE,
    bound_names,
    skipped_names_read,
)
from autograder.demonstrations import skippable as skippable_cell
from autograder.kernel.protocol import GUARD_REPLY, GUARD_REQUEST, OBSERVATIONS_MAX_CHARS
from autograder.kernel.protocol import OBSERVATIONS_MIME as MIME
from autograder.pipeline.judge import (
    Judges,
    JudgeSetupError,
    kernel_source,
    seed_for,
    submission_digest,
)
from autograder.preprocessors.stderr import stderr_is_not_failure
from autograder.submission import ERROR, KEY, MEMORY, TAMPERED, TIMEOUT, record

MEMORY_ERROR = re.compile(r"can't allocate memory|cannot allocate memory|out of memory", re.I)
NOT_RUN = "NotRun"
# How nbclient's CellTimeoutError begins when the reply came but the output did not.
IOPUB_TIMEOUT = "Timeout waiting for IOPub output"
# How the judges' verdict on a test cell's hidden checks begins, as an error output.
JUDGED_BY_THE_GRADER = "hidden tests (judged by the grader): "
# Observation outputs a cell may send outside its output budget (honest cells send one
# per hidden check); more count as ordinary output.
OBSERVATIONS_PER_CELL = 8
# What SandboxedExecute times, in seconds, recorded as the notebook's
# metadata.autograder.seconds (read by benchmarks/grading_bench.py): from the start to the
# first cell (the kernel forked and ready), the guard's requests, the judges, and the
# whole run (the kernel's shutdown included).
SECONDS = ("kernel_ready", "guard", "judge", "run")
# How many times a notebook's kernel may die and be replaced before the rest is not run.
MAX_NEW_KERNELS = 3
# The judges of each notebook seen by this process, by its setup cell (built once).
_JUDGES: dict[str, Judges] = {}


def not_run(reason: str) -> NotebookNode:
    """Returns the error output put in a cell the grader did not run."""
    return new_output("error", ename=NOT_RUN, evalue=reason, traceback=[f"{NOT_RUN}: {reason}"])


def _size(output: NotebookNode) -> int:
    if output.output_type == "stream":
        return len(output.get("text", ""))
    if output.output_type == "error":
        return len(output.get("evalue", "")) + sum(map(len, output.get("traceback", [])))
    return sum(len(str(value)) for value in output.get("data", {}).values())


def _exercise(cell: NotebookNode) -> str:
    return exercise_name(cell.metadata.nbgrader["grade_id"])


def _where(cell: NotebookNode, index: int) -> str:
    """Names a cell for the instructor: the exercise's test, or its number and first line."""
    if utils.is_grade(cell):
        return f"{_exercise(cell)}'s test"
    first = cell.source.strip().splitlines()[0]
    return f"cell {index + 1} ({first[:40]}{'...' if len(first) > 40 else ''})"


class SandboxedExecute(Execute):
    """Runs a submission with time, output and integrity limits; never drops a student."""

    notebook_timeout = Integer(
        900, help="Seconds the whole notebook may run; later cells are not run."
    ).tag(config=True)
    max_output_chars = Integer(
        100_000, help="Characters of output kept per cell (errors are always kept, shortened)."
    ).tag(config=True)
    interrupt_grace = Integer(
        5, help="Seconds an interrupted kernel has to answer before it counts as stuck."
    ).tag(config=True)
    guard_timeout = Integer(10, help="Seconds the kernel's guard has to answer.").tag(config=True)
    judge_secret = Unicode(
        "", help="The course's grading secret (hex): seeds each student's hidden cases."
    ).tag(config=True)

    skip_demonstrations = Bool(
        True,
        help="Skip the demonstrations the release marks as such (autograder.demonstrations); "
        "the notebook runs again whole when a cell reads a name one of them defines.",
    ).tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: Any = None, km: Any = None
    ) -> tuple[NotebookNode, Any]:
        """Executes ``nb`` and records timeouts, memory errors, crashes and tampering.

        The demonstrations the release marks are skipped; if a cell then reads what one
        of them defines (``NameError``), the notebook is run again with every cell.
        """
        about = nb.metadata.get(KEY, {})
        skippable = set(about.get(SKIPPABLE, [])) if self.skip_demonstrations else set()
        whole = copy.deepcopy(nb) if skippable else None
        nb, resources = self._run(nb, resources, km, skippable)
        missing = skipped_names_read(nb.cells, self._skipped_names)
        if whole is not None and missing:
            self.log.info("a cell reads %s, defined by a skipped demonstration", missing)
            first = nb.metadata[KEY]["seconds"]["run"]
            nb, resources = self._run(whole, resources, km, set())
            nb.metadata[KEY]["skipped"] = {"cells": [], "ran_whole_for": missing}
            nb.metadata[KEY]["seconds"]["run"] += first
        return nb, resources

    def _run(
        self, nb: NotebookNode, resources: Any, km: Any, skippable: set[str]
    ) -> tuple[NotebookNode, Any]:
        """Runs the notebook once, skipping the cells of ``skippable`` (grade ids)."""
        self.shutdown_kernel = "immediate"  # its state is discarded anyway
        self._events: dict[str, list[str]] = {}
        self._stopped = ""
        self._new_kernels = 0
        self._crashed: set[int] = set()
        self._timed_out = False
        self._output_used: dict[int, int] = {}
        self._observations_sent: dict[int, int] = {}
        self._truncated: set[int] = set()
        self._skippable = skippable
        self._skipped: list[str] = []
        self._skipped_names: set[str] = set()
        self._deadline = monotonic() + self.notebook_timeout
        self._names = dict(nb.metadata.get("autograder", {}).get("protected_names", {}))
        self.timeout_func = self._cell_timeout
        self._seconds = dict.fromkeys(SECONDS, 0.0)
        self._started = monotonic()
        self._first_cell_at = 0.0
        self._prepare_judges(nb, resources or {})
        self._language = language_of_metadata(nb.metadata)
        nb, resources = super().preprocess(nb, resources, km)
        for kind, messages in self._events.items():
            record(nb, kind, *messages)
        self._seconds["run"] = monotonic() - self._started
        nb.metadata.setdefault(KEY, {})["seconds"] = {
            name: round(value, 4) for name, value in self._seconds.items()
        }
        nb.metadata[KEY]["skipped"] = {"cells": list(self._skipped)}
        return nb, resources

    def _skip(self, cell: NotebookNode) -> bool:
        """Whether ``cell`` is a marked demonstration to skip (its metadata: the release's)."""
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id not in self._skippable or not skippable_cell(cell, tagged=False):
            return False
        cell.outputs = [new_output("stream", name="stdout", text=SKIPPED_NOTE)]
        cell.execution_count = None
        self._skipped.append(grade_id)
        self._skipped_names |= bound_names(cell.source)
        return True

    def _prepare_judges(self, nb: NotebookNode, resources: dict) -> None:
        """Finds the notebook's judges and what this student's seeds are drawn from."""
        setup = next(
            (
                cell.source
                for cell in nb.cells
                if cell.metadata.get("nbgrader", {}).get("grade_id") == "setup"
            ),
            "",
        )
        self._judges = _JUDGES.setdefault(setup, Judges(setup))
        about = resources.get("nbgrader", {})
        code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
        self._seed_parts = (
            str(about.get("assignment", "")),
            str(about.get("student", "")),
            submission_digest(code),
        )
        self._secret = bytes.fromhex(self.judge_secret) if self.judge_secret else b""

    def _stopped_for(self) -> str:
        """Why the zygote killed the kernel: its student's memory past the cap ("" if not)."""
        provisioner = getattr(self.km, "provisioner", None)
        return str(getattr(provisioner, "stopped_for", "") or "")

    def _seed(self, grade_id: str) -> int:
        return seed_for(self._secret, *self._seed_parts, grade_id)

    def _cell_timeout(self, cell: NotebookNode) -> int:
        remaining = self._deadline - monotonic()
        return max(1, int(min(self.timeout or remaining, remaining)))

    def _note(self, kind: str, message: str) -> None:
        self._events.setdefault(kind, []).append(message)

    def _stop(self, kind: str, reason: str) -> None:
        self._note(kind, reason)
        self._stopped = reason

    def preprocess_cell(
        self, cell: NotebookNode, resources: Any, index: int
    ) -> tuple[NotebookNode, Any]:
        """Runs one cell within the limits, or marks it as not run."""
        if cell.cell_type != "code" or not cell.source.strip():
            return cell, resources
        if self._skippable and self._skip(cell):
            return cell, resources
        if not self._first_cell_at:
            self._first_cell_at = monotonic()
            self._seconds["kernel_ready"] = self._first_cell_at - self._started
        if not self._stopped and monotonic() >= self._deadline:
            self._stop(TIMEOUT, f"the notebook ran past its {self.notebook_timeout} s limit")
        graded = utils.is_grade(cell)
        if graded and not self._stopped:
            self._guard(cell, "before")
        if self._stopped:
            cell.outputs = [not_run(f"not run: {self._stopped}")]
            return cell, resources
        self._timed_out = False
        self._output_used[index] = 0
        self._observations_sent[index] = 0
        source = cell.source
        if graded:
            seed = self._seed(cell.metadata.nbgrader["grade_id"])
            cell.source = kernel_source(source, seed)
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            memory = self._stopped_for()
            if memory:  # the zygote's watch killed every process of the student
                cell.source = source
                self._stop(MEMORY, f"{memory}: stopped in {_where(cell, index)}")
                cell.outputs.append(not_run(self._stopped))
                return cell, resources
            cell.source = source
            where = _where(cell, index)
            died = f"the kernel died in {where} (os._exit, a crash or a kill)"
            self._crashed.add(index)
            if self._new_kernels < MAX_NEW_KERNELS and self._replaced_kernel(index):
                self._note(
                    ERROR,
                    f"{died}: that cell failed; a new kernel ran the cells "
                    "before it again, and the rest of the notebook was run",
                )
                cell.outputs.append(
                    new_output("error", ename="KernelDied", evalue=died, traceback=[died])
                )
                return cell, resources
            self._stop(ERROR, died)
            cell.outputs.append(not_run(self._stopped))
            return cell, resources
        except CellTimeoutError as error:
            if IOPUB_TIMEOUT in str(error) and not self._timed_out:
                # The cell ended (its own reply came, not the one nbclient makes up after a
                # timeout), but not all of its output: huge messages still on their way.
                # Not a timeout; a test's error may be among the lost.
                self._output_lost(cell, index)
                cell.source = source
                return cell, resources
            # nbclient raises this when the kernel stays silent after the interrupt.
            self._timed_out = True
            cell.outputs.append(new_output("error", **self.error_on_timeout))
        if self._timed_out:
            self._note(TIMEOUT, f"{_where(cell, index)} ran past its {self.timeout} s limit")
            if not self._responsive():
                self._stop(TIMEOUT, "the kernel ignored the interrupt and was stopped")
        cell.source = source
        if graded and not self._stopped:
            self._guard(cell, "after")
        if graded:
            stderr_is_not_failure(cell)
            self._judge(cell, seed)
            _errors_first(cell)
        if self._language != ENGLISH:  # the feedback in the notebook's language
            translate_errors(cell, self._language)
        for output in cell.outputs:
            if output.output_type == "error" and (
                output.ename == "MemoryError" or MEMORY_ERROR.search(output.evalue or "")
            ):
                self._note(MEMORY, f"{_where(cell, index)} ran out of memory")
        return cell, resources

    async def _async_replaced_kernel(self, crashed: int) -> bool:
        """Starts a new kernel and runs the cells before ``crashed`` in it again, quietly.

        Each earlier code cell runs as it ran (a test cell without its judges); their
        outputs stay those of the first run. Cells where a kernel died are left out.

        Returns:
            Whether the new kernel is ready where the old one died; False if it could
            not be started or died, or ran out of time, while running those cells.
        """
        self._new_kernels += 1
        try:
            await self._async_cleanup_kernel()
            self.create_kernel_manager()
            await self.async_start_new_kernel()
            await self.async_start_new_kernel_client()
            assert self.kc is not None
            for index, cell in enumerate(self.nb.cells[:crashed]):
                if cell.cell_type != "code" or not cell.source.strip() or index in self._crashed:
                    continue
                source = cell.source
                if utils.is_grade(cell):
                    source = kernel_source(source, self._seed(cell.metadata.nbgrader["grade_id"]))
                msg_id = self.kc.execute(source, store_history=False, allow_stdin=False)
                if await self.async_wait_for_reply(msg_id, cell) is None:
                    return False
        except Exception:  # a kernel that cannot start or dies again: the rest is not run
            self.log.exception("a new kernel for the cells after a crash failed")
            return False
        return not self._timed_out

    _replaced_kernel = run_sync(_async_replaced_kernel)

    def _judge(self, cell: NotebookNode, seed: int) -> None:
        """Judges what the cell's probes sent; a failing verdict becomes an error output."""
        grade_id = cell.metadata.nbgrader["grade_id"]
        sent: dict[str, list] = {}
        kept = []
        for output in cell.outputs:
            if output.output_type == "display_data" and MIME in output.get("data", {}):
                name = output.get("metadata", {}).get(MIME, {}).get("check", "")
                sent.setdefault(str(name), []).append(output.data[MIME])
            else:
                kept.append(output)
        cell.outputs = kept
        stopped_by = next((out.ename for out in kept if out.output_type == "error"), "")
        start = monotonic()
        try:
            verdict = self._judges.judge(grade_id, cell.source, sent, seed, stopped_by)
        except JudgeSetupError as error:
            self._note(ERROR, f"{_exercise(cell)}'s test: {error}")
            failures = [f"the grader could not judge this test: {error}"]
        else:
            failures = list(verdict.failures)
        finally:
            self._seconds["judge"] += monotonic() - start
        cell.metadata.setdefault("autograder", {})["judged"] = not failures
        if failures:
            message = JUDGED_BY_THE_GRADER + "; ".join(failures)
            cell.outputs.append(
                new_output(
                    "error",
                    ename="AssertionError",
                    evalue=message,
                    traceback=[f"AssertionError: {message}"],
                )
            )

    def _output_lost(self, cell: NotebookNode, index: int) -> None:
        """Records a cell whose output did not all arrive; a test cell then fails."""
        where = _where(cell, index)
        reason = (
            f"{where} ended, but its output did not all arrive within {self.iopub_timeout} s: "
            f"messages too large ({self._output_used.get(index, 0):,} characters received, "
            f"{self.max_output_chars:,} kept per cell); the rest was dropped"
        )
        if utils.is_grade(cell):
            reason += ", and that test fails"
            cell.outputs.append(not_run(reason))
            if not self._stopped:
                self._guard(cell, "after")
        self._note(ERROR, reason)

    async def _async_handle_timeout(
        self, timeout: int, cell: NotebookNode | None = None
    ) -> dict[str, Any] | None:
        self._timed_out = True
        return await super()._async_handle_timeout(timeout, cell)

    async def _async_responsive(self) -> bool:
        """Whether the kernel answers on its shell channel within the grace period."""
        assert self.kc is not None
        msg_id = self.kc.kernel_info()
        deadline = monotonic() + self.interrupt_grace
        while (remaining := deadline - monotonic()) > 0:
            try:
                reply = await self.kc.shell_channel.get_msg(timeout=remaining)
            except Empty:
                return False
            if reply["parent_header"].get("msg_id") == msg_id:
                return True
        return False

    _responsive = run_sync(_async_responsive)

    async def _async_guard_request(self, phase: str) -> list[str] | None:
        """Asks the kernel's guard to restore (``before``) or check (``after``) a test."""
        assert self.kc is not None
        request = self.kc.session.msg(GUARD_REQUEST, {"phase": phase, "names": self._names})
        self.kc.control_channel.send(request)
        deadline = monotonic() + self.guard_timeout
        while (remaining := deadline - monotonic()) > 0:
            try:
                reply = await self.kc.control_channel.get_msg(timeout=remaining)
            except (Empty, TimeoutError):
                return None
            parent = reply["parent_header"].get("msg_id")
            if parent == request["header"]["msg_id"] and reply["msg_type"] == GUARD_REPLY:
                return list(reply["content"].get("changes", []))
        return None

    _guard_request = run_sync(_async_guard_request)

    def _guard(self, cell: NotebookNode, phase: str) -> None:
        start = monotonic()
        changes = self._guard_request(phase)
        self._seconds["guard"] += monotonic() - start
        exercise = _exercise(cell)
        if changes is None:
            self._stop(
                TAMPERED,
                f"the kernel did not answer the integrity check of {exercise}'s test: "
                "tests from there on were not run",
            )
            if phase == "after":
                cell.outputs.append(not_run(self._stopped))
        elif changes and phase == "before":
            found = ", ".join(changes)
            self._note(TAMPERED, f"before {exercise}'s test: {found} (undone or refused there)")
        elif changes:
            replaced = ", ".join(changes)
            reason = f"while {exercise}'s test ran: {replaced}"
            self._note(TAMPERED, reason + "; that test fails")
            cell.outputs.append(new_output("error", ename="Tampered", evalue=reason, traceback=[]))

    def output(
        self, outs: list[NotebookNode], msg: dict, display_id: str | None, cell_index: int
    ) -> NotebookNode | None:
        """Keeps a cell's output within ``max_output_chars`` (errors are always kept)."""
        out = super().output(outs, msg, display_id, cell_index)
        if out is None or self.max_output_chars < 0:
            return out
        if out.output_type == "display_data" and MIME in out.get("data", {}):
            sent = self._observations_sent.get(cell_index, 0) + 1
            self._observations_sent[cell_index] = sent
            if sent <= OBSERVATIONS_PER_CELL and _size(out) <= OBSERVATIONS_MAX_CHARS:
                return out  # outside the print budget: the judge checks it
        used = self._output_used.get(cell_index, 0)
        room = self.max_output_chars - used
        size = _size(out)
        self._output_used[cell_index] = used + size
        if size <= room:
            return out
        if out.output_type == "error":
            out.evalue = out.evalue[:2000]
            out.traceback = [line[:2000] for line in out.traceback[-50:]]
        elif out.output_type == "stream" and room > 0:
            out.text = out.text[:room]
        elif out in outs and not display_id:
            outs.remove(out)
        if cell_index not in self._truncated:
            self._truncated.add(cell_index)
            notice = f"\n[output cut by the grader at {self.max_output_chars} characters]\n"
            outs.append(new_output("stream", name="stdout", text=notice))
        return out


def _errors_first(cell: NotebookNode) -> None:
    """Puts a failed test's errors before a result that nbgrader would read as partial credit."""
    kinds = [output.output_type for output in cell.outputs]
    if "error" in kinds and "execute_result" in kinds[: kinds.index("error")]:
        errors = [output for output in cell.outputs if output.output_type == "error"]
        others = [output for output in cell.outputs if output.output_type != "error"]
        cell.outputs = errors + others
