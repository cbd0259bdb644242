"""Test problem: a number, then a tensor, as forward inputs (KernelBench's matrix-scalar product passes
``A, s``; here the number comes first). Dynamo bakes the number into Inductor's kernel: no graph
argument takes it."""

import torch
from torch import nn

rows = 64
cols = 48


class Model(nn.Module):
    def forward(self, s: float, a: torch.Tensor) -> torch.Tensor:
        return a * s


def get_inputs():
    return [2.5, torch.rand(rows, cols)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"rows": 24, "cols": 20}
