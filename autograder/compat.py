"""Every private API of nbgrader, nbclient and jupyter_client the grader relies on.

They are reached here only, and ``tests/test_compat.py`` checks each one against the
installed versions (that it exists, and takes the parameters used), so that an upgrade
that renames or reshapes one fails there, loudly, instead of as a wrong grade. The
torch ones the course's helpers use are in :mod:`autograd_pitfalls.compat`; the kernel
side (:mod:`autograder.kernel`) uses only public IPython and ipykernel attributes.
"""

from __future__ import annotations

import functools
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
