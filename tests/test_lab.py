"""make lab for self-study: JupyterLab starts on notebooks/ with a clean log and validation on."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from autograder.course import REPO, assignment_ids
from autograder.learner.lab import (
    LAB_PLUGINS_OFF,
    LEARNER_KERNELS,
    configure_learner_lab,
    lab_command,
    warm_modules,
    warm_startup_line,
)

TOKEN = "autograd-pitfalls-test"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read().decode()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A running JupyterLab as `make lab` starts it; yields (base url, log path)."""
    configure_learner_lab()
    port = _free_port()
    log = tmp_path_factory.mktemp("lab") / "server.log"
    extra = ["--no-browser", f"--port={port}", f"--IdentityProvider.token={TOKEN}"]
    with log.open("w") as handle:
        server = subprocess.Popen(lab_command(extra), cwd=REPO, stdout=handle, stderr=handle)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if _get(f"{base}/api/status?token={TOKEN}")[0] == 200:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not start:\n{log.read_text()}")
        yield base, log
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_lab_serves_notebooks_with_course_tools_off(lab):
    base, _ = lab
    status, page = _get(f"{base}/lab?token={TOKEN}")
    assert status == 200
    for plugin in LAB_PLUGINS_OFF:
        assert json.dumps(plugin) in page, f"{plugin} should be disabled in the page config"
    _, listing = _get(f"{base}/api/contents?token={TOKEN}")
    assert {item["name"] for item in json.loads(listing)["content"]} >= set(assignment_ids())


@pytest.mark.slow
def test_lab_validate_button_works_and_the_log_stays_clean(lab):
    base, log = lab
    assignment = assignment_ids()[0]
    body = urllib.parse.urlencode({"path": f"{assignment}/{assignment}.ipynb"}).encode()
    request = urllib.request.Request(f"{base}/assignments/validate?token={TOKEN}", data=body)
    with urllib.request.urlopen(request, timeout=120) as response:
        result = json.loads(response.read())
    assert result["success"], result
    assert "failed" in result["value"]  # the unanswered notebook fails its tests
    # autograder.learner.validate_button serves the button: a summary first, then short failures.
    summary = result["value"]["failed"][0]["source"]
    assert summary.startswith("0 of ") and "not yet: q1" in summary, summary
    assert len(json.dumps(result["value"])) < 5000
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
    [path] = [arg for arg in lab_command() if arg.startswith("JUPYTER_PATH=")]
    assert path.removeprefix("JUPYTER_PATH=").split(os.pathsep)[0] == str(LEARNER_KERNELS.parent)


def test_configuring_again_from_make_labs_own_terminal_keeps_one_startup_line(monkeypatch):
    configure_learner_lab()
    written = (LEARNER_KERNELS / "python3" / "kernel.json").read_text()
    # A terminal in JupyterLab inherits the server's JUPYTER_PATH: the spec found first is ours.
    monkeypatch.setenv("JUPYTER_PATH", str(LEARNER_KERNELS.parent))
    configure_learner_lab()
    assert (LEARNER_KERNELS / "python3" / "kernel.json").read_text() == written
