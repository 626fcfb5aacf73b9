"""Training loops: gradients never zeroed (AGP180) or zeroed too early (AGP181), retain_graph.

AGP182 is ``retain_graph=True`` on a loss each iteration makes.

A loop "trains" when its body (nested loops included, not the functions it calls) calls
``backward()`` and updates the parameters: an optimiser's ``step()`` (a name made by
``torch.optim`` or spelled like one), or an in-place update that reads ``.grad``
(``w -= lr * w.grad``). Zeroing is ``zero_grad()`` on anything, or a write to a ``.grad``
(``p.grad = None``, ``p.grad.zero_()``).
"""

from __future__ import annotations

from autograd_pitfalls.lint.analyzer import Analyzer, Event, LoopFrame, Scope
from autograd_pitfalls.lint.base import Rule

__all__ = ["TrainingLoop"]

NEVER_ZEROED = Rule(
    "AGP180",
    "grad-accumulates",
    "This loop calls backward() and updates the parameters but never zeroes the gradients, "
    "so each step adds to all the earlier ones: call `optimizer.zero_grad()` in the loop, "
    "before backward().",
    "a training loop (backward() and a step) that never zeroes the gradients",
)
ZEROED_BEFORE_STEP = Rule(
    "AGP181",
    "grad-accumulates",
    "`zero_grad()` between backward() and the optimiser's step() throws away the gradients "
    "the step needs: zero before backward(), or after step().",
    "`zero_grad()` after backward() and before the step it clears the gradients for",
)
RETAINED_IN_LOOP = Rule(
    "AGP182",
    "hidden-state-carried",
    "`retain_graph=True` on a loss made in this loop keeps every iteration's graph alive "
    "(and only hides a backward through an earlier iteration): carry `h.detach()` into the "
    "next iteration instead.",
    "`backward(retain_graph=True)` on a loss made in the loop, with no later backward() "
    "in the iteration that needs the graph",
)


class TrainingLoop:
    """Reads what each loop does, in order, when the loop ends (and at a function's end)."""

    RULES = (NEVER_ZEROED, ZEROED_BEFORE_STEP, RETAINED_IN_LOOP)

    def on_loop_end(self, an: Analyzer, frame: LoopFrame) -> None:
        events = frame.events
        backwards = [e for e in events if e.kind == "backward" and not e.handled]
        if not backwards:
            return
        self._retained(an, frame)
        if not any(e.kind in ("step", "update") and not e.fresh for e in events):
            # Accumulated on purpose and stepped by an outer loop, or stepped by an
            # optimiser made in this iteration (for tensors of this iteration).
            return
        if not any(e.kind == "zero" for e in events):
            an.report(NEVER_ZEROED, backwards[0].node)
        for event in backwards:
            event.handled = True

    def _retained(self, an: Analyzer, frame: LoopFrame) -> None:
        """A retained backward that only a state carried into the next iteration needs."""
        events = frame.events
        carried = frame.carried()
        for index, event in enumerate(events):
            if event.kind != "backward" or not event.retain or not event.fresh or event.handled:
                continue
            if any(later.kind == "backward" for later in events[index + 1 :]):
                continue  # a second backward() in the iteration needs the graph
            if carried and any(an.scope.depends_on(root, carried) for root in event.roots):
                an.report(RETAINED_IN_LOOP, event.node)

    def on_scope_end(self, an: Analyzer, scope: Scope) -> None:
        events = scope.events
        steppers = {e.receiver for e in events if e.kind == "step"}
        for index, event in enumerate(events):
            if event.kind != "zero" or event.receiver is None:
                continue
            if not _after_backward(events, index, event.receiver):
                continue
            step = _next_step(events, index)
            if step is None:
                continue
            # model.zero_grad() clears the gradients of the one optimiser's parameters.
            only_optimizer = event.module and len(steppers) == 1
            if step.receiver == event.receiver or only_optimizer:
                an.report_in(ZEROED_BEFORE_STEP, event.node, event.unit)


def _after_backward(events: list[Event], index: int, receiver: str) -> bool:
    """A backward() comes before this zeroing, with no step or zeroing in between."""
    for earlier in reversed(events[:index]):
        if earlier.kind == "backward":
            return True
        if earlier.kind in ("step", "update") or (
            earlier.kind == "zero" and earlier.receiver == receiver
        ):
            return False
    return False


def _next_step(events: list[Event], index: int) -> Event | None:
    """The step that follows this zeroing before any other backward()."""
    for later in events[index + 1 :]:
        if later.kind == "backward":
            return None
        if later.kind == "step":
            return later
    return None
