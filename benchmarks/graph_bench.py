"""Time to_dot and diagnose against torchviz.make_dot on graphs of 1,000 to 100,000 nodes.

Run: ``.venv/bin/python benchmarks/graph_bench.py`` (add ``--quick`` to stop at 10,000).

Two shapes of graph, each node saving one or two tensors:

- wide: chains of 100 ops (``h = (h * w).sigmoid()``) stacked into one loss. torchviz
  recurses once per node along a path, so it needs paths shorter than Python's recursion
  limit: this shape is the one it can draw.
- deep: one chain of ``n`` ops. torchviz raises RecursionError beyond about 1,000 nodes;
  ours walks iteratively.

Each time is the best of a few runs, in seconds. The last column divides by the node count:
if it stays flat as the graph grows, the cost is linear.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import torch

from autograd_pitfalls import diagnose, to_dot

CHAIN = 100  # ops per chain in the wide graph


def wide_graph(nodes: int) -> torch.Tensor:
    """About ``nodes`` nodes: ``nodes // 100`` chains of 100 ops, stacked and summed."""
    x = torch.ones(4, requires_grad=True)
    w = torch.full((4,), 0.5, requires_grad=True)
    ends = []
    for _ in range(max(1, nodes // CHAIN)):
        h = x
        for _ in range(CHAIN // 2):
            h = (h * w).sigmoid()  # MulBackward0 saves self and other, Sigmoid its result
        ends.append(h)
    return torch.stack(ends).sum()


def deep_graph(nodes: int) -> torch.Tensor:
    """One chain of ``nodes`` ops."""
    x = torch.ones(4, requires_grad=True)
    w = torch.full((4,), 0.5, requires_grad=True)
    h = x
    for _ in range(nodes // 2):
        h = (h * w).sigmoid()
    return h.sum()


def best_of(repeats: int, run: Callable[[torch.Tensor], object], loss: torch.Tensor) -> float:
    """The shortest of ``repeats`` runs of ``run(loss)``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(loss)
        times.append(time.perf_counter() - start)
    return min(times)


def count_nodes(loss: torch.Tensor) -> int:
    """Nodes of the backward graph, counted without our code."""
    seen, todo = {loss.grad_fn}, [loss.grad_fn]
    while todo:
        for next_fn, _ in todo.pop().next_functions:
            if next_fn is not None and next_fn not in seen:
                seen.add(next_fn)
                todo.append(next_fn)
    return len(seen)


def torchviz_make_dot() -> Callable[[torch.Tensor], object] | None:
    """Torchviz's drawing, with saved tensors as ours has them; None when not installed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # its distutils import
            import torchviz
    except ImportError:
        return None
    return lambda loss: torchviz.make_dot(loss, show_saved=True).source


def measure(shape: str, build: Callable[[int], torch.Tensor], sizes: list[int]) -> None:
    """Prints one table: a row of timings per graph size."""
    make_dot = torchviz_make_dot()
    header = (
        f"{'graph':<6} {'nodes':>8} {'to_dot s':>9} {'diagnose s':>11} "
        f"{'make_dot s':>11} {'make_dot/to_dot':>16} {'diagnose µs/node':>17}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        loss = build(size)
        nodes = count_nodes(loss)
        repeats = 3 if nodes <= 10_000 else 1
        ours = best_of(repeats, to_dot, loss)
        diagnosed = best_of(repeats, diagnose, loss)
        if make_dot is None:
            theirs, ratio = f"{'n/a':>11}", f"{'n/a':>16}"
        else:
            try:
                seconds = best_of(repeats, make_dot, loss)
                theirs, ratio = f"{seconds:11.3f}", f"{seconds / ours:15.2f}x"
            except RecursionError:
                theirs, ratio = f"{'Recursion':>11}", f"{'(it fails)':>16}"
        print(
            f"{shape:<6} {nodes:>8,} {ours:9.3f} {diagnosed:11.3f} {theirs} {ratio} "
            f"{diagnosed / nodes * 1e6:17.1f}"
        )
    print()


def main() -> None:
    """Prints the wide and the deep table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stop at 10,000 nodes")
    sizes = [1_000, 10_000] if parser.parse_args().quick else [1_000, 10_000, 100_000]
    print(f"torch {torch.__version__}, CPU, seconds (best of 3; of 1 at 100,000 nodes)\n")
    measure("wide", wide_graph, sizes)
    measure("deep", deep_graph, sizes)


if __name__ == "__main__":
    main()
