"""make lab for self-study: JupyterLab on the learner's workspace, a clean log, validation on."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from autograder.course import REPO, assignment_ids
from autograder.learner.lab import (
    LAB_PLUGINS_OFF,
    LAYOUTS,
    LEARNER_KERNELS,
    configure_learner_lab,
    lab_command,
    warm_modules,
    warm_startup_line,
)

TOKEN = "autograd-pitfalls-test"
# JupyterLab's start and a check (a zygote importing torch, a kernel) can take minutes on a
# machine busy with other grading runs: wait as long as the grader waits for a kernel.
KERNEL_START_TIMEOUT = 300
KERNEL_START_TRIES = KERNEL_START_TIMEOUT * 2  # every half second


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read().decode()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab started by the command `make lab` runs, on a workspace of this test's own.

    Yields (base url, log path, workspace).
    """
    folder = tmp_path_factory.mktemp("lab")
    workspace = folder / "workspace"
    port = _free_port()
    log = folder / "server.log"
    command = [
        sys.executable,
        "-m",
        "autograder",
        "lab",
        f"--workspace={workspace}",
        f"--port={port}",
        f"--token={TOKEN}",
        "--no-browser",
    ]
    with log.open("w") as handle:
        server = subprocess.Popen(command, cwd=REPO, stdout=handle, stderr=handle)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(KERNEL_START_TRIES):
            try:
                if _get(f"{base}/api/status?token={TOKEN}")[0] == 200:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not start:\n{log.read_text()}")
        yield base, log, workspace
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_lab_serves_the_workspace_with_course_tools_off(lab):
    base, _, _ = lab
    status, page = _get(f"{base}/lab?token={TOKEN}")
    assert status == 200
    for plugin in LAB_PLUGINS_OFF:
        assert json.dumps(plugin) in page, f"{plugin} should be disabled in the page config"
    _, listing = _get(f"{base}/api/contents?token={TOKEN}")
    names = {item["name"] for item in json.loads(listing)["content"]}
    assert names >= {f"{assignment}.ipynb" for assignment in assignment_ids()}
    assert ".released" not in names  # hidden: the baselines are not the learner's to open


@pytest.mark.slow
def test_make_lab_says_where_the_notebooks_are_and_opens_the_first_one(lab):
    base, log, workspace = lab
    said = log.read_text()
    assert f"Your notebooks are in {workspace}/ (made now from notebooks/)." in said
    assert "never write in it" in said
    first = f"{assignment_ids()[0]}.ipynb"
    assert f"opening {first}" in said
    # `/` sends the browser to that notebook in JupyterLab, not to the Launcher.
    request = urllib.request.Request(f"{base}/?token={TOKEN}")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.url.split("?")[0].endswith(f"/lab/tree/{first}")


@pytest.mark.slow
def test_lab_validate_button_gives_the_graders_verdict_and_the_log_stays_clean(lab):
    base, log, _ = lab
    assignment = assignment_ids()[0]
    body = urllib.parse.urlencode({"path": f"{assignment}.ipynb"}).encode()
    request = urllib.request.Request(f"{base}/assignments/validate?token={TOKEN}", data=body)
    with urllib.request.urlopen(request, timeout=KERNEL_START_TIMEOUT) as response:
        result = json.loads(response.read())
    assert result["success"], result
    # The unanswered notebook: a summary first, then the exercises with their points.
    [entry] = result["value"]["failed"]
    assert entry["source"].startswith("0 of ") and "not yet: q1" in entry["source"]
    assert "hidden checks" in entry["error"] and "0/2 points: not answered yet" in entry["error"]
    problems = [
        line
        for line in log.read_text().splitlines()
        if line.startswith(("[E ", "[W ")) or "Traceback" in line
    ]
    assert not problems, "\n".join(problems)


def test_the_warm_startup_line_imports_and_binds_no_name():
    import sys

    namespace: dict = {}
    exec(warm_startup_line(["json", "no_such_module", "email.mime.text"]), namespace)
    assert set(namespace) == {"__builtins__"}, "a name bound at start-up leaks into notebooks"
    assert "email.mime.text" in sys.modules  # imported after the one that failed


def test_the_learners_kernel_is_the_environments_own_started_warm():
    from jupyter_client.kernelspec import KernelSpecManager

    configure_learner_lab()
    native = KernelSpecManager().get_kernel_spec("python3")
    spec = json.loads((LEARNER_KERNELS / "python3" / "kernel.json").read_text())
    *argv, startup = spec["argv"]
    assert argv == native.argv and spec["metadata"] == native.metadata
    assert startup == f"--IPKernelApp.exec_lines={[warm_startup_line(warm_modules())]!r}"
    # Found from the released notebooks, beside the course's own list.
    assert {"torch", "matplotlib.pyplot", "autograd_pitfalls.lint"} <= set(warm_modules())
    command = lab_command(REPO / "some-workspace")
    # The layout JupyterLab restores is the workspace's own, not the machine-wide one.
    assert f"--LabApp.workspaces_dir={REPO / 'some-workspace' / LAYOUTS}" in command
    [path] = [arg for arg in command if arg.startswith("JUPYTER_PATH=")]
    assert path.removeprefix("JUPYTER_PATH=").split(os.pathsep)[0] == str(LEARNER_KERNELS.parent)


def test_configuring_again_from_make_labs_own_terminal_keeps_one_startup_line(monkeypatch):
    configure_learner_lab()
    written = (LEARNER_KERNELS / "python3" / "kernel.json").read_text()
    # A terminal in JupyterLab inherits the server's JUPYTER_PATH: the spec found first is ours.
    monkeypatch.setenv("JUPYTER_PATH", str(LEARNER_KERNELS.parent))
    configure_learner_lab()
    assert (LEARNER_KERNELS / "python3" / "kernel.json").read_text() == written
