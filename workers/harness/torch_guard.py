"""Run-time check that a kernel's compute happens in Triton, and poisoning of the memory it allocates.

While ``kernel_function`` runs, a TorchDispatchMode sees every PyTorch operator it calls (Triton
launches do not pass through PyTorch's dispatcher), and PyTorch's operator profiler records them a
second time, below the mode stack. Operators on the allow-list below (allocation, initialisation, views,
layout and dtype copies, metadata) are fine; any other is recorded as PyTorch compute and fails
verification. Copies from a device to the host, and handing tensor data to numpy, Python lists or
DLPack, are recorded as host-side reads. Fresh ``empty*`` allocations are filled with 0xFF bytes (a NaN
pattern no arithmetic produces), so output elements the kernel never wrote can be counted afterwards.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

import torch
from torch._C import _get_dispatch_stack_at, _len_torch_dispatch_stack, _pop_torch_dispatch_stack
from torch.autograd import DeviceType
from torch.autograd.profiler import profile
from torch.utils._python_dispatch import TorchDispatchMode

from workers.harness.integrity import ThreadStarts, install_thread_tripwire

POISON_BYTE = 0xFF

# Allocations whose contents are undefined: these are poisoned.
UNINITIALISED_ALLOCATIONS = frozenset(
    {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided",
     "aten::empty_permuted"}
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
        # composites the profiler records under their own name (the guard sees what they call): reads
        # of a scalar, views and conversions
        "aten::item", "aten::resolve_conj", "aten::resolve_neg", "aten::flatten", "aten::type_as",
        "aten::reshape_as", "aten::broadcast_to", "aten::numpy_T", "aten::mT",
    }
)  # fmt: skip


class TorchComputeGuard(TorchDispatchMode):
    """Records PyTorch operators outside the allow-list, device-to-host copies (data read on the host),
    and poisons fresh uninitialised allocations."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here is compiled; the wrapper would import torch._dynamo (1-2 s) at first use

    def __init__(self) -> None:
        super().__init__()
        self.forbidden: Counter[str] = Counter()
        self.host_reads: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func._schema.name
        if name in UNINITIALISED_ALLOCATIONS:
            if isinstance(out, torch.Tensor):
                poison_(out)
        elif name not in ALLOWED_OPS:
            self.forbidden[name] += 1
        elif name in COPY_OPS and _device_to_host(args, out):
            self.host_reads[f"{name} (device to host)"] += 1
        return out


# Versions of torch that wrap __torch_dispatch__ regardless: mark it as already wrapped.
_raw_dispatch = getattr(TorchComputeGuard.__dict__["__torch_dispatch__"], "__wrapped__", None)
if _raw_dispatch is not None:
    _raw_dispatch.__dynamo_disable = _raw_dispatch

COPY_OPS = frozenset({"aten::_to_copy", "aten::to", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"})


def _device_to_host(args: Any, out: Any) -> bool:
    """A copy whose source is on an accelerator and whose result is in host memory."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    src = tensors[1] if len(tensors) > 1 else (tensors[0] if tensors else None)  # copy_(dst, src): src second
    dst = out if isinstance(out, torch.Tensor) else None
    return src is not None and dst is not None and src.device.type != "cpu" and dst.device.type == "cpu"


def describe(counts: Counter[str]) -> str:
    return ", ".join(f"{op} x{n}" for op, n in counts.most_common())


# ------------------------------------------------------------------------------------- host tripwires

# Tensor methods that hand a tensor's data to the host side (numpy, Python lists, DLPack consumers).
# Wrapped once, before any kernel is imported; they record into the guard that is active
# while kernel_function runs and do nothing otherwise. On a GPU a device tensor must first be copied to
# the host, which the guard sees as a device-to-host copy; on the CPU (Triton's interpreter) these are
# the only sign of compute done in numpy or plain Python.
HOST_METHODS = ("numpy", "__array__", "tolist", "__dlpack__")
_active: list[TorchComputeGuard] = []
_installed = False


def install_tripwires() -> None:
    """Wrap the host-data methods of torch.Tensor and the thread starters (idempotent)."""
    global _installed
    install_thread_tripwire()
    if _installed:
        return
    _installed = True
    for method in HOST_METHODS:
        original = getattr(torch.Tensor, method, None)
        if original is not None:
            setattr(torch.Tensor, method, _host_tripwire(f"Tensor.{method}", original))


def _host_tripwire(label: str, original: Any) -> Any:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for guard in _active:
            guard.host_reads[label] += 1
        return original(*args, **kwargs)

    return wrapper


# ---------------------------------------------------------------------------------- observed calls

MARKER_VALUE = 1234.5  # torch.scalar_tensor(MARKER_VALUE) brackets the call in the operator record


class ObservedCall:
    """Everything that watches one call of kernel_function, entered just around it.

    Two independent observers of PyTorch operators: the TorchDispatchMode guard (which also poisons
    allocations), and PyTorch's operator profiler (RecordFunction, below the Python dispatch-mode
    stack), so popping or disabling the mode does not hide compute. Marker operators before and after
    the call must both be recorded, or recording was switched off. After the call, ``forbidden``,
    ``host_reads``, ``threads_started`` and ``tampering`` say what was seen.
    """

    def __init__(self) -> None:
        self.guard = TorchComputeGuard()
        self.forbidden: Counter[str] = Counter()
        self.tampering: list[str] = []
        self._profile: Any = None
        self._threads = ThreadStarts()

    @property
    def host_reads(self) -> Counter[str]:
        return self.guard.host_reads

    @property
    def threads_started(self) -> int:
        return self._threads.n

    def __enter__(self) -> ObservedCall:
        install_tripwires()
        self._threads.__enter__()
        self._profile = profile(use_device=None, use_kineto=False)
        self._profile.__enter__()
        _marker()
        self.guard.__enter__()
        _active.append(self.guard)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.guard in _active:
            _active.remove(self.guard)
        stack = [_get_dispatch_stack_at(i) for i in range(_len_torch_dispatch_stack())]
        if stack and stack[-1] is self.guard:
            try:
                self.guard.__exit__(*exc)
            except Exception as e:  # noqa: BLE001 - its state was altered from inside the call
                self.tampering.append(f"our operator guard was broken inside kernel_function ({type(e).__name__})")
                while _len_torch_dispatch_stack() > len(stack) - 1:
                    _pop_torch_dispatch_stack()
        else:
            self.tampering.append("the PyTorch dispatch-mode stack was changed inside kernel_function "
                                  "(our operator guard was popped or covered)")  # fmt: skip
            while self.guard in stack:  # put the stack back as it was before the call
                stack.pop()
                _pop_torch_dispatch_stack()
        _marker()
        try:
            self._profile.__exit__(None, None, None)
            events = list(self._profile.function_events)
        except Exception as e:  # noqa: BLE001 - a kernel that stopped the profiler
            self.tampering.append(f"PyTorch's operator profiler failed to stop ({type(e).__name__})")
            events = []
        # Host-side operators only ("namespace::name"): on a GPU the profiler also lists CUDA runtime and
        # driver calls (cuLaunchKernelEx for every Triton launch, cudaStreamCreate...) and may list device
        # kernels; none of them is a PyTorch operator called by the kernel.
        top = [e.name for e in events
               if e.cpu_parent is None and "::" in e.name and e.device_type == DeviceType.CPU]  # fmt: skip
        if len(top) < 2 or top[0] != "aten::scalar_tensor" or top[-1] != "aten::scalar_tensor":
            self.tampering.append("PyTorch's operator profiler was stopped or switched off inside kernel_function")
        self._threads.__exit__()
        self.forbidden = Counter(self.guard.forbidden)
        seen_by_profiler = Counter(n for n in top[1:-1] if n not in ALLOWED_OPS)
        for name, n in seen_by_profiler.items():  # ops the guard did not see (it was popped or disabled)
            self.forbidden[name] = max(self.forbidden[name], n)


def _marker() -> None:
    torch.scalar_tensor(MARKER_VALUE)


def warm_up() -> None:
    """Install the tripwires and run the observers once on a tiny CPU call, so that what they set up
    lazily happens before a snapshot of the harness is taken, and the first real call pays no start-up
    cost."""
    install_tripwires()
    with torch.no_grad(), ObservedCall():
        torch.empty(4).zero_()


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
