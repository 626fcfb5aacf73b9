"""Tests for walk.py (the analysis) and graph.py (the drawing).

Snapshots live in tests/snapshots/<name>.dot; rewrite them with UPDATE_SNAPSHOTS=1.
"""

from __future__ import annotations

import os
from pathlib import Path

import graphviz
import pytest
import torch
from custom_functions import Scale

from autograd_pitfalls import InplaceLog, draw, to_dot, track_inplace
from autograd_pitfalls.checks import devices
from autograd_pitfalls.graph import GraphDrawing
from autograd_pitfalls.walk import walk_graph

SNAPSHOTS = Path(__file__).parent / "snapshots"
TORCHVIZ_WARNING = "ignore:distutils Version classes are deprecated:DeprecationWarning"
DEVICES = pytest.mark.parametrize("device", devices(), ids=str)

Graph = tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]


# Graph builders: each returns (outputs, names). The names dict keeps every tensor alive.


def product_sum(device: torch.device) -> Graph:
    """y = (a * b).sum(): a healthy graph."""
    a = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = torch.tensor([3.0, 4.0], device=device, requires_grad=True)
    y = (a * b).sum()
    return (y,), {"a": a, "b": b, "y": y}


def stale_matmul(device: torch.device) -> Graph:
    """The seed example: d is saved by f's MvBackward0, then zeroed in place."""
    x = torch.tensor([[1.0, 2.0]], device=device)
    w1 = torch.tensor([[2.0], [1.0]], device=device, requires_grad=True)
    w2 = torch.tensor([3.0], device=device, requires_grad=True)
    d = x @ w1
    f = d @ w2
    d[:] = 0  # the write
    return (f,), {"x": x, "w1": w1, "w2": w2, "d": d, "f": f}


def freed_after_backward(device: torch.device) -> Graph:
    """y = (a * b).sum() after y.backward(): the saved tensors are freed."""
    (y,), names = product_sum(device)
    y.backward()
    return (y,), names


def graph_cut(device: torch.device) -> Graph:
    """Rebuilding a tensor with torch.tensor([...]) cuts it off from a's graph."""
    a = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    doubled = a * 2
    rebuilt = torch.tensor([doubled[0].item(), doubled[1].item()], device=device)
    loss = (rebuilt * 3).sum()
    return (doubled, loss), {"a": a, "doubled": doubled, "loss": loss}


def sigmoid_zeroed(device: torch.device) -> Graph:
    """sigmoid saves its result; zeroing it through .detach() makes it stale."""
    z = torch.tensor([0.5], device=device, requires_grad=True)
    s = torch.sigmoid(z)
    s.detach().zero_()  # shares s's version counter: autograd sees this write
    return (s,), {"z": z, "s": s}


def custom_function_stale(device: torch.device) -> Graph:
    """A Python Function whose second saved tensor is then modified in place."""
    u = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    v = torch.tensor([3.0, 4.0], device=device)  # no grad needed: it may be written in place
    out = Scale.apply(u, v)
    v.add_(1)
    return (out,), {"u": u, "v": v, "out": out}


BUILDERS = {
    builder.__name__: builder
    for builder in (
        product_sum,
        stale_matmul,
        freed_after_backward,
        graph_cut,
        sigmoid_zeroed,
        custom_function_stale,
    )
}


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.dot"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path}: run with UPDATE_SNAPSHOTS=1 to write it"
    assert text == path.read_text(encoding="utf-8")


# Snapshots


@DEVICES
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_to_dot_matches_snapshot(name: str, device: torch.device) -> None:
    outputs, names = BUILDERS[name](device)
    check_snapshot(name, to_dot(*outputs, names=names))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_to_dot_is_deterministic_and_has_no_addresses(name: str) -> None:
    first_outputs, first_names = BUILDERS[name](torch.device("cpu"))
    second_outputs, second_names = BUILDERS[name](torch.device("cpu"))
    first = to_dot(*first_outputs, names=first_names)
    assert first == to_dot(*second_outputs, names=second_names)
    assert first == to_dot(*first_outputs, names=first_names)
    assert "0x" not in first


# Where torchviz crashes


@pytest.mark.filterwarnings(TORCHVIZ_WARNING)
def test_to_dot_draws_stale_graph_that_torchviz_crashes_on() -> None:
    torchviz = pytest.importorskip("torchviz")
    (f,), names = stale_matmul(torch.device("cpu"))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torchviz.make_dot(f, show_saved=True)
    dot = to_dot(f, names=names)
    assert "saved at v0, now v1" in dot
    assert "modified in place" in dot
    assert "fontcolor=red" in dot


