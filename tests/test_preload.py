"""The zygote imports what the released notebooks import, once, before forking kernels."""

from __future__ import annotations

import json
import sys
import textwrap

import nbformat
import pytest
from nbformat import v4

from autograder.course import KERNEL_START_TIMEOUT
from autograder.kernel import server
from autograder.pipeline.preload import cell_imports, notebook_imports
from autograder.pipeline.reference import read_reference
from autograder.sandbox import zygote as zygote_module
from autograder.sandbox.bwrap import detect_sandbox
from autograder.sandbox.limits import Limits


def test_top_level_imports_and_extensions_are_found_in_order():
    source = textwrap.dedent(
        """\
        %matplotlib inline
        %load_ext autograd_pitfalls.lint
        import torch, numpy as np
        from torch import nn
        from . import sibling
        !pip install nothing
        def later():
            import sympy
        if False:
            import json
        """
    )
    assert cell_imports(source) == ["autograd_pitfalls.lint", "torch", "numpy", "torch"]


def test_a_cell_that_is_not_python_imports_nothing_but_its_extensions():
    assert cell_imports("%load_ext rich\nimport (") == ["rich"]


def test_a_notebooks_imports_are_listed_once_from_its_code_cells_only():
    notebook = v4.new_notebook(
        cells=[
            v4.new_markdown_cell("import markdown_is_not_code"),
            v4.new_code_cell("import torch\nimport matplotlib.pyplot as plt"),
            v4.new_code_cell(["import torch\n", "from autograd_pitfalls import draw"]),
        ]
    )
    text = json.dumps(notebook)  # a list-of-lines source, as some tools write it
    assert notebook_imports(text) == ["torch", "matplotlib.pyplot", "autograd_pitfalls"]


def test_the_reference_carries_the_imports_of_every_released_notebook(built_course):
    reference = read_reference(built_course, "03b_data_vs_detach")
    imports = reference.imports
    # 03 plots with pyplot and runs the linter live: the two slowest imports of its kernels.
    assert {"torch", "matplotlib.pyplot", "autograd_pitfalls.lint"} <= set(imports)
    assert len(imports) == len(set(imports))


