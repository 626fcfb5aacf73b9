"""A Python autograd.Function shared by the graph and diagnose tests."""

from __future__ import annotations

import torch


class Scale(torch.autograd.Function):
    """u * v, saving both with ctx.save_for_backward."""

    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u * v

    @staticmethod
    def backward(ctx, grad):
        u, v = ctx.saved_tensors
        return grad * v, grad * u