@pytest.mark.filterwarnings(TORCHVIZ_WARNING)
def test_to_dot_draws_freed_graph_that_torchviz_crashes_on() -> None:
    torchviz = pytest.importorskip("torchviz")
    (y,), names = freed_after_backward(torch.device("cpu"))
    with pytest.raises(RuntimeError, match="second time"):
        torchviz.make_dot(y, show_saved=True)
    dot = to_dot(y, names=names)
    assert dot.count("freed by backward()") == 2  # MulBackward0's self and other


# walk_graph


@DEVICES
def test_walk_graph_finds_stale_saved_tensor(device: torch.device) -> None:
    (f,), names = stale_matmul(device)
    graph = walk_graph(f, names=names)
    [stale] = graph.stale()
    assert graph.node(stale.node_id).name == "MvBackward0"
    assert (stale.attribute, stale.name) == ("self", "d")
    assert (stale.saved_version, stale.current_version) == (0, 1)
    assert stale.shape == (1, 1)
    assert graph.freed() == []


@DEVICES
def test_walk_graph_finds_stale_result_of_sigmoid(device: torch.device) -> None:
    (s,), names = sigmoid_zeroed(device)
    [stale] = walk_graph(s, names=names).stale()
    assert (stale.attribute, stale.name) == ("result", "s")
    assert (stale.saved_version, stale.current_version) == (0, 1)


@DEVICES
def test_walk_graph_detects_freed_saved_tensors(device: torch.device) -> None:
    (y,), names = freed_after_backward(device)
    graph = walk_graph(y, names=names)
    assert [saved.attribute for saved in graph.freed()] == ["other", "self"]
    assert all(saved.shape is None for saved in graph.freed())
    assert graph.stale() == []


def test_walk_graph_reports_healthy_graph_in_traversal_order() -> None:
    (y,), names = product_sum(torch.device("cpu"))
    graph = walk_graph(y, names=names)
    assert [output.id for output in graph.outputs] == ["n0"]
    assert [(node.id, node.name, node.kind) for node in graph.nodes] == [
        ("n1", "SumBackward0", "op"),
        ("n2", "MulBackward0", "op"),
        ("n3", "AccumulateGrad", "accumulate-grad"),
        ("n4", "AccumulateGrad", "accumulate-grad"),
    ]
    assert graph.node("n2").edges == ("n3", "n4")
    assert [(leaf.name, leaf.node_id) for leaf in graph.leaves] == [("a", "n3"), ("b", "n4")]
    assert [(saved.attribute, saved.name, saved.state) for saved in graph.saved] == [
        ("other", "b", "ok"),
        ("self", "a", "ok"),
    ]


def test_walk_graph_marks_output_without_grad_fn_as_cut() -> None:
    (doubled, loss), names = graph_cut(torch.device("cpu"))
    graph = walk_graph(doubled, loss, names=names)
    assert [(output.name, output.is_cut) for output in graph.outputs] == [
        ("doubled", False),
        ("loss", True),
    ]
    assert graph.outputs[1].grad_fn is None


def test_walk_graph_checks_saved_list_of_custom_function() -> None:
    (out,), names = custom_function_stale(torch.device("cpu"))
    graph = walk_graph(out, names=names)
    scale = graph.nodes[0]
    assert (scale.name, scale.kind) == ("ScaleBackward", "custom")
    assert [(s.attribute, s.name, s.state) for s in scale.saved] == [
        ("tensors[0]", "u", "ok"),
        ("tensors[1]", "v", "stale"),
    ]
    assert (scale.saved[1].saved_version, scale.saved[1].current_version) == (0, 1)


def test_walk_graph_reports_freed_custom_function() -> None:
    u = torch.tensor([1.0, 2.0], requires_grad=True)
    out = Scale.apply(u, u)
    out.sum().backward()
    [freed] = walk_graph(out).saved
    assert (freed.attribute, freed.state) == ("tensors", "freed")


def test_walk_graph_walks_deep_chain_without_recursion() -> None:
    a = torch.tensor([1.0], requires_grad=True)
    x = a
    for _ in range(20_000):
        x = x * 1.0
    graph = walk_graph(x)
    assert len(graph.nodes) == 20_001  # 20,000 MulBackward0 and one AccumulateGrad
    assert graph.nodes[-1].leaf is not None
    assert to_dot(x).count("MulBackward0") == 20_000


def test_walk_graph_names_a_leaf_only_after_itself() -> None:
    w = torch.ones(2, requires_grad=True)
    twin = w.detach().requires_grad_()  # the same memory, but another leaf
    [leaf] = walk_graph((twin * 2).sum(), names={"w": w}).leaves
    assert leaf.name is None
    [leaf] = walk_graph((w * 2).sum(), names={"w_alias": w.detach(), "w": w}).leaves
    assert leaf.name == "w"  # identity first


