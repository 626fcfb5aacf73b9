"""What the grader and the code in the sandbox say to each other.

Two conversations cross the sandbox's wall:

* the grader's client (:class:`autograder.sandbox.zygote.Zygote`) and the zygote
  (:mod:`autograder.kernel.server`): one JSON object per line over a socket pair, a
  request ``{"op": ..., ...}`` answered by ``{"ok": true, ...}`` or
  ``{"ok": false, "error": "Type: message"}``;
* the grader's execute step (:class:`autograder.preprocessors.execute.SandboxedExecute`)
  and the guard in each kernel (:mod:`autograder.kernel.guard`): Jupyter messages of the
  two types below on the kernel's control channel;
* the hidden checks' probes in each kernel (:mod:`autograd_pitfalls.probe`) and the
  grader's judges (:mod:`autograder.pipeline.judge`): display outputs of the type
  :data:`OBSERVATIONS_MIME` holding JSON text, checked against a schema and bounded in
  size on arrival (:func:`autograd_pitfalls.observations.loads`), never unpickled.
"""

from __future__ import annotations

import json
from typing import Any

# The zygote's requests.
SPAWN, POLL, SIGNAL, REAP, PRELOAD = "spawn", "poll", "signal", "reap", "preload"
OPS = (SPAWN, POLL, SIGNAL, REAP, PRELOAD)

# The guard's control-channel messages.
GUARD_REQUEST = "autograder_guard_request"
GUARD_REPLY = "autograder_guard_reply"

# What a probe's observations arrive as (autograd_pitfalls.probe.MIME, which a test checks
# is the same: the grader's pipeline reads it without importing torch).
OBSERVATIONS_MIME = "application/vnd.autograd-pitfalls.observations.v1"
# The most characters one hidden check's observations may hold (observations.MAX_CHARS).
OBSERVATIONS_MAX_CHARS = 1_000_000


def encode(message: dict[str, Any]) -> str:
    """Returns ``message`` as one line of the zygote's protocol (newline included)."""
    return json.dumps(message) + "\n"


def decode(line: str) -> dict[str, Any]:
    """Returns the message of one protocol line.

    Raises:
        ValueError: If the line is not a JSON object.
    """
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError(f"not a protocol message: {line[:80]!r}")
    return message
