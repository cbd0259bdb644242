"""Where PyTorch's caching allocator keeps large blocks whole, in a verification's two processes.

A verification's memory peak sets how many share a GPU: places are budgeted by what a job reserves, not
what it uses. By default the allocator cuts any request from any free block. So a reference's 100 MB
intermediate is cut from a freed multi-GB block, the next multi-GB tensor no longer fits there, and the
job reserves GBs it never uses. Keeping blocks of ``WHOLE_BLOCKS_MB`` or more whole avoids that, but a
whole block only serves a request of about its size: a bf16 copy cannot take a freed fp32 block.

- The runner keeps large blocks whole for good (``keep_large_blocks_whole``): its outputs and kept copies
  are all of one size.
- The judge keeps them whole only while a model computes a reference (``large_blocks_whole``): its
  copies and snapshots of other sizes may still be cut from the freed blocks.

Measured on an H100: docs/gpu-runs/2026-11-26-h100-verification-memory. A user's own split size
(``PYTORCH_ALLOC_CONF`` or ``PYTORCH_CUDA_ALLOC_CONF``) is always kept, and their other options with ours.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

WHOLE_BLOCKS_MB = 128
SPLIT_ANY_MB = 2**31 - 1  # PyTorch's default is no limit; this is past any block a GPU holds (older torch reads an int)
CONF_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")  # the newer name first


def _user_settings() -> str:
    return next((os.environ[name] for name in CONF_VARIABLES if os.environ.get(name)), "")


def _set_split_size(mb: int) -> None:
    """Each call sets every option anew (the ones it leaves out go back to their defaults): the user's own
    settings go with it."""
    setter = getattr(torch._C, "_accelerator_setAllocatorSettings", None) or torch.cuda.memory._set_allocator_settings
    setter(",".join(filter(None, [_user_settings(), f"max_split_size_mb:{mb}"])))


def _user_chose() -> bool:
    return "max_split_size_mb" in _user_settings()


def keep_large_blocks_whole() -> None:
    """From now on, in this process (the runner)."""
    if not _user_chose():
        _set_split_size(WHOLE_BLOCKS_MB)


@contextlib.contextmanager
def large_blocks_whole(on_gpu: bool) -> Iterator[None]:
    """While the block runs (the judge's reference), then any block may be cut again."""
    if not on_gpu or _user_chose():
        yield
        return
    _set_split_size(WHOLE_BLOCKS_MB)
    try:
        yield
    finally:
        _set_split_size(SPLIT_ANY_MB)
