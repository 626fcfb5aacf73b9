"""Every private API of nbgrader, nbclient and jupyter_client the grader relies on.

They are reached here only, and ``tests/test_compat.py`` checks each one against the
installed versions (that it exists, and takes the parameters used), so that an upgrade
that renames or reshapes one fails there, loudly, instead of as a wrong grade. The
torch ones the course's helpers use are in :mod:`autograd_pitfalls.compat`; the kernel
side (:mod:`autograder.kernel`) uses only public IPython and ipykernel attributes.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from typing import Any

# Private methods our subclasses override, as (class, method, parameters after self).
# nbclient's NotebookClient calls _async_handle_timeout when a cell runs out of time
# (SandboxedExecute records the timeout there); jupyter_client's KernelClient calls
# _async_wait_for_ready before the first cell (ReadyClient answers it sooner).
OVERRIDDEN = (
    ("nbclient.client.NotebookClient", "_async_handle_timeout", ("timeout", "cell")),
    ("jupyter_client.client.KernelClient", "_async_wait_for_ready", ("timeout",)),
)


def execute_for_validation(validator: Any, notebook: Any) -> Any:
    """Runs a notebook the way ``nbgrader validate`` does; returns it executed.

    nbgrader's ``Validator.validate`` only returns text; its ``_preprocess`` returns the
    notebook, whose outputs ``autograder check`` reads per exercise.
    """
    return validator._preprocess(notebook)


def changed_locked_cells(validator: Any, notebook: Any) -> list[Any]:
    """Returns the locked cells of an executed notebook whose source was edited."""
    return validator._get_changed_cells(notebook)


async def kernel_is_alive(client: Any) -> bool:
    """Whether the kernel behind a jupyter_client ``AsyncKernelClient`` still runs."""
    return await client._async_is_alive()


def record_kernel_info(client: Any, reply: dict[str, Any]) -> None:
    """Lets a kernel client read a kernel_info reply, as its wait_for_ready would."""
    client._handle_kernel_info_reply(reply)


@functools.cache
def _gradebook_schema_head() -> str:
    """The schema version nbgrader stamps on a new gradebook (its alembic head), read here."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:///unused.db") as ini:
        return ScriptDirectory.from_config(Config(ini)).get_current_head()


def read_gradebook_schema_in_process() -> None:
    """Makes nbgrader read its schema version here instead of in a new process each time.

    Creating a gradebook, nbgrader's ``Gradebook`` stamps it with the schema version it
    gets from ``nbgrader.api.get_alembic_version``, which runs ``alembic heads`` in a
    subprocess: a fresh Python importing alembic, 1.5 s on two idle cores (5 s busy), for
    every new gradebook (each course, and each grading worker's scratch gradebook). The
    answer depends only on nbgrader's migration scripts: it is read once with alembic's
    Python API from the same scripts (``tests/test_compat.py`` checks both agree).
    """
    import nbgrader.api

    nbgrader.api.get_alembic_version = _gradebook_schema_head


# nbconvert's HTMLExporter ends by parsing the whole page with BeautifulSoup's pure-Python
# parser to add two things (nbconvert/exporters/html.py, from_notebook_node): an alt text
# on each image without one, and tabindex="0" on every input wrapper and output of the
# notebook. On a feedback page (400-500 kB: the course's CSS, highlighted code, images)
# that parse is most of the export: 0.8 s of 1.3 s per student. The same two edits are
# made here by one pass of regular expressions over the page, which the template writes.
# tests/test_compat.py checks that a page made this way parses to the same document as
# nbconvert's own, on a notebook with images, and that nbconvert still asks for exactly
# these selectors.
NBCONVERT_ACCESSIBILITY_SELECTORS = (
    "img:not([alt])",
    ".jp-Notebook div.jp-Cell-inputWrapper",
    ".jp-Notebook div.jp-OutputArea-output",
)
MISSING_ALT_TEXT = "No description has been provided for this image"
_IMAGE_WITHOUT_ALT = re.compile(r"<img\b(?![^>]*\salt\s*=)([^>]*?)(\s*/?)>", re.IGNORECASE)
_FOCUSABLE_DIV = re.compile(
    r"<div\b([^>]*\bclass=\"[^\"]*(?<![\w-])(?:jp-Cell-inputWrapper|jp-OutputArea-output)"
    r"(?![\w-])[^\"]*\"[^>]*?)(\s*/?)>"
)


class _EditedPage:
    """Stands for BeautifulSoup in nbconvert's HTML exporter: the same edits, no parse."""

    def __init__(self, html: str, features: str = "") -> None:
        self.html = html
        self.missing_alt = len(_IMAGE_WITHOUT_ALT.findall(html))

    def select(self, selector: str) -> list[Any]:
        if selector not in NBCONVERT_ACCESSIBILITY_SELECTORS:
            raise NotImplementedError(f"nbconvert asks for {selector!r}: see autograder.compat")
        # nbconvert only counts the images and sets attributes: one stand-in per image
        # keeps its warning's count right; the edits are made once, in __str__.
        return [_Ignored() for _ in range(self.missing_alt)] if selector.startswith("img") else []

    def __str__(self) -> str:
        html = _IMAGE_WITHOUT_ALT.sub(rf'<img\1 alt="{MISSING_ALT_TEXT}"\2>', self.html)
        return _FOCUSABLE_DIV.sub(r'<div\1 tabindex="0"\2>', html)


class _Ignored:
    def __init__(self) -> None:
        self.attrs: dict[str, str] = {}


@contextlib.contextmanager
def html_export_without_reparsing() -> Iterator[None]:
    """Within this block, nbconvert's HTMLExporter makes its accessibility edits by regex."""
    import nbconvert.exporters.html as html_module

    parser = html_module.BeautifulSoup
    html_module.BeautifulSoup = _EditedPage
    try:
        yield
    finally:
        html_module.BeautifulSoup = parser
