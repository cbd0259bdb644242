"""Test problem: a batched A @ B with K a multiple of 16. Inductor's bmm template branches on EVEN_K
inside the kernel (unlike its mm template, which leaves the K masks out of its text), and launches a
batch axis of the grid."""

import torch
from torch import nn

batch = 3
M = 70
K = 80
N = 45


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    return [torch.rand(batch, M, K) * 2 - 1, torch.rand(batch, K, N) * 2 - 1]


def get_init_inputs():
    return []


SMALL_SHAPES = {"batch": 3, "M": 70, "K": 80, "N": 45}