@DEVICES
def test_walk_graph_finds_the_write_recorded_by_track_inplace(device: torch.device) -> None:
    with track_inplace() as log:
        (f,), names = stale_matmul(device)
    [stale] = walk_graph(f, names=names, writes=log).stale()
    assert stale.write is not None
    assert (stale.write.op, stale.write.version) == ("fill_", 1)
    assert stale.write.code == "d[:] = 0  # the write"
    assert walk_graph(f, names=names).stale()[0].write is None


def test_walk_graph_rejects_non_tensors() -> None:
    with pytest.raises(TypeError, match="expects tensors, got list"):
        walk_graph([1.0])  # type: ignore[arg-type]


# Drawing changes nothing


@DEVICES
def test_draw_changes_no_version_and_backward_still_works(device: torch.device) -> None:
    (y,), names = product_sum(device)
    hidden = names["a"] * names["b"]  # also a non-leaf, to check its version too
    tensors = [*names.values(), hidden]
    before = [(t._version, t.requires_grad, t.is_leaf) for t in tensors]
    draw(y, hidden, names=names)
    to_dot(y, names=names)
    assert [(t._version, t.requires_grad, t.is_leaf) for t in tensors] == before
    y.backward()
    torch.testing.assert_close(names["a"].grad, torch.tensor([3.0, 4.0], device=device))
    torch.testing.assert_close(names["b"].grad, torch.tensor([1.0, 2.0], device=device))


@DEVICES
def test_draw_names_the_line_that_made_a_saved_tensor_stale(device: torch.device) -> None:
    with track_inplace():
        (f,), names = stale_matmul(device)
    line = next(
        n
        for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
        if "# the write" in text
    )
    dot = to_dot(f, names=names)  # the latest track_inplace() block's writes, by default
    assert f"modified in place by fill_\\nat test_graph.py:{line}:\\nd[:] = 0  # the write" in dot
    assert "n1 [label=MvBackward0 color=red" in dot  # the node backward() stops at
    assert "modified in place\\nat" not in to_dot(f, names=names, writes=InplaceLog())


def test_draw_keeps_only_the_saved_tensors_asked_for() -> None:
    (f,), names = stale_matmul(torch.device("cpu"))
    everything = to_dot(f, names=names)
    only_vec = to_dot(f, names=names, saved={"vec"})
    assert "n1_saved_self" in everything and "n2_saved_self" in everything
    assert "n1_saved_vec" in only_vec
    assert "n1_saved_self" not in only_vec and "n2_saved_self" not in only_vec
    # The node that saved the stale d keeps its red border: backward() still stops there.
    assert "n1 [label=MvBackward0 color=red" in only_vec
    assert "_saved_" not in to_dot(f, names=names, saved=())


def test_draw_labels_unnamed_tensors_and_leaf_outputs() -> None:
    a = torch.tensor([1.0], requires_grad=True)
    dot = to_dot(torch.exp(a), a)
    assert 'label="output\\n(1,)"' in dot
    assert 'label="leaf\\n(1,)\\nrequires_grad=True"' in dot
    assert 'label="output\\n(1,)\\nleaf: no grad_fn"' in dot


def test_draw_shows_non_default_dtype() -> None:
    a = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    assert "(1,) float64" in to_dot(a * 2, names={"a": a})


# Without the dot program


def test_draw_without_dot_program_shows_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing_dot(*args: object, **kwargs: object) -> bytes:
        raise graphviz.ExecutableNotFound(["dot", "-Kdot", "-Tsvg"])

    monkeypatch.setattr(graphviz.Digraph, "pipe", missing_dot)
    (y,), names = product_sum(torch.device("cpu"))
    drawing = draw(y, names=names)
    assert isinstance(drawing, GraphDrawing)
    bundle = drawing._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/markdown"}
    assert "the graphviz program `dot` is not installed" in bundle["text/plain"]
    assert "apt install graphviz" in bundle["text/plain"]
    assert drawing.source in bundle["text/plain"]
    assert "```dot\n" in bundle["text/markdown"]


def test_draw_with_dot_program_off_path_shows_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # graphviz's own lookup then fails for real
    (y,), names = product_sum(torch.device("cpu"))
    bundle = draw(y, names=names)._repr_mimebundle_()
    assert bundle["text/plain"].startswith("Cannot draw the graph: the graphviz program `dot`")


def test_draw_with_failing_dot_program_shows_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_dot(*args: object, **kwargs: object) -> bytes:
        raise graphviz.CalledProcessError(1, ["dot", "-Tsvg"], b"", b"syntax error")

    monkeypatch.setattr(graphviz.Digraph, "pipe", failing_dot)
    (y,), names = product_sum(torch.device("cpu"))
    bundle = draw(y, names=names)._repr_mimebundle_()
    assert "the graphviz program `dot` failed" in bundle["text/plain"]
