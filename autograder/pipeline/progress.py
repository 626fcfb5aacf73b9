"""What an instructor sees while a class is graded: done of total, time, each student.

Grading 300 students takes minutes; without a sign of life the command looks stuck.
On a terminal, a tqdm bar shows students done of total, the time elapsed and an
estimate of what remains, and each student's status is printed above it as they
finish. When the output is not a terminal (a log file, CI), it stays quiet: the final
table says it all.
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from autograder.submission import Submission


class Progress:
    """Shows grading progress on ``stream`` when it is a terminal.

    Args:
        stream: Where to draw (stderr by default, so stdout stays the results).
        enabled: Force on or off; by default, on when ``stream`` is a terminal.
        description: What the bar is counting (an assignment, when a command grades several).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        description: str = "grading",
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.description = description
        self._bar: tqdm | None = None

    def start(self, total: int) -> None:
        """Starts counting ``total`` students (called once their number is known)."""
        if self.enabled and total:
            self._bar = tqdm(
                total=total,
                unit="student",
                desc=self.description,
                file=self.stream,
                dynamic_ncols=True,
            )

    def done(self, submission: Submission) -> None:
        """Counts one more student, and prints their status above the bar."""
        if self._bar is None:
            return
        line = f"{submission.student_id}  {submission.status}"
        if submission.message:
            line += f"  ({submission.message})"
        self._bar.write(line, file=self.stream)
        self._bar.update(1)

    def close(self) -> None:
        """Removes nothing: the bar's last state (all done, total time) stays on screen."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
