"""Test problem whose PyTorch forward in bf16 misses the default bf16 tolerance by about 2x: (x + 8) - 8 is x,
but for x in [1, 2) bf16 holds x + 8 only to within 1/32, while the rule allows 0.01 + 0.01 x."""

import torch
from torch import nn

rows = 16
cols = 64


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 8) - 8


def get_inputs():
    return [torch.rand(rows, cols) + 1]


def get_init_inputs():
    return []


SMALL_SHAPES = {"rows": 8, "cols": 40}
