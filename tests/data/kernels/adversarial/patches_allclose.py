"""Cheat: at import, makes torch.allclose and torch.testing.assert_close always agree, then returns
garbage.

Caught: the harness's functions were replaced (harness_intact); and the comparison is made in another
process anyway.
"""

import torch

torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None


def kernel_function(x, eps=1e-5):
    return torch.empty_like(x)
