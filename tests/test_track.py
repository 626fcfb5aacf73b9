"""Tests for track.py: which writes track_inplace() records, with which version and line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from autograd_pitfalls import InplaceLog, track_inplace
from autograd_pitfalls.checks import devices
from autograd_pitfalls.track import latest_log

DEVICES = pytest.mark.parametrize("device", devices(), ids=str)
SOURCE = Path(__file__).read_text(encoding="utf-8").splitlines()


def line_of(marker: str) -> int:
    """The line of this file that ends with the comment ``# <marker>``."""
    [number] = [n for n, line in enumerate(SOURCE, start=1) if line.endswith(f"# {marker}")]
    return number


@DEVICES
def test_track_inplace_records_op_line_and_version(device: torch.device) -> None:
    x = torch.zeros(3, device=device)
    with track_inplace() as log:
        x.add_(1)  # add_
        x[1:] = 0  # slice-scalar
        x[0] = torch.tensor(5.0, device=device)  # index-tensor
        x[torch.tensor([0, 2], device=device)] = torch.ones(2, device=device)  # advanced
        torch.mul(torch.ones(2, device=device), 2, out=x[:2])  # out
    assert [(w.op, w.lineno, w.version) for w in log.writes] == [
        ("add_", line_of("add_"), 1),
        ("fill_", line_of("slice-scalar"), 2),
        ("copy_", line_of("index-tensor"), 3),
        ("index_put_", line_of("advanced"), 4),
        ("mul (out=)", line_of("out"), 5),
    ]
    assert x._version == 5  # the recorded versions are the real ones
    assert {w.filename for w in log.writes} == {__file__}
    assert log.writes[0].location == f"{__file__}:{line_of('add_')}"
    assert log.writes[0].code == "x.add_(1)  # add_"
    assert log.writes[1].shape == (2,)  # the view x[1:] was written
    assert log.writes[2].shape == ()  # x[0] is a 0-d view of x


@DEVICES
def test_track_inplace_sees_writes_inside_nn_modules(device: torch.device) -> None:
    with track_inplace() as log:
        embedding = nn.Embedding(4, 3, max_norm=1.0, device=device)  # init
        embedding(torch.tensor([1, 2], device=device))  # renorm
    assert [(w.op, w.lineno, w.version) for w in log.writes] == [
        ("normal_", line_of("init"), 1),  # nn.init draws the weight in place
        ("embedding_renorm_", line_of("renorm"), 2),
    ]
    assert embedding.weight._version == 2


@DEVICES
def test_track_inplace_find_matches_views_of_the_same_memory(device: torch.device) -> None:
    d = torch.ones(2, 2, device=device)
    row = d[0]
    with track_inplace() as log:
        d[:] = 0  # fill
    write = log.find(row, 1)  # a view shares its base's memory and version counter
    assert write is not None and write.lineno == line_of("fill")
    assert log.find(row, 2) is None
    assert log.find(torch.ones(2, device=device), 1) is None


def test_track_inplace_never_matches_new_tensor_at_a_freed_address() -> None:
    with track_inplace() as log:
        for _ in range(50):
            temporary = torch.zeros(16)
            temporary.add_(1)
            del temporary
    # The allocator reuses freed memory, but the log's weak references keep each storage
    # object's address from being handed out again while the log lives.
    fresh = [torch.zeros(16) for _ in range(50)]
    assert all(log.find(tensor, 1) is None for tensor in fresh)


def test_track_inplace_sees_data_writes_but_version_does_not_move() -> None:
    x = torch.zeros(2, requires_grad=True)
    with track_inplace() as log:
        x.data.add_(1)  # the pitfall: hidden from autograd
    assert x._version == 0  # so backward() and diagnose cannot connect this write to x
    assert [w.op for w in log.writes] == ["add_"]


def test_track_inplace_changes_no_result_and_no_version() -> None:
    def compute() -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(0)
        w = torch.randn(3, requires_grad=True)
        y = (w * 2).sigmoid()
        y.detach().mul_(3)
        return y, w

    plain, _ = compute()
    with track_inplace():
        tracked, _ = compute()
    assert torch.equal(plain, tracked)
    assert plain._version == tracked._version == 1


def test_track_inplace_yields_its_log_and_is_the_latest() -> None:
    with track_inplace() as first:
        pass
    assert latest_log() is first
    with track_inplace() as second:
        torch.zeros(1).add_(1)
    assert latest_log() is second and isinstance(second, InplaceLog)
    assert first.writes == [] and len(second.writes) == 1


def test_track_inplace_nested_blocks_both_record() -> None:
    x = torch.zeros(1)
    with track_inplace() as outer:
        with track_inplace() as inner:
            x.add_(1)
        x.add_(1)
    assert [w.version for w in outer.writes] == [1, 2]
    assert [w.version for w in inner.writes] == [1]


def test_track_inplace_forgets_freed_memory_and_old_writes() -> None:
    kept = torch.zeros(1)
    with track_inplace() as log:
        for _ in range(3000):
            torch.zeros(1).add_(1)  # a temporary, freed at once
        for _ in range(100):
            kept.add_(1)
    assert len(log.writes) < 2100  # freed storages are dropped as the log grows
    assert [w.version for w in log.writes if log.find(kept, w.version) is w][-1] == 100
    assert log.find(kept, 100 - 64) is None  # only the latest 64 writes per tensor are kept


def test_track_inplace_reads_the_real_version_bump() -> None:
    x = torch.zeros(3)
    with track_inplace() as log:
        with torch.no_grad():
            x.add_(1)  # still bumps the version
        x.resize_(3)  # writes without bumping: autograd cannot see it, nor can we
        x.unsqueeze_(0)  # changes only metadata, and bumps
    assert [(w.op, w.version_before, w.version) for w in log.writes] == [
        ("add_", 0, 1),
        ("unsqueeze_", 1, 2),
    ]
    assert x._version == 2


@DEVICES
def test_track_inplace_log_is_complete_inside_the_block(device: torch.device) -> None:
    with track_inplace() as log:
        d = torch.ones(2, device=device)
        d[:] = 0  # last
        assert [(w.lineno, w.version) for w in log.writes] == [(line_of("last"), 1)]


def test_track_inplace_ignores_inference_tensors() -> None:
    with torch.inference_mode():
        x = torch.zeros(2)
    with track_inplace() as log, torch.inference_mode():
        x.add_(1)  # inference tensors have no version counter
    assert log.writes == []
