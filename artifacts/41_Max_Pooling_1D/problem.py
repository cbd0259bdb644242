"""1-D max pooling of an (N, C, L) tensor with a window that is padded (padding never wins the max)
and dilated, at stride 1.
"""

import torch
from torch import nn


class Model(nn.Module):
    """Reference: nn.MaxPool1d with the given window, stride, padding and dilation."""

    def __init__(
        self,
        kernel_size: int,
        stride: int | None = None,
        padding: int = 0,
        dilation: int = 1,
        return_indices: bool = False,
    ):
        super().__init__()
        self.maxpool = nn.MaxPool1d(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            return_indices=return_indices,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 64
features = 192
sequence_length = 65536
kernel_size = 8
stride = 1
padding = 4
dilation = 3
return_indices = False

# Tiny version for Triton's CPU interpreter: 300 positions give 287 outputs per row, so windows
# reach into the padding at both ends and the last block of each row is partly empty.
SMALL_SHAPES = {"batch_size": 2, "features": 3, "sequence_length": 300}


def get_inputs():
    x = torch.rand(batch_size, features, sequence_length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation, return_indices]
