"""The linter's speed against ruff, flake8 and TorchFix, and its own start-up costs.

Run: ``.venv/bin/python benchmarks/lint_bench.py --corpus PATH`` (a folder of ``.py``
files; it prints the folder, its files and lines, and its git commit when it has one).
The figures of docs/linter.md were taken on huggingface/diffusers' ``src/diffusers/models``
(156 files, 119,708 lines), brought with the tool library's ``fetch`` into ``build/corpus/``
(outside git). Without ``--corpus`` it times the course's own ``solutions/``.

Each figure is the best of ``--repeat`` runs (TorchFix, a hundred times slower, of
``--repeat-slow``), with the spread (slowest minus best) and the load average before the
runs: other processes on a shared machine slow some runs down, the best is the one they
slowed least. Wall-clock time of the whole command, start-up included, as a user waits.

- ours: ``python -m autograd_pitfalls.lint --select ALL`` (one process);
- ruff: ``ruff check --isolated --no-cache`` (its default rules; it uses every core);
- flake8: ``flake8`` of an environment without our plugin (its default checks, ``--jobs``
  auto: every core), from ``--flake8-venv``;
- TorchFix: ``torchfix --select ALL`` (LibCST, as our first version), from ``--torchfix-venv``,
  installed apart from the project's environment (``--make-venvs`` makes both venvs under
  ``build/bench-venvs/`` with pip: flake8==7.5.0, torchfix==0.7.0).

It also times: the linter's start-up (``--list-rules``, and a one-line file) against
``python -c pass``; the IPython extension on a 400-line cell after 20 earlier cells; and
``flake8 --select E,F,W`` on the corpus's largest file with our plugin installed (the
project's ``.venv``) and without it (the flake8 venv), the cost the plugin adds to every
flake8 run of an environment.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENVS = REPO / "build" / "bench-venvs"
PINS = {"flake8": "flake8==7.5.0", "torchfix": "torchfix==0.7.0"}


def load() -> str:
    """The 1-minute load average, and the number of cores."""
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def timed(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The best of ``repeats`` runs and the spread (slowest minus best), in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times), max(times) - min(times)


def command(args: list[str], cwd: Path | None = None) -> Callable[[], object]:
    """A function that runs ``args`` quietly and checks that it ran."""

    def run() -> None:
        result = subprocess.run(args, capture_output=True, text=True, cwd=cwd)
        if result.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(args)} exited {result.returncode}: {result.stderr}")

    return run


def corpus_lines(corpus: Path) -> tuple[list[Path], int]:
    """The corpus's ``.py`` files and their lines."""
    files = sorted(path for path in corpus.rglob("*.py") if path.is_file())
    return files, sum(path.read_bytes().count(b"\n") for path in files)


