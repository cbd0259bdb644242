"""Test problem: scale each column of x (rows, cols) by a learned weight (cols,). Tiny and fast."""

import torch
from torch import nn

rows = 48
cols = 80


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(cols) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


def get_inputs():
    return [torch.rand(rows, cols) * 2 - 1]


def get_init_inputs():
    return [cols]


SMALL_SHAPES = {"rows": 20, "cols": 36}
