"""Test problem: A @ B with K a multiple of 16, so Inductor's matmul template, at its first config
(BLOCK_K 16), leaves the K masks out of its text (EVEN_K true) and the seed must not let the tuner pick
a BLOCK_K that does not divide K."""

import torch
from torch import nn

M = 70
K = 80
N = 45


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.rand(M, K) * 2 - 1, torch.rand(K, N) * 2 - 1]


def get_init_inputs():
    return []


SMALL_SHAPES = {"M": 70, "K": 80, "N": 45}
