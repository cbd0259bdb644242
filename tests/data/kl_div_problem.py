"""Test problem: the Kullback-Leibler divergence of two distributions, two logs an element.

Inductor's kernels call ``tl_math.log`` twice an element; on a GPU those precise logs, not the bytes,
bound its time, which is what the optimiser's ``math`` knob (libdevice's fast logs) is for.
"""

import torch
from torch import nn

rows = 512
cols = 4096


class Model(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction="batchmean")


def get_inputs():
    return [torch.rand(rows, cols).softmax(dim=-1), torch.rand(rows, cols).softmax(dim=-1)]


def get_init_inputs():
    return []


SMALL_SHAPES = {"rows": 8, "cols": 64}
