"""3-D max pooling of an (N, C, D, H, W) tensor with a cubic window that is strided, padded
(padding never wins the max) and dilated.
"""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: nn.MaxPool3d with the given window, stride, padding and dilation."""

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0, dilation: int = 1):
        super().__init__()
        self.maxpool = nn.MaxPool3d(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 16
channels = 32
dim1 = 128
dim2 = 128
dim3 = 128
kernel_size = 3
stride = 2
padding = 1
dilation = 3

# Tiny version for Triton's CPU interpreter: unequal, odd spatial sizes (outputs 5 x 5 x 6)
# so windows reach into the padding on both sides, and 2 * 3 * 150 = 900 outputs, which
# leave the last of the 4 blocks of the flat output range partly empty.
SMALL_SHAPES = {"batch_size": 2, "channels": 3, "dim1": 13, "dim2": 14, "dim3": 15}


def get_inputs():
    x = torch.rand(batch_size, channels, dim1, dim2, dim3)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
