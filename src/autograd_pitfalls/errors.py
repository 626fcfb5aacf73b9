"""Show an error live in a notebook without stopping "Run All".

Every error the course shows is raised by the installed PyTorch and caught here, so its
text is the live one, and a claim that something raises is checked each time the notebook
runs: if it stops raising, the notebook fails loudly instead of teaching something false.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["expect_error"]


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
