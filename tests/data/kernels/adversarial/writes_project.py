"""Cheat: at import, writes into the project's folder (where trace folders and the harness's own
source live), e.g. to plant a result or rewrite a checker for later runs.

Caught where Landlock is available: the kernel's process may write only its own job folder and caches,
so the write fails and so does the import (compile_failed: PermissionError).
"""

import os

import torch

_here = os.path.dirname(os.path.abspath(__file__))
_target = os.path.join(_here, '_planted_by_writes_project.txt')
with open(_target, 'w') as f:
    f.write('written by a kernel under test\n')


def kernel_function(x, eps=1e-5):
    return torch.empty_like(x)
