"""Depthwise 2-D convolution: every channel of an (N, C, H, W) tensor is convolved with its
own k x k filter (groups = C, one output channel per input channel).
"""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: nn.Conv2d with groups equal to the channel count."""

    def __init__(
        self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False
    ):
        super().__init__()
        self.conv2d = nn.Conv2d(
            in_channels,
            in_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            groups=in_channels,
            bias=bias,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 16
in_channels = 64
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 0

# Tiny version for Triton's CPU interpreter: a 19 x 37 image gives a 17 x 35 output, which
# needs 2 x 2 tiles of 16 x 32 with ragged edges; 2 * 3 channel planes -> 24 programs.
SMALL_SHAPES = {"batch_size": 2, "in_channels": 3, "height": 19, "width": 37}


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, kernel_size, stride, padding]
