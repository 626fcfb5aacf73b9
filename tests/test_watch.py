"""Tests for watch.py: which writes WatchWrites counts, with grad mode, on any device."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from autograd_pitfalls import CountedWrite, WatchWrites, to_gpu


def test_a_write_under_no_grad_is_counted_with_grad_mode_off():
    w = nn.Parameter(torch.ones(2))
    with WatchWrites(w) as watch, torch.no_grad():
        w.mul_(3)
    assert watch.writes == [CountedWrite("mul_", grad_enabled=False)]
    assert watch.last_write_seen() and torch.equal(watch.seen, torch.full((2,), 3.0))


def test_a_write_with_grad_mode_on_is_counted_with_grad_mode_on():
    b = torch.ones(2, requires_grad=True) * 1  # a non-leaf: in-place writes are recorded
    with WatchWrites(b) as watch:
        b.add_(1)
    assert watch.writes == [CountedWrite("add_", grad_enabled=True)]


def test_a_data_write_after_a_counted_one_is_hidden():
    w = nn.Parameter(torch.ones(2))
    with WatchWrites(w) as watch:
        with torch.no_grad():
            w.zero_()
        w.data.fill_(5.0)
    assert w._version == 1 and len(watch.writes) == 1
    assert not watch.last_write_seen()


def test_no_write_means_nothing_seen():
    w = nn.Parameter(torch.ones(2))
    with WatchWrites(w) as watch:
        (w * 2).sum()
        w.data.add_(1)  # hidden: no counter moves
    assert watch.writes == [] and watch.seen is None and not watch.last_write_seen()


@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
def test_an_optimiser_step_writes_with_grad_mode_off(foreach: bool):
    w = nn.Parameter(torch.ones(2))
    (w**2).sum().backward()
    optimizer = torch.optim.SGD([w], lr=0.1, foreach=foreach)
    with WatchWrites(w) as watch:
        optimizer.step()
    assert len(watch.writes) == 1 and not watch.writes[0].grad_enabled, watch.writes
    assert torch.is_grad_enabled()  # step() turned it back on
    assert watch.last_write_seen() and torch.allclose(w.detach(), torch.full((2,), 0.8))


@pytest.mark.parametrize(
    "to_device",
    [
        pytest.param(to_gpu, id="gpu stand-in"),
        pytest.param(
            lambda tensor: tensor.to("cuda"),
            id="cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU"),
        ),
    ],
)
def test_writes_are_counted_and_a_device_mix_raises_as_on_cuda(to_device):
    # Device mixes are the device's to refuse (the stand-in refuses where CUDA does);
    # WatchWrites only counts the writes.
    w = nn.Parameter(to_device(torch.zeros(2, 3)))
    with WatchWrites(w) as watch, torch.no_grad():
        w.copy_(torch.ones(2, 3))  # a copy across devices: CUDA takes it
        w[torch.arange(2), torch.arange(2)] = torch.tensor(3.0)  # CPU indices, 0-dim value
        rows = w.detach()[torch.arange(1)]  # a read at a CPU index: CUDA takes it
        with pytest.raises(RuntimeError, match="same device"):
            w += torch.ones(2, 3)  # a CPU tensor of six values: CUDA refuses
    assert [write.op for write in watch.writes] == ["copy_", "__setitem__"]
    assert watch.last_write_seen() and rows.device == w.device
    assert not hasattr(watch, "mixed")  # its stricter-than-CUDA twin is gone


def test_on_a_meta_tensor_a_counted_write_is_enough():
    w = nn.Parameter(torch.zeros(2, device="meta"))
    with WatchWrites(w) as watch, torch.no_grad():
        w.mul_(2)
    assert watch.last_write_seen()  # no values on meta to compare
