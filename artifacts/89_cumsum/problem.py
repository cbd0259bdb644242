"""Inclusive prefix sum (cumulative sum) along dim 1 of a (batch, length) tensor with long rows."""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: torch.cumsum along ``dim``."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


batch_size = 32768
input_shape = (32768,)
dim = 1

# Tiny version for Triton's CPU interpreter: rows that take several chunks of the scan loop (so
# the running total is carried between chunks) and end in a partial one.
SMALL_SHAPES = {"batch_size": 5, "input_shape": (2500,)}


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