@pytest.fixture
def module_that_starts_a_thread(tmp_path, monkeypatch):
    (tmp_path / "starts_a_thread.py").write_text(
        "import threading\nstop = threading.Event()\n"
        "threading.Thread(target=stop.wait, name='left-running', daemon=True).start()\n"
    )
    (tmp_path / "quiet_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "starts_a_thread"
    started = sys.modules.pop("starts_a_thread", None)
    if started is not None:
        started.stop.set()
    sys.modules.pop("quiet_module", None)


def test_the_zygote_stops_preloading_at_a_module_that_starts_a_thread(
    module_that_starts_a_thread,
):
    reply = server.preload_modules(("no_such_module_here", "quiet_module", "starts_a_thread"))
    assert reply["loaded"] == ["quiet_module"]
    assert list(reply["failed"]) == ["no_such_module_here"]
    assert reply["threaded"] == "starts_a_thread"


class _FakeZygote(zygote_module.Zygote):
    """A zygote client whose zygote is a script: what it imports, which one threads."""

    def __init__(self, threaded: set[str]) -> None:
        super().__init__(detect_sandbox(enabled=False), "unused", Limits())
        self.threaded = threaded
        self.requests: list[list[str]] = []
        self.restarts = 0

    def request(self, op: str, **fields: object) -> dict:
        assert op == "preload"
        modules = list(fields["modules"])
        self.requests.append(modules)
        for index, name in enumerate(modules):
            if name in self.threaded:
                return {"loaded": modules[:index], "failed": {}, "threaded": name}
        return {"loaded": modules, "failed": {}, "threaded": ""}

    def restart(self) -> None:
        self.restarts += 1


def test_a_module_that_starts_a_thread_is_left_to_the_kernels_in_a_new_zygote():
    kernels = _FakeZygote(threaded={"b"})
    base = kernels.preload
    assert kernels.preload_modules(("a", "b", "c")) == ["a", "c"]
    assert kernels.requests == [["a", "b", "c"], ["c"]]
    assert kernels.restarts == 1  # the new zygote is launched with base + a, not b
    assert kernels.preload == (*base, "a", "c")
    assert kernels.preload_modules(("a", "c", "torch")) == []  # nothing new to import
    assert len(kernels.requests) == 2


@pytest.mark.slow
def test_figures_still_show_in_a_kernel_forked_after_pyplot_was_preloaded(tmp_path):
    # ipykernel sets matplotlib's inline backend when a kernel starts; a pyplot imported
    # before the fork must already use it, or figures are silently never displayed.
    from nbclient import NotebookClient

    from autograder.pipeline.autograde import forked_kernels

    sandbox = detect_sandbox(enabled=False)
    with (
        zygote_module.Zygote(sandbox, tmp_path / "run", Limits(cell_timeout=30)) as kernels,
        forked_kernels(kernels),
    ):
        assert kernels.preload_modules(("matplotlib.pyplot",)) == ["matplotlib.pyplot"]
        notebook = v4.new_notebook(
            cells=[
                v4.new_code_cell("import sys\nprint('matplotlib.pyplot' in sys.modules)"),
                v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])"),
            ]
        )
        notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
        NotebookClient(
            notebook, timeout=120, startup_timeout=KERNEL_START_TIMEOUT, kernel_name="python3"
        ).execute()
    assert notebook.cells[0].outputs[0].text.strip() == "True"
    shown = [output.get("data", {}) for output in notebook.cells[1].outputs]
    assert any("image/png" in data for data in shown), nbformat.writes(notebook)[-1500:]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_command_imports_the_judges_modules_where_it_judges_while_the_zygotes_start(
    jobs, monkeypatch, tmp_path
):
    """With one job this process judges: it imports torch while the zygote does, not at
    the first student's first test; with more, the workers' forkserver does instead."""
    import argparse

    from autograder import cli
    from autograder.course import Course

    calls, asked = [], []

    def launch_zygotes(sandbox, limits, count, imports):
        asked.append(imports)
        return ["zygote"] * count

    monkeypatch.setattr(cli, "launch_zygotes", launch_zygotes)
    monkeypatch.setattr(cli, "import_judge_modules", lambda: calls.append("this process"))
    monkeypatch.setattr(cli, "worker_context", lambda start: calls.append(f"forkserver {start}"))
    args = argparse.Namespace(
        executor="local",
        sandbox=False,
        jobs=jobs,
        cell_timeout=10,
        notebook_timeout=60,
        memory_mb=2048,
        device="cpu",
        disk_mb=100,
    )
    course = Course.at(tmp_path)
    released = course.release / "01a_leaf_tensors" / "01a_leaf_tensors.ipynb"
    released.parent.mkdir(parents=True)
    notebook = v4.new_notebook(cells=[v4.new_code_cell("import colorsys\nimport torch")])
    released.write_text(json.dumps(notebook))
    zygotes = cli._launch(args, course, ["01a_leaf_tensors"], students=5)
    assert zygotes == ["zygote"] * jobs
    assert calls == (["this process"] if jobs == 1 else ["forkserver True"])
    # The zygotes import what the released notebook imports as soon as they can.
    assert asked == [("colorsys", "torch")]


def _small_zygote(tmp_path, **modules: str) -> zygote_module.Zygote:
    """A zygote without the sandbox that preloads only json; ``modules`` are files in its
    folder, which ``python -m`` puts on its path."""
    run = tmp_path / "run"
    run.mkdir()
    for name, source in modules.items():
        (run / f"{name}.py").write_text(source)
    return zygote_module.Zygote(detect_sandbox(enabled=False), run, Limits(), preload=("json",))


def test_a_zygote_asked_at_launch_imports_the_notebooks_modules_before_it_is_needed(tmp_path):
    launcher = _small_zygote(tmp_path, quiet_module="VALUE = 1\n")
    launcher.launch()
    try:
        # Asked before the zygote is ready; a grading process adopts it and reads the reply.
        launcher.ask_preload(("json", "quiet_module", "colorsys"))
        kernels = zygote_module.Zygote.adopt(
            launcher.handoff(), launcher.sandbox, launcher.limits, worker=1
        )
        kernels.wait_ready()
        assert kernels.preload == ("json", "quiet_module", "colorsys")
        sent = []
        kernels.request = lambda op, **fields: sent.append(op)
        assert kernels.preload_modules(("quiet_module", "colorsys")) == []
        assert sent == [], "asked again for what the zygote imported at launch"
    finally:
        launcher.close()


def test_a_module_asked_at_launch_that_starts_a_thread_is_left_to_the_kernels(tmp_path):
    threads = (
        "import threading\nthreading.Thread(target=threading.Event().wait, daemon=True).start()\n"
    )
    kernels = _small_zygote(tmp_path, quiet_module="VALUE = 1\n", starts_a_thread=threads)
    kernels.launch()
    first = kernels.process.pid
    try:
        kernels.ask_preload(("quiet_module", "starts_a_thread", "colorsys"))
        kernels.wait_ready()
        assert kernels.preload == ("json", "quiet_module", "colorsys")
        assert kernels.process.pid != first, "the zygote that runs a thread still forks kernels"
        assert kernels.alive()
    finally:
        kernels.close()
