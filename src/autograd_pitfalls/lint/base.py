"""What every lint rule shares: the rule's identity, a finding, and the edits of a fix."""

from __future__ import annotations

import re
from dataclasses import dataclass

from autograd_pitfalls.pitfalls import PITFALLS

__all__ = ["Edit", "Finding", "Rule", "is_loss_name"]


@dataclass(frozen=True)
class Rule:
    """One check: its code, the pitfall it points to, and whether it runs by default.

    Attributes:
        code: The code shown and selected, for example ``"AGP101"``.
        pitfall: A key of :data:`autograd_pitfalls.pitfalls.PITFALLS`.
        message: The one sentence every finding of this rule prints.
        summary: A few words for the rules table (``--list-rules``, SARIF).
        on_by_default: False for a rule not precise enough to run unless selected.
        why_off: For a rule off by default, why (shown by ``--list-rules``).
    """

    code: str
    pitfall: str
    message: str
    summary: str = ""
    on_by_default: bool = True
    why_off: str = ""

    def __post_init__(self) -> None:
        if self.pitfall not in PITFALLS:
            raise ValueError(f"{self.code}: unknown pitfall key {self.pitfall!r}")

    @property
    def notebook(self) -> str:
        """The assignment id of the notebook that teaches this rule's pitfall."""
        return PITFALLS[self.pitfall].notebook


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` with ``text`` (offsets in characters of one source)."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Finding:
    """One place where a rule matched.

    Attributes:
        path: The file checked (``"<cell>"`` for code given as a string).
        line: 1-based line; in a notebook, the line within the cell.
        column: 1-based column, as flake8 counts.
        code: The rule's code.
        message: One sentence saying what is wrong and what to do.
        pitfall: The pitfall's key (see ``autograd_pitfalls.pitfalls``).
        notebook: The notebook that teaches the pitfall.
        cell: In a notebook, the id of the code cell; otherwise None.
        fixable: True when ``--fix`` rewrites this finding.
        detail: What this finding's context adds to the rule's message (the line that
            saved a tensor, the backward() that needs it), or "".
        edits: The fix, as edits of the checked source (empty when there is none).
    """

    path: str
    line: int
    column: int
    code: str
    message: str
    pitfall: str
    notebook: str
    cell: str | None = None
    fixable: bool = False
    detail: str = ""
    edits: tuple[Edit, ...] = ()

    @property
    def location(self) -> str:
        """``path:line:col``, or ``path:cell:line:col`` in a notebook (as ruff writes it)."""
        cell = f"{self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"

    @property
    def text(self) -> str:
        """The message with this finding's detail, if any."""
        return f"{self.message} ({self.detail})" if self.detail else self.message

    def flake8_line(self) -> str:
        """The finding in flake8's format, with the pitfall's key and notebook at the end."""
        fix = " [*]" if self.fixable else ""
        return (
            f"{self.location}: {self.code}{fix} {self.text} "
            f"[{self.pitfall}, taught in {self.notebook}]"
        )

    def as_dict(self) -> dict[str, object]:
        """The finding as plain data, for ``--format json``."""
        return {
            "path": self.path,
            "cell": self.cell,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "message": self.text,
            "pitfall": self.pitfall,
            "notebook": self.notebook,
            "fixable": self.fixable,
        }


# A name that holds a loss: `loss`, `total_loss`, `g_loss`, `lossD`, `val_loss`, not `losses`.
_LOSS_NAME = re.compile(r"(^|_)loss(_?[a-z0-9]{0,2})?$|^loss", re.IGNORECASE)


def is_loss_name(name: str) -> bool:
    """True for a name that by its spelling holds one loss value (not a list of them)."""
    return bool(_LOSS_NAME.search(name)) and not name.lower().endswith(("losses", "loss_fn"))
