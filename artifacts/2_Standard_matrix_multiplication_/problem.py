"""A plain matrix product C = A @ B with A of shape (M, K) and B of shape (K, N); no dimension is square."""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: torch.matmul of the two inputs."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        # A: (M, K), B: (K, N)  ->  (M, N)
        return torch.matmul(A, B)


M = 1024 * 2
K = 4096 * 2
N = 2048 * 2

# Tiny version for Triton's CPU interpreter: M and N that leave partial output tiles in both
# directions, and a K that ends the reduction loop in a partial chunk.
SMALL_SHAPES = {"M": 70, "K": 100, "N": 45}


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
