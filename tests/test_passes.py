"""CountForwardProducts: forward passes counted by what is computed, on any object."""

from __future__ import annotations

import copy

import torch
from torch import nn

from autograd_pitfalls import CountForwardProducts


def test_one_pass_and_two_gradients_count_one():
    layer = nn.Linear(3, 2)
    with CountForwardProducts(layer.weight) as passes:
        h = layer(torch.randn(4, 3))
        torch.autograd.grad(h.sum(), layer.weight, retain_graph=True)
        torch.autograd.grad((h**2).sum(), layer.weight)
    assert passes.count == 1  # the products of backward are gradients, not passes


def test_a_pass_on_a_copy_of_the_layer_counts_too():
    layer = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    with CountForwardProducts(layer.weight) as passes:
        layer(x).sum().backward()
        copy.deepcopy(layer)(x)
    assert passes.count == 2


def test_a_pass_spelled_out_by_hand_counts_and_other_products_do_not():
    weight = nn.Parameter(torch.randn(3, 2))
    x = torch.randn(5, 3)
    with CountForwardProducts(weight) as passes:
        torch.tanh(x @ weight)
        torch.tanh(torch.randn(2, 5, 3) @ weight)  # batched: matmul folds it into one mm
        x @ torch.randn(3, 2)  # another weight
    assert passes.count == 2


def test_a_weight_changed_after_the_start_is_not_the_weight_counted():
    # The values are taken when the block starts: an answer that changes the weight first
    # computes with other values, which the exercise's own checks catch.
    weight = nn.Parameter(torch.ones(2, 2))
    with CountForwardProducts(weight) as passes:
        with torch.no_grad():
            weight.mul_(2)
        torch.ones(1, 2) @ weight
    assert passes.count == 0