def describe(corpus: Path) -> str:
    """The corpus's path and, for a git checkout or a fetched snapshot, its commit."""
    commit = subprocess.run(
        ["git", "-C", str(corpus), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    stamp = corpus / "COMMIT"
    for parent in [corpus, *corpus.parents]:
        if (parent / "COMMIT").is_file():
            stamp = parent / "COMMIT"
            break
    if stamp.is_file():
        commit = stamp.read_text().strip()
    return f"{corpus} ({commit or 'no commit recorded'})"


def make_venvs() -> None:
    """The side environments of flake8 (without our plugin) and TorchFix."""
    for name, pin in PINS.items():
        venv = VENVS / name
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", pin], check=True)


def row(name: str, best: float, spread: float, files: int, lines: int) -> str:
    """One tool's line: best time, spread, files and lines per second."""
    return (
        f"{name:<34} {best:8.2f} s (+{spread:5.2f}) {files / best:10.0f} files/s "
        f"{lines / best:12,.0f} lines/s"
    )


def ipython_cell_time(repeats: int) -> tuple[float, float]:
    """The extension's check of a 400-line cell, after 20 earlier cells (its context)."""
    from autograd_pitfalls.lint import CellSession, lint_cell

    step = (
        "for step in range(10):\n"
        "    optimizer.zero_grad()\n"
        "    out = model(x)\n"
        "    loss = F.mse_loss(out, y)\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    history.append(loss.item())\n"
        "print(out.data, loss.item())\n"
    )
    setup = (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
        "model = nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x, y = torch.randn(8, 4), torch.randn(8, 1)\nhistory = []\n"
    )
    cell = step * 50  # 400 lines
    assert cell.count("\n") == 400

    def run() -> None:
        session = CellSession()
        lint_cell(setup, session, "[1]")
        for number in range(2, 21):
            lint_cell(step, session, f"[{number}]")
        start = time.perf_counter()
        lint_cell(cell, session, "[21]")
        times.append(time.perf_counter() - start)

    times: list[float] = []
    for _ in range(repeats):
        run()
    return min(times), max(times) - min(times)


def main() -> None:
    """Times every tool on the corpus and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "solutions")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--repeat-slow", type=int, default=1, help="runs of TorchFix")
    parser.add_argument("--flake8-venv", type=Path, default=VENVS / "flake8")
    parser.add_argument("--torchfix-venv", type=Path, default=VENVS / "torchfix")
    parser.add_argument("--make-venvs", action="store_true", help="pip install them first")
    parser.add_argument("--skip-torchfix", action="store_true")
    args = parser.parse_args()
    if args.make_venvs:
        make_venvs()
    corpus = args.corpus.resolve()
    files, lines = corpus_lines(corpus)
    print(f"corpus: {describe(corpus)}: {len(files)} .py files, {lines:,} lines")
    print(f"python {sys.version.split()[0]}; {load()} before the runs\n")

    python = sys.executable
    print("start-up (best of runs, spread)")
    bare = timed(command([python, "-c", "pass"]), args.repeat)
    print(f"  python -c pass                     {bare[0]:.3f} s (+{bare[1]:.3f})")
    listed = timed(command([python, "-m", "autograd_pitfalls.lint", "--list-rules"]), args.repeat)
    print(f"  lint --list-rules                  {listed[0]:.3f} s (+{listed[1]:.3f})")
    one = REPO / "build" / "lint-bench-one-line.py"
    one.parent.mkdir(exist_ok=True)
    one.write_text("import torch\nx = torch.ones(1)\n")
    single = timed(command([python, "-m", "autograd_pitfalls.lint", str(one)]), args.repeat)
    print(f"  lint on a 2-line file              {single[0]:.3f} s (+{single[1]:.3f})")
    started = subprocess.run(
        [python, "-c", "import sys, autograd_pitfalls.lint; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"  importing the linter imports torch: {started}\n")

    print(f"whole corpus ({load()})")
    tools: list[tuple[str, list[str], int]] = [
        (
            "autograd-pitfalls lint (1 process)",
            [python, "-m", "autograd_pitfalls.lint", "--select", "ALL", "--exit-zero", str(corpus)],
            args.repeat,
        )
    ]
    ruff = shutil.which("ruff", path=str(Path(python).parent))
    if ruff:
        tools.append(
            (
                "ruff check (all cores)",
                [ruff, "check", "--isolated", "--no-cache", "--exit-zero", str(corpus)],
                args.repeat,
            )
        )
    flake8 = args.flake8_venv / "bin" / "flake8"
    if flake8.exists():
        tools.append(
            (
                "flake8, no plugin (all cores)",
                [str(flake8), "--exit-zero", str(corpus)],
                args.repeat,
            )
        )
    else:
        print(f"  flake8: no {flake8} (run with --make-venvs)")
    torchfix = args.torchfix_venv / "bin" / "torchfix"
    if torchfix.exists() and not args.skip_torchfix:
        tools.append(
            (
                "TorchFix --select ALL (all cores)",
                [str(torchfix), "--select", "ALL", str(corpus)],
                args.repeat_slow,
            )
        )
    elif not args.skip_torchfix:
        print(f"  TorchFix: no {torchfix} (run with --make-venvs)")
    results = {}
    for name, args_, repeats in tools:
        best, spread = timed(command(args_), repeats)
        results[name] = best
        print("  " + row(name, best, spread, len(files), lines))
    ours = results["autograd-pitfalls lint (1 process)"]
    for name, best in results.items():
        if name.startswith("TorchFix"):
            print(f"  ours is {best / ours:.0f} times as fast as TorchFix")

    print(f"\nIPython extension, a 400-line cell after 20 cells ({load()})")
    best, spread = ipython_cell_time(args.repeat)
    print(f"  lint_cell                          {best * 1000:.1f} ms (+{spread * 1000:.1f})")

    if flake8.exists() and files:
        largest = max(files, key=lambda path: path.stat().st_size)
        size = largest.read_bytes().count(b"\n")
        print(f"\nflake8 --select E,F,W on {largest.name} ({size:,} lines; {load()})")
        ours_flake8 = Path(python).parent / "flake8"
        plain = [str(flake8), "--select", "E,F,W", "--exit-zero", str(largest)]
        plugged = [str(ours_flake8), "--select", "E,F,W", "--exit-zero", str(largest)]
        # Alternate the two, so that a burst of load elsewhere slows both alike.
        without, with_plugin = [], []
        for _ in range(args.repeat):
            without.append(timed(command(plain), 1)[0])
            with_plugin.append(timed(command(plugged), 1)[0])
        a, b = min(without), min(with_plugin)
        median_a, median_b = statistics.median(without), statistics.median(with_plugin)
        print(f"  without the plugin                 {a:.3f} s (median {median_a:.3f})")
        print(f"  with the plugin installed          {b:.3f} s (median {median_b:.3f})")
        print(f"  difference                         {100 * (b - a) / a:+.1f}% (best)")
    print(f"\n{load()} after the runs")


if __name__ == "__main__":
    main()
