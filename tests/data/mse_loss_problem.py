"""Test problem: the mean squared difference of two tensors, a reduction of every element to one number.

Inductor writes one reduction over every element; under ``triton.cooperative_reductions`` it splits that
long reduction across programs that combine their partial sums (a cooperative reduction).
"""

import torch
from torch import nn

rows = 256
cols = 4096


class Model(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.rand(rows, cols), torch.rand(rows, cols)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"rows": 8, "cols": 64}
