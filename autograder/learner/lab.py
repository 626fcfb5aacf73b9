"""Start JupyterLab for self-study: nbgrader's Validate button on, course tools off.

A learner has no exchange and no course: nbgrader's assignment list, course list and
formgrader would fail on every poll and fill the server log with errors. They are turned
off in this project's virtual environment only; validation stays on. So is JupyterLab's
news feed, whose consent pop-up would cover the first notebook.

A notebook's kernel imports torch, the course's helpers and what the notebooks import as it
starts, before it says it is ready (the learner is reading the first cells by then), so
that Run All does not wait for them: measured by the browser test, Run All took 1.0-2.9 s
instead of 2.4-6.4 s, and the kernel was ready 5.3-8.0 s after the notebook opened instead
of about 3 s. It is the environment's own kernel with one start-up line, which binds no
name: a cell that forgot an import still fails, as it would when validated or graded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from autograder.course import REPO

SERVER_EXTENSIONS_OFF = (
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
    "nbgrader.server_extensions.formgrader",
    # Replaced by SERVER_EXTENSIONS_ON: the same Validate button, with a summary first.
    "nbgrader.server_extensions.validate_assignment",
)
SERVER_EXTENSIONS_ON = ("autograder.learner.validate_button",)
LAB_PLUGINS_OFF = (
    "@jupyter/nbgrader:assignment-list",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:formgrader",
    # Create Assignment edits cell metadata: a learner could unlock a test cell with it.
    "@jupyter/nbgrader:create-assignment",
    # The nbgrader menu only opens the three tools above.
    "@jupyter/nbgrader:menu",
    # JupyterLab's news and update check: it opens with a pop-up asking whether to fetch
    # "official Jupyter news", over the notebook a learner has just opened.
    "@jupyterlab/apputils-extension:announcements",
)


# Imported when a learner's kernel starts, before it says it is ready, beside what the
# notebooks import (read from them): what a notebook's first cells would otherwise wait for.
# torch._dynamo is what the first track_inplace() or torch.optim optimiser imports, and
# torch.distributed.tensor what torch imports at the first op on a tensor subclass (the GPU
# stand-in's): about a second each.
WARM_MODULES = ("torch", "torch._dynamo", "torch.distributed.tensor", "autograd_pitfalls")
# Where configure_learner_lab writes the learner's kernel spec (inside the environment).
LEARNER_KERNELS = Path(sys.prefix) / "share" / "autograd-pitfalls" / "kernels"


def _jupyter() -> str:
    return str(Path(sys.executable).with_name("jupyter"))


def _jupyter_path() -> list[str]:
    # A JUPYTER_PATH the learner set keeps its place, after the course's folder.
    return [folder for folder in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if folder]


def warm_modules(notebooks: Path = REPO / "notebooks") -> list[str]:
    """The modules a learner's kernel imports as it starts: WARM_MODULES and the notebooks'."""
    from autograder.pipeline.preload import files_imports

    found = dict.fromkeys(WARM_MODULES)
    found.update(dict.fromkeys(files_imports(sorted(notebooks.glob("*/*.ipynb")))))
    return list(found)


def warm_startup_line(modules: list[str]) -> str:
    """One ``exec_lines`` entry (a cell): imports ``modules``, binds no name.

    A name bound here would be defined in every notebook before its own imports run, so a
    cell that forgot an import would work in JupyterLab and fail when validated or graded.
    A module that cannot be imported is passed over: the others are still imported, and
    the notebook's own cell says what is wrong with it.
    """
    names = ", ".join(repr(name) for name in modules)
    return (
        f"for _warm in ({names},):\n"
        "    try:\n"
        "        __import__('importlib').import_module(_warm)\n"
        "    except Exception:\n"
        "        pass\n"
        "del _warm\n"
    )


def _write_learner_kernel() -> None:
    # The environment's own python3 kernel, started with the imports above: the same kernel
    # (argv, encryption support), only warm. JupyterLab finds it first (lab_command).
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME, KernelSpecManager

    native = KernelSpecManager().get_kernel_spec(NATIVE_KERNEL_NAME)
    spec = native.to_dict()
    # Run from `make lab`'s own terminal, JUPYTER_PATH finds this very spec first: its
    # start-up line is replaced, not added to.
    startup = "--IPKernelApp.exec_lines="
    argv = [arg for arg in native.argv if not arg.startswith(startup)]
    spec["argv"] = [*argv, f"{startup}{[warm_startup_line(warm_modules())]!r}"]
    folder = LEARNER_KERNELS / NATIVE_KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(spec, indent=1) + "\n"
    if not (folder / "kernel.json").is_file() or (folder / "kernel.json").read_text() != text:
        (folder / "kernel.json").write_text(text)


def _lab_plugins_disabled() -> set[str]:
    page_config = Path(sys.prefix) / "etc" / "jupyter" / "labconfig" / "page_config.json"
    if not page_config.is_file():
        return set()
    disabled = json.loads(page_config.read_text()).get("disabledExtensions", {})
    return {name for name, off in disabled.items() if off}


def _set_server_extensions(modules: tuple[str, ...], enabled: bool) -> None:
    # The file `jupyter server extension enable/disable --sys-prefix` writes, written here:
    # that command only toggles extensions a package installer already named in a file
    # (ours has none), and it takes seconds to start.
    folder = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d"
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules:
        setting = {"ServerApp": {"jpserver_extensions": {module: enabled}}}
        (folder / f"{module}.json").write_text(json.dumps(setting, indent=2) + "\n")


def _trust_notebooks() -> None:
    # What `jupyter trust` does, in this process: sign each notebook not signed yet in the
    # user's notary database.
    notary = NotebookNotary()
    for path in sorted((REPO / "notebooks").glob("*/*.ipynb")):
        notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        if not notary.check_signature(notebook):
            notary.sign(notebook)


def configure_learner_lab() -> None:
    """Turns nbgrader's course tools off in this environment and trusts ``notebooks/``.

    Idempotent and quiet. Trust is a signature of each notebook's content kept in the
    user's notary database (not in the file), so the committed notebooks open trusted
    (no "not trusted" warning) until a learner edits them.
    """
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    _set_server_extensions(SERVER_EXTENSIONS_OFF, enabled=False)
    _set_server_extensions(SERVER_EXTENSIONS_ON, enabled=True)
    for plugin in set(LAB_PLUGINS_OFF) - _lab_plugins_disabled():
        subprocess.run(
            [_jupyter(), "labextension", "disable", "--level=sys_prefix", plugin], **quiet
        )
    _trust_notebooks()
    _write_learner_kernel()


def lab_command(extra: list[str] | None = None, root_dir: Path | None = None) -> list[str]:
    """Returns the command that starts JupyterLab on ``notebooks/``.

    It runs from the repository root, so nbgrader's Validate button reads
    ``nbgrader_config.py``.

    Args:
        extra: More arguments for ``jupyter lab``.
        root_dir: The folder JupyterLab serves, ``notebooks/`` when None (the browser
            test serves a copy, since running and validating saves the notebooks).
    """
    command = [
        # The learner's kernel (configure_learner_lab) before the environment's own:
        # JUPYTER_PATH's folders come first where Jupyter looks for kernel specs.
        "/usr/bin/env",
        f"JUPYTER_PATH={os.pathsep.join([str(LEARNER_KERNELS.parent), *_jupyter_path()])}",
        _jupyter(),
        "lab",
        f"--ServerApp.root_dir={root_dir or REPO / 'notebooks'}",
        "--KernelManager.transport_encryption=auto",
        # No keep-alive pings on the kernel websocket. jupyter_server hands its ping settings
        # (milliseconds: every 30,000, pong timeout 90,000) to tornado, which reads them as
        # seconds and warns at the first kernel connection that the timeout exceeds the
        # interval; a timeout of one interval instead makes jupyter_server drop the kernel
        # connection whenever a ping runs a few ms late. On a learner's own machine the
        # browser closes its connection itself, so there is nothing for pings to detect.
        '--ServerApp.tornado_settings={"ws_ping_interval": 0}',
    ]
    if os.geteuid() == 0:
        # Jupyter refuses to start as root; containers and fresh machines often are root.
        command.append("--allow-root")
    return [*command, *(extra or [])]


def start_lab(extra: list[str] | None = None) -> int:
    """Configures the environment, then replaces this process with JupyterLab.

    Args:
        extra: More arguments for ``jupyter lab`` (for example ``--no-browser``).

    Returns:
        Never returns on success (the process becomes JupyterLab).
    """
    configure_learner_lab()
    command = lab_command(extra)
    os.chdir(REPO)
    os.execv(command[0], command)
    return 1  # pragma: no cover (execv does not return)
