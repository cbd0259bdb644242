"""Matrix times a single column: C = A @ B with A of shape (M, K) and B of shape (K, 1).

The reduction dimension K is very long (about a million), so the work is dominated by
streaming A from memory once.
"""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: a plain matrix-vector product written with torch.matmul."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        # A: (M, K), B: (K, 1)  ->  (M, 1)
        return torch.matmul(A, B)


M = 256 * 8  # 2048 rows
K = 131072 * 8  # 1048576 columns

# Tiny version for Triton's CPU interpreter: a row count that is not a multiple of the
# row block and a K that leaves a partial chunk at the end of the reduction loop.
SMALL_SHAPES = {"M": 37, "K": 2500}


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]


def get_init_inputs():
    return []
