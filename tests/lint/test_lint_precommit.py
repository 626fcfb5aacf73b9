"""The pre-commit hook (.pre-commit-hooks.yaml), run by pre-commit on a temporary repository.

``pre-commit try-repo`` installs the hook from this repository (its working tree, with
uncommitted changes) into an environment of its own, as a project's configuration would,
and runs it on the files given. Offline: the hook's environment gets this package without
its dependencies (the linter imports none of them) and builds it with the setuptools that
virtualenv put there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_the_hook_fails_a_commit_with_a_pitfall_and_passes_clean_files(tmp_path):
    pytest.importorskip("pre_commit")
    project = tmp_path / "project"
    project.mkdir()
    _git("init", "-q", cwd=project)
    (project / "train.py").write_text("import torch\nloss = torch.ones(3).sum()\nloss.data[0]\n")
    (project / "clean.py").write_text("import torch\nloss = torch.ones(3).sum()\nloss.item()\n")
    _git("add", "train.py", "clean.py", cwd=project)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "PIP_NO_DEPS": "1",
        "PIP_NO_BUILD_ISOLATION": "1",
    }

    def hook(*files: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO)]
        command += ["autograd-pitfalls-lint", "--files", *files]
        return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)

    failed = hook("train.py", "clean.py")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "autograd-pitfalls lint" in failed.stdout and "Failed" in failed.stdout
    assert "train.py:3:1: AGP103 [*] " in failed.stdout
    assert "clean.py" not in failed.stdout.split("Failed", 1)[1]
    passed = hook("clean.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout
