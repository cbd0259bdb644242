"""Run-time check that a kernel's compute happens in Triton, and poisoning of the memory it allocates.

While ``kernel_function`` runs, a TorchDispatchMode sees every PyTorch operator it calls (Triton
launches do not pass through PyTorch's dispatcher). Operators on the allow-list below (allocation,
initialisation, views, layout and dtype copies, metadata) are fine; any other is recorded as PyTorch
compute and fails verification. Fresh ``empty*`` allocations are filled with 0xFF bytes (a NaN
pattern no arithmetic produces), so output elements the kernel never wrote can be counted afterwards.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

POISON_BYTE = 0xFF

# Allocations whose contents are undefined: these are poisoned.
UNINITIALISED_ALLOCATIONS = frozenset(
    {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided"}
)

ALLOWED_OPS = UNINITIALISED_ALLOCATIONS | frozenset(
    {
        # explicit initialisation (zeros for atomics, constants)
        "aten::zeros", "aten::zeros_like", "aten::new_zeros", "aten::ones", "aten::ones_like",
        "aten::new_ones", "aten::full", "aten::full_like", "aten::new_full", "aten::fill_", "aten::zero_",
        "aten::scalar_tensor", "aten::lift_fresh", "aten::lift_fresh_copy", "aten::resize_", "aten::set_",
        # views
        "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided",
        "aten::expand", "aten::expand_as", "aten::permute", "aten::transpose", "aten::t", "aten::squeeze",
        "aten::unsqueeze", "aten::select", "aten::slice", "aten::narrow", "aten::unbind", "aten::split",
        "aten::split_with_sizes", "aten::chunk", "aten::alias", "aten::detach", "aten::view_as",
        "aten::unflatten", "aten::movedim", "aten::diagonal", "aten::unfold", "aten::view_as_real",
        "aten::view_as_complex",
        # layout and dtype copies, copies into outputs
        "aten::clone", "aten::contiguous", "aten::_to_copy", "aten::to", "aten::copy_", "aten::_copy_from",
        "aten::_copy_from_and_resize",
        # metadata and scalars
        "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset", "aten::size",
        "aten::stride", "aten::is_contiguous", "aten::_local_scalar_dense", "aten::is_same_size",
        "aten::record_stream",
    }
)  # fmt: skip


class TorchComputeGuard(TorchDispatchMode):
    """Records PyTorch operators outside the allow-list and poisons fresh uninitialised allocations."""

    def __init__(self) -> None:
        super().__init__()
        self.forbidden: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func._schema.name
        if name in UNINITIALISED_ALLOCATIONS:
            if isinstance(out, torch.Tensor):
                poison_(out)
        elif name not in ALLOWED_OPS:
            self.forbidden[name] += 1
        return out

    def describe_forbidden(self) -> str:
        return ", ".join(f"{op} x{n}" for op, n in self.forbidden.most_common())


def poison_(t: torch.Tensor) -> None:
    """Fill the whole storage behind ``t`` with POISON_BYTE (works for any strides)."""
    storage = t.untyped_storage()
    if storage.nbytes():
        raw = torch.empty(0, dtype=torch.uint8, device=t.device)
        raw.set_(storage)
        raw.fill_(POISON_BYTE)


def as_bits(t: torch.Tensor) -> torch.Tensor:
    """The same memory as integers of the same width: NaN == NaN, -0.0 != 0.0, poison recognisable."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def unwritten_mask(t: torch.Tensor) -> torch.Tensor:
    """True where every byte of an element still holds the poison pattern (floating outputs only)."""
    bits = as_bits(t)
    return bits == (POISON_BYTE if bits.dtype is torch.uint8 else -1)
