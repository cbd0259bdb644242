"""Test problem: a linear layer, GELU, then a softmax over its outputs (KernelBench level 2's
Matmul_GELU_Softmax at larger sizes). Inductor writes a matmul template with the bias and GELU as its
epilogue, then a row reduction for the softmax; on an H200 ``triton.multi_kernel=1`` made it 1.09x faster."""

import torch
from torch import nn

batch_size = 4096
in_features = 4096
out_features = 4096


class Model(nn.Module):
    def __init__(self, in_features: int = in_features, out_features: int = out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.nn.functional.gelu(self.linear(x)), dim=1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]


SMALL_SHAPES = {"batch_size": 8, "in_features": 32, "out_features": 48}
