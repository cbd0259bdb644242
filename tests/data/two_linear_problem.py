"""Test problem: two linear layers with a relu between them. Both layers have a ``weight`` and a ``bias``:
binding hands the first layer's by those names, the second's only by their qualified names
(``fc2_weight``, ``fc2_bias``)."""

import torch
from torch import nn

batch = 16
features = 64
hidden = 96
out_features = 32


class Model(nn.Module):
    def __init__(self, features: int, hidden: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.rand(batch, features) * 2 - 1]


def get_init_inputs():
    return [features, hidden, out_features]


SMALL_SHAPES = {"batch": 16, "features": 64, "hidden": 96, "out_features": 32}
