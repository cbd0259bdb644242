"""Transposed 3-D convolution with a cubic kernel, stride, padding and dilation, no bias.

Input (N, C_in, D, H, W); every output size is
(L - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + 1.
"""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: nn.ConvTranspose3d with a (k, k, k) kernel."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        bias: bool = False,
    ):
        super().__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(
            in_channels,
            out_channels,
            kernel_size=(kernel_size, kernel_size, kernel_size),
            stride=stride,
            padding=padding,
            dilation=dilation,
            bias=bias,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose3d(x)


batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = 3
depth = 16
height = 32
width = 32
stride = 2
padding = 1
dilation = 2

# Tiny version for Triton's CPU interpreter: outputs of 5 x 5 x 11 (a width that does not
# fill the width block), odd channel counts that leave output-channel lanes masked, and
# 2 * 5 * 5 = 50 output rows, one program each.
SMALL_SHAPES = {
    "batch_size": 2,
    "in_channels": 3,
    "out_channels": 5,
    "depth": 2,
    "height": 2,
    "width": 5,
}


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
