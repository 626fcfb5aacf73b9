"""Show an error or a warning live in a notebook without stopping "Run All".

Every error and warning the course shows is raised by the installed PyTorch and caught
here, so its text is the live one, and a claim that something raises (or warns) is checked
each time the notebook runs: if it stops, the notebook fails loudly instead of teaching
something false.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["expect_error", "expect_warning"]

# A warning longer than this (anomaly mode's forward traceback) is shown head and tail.
_MAX_WARNING_LINES = 6


@contextmanager
def expect_error(
    expected: type[BaseException] = Exception, match: str | None = None
) -> Iterator[None]:
    """Runs a block that must raise, and prints the error instead of propagating it.

    Args:
        expected: The exception type the block must raise.
        match: A regular expression the message must contain (``re.search``), or None.

    Yields:
        Nothing; the block runs inside.

    Raises:
        AssertionError: If the block raises nothing, or an error whose message does not
            match. Any exception that is not an ``expected`` propagates unchanged.

    Example:
        >>> import torch
        >>> w = torch.zeros(2, requires_grad=True)
        >>> with expect_error(RuntimeError, match="in-place"):
        ...     w.add_(1)
        RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
    """
    try:
        yield
    except expected as error:
        message = str(error)
        if match is not None and not re.search(match, message):
            raise AssertionError(
                f"the error's message changed: expected it to match {match!r}, got {message!r}"
            ) from error
        print(f"{type(error).__name__}: {message}")
    else:
        raise AssertionError(f"expected {expected.__name__} to be raised, nothing was raised")


@contextmanager
def expect_warning(
    category: type[Warning] = Warning, match: str | None = None
) -> Iterator[list[warnings.WarningMessage]]:
    """Runs a block that must warn, and prints each matching warning's live text.

    Warnings are recorded, not shown, inside the block (so none reaches stderr); those
    of ``category`` whose message matches are printed afterwards.

    Args:
        category: The warning class expected (subclasses count).
        match: A regular expression the message must contain (``re.search``), or None.

    Yields:
        The list of every warning recorded in the block, filled when the block ends.

    Raises:
        AssertionError: If no warning of ``category`` matching ``match`` was issued.

    Example:
        >>> import torch
        >>> b = torch.ones(2, requires_grad=True) * 2
        >>> with expect_warning(UserWarning, match="not a leaf"):
        ...     _ = b.grad  # doctest: +ELLIPSIS
        UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being ...
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    matching = [
        warning
        for warning in caught
        if issubclass(warning.category, category)
        and (match is None or re.search(match, str(warning.message)))
    ]
    if not matching:
        seen = [f"{warning.category.__name__}: {warning.message}" for warning in caught]
        # Whole sentences, not fragments joined: each is translated as one message.
        name = category.__name__
        if match is None and not seen:
            raise AssertionError(f"expected a {name}, got no warning")
        if match is None:
            raise AssertionError(f"expected a {name}, got {seen}")
        if not seen:
            raise AssertionError(f"expected a {name} matching {match!r}, got no warning")
        raise AssertionError(f"expected a {name} matching {match!r}, got {seen}")
    for warning in matching:
        lines = str(warning.message).splitlines()
        if len(lines) > _MAX_WARNING_LINES:
            lines = [*lines[:1], "  ...", *lines[-(_MAX_WARNING_LINES - 2) :]]
        print(f"{warning.category.__name__}: " + "\n".join(lines))
