"""Test problem: relu(x @ W^T + b), an nn.Linear. Inductor's addmm template takes the bias and the relu
as its epilogue, and the graph's arguments are the model's weight and bias besides x."""

import torch
from torch import nn

M = 64
K = 96
N = 40


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.rand(M, K) * 2 - 1]


def get_init_inputs():
    return [K, N]


SMALL_SHAPES = {"M": 64, "K": 96, "N": 40}
