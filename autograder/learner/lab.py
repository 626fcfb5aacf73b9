"""Start JupyterLab for self-study: nbgrader's Validate button on, course tools off.

JupyterLab serves the learner's workspace (:mod:`autograder.learner.workspace`), never
``notebooks/``, which the build rewrites, and opens the notebook the learner saved last.

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
import sys
import urllib.parse
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from autograd_pitfalls.messages import ENGLISH
from autograder.course import REPO
from autograder.learner.workspace import (
    baseline_of,
    edition_folders,
    prepare,
    workspace_notebooks,
)

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
# Inside the workspace (hidden in JupyterLab): JupyterLab's saved layouts for it.
LAYOUTS = ".jupyterlab-layouts"
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
        # The tests' messages in the notebook's language (its metadata names it).
        "__import__('autograd_pitfalls.messages').messages.show_errors_in_language()\n"
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


def _disable_lab_plugins(plugins: tuple[str, ...]) -> None:
    # The file `jupyter labextension disable --level=sys_prefix` and `... lock` write, written
    # here: each of those commands takes seconds to start (half a minute for the six on a
    # new machine, with nothing printed). Locked too, so that JupyterLab's plugin manager
    # cannot turn one back on: Create Assignment could unlock a test cell.
    page_config = Path(sys.prefix) / "etc" / "jupyter" / "labconfig" / "page_config.json"
    settings = json.loads(page_config.read_text()) if page_config.is_file() else {}
    changed = False
    for key in ("disabledExtensions", "lockedExtensions"):
        entries = settings.setdefault(key, {})
        for plugin in plugins:
            if entries.get(plugin) is not True:
                entries[plugin] = True
                changed = True
    if changed:
        page_config.parent.mkdir(parents=True, exist_ok=True)
        page_config.write_text(json.dumps(settings, indent=2) + "\n")


# JupyterLab settings the course starts with (a learner's own settings still win): the
# file browser without its "Modified" column, which left the six notebooks' names cut off
# ("05_embedding...") in the sidebar's default width.
LAB_SETTINGS = {
    "@jupyterlab/filebrowser-extension:browser": {"showLastModifiedColumn": False},
}


# Inside the workspace (hidden in JupyterLab): the defaults of its JupyterLab's settings.
LAB_APP_SETTINGS = ".jupyterlab-settings"
# JupyterLab's interface language, by edition (JupyterLab names locales as gettext does).
TRANSLATION_PLUGIN = "@jupyterlab/translation-extension:plugin"
LAB_LOCALES = {ENGLISH: "en", "zh-CN": "zh_CN"}


def _set_lab_defaults(defaults: dict[str, dict[str, object]]) -> None:
    # JupyterLab's overrides.json in its application folder: the defaults of its settings
    # for this environment, as an administrator sets them (the learner's choices, saved in
    # their user settings, come after).
    overrides = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    settings = json.loads(overrides.read_text()) if overrides.is_file() else {}
    merged = {**settings}
    for plugin, values in defaults.items():
        merged[plugin] = {**settings.get(plugin, {}), **values}
    if merged != settings:
        overrides.parent.mkdir(parents=True, exist_ok=True)
        overrides.write_text(json.dumps(merged, indent=2) + "\n")


def _set_server_extensions(modules: tuple[str, ...], enabled: bool) -> None:
    # The file `jupyter server extension enable/disable --sys-prefix` writes, written here:
    # that command only toggles extensions a package installer already named in a file
    # (ours has none), and it takes seconds to start.
    folder = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d"
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules:
        setting = {"ServerApp": {"jpserver_extensions": {module: enabled}}}
        (folder / f"{module}.json").write_text(json.dumps(setting, indent=2) + "\n")


def trust_notebooks(notebooks: list[Path]) -> None:
    """Signs each notebook not signed yet in the user's notary database (``jupyter trust``).

    Trust is a signature of the content kept in the database (not in the file): a
    notebook opens trusted (no "not trusted" warning) until its content changes, and a
    notebook the learner saved from JupyterLab is signed by JupyterLab itself.
    """
    notary = NotebookNotary()
    for path in notebooks:
        notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        if not notary.check_signature(notebook):
            notary.sign(notebook)


def configure_learner_lab() -> None:
    """Turns nbgrader's course tools off in this environment; writes the warm kernel spec.

    Idempotent, quiet and quick (it writes a few small files).
    """
    _set_server_extensions(SERVER_EXTENSIONS_OFF, enabled=False)
    _set_server_extensions(SERVER_EXTENSIONS_ON, enabled=True)
    _disable_lab_plugins(LAB_PLUGINS_OFF)
    _set_lab_defaults(LAB_SETTINGS)
    _write_learner_kernel()


def write_lab_settings(workspace: Path, language: str) -> Path:
    """Writes the defaults of this workspace's JupyterLab: the course's, in its language.

    JupyterLab reads them from ``<workspace>/.jupyterlab-settings/overrides.json`` (its
    ``app_settings_dir``, given by :func:`lab_command`): per workspace, so an English and
    a zh-CN JupyterLab can run side by side, each in its language. A learner's own choice
    (Settings > Language) still wins.

    Returns:
        The settings folder.
    """
    folder = workspace / LAB_APP_SETTINGS
    locale = {TRANSLATION_PLUGIN: {"locale": LAB_LOCALES.get(language, "en")}}
    text = json.dumps({**LAB_SETTINGS, **locale}, indent=2) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "overrides.json"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return folder


def lab_command(
    root_dir: Path, extra: list[str] | None = None, open_notebook: Path | None = None
) -> list[str]:
    """Returns the command that starts JupyterLab on the learner's workspace.

    It runs from the repository root, so nbgrader's Validate button reads
    ``nbgrader_config.py``.

    Args:
        root_dir: The folder JupyterLab serves: the learner's workspace (the tests serve
            one of their own).
        extra: More arguments for ``jupyter lab``.
        open_notebook: A notebook in ``root_dir`` that JupyterLab opens at start, instead
            of its Launcher.
    """
    command = [
        # The learner's kernel (configure_learner_lab) before the environment's own:
        # JUPYTER_PATH's folders come first where Jupyter looks for kernel specs.
        "/usr/bin/env",
        f"JUPYTER_PATH={os.pathsep.join([str(LEARNER_KERNELS.parent), *_jupyter_path()])}",
        _jupyter(),
        "lab",
        f"--ServerApp.root_dir={root_dir}",
        # JupyterLab's layout (the tabs open, the panels) is kept with the workspace, not in
        # the user's ~/.jupyter, which every JupyterLab of the machine shares: a layout left
        # by another course or another copy opened its notebooks here, or 404s for them.
        f"--LabApp.workspaces_dir={root_dir / LAYOUTS}",
        "--KernelManager.transport_encryption=auto",
        # No keep-alive pings on the kernel websocket. jupyter_server hands its ping settings
        # (milliseconds: every 30,000, pong timeout 90,000) to tornado, which reads them as
        # seconds and warns at the first kernel connection that the timeout exceeds the
        # interval; a timeout of one interval instead makes jupyter_server drop the kernel
        # connection whenever a ping runs a few ms late. On a learner's own machine the
        # browser closes its connection itself, so there is nothing for pings to detect.
        '--ServerApp.tornado_settings={"ws_ping_interval": 0}',
    ]
    if open_notebook is not None:
        # The page the browser opens (and `/` redirects to): this notebook, in JupyterLab.
        relative = open_notebook.relative_to(root_dir).as_posix()
        command.append(f"--LabApp.default_url=/lab/tree/{urllib.parse.quote(relative)}")
    if os.geteuid() == 0:
        # Jupyter refuses to start as root; containers and fresh machines often are root.
        command.append("--allow-root")
    return [*command, *(extra or [])]


def notebook_to_open(workspace: Path) -> Path | None:
    """The notebook to open at start: the one the learner saved last, else the first one.

    A notebook counts as saved by the learner when it is newer than the release it was
    copied from (copies made together are all "new" otherwise).
    """
    notebooks = [path for path in workspace_notebooks(workspace) if path.is_file()]
    saved = [
        path
        for path in notebooks
        if not baseline_of(workspace, path).is_file()
        or path.stat().st_mtime > baseline_of(workspace, path).stat().st_mtime + 1
    ]
    if saved:
        return max(saved, key=lambda path: path.stat().st_mtime)
    return notebooks[0] if notebooks else None


def _say(line: str) -> None:
    print(line, flush=True)


def start_lab(
    workspace: Path,
    port: int | None = None,
    token: str | None = None,
    extra: list[str] | None = None,
    language: str = ENGLISH,
) -> int:
    """Prepares the workspace and JupyterLab, then replaces this process with JupyterLab.

    Says what it does as it goes: on first use the configuration and the copies take a
    few seconds, after an install that took minutes.

    Args:
        workspace: The learner's folder (made from ``notebooks/`` on first use).
        port: The port to serve on (JupyterLab's default, 8888 or the next free one, when
            None).
        token: The token the browser must give (JupyterLab makes one when None; "" for
            none, on a machine nobody else uses).
        extra: More arguments for ``jupyter lab`` (for example ``--no-browser``).
        language: The edition: ``zh-CN`` works in ``<workspace>/zh-CN/``, made from
            ``notebooks/zh-CN/`` by the same rules, with JupyterLab in Chinese.

    Returns:
        Never returns on success (the process becomes JupyterLab).

    Raises:
        AutograderError: If the course has no such edition.
    """
    workspace, release = edition_folders(workspace, language)
    _say("Configuring JupyterLab for self-study (Validate button on, course tools off)...")
    configure_learner_lab()
    first = not workspace.exists()
    updates = prepare(workspace, release)
    settings = write_lab_settings(workspace, language)
    notebooks = workspace_notebooks(workspace)
    trust_notebooks([update.path for update in updates])
    where = _shown(workspace)
    if first:
        _say(f"Your notebooks are in {where}/ (made now from notebooks/).")
    else:
        _say(f"Your notebooks are in {where}/.")
    _say(
        "  Your answers are saved there: `make notebooks`, `make grade` and `make test` "
        "never write in it."
    )
    if updates and not first:
        _say("The course has changed since your last visit:")
        for update in updates:
            _say(update.describe(workspace))
        if any(update.action == "beside" for update in updates):
            _say("  `make changes` shows what changed in the exercises you answered.")
    opened = notebook_to_open(workspace)
    options = [f"--LabApp.app_settings_dir={settings}", *(extra or [])]
    if port is not None:
        options.append(f"--ServerApp.port={port}")
    if token is not None:
        options.append(f"--IdentityProvider.token={token}")
    command = lab_command(workspace, options, opened)
    _say(
        f"Starting JupyterLab on {len(notebooks)} notebooks"
        + (f", opening {opened.name}" if opened else "")
        + " (Ctrl-C twice to stop it)..."
    )
    os.chdir(REPO)
    os.execv(command[0], command)
    return 1  # pragma: no cover (execv does not return)


def _shown(path: Path) -> str:
    """``path`` relative to the current folder where it is inside it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
