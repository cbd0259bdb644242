"""Test problem: the last two axes of x (batch, rows, cols) swapped into a new tensor, times a learned
per-column weight. Inductor writes it as a tiled pointwise kernel over a 2-D grid (Grid2D)."""

import torch
from torch import nn

batch = 4
rows = 96
cols = 80


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(cols) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.weight).transpose(1, 2).contiguous()


def get_inputs():
    return [torch.rand(batch, rows, cols) * 2 - 1]


def get_init_inputs():
    return [cols]


SMALL_SHAPES = {"batch": 2, "rows": 37, "cols": 20}
