"""Set up everything the course needs: graphviz, bubblewrap, chromium and the project's `.venv`.

Runs with the system Python and its standard library only, because nothing else exists yet
on a fresh machine. `make setup` (and so `make lab` and `make test`) calls it when `.venv`
is missing or older than `pyproject.toml`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed"
GRAPHVIZ_HINT = (
    "The graphviz binary `dot` is missing and cannot be installed here. Install it with "
    "your package manager (apt install graphviz, brew install graphviz, "
    "conda install -c conda-forge graphviz), then run the command again."
)


def run(command: list[str], **kwargs: object) -> None:
    """Runs a command, echoing it first, and stops the bootstrap if it fails."""
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]


def ensure_graphviz() -> None:
    """Installs Debian's graphviz when `dot` is missing and we are root with apt."""
    if shutil.which("dot"):
        return
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not (is_root and shutil.which("apt-get")):
        sys.exit(GRAPHVIZ_HINT)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "graphviz"], env=env)
    if not shutil.which("dot"):
        sys.exit(GRAPHVIZ_HINT)


def install_optional(package: str, program: str, without_it: str, present=None) -> None:
    """Installs a Debian package when ``program`` is missing and we are root with apt.

    Args:
        package: The Debian package.
        program: The command it provides, looked up on PATH.
        without_it: What happens without it, printed when it cannot be installed.
        present: Says whether what the package provides is there, when it is no command.
    """
    present = present or (lambda: bool(shutil.which(program)))
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if present() or not (is_root and shutil.which("apt-get")):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
    print("+", " ".join(command), flush=True)
    if subprocess.run(command, env=env, check=False).returncode != 0:
        # The package lists may be missing on a fresh machine.
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
        subprocess.run(command, env=env, check=False)
    if not present():
        print(f"{package} could not be installed: {without_it}.")


def ensure_bubblewrap() -> None:
    """Installs Debian's bubblewrap (the grader's sandbox) when we are root with apt.

    Optional: without it the grader still works, and its report says the sandbox was off.
    """
    install_optional("bubblewrap", "bwrap", "grading will run without the sandbox")


def ensure_chromium() -> None:
    """Installs Debian's chromium (the browser test's browser) when we are root with apt.

    Optional for the course: without it `tests/test_browser.py` skips and says why.
    Playwright's own browser download is not used: it needs a network this may not have.
    """
    install_optional("chromium", "chromium", "the browser test will be skipped")


def has_chinese_font() -> bool:
    """Whether fontconfig knows a font with Chinese characters."""
    if not shutil.which("fc-list"):
        return False
    listed = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, check=False)
    return bool(listed.stdout.strip())


def ensure_chinese_font() -> None:
    """Installs a small Chinese font (for the zh-CN browser test's screenshots) if none is there.

    Optional: without it the zh-CN screenshots show boxes where Chinese characters go.
    """
    install_optional(
        "fonts-wqy-microhei",
        "",
        "the zh-CN screenshots will show boxes for Chinese characters",
        present=has_chinese_font,
    )


def ensure_venv() -> None:
    """Creates `.venv` and installs the project (editable, with dev extras) into it."""
    if sys.version_info[:2] != (3, 11):
        sys.exit(f"Python 3.11 is required, this is {sys.version.split()[0]}.")
    if not (VENV / "bin" / "python").exists():
        print(f"Creating {VENV.name}/", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    python = str(VENV / "bin" / "python")
    # pip byte-compiles what it installs one file after the other: over half of torch's
    # install (29 of 42 s here). Compiled afterwards on every core instead; compiled at
    # all, since a Python run with PYTHONDONTWRITEBYTECODE never caches what it compiles.
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-compile"]
    # torch first and pinned: an unpinned resolution would pull several GB of CUDA wheels.
    run([*pip, "torch==2.13.0"])
    run([*pip, "-e", f"{ROOT}[dev]"])
    site_packages = VENV / "lib" / "python3.11" / "site-packages"
    compile_all = [python, "-m", "compileall", "-qq", "-j", "0", str(site_packages)]
    print("+", " ".join(compile_all), flush=True)
    # As pip does, a file that does not compile (a template, a Python 2 test) is skipped.
    subprocess.run(compile_all, check=False)


def ensure_system_packages() -> None:
    """Installs graphviz, bubblewrap, chromium and a Chinese font if needed (one apt at a time)."""
    ensure_graphviz()
    ensure_bubblewrap()
    ensure_chromium()
    ensure_chinese_font()


def main() -> None:
    """Installs the system packages and the virtual environment, both at once.

    apt and pip do not depend on each other: on a fresh machine each takes minutes.
    ``.venv/.installed`` is written only when both succeeded (a failure in either,
    graphviz missing included, stops the setup).
    """
    with ThreadPoolExecutor(max_workers=1) as apt:
        system = apt.submit(ensure_system_packages)
        ensure_venv()
        system.result()  # re-raises what stopped it (sys.exit too)
    STAMP.write_text("installed from pyproject.toml\n")
    print("Setup complete: .venv is ready.", flush=True)


if __name__ == "__main__":
    main()
