"""The mean over dim 1 of a (batch, dim1, dim2) tensor: a reduction across rows, not along them."""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: torch.mean over ``dim``, which is removed from the output."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


batch_size = 128
dim1 = 4096
dim2 = 4095

# Tiny version for Triton's CPU interpreter: a reduced length and a row length that both end in
# partial blocks.
SMALL_SHAPES = {"batch_size": 3, "dim1": 37, "dim2": 150}


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [1]
