"""Tests for watch.py: which writes WatchWrites counts, with grad mode, and device mixes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from autograd_pitfalls import CountedWrite, WatchWrites


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


def test_a_cpu_operand_next_to_a_meta_tensor_is_noted():
    w = nn.Parameter(torch.zeros(2, device="meta"))
    with WatchWrites(w) as watch, torch.no_grad():
        w += torch.ones(2)  # meta lets it pass; a GPU would raise
    assert watch.mixed and w.device.type == "meta"
    assert watch.last_write_seen()  # no values on meta: one counted write is enough


def test_copies_and_cpu_scalars_are_not_device_mixes():
    w = nn.Parameter(torch.zeros(2, device="meta"))
    with WatchWrites(w) as watch, torch.no_grad():
        w.copy_(torch.ones(2))  # a copy across devices: fine on a GPU too
        w[0] = torch.tensor(3.0)  # index assignment
        w.mul_(torch.tensor(2.0))  # a 0-dim CPU tensor: fine on a GPU too
    assert watch.mixed == []
    on_cpu = nn.Parameter(torch.zeros(2))
    with WatchWrites(on_cpu) as watch, torch.no_grad():
        on_cpu += torch.ones(2)
    assert watch.mixed == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_the_noted_mixes_raise_and_the_others_run():
    w = nn.Parameter(torch.zeros(2, device="cuda"))
    with WatchWrites(w) as watch, torch.no_grad():
        w.copy_(torch.ones(2))
        w[0] = torch.tensor(3.0)
        w.mul_(torch.tensor(2.0))
        assert watch.mixed == []
        with pytest.raises(RuntimeError, match="same device"):
            w += torch.ones(2)
    assert watch.mixed
