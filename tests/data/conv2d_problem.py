"""Test problem: a plain 2-D convolution (no bias), the shape of Inductor's convolution template."""

import torch
from torch import nn

batch = 2
in_channels = 16
out_channels = 32
size = 18


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.rand(batch, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]


SMALL_SHAPES = {"batch": 2, "in_channels": 16, "out_channels": 32, "size": 18}
