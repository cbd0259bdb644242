"""Test problem: cross-entropy loss over many classes, KernelBench's form (95_CrossEntropyLoss with more
classes). Inductor's code for it is a row reduction (log-sum-exp) gathered at each row's target, then a mean:
Inductor options change its shape (an online softmax or not; a persistent or a looped reduction, which its
multi-kernel picks at run time), and on an H200 they changed its time by 1.6x."""

import torch
from torch import nn

batch_size = 32768
num_classes = 4096


class Model(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(predictions, targets)


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []


# Tiny version for Triton's CPU interpreter: rows longer than one block of the row loop, a partial last one.
SMALL_SHAPES = {"batch_size": 6, "num_classes": 300}
