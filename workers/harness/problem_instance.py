"""Turning a KernelBench ``problem.py`` into a live model and inputs, inside a child process.

A problem module defines ``Model``, ``get_inputs()`` and ``get_init_inputs()``, and may define
``SMALL_SHAPES``: overrides of its module-level size constants that Triton's interpreter runs in seconds.
``get_inputs`` is called under the target device and dtype as defaults, so tensors are created directly
on the device (never made on the CPU and copied) and in the dtype under test, from a seeded generator.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import os
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

from beamsearch.records.schema import RunSpec
from workers.harness.allocator import large_blocks_whole

TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# The reference runs one precision up, so the comparison measures the candidate's error, not ours.
REFERENCE_DTYPES = {"bf16": torch.float32, "fp16": torch.float32, "fp32": torch.float64}


class ProblemLoadError(RuntimeError):
    pass


@dataclass
class ProblemInstance:
    model: torch.nn.Module
    inputs: list[Any]


def import_file(path: str | Path, module_name: str) -> ModuleType:
    """Import a Python file under a fresh module name (so two files called the same do not clash)."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


class NoKernelFunction(AttributeError):
    pass


def load_kernel_function(path: str | Path) -> Any:
    """Import a kernel file and return its ``kernel_function`` (children only: this runs its code).

    Raises whatever the import raises, or NoKernelFunction when the file defines no callable one."""
    fn = getattr(import_file(path, "beamsearch_candidate"), "kernel_function", None)
    if not callable(fn):
        raise NoKernelFunction(f"{path} defines no callable kernel_function")
    return fn


def select_device(spec: RunSpec) -> None:
    """Make the spec's GPU the current one: Triton launches, CUDA events and sleeps use the current
    device, so with ``cuda:1`` they would otherwise run on GPU 0 against tensors on GPU 1."""
    select_device_name(spec.device)


def select_device_name(name: str) -> None:
    device = torch.device(name)
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)


def load_problem_module(spec: RunSpec) -> ModuleType:
    try:
        module = import_file(spec.problem_path, "beamsearch_problem")
    except Exception as e:
        raise ProblemLoadError(f"cannot import problem {spec.problem_path}: {type(e).__name__}: {e}") from e
    for name in ("Model", "get_inputs"):
        if not hasattr(module, name):
            raise ProblemLoadError(f"problem {spec.problem_path} defines no {name}")
    if spec.shapes == "small":
        small = getattr(module, "SMALL_SHAPES", None)
        if not isinstance(small, dict):
            raise ProblemLoadError(
                f"problem {spec.problem_path} declares no SMALL_SHAPES dict, so it has no small size; "
                "ask for --shapes full (on CPU the interpreter may then take very long)"
            )
        module.__dict__.update(small)
    return module


@contextlib.contextmanager
def default_device_and_dtype(device: torch.device, dtype: torch.dtype) -> Iterator[None]:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            yield
    finally:
        torch.set_default_dtype(previous)


def instantiate(module: ModuleType, spec: RunSpec, seed: int) -> ProblemInstance:
    """The model (parameters in the dtype under test) and its inputs, on the device, for one seed."""
    device = torch.device(spec.device)
    dtype = TORCH_DTYPES[spec.dtype]
    torch.manual_seed(seed)  # seeds the CPU and every CUDA generator
    with default_device_and_dtype(device, dtype):
        init_inputs = list(getattr(module, "get_init_inputs", list)())
        model = module.Model(*init_inputs).eval()
        inputs = list(module.get_inputs())
    model = model.to(device=device, dtype=dtype)
    inputs = [_to_floating(t, device, dtype) for t in inputs]
    return ProblemInstance(model=model, inputs=inputs)


def shapes_instance(module: ModuleType, spec: RunSpec, seed: int) -> ProblemInstance:
    """The model and inputs of ``instantiate`` as meta tensors: shapes, strides and dtypes, no memory and no
    values (``compile_ahead``). Every tensor factory is sent to the meta device, so a problem that names its
    own device allocates nothing there either; raises whatever the problem's code raises on tensors without
    values (``.item()``, a copy to another device)."""
    with _FactoriesOnMeta():
        return instantiate(module, spec.model_copy(update={"device": "meta"}), seed)


class _FactoriesOnMeta(TorchFunctionMode):
    """Tensor factories make meta tensors, and a tensor made otherwise (``torch.from_numpy``) becomes one
    where it would be moved to a device: no memory on any device."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _device_constructors():
            kwargs["device"] = "meta"
        elif func in _MOVES and isinstance(args[0], torch.Tensor) and args[0].device.type != "meta":
            kwargs.pop("device", None)
            rest = [a for a in args[1:] if not isinstance(a, (str, torch.device, int))]
            args = (_as_meta(args[0]), *(rest if func is torch.Tensor.to else []))
            if func is not torch.Tensor.to:
                return args[0]
        return func(*args, **kwargs)


_MOVES = (torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.pin_memory)


def _as_meta(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def fresh_values_into(module: ModuleType, spec: RunSpec, seed: int, targets: list[Any]) -> None:
    """Overwrite ``targets`` in place with the inputs of another seed (same tensors, new values)."""
    with torch.no_grad():
        fresh = instantiate(module, spec, seed).inputs
        for t, f in zip(targets, fresh, strict=True):
            if isinstance(t, torch.Tensor):
                t.copy_(f)


PERTURBED_PER_TENSOR = 8
# Tests fix the random places (verification's small change, timing's input changes) with this variable;
# otherwise they are drawn per job, so no kernel can foresee them.
NUDGE_SEED_ENV = "BEAMSEARCH_TEST_NUDGE_SEED"


def nudge_seed() -> int:
    fixed = os.environ.get(NUDGE_SEED_ENV)
    return int(fixed) if fixed else secrets.randbits(31)


def perturb_(tensors: list[Any], seed: int, k: int = PERTURBED_PER_TENSOR) -> None:
    """Set ``k`` elements at seeded random places of each floating tensor to a value far from the rest
    (twice the largest magnitude, plus one), in place. A cache keyed on a sample of the input, or on
    part of it, returns the old answer for such an input; an honest kernel's cost does not change."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in tensors:
            if not _is_float_tensor(t) or t.numel() == 0:
                continue
            flat = t.view(-1) if t.is_contiguous() else None
            places = torch.randint(0, t.numel(), (min(k, t.numel()),), generator=gen)
            value = float(t.abs().max()) * 2 + 1
            if flat is not None:
                flat[places.to(t.device)] = value
            else:
                for p in places.tolist():
                    t[tuple(torch.unravel_index(torch.tensor(p), t.shape))] = value


def reference_copies(inputs: list[Any], spec: RunSpec) -> list[Any]:
    """Copies of ``inputs``, floating ones already in the reference's precision: ``reference_output``
    takes them as they are, without a copy of its own."""
    ref_dtype = REFERENCE_DTYPES[spec.dtype]
    return [t.to(ref_dtype, copy=True) if _is_float_tensor(t) else t.clone() if isinstance(t, torch.Tensor) else t
            for t in inputs]  # fmt: skip


def reference_output(instance: ProblemInstance, spec: RunSpec) -> Any:
    """The model's output computed one precision up (TF32 off), from the same inputs."""
    ref_dtype = REFERENCE_DTYPES[spec.dtype]
    with large_blocks_whole(spec.device.startswith("cuda")):  # a small intermediate cut from a freed GB block
        model = copy.deepcopy(instance.model).to(ref_dtype)
        inputs = [t.to(ref_dtype) if _is_float_tensor(t) else t for t in instance.inputs]
        with torch.no_grad(), _strict_fp32():
            return model(*inputs)



@contextlib.contextmanager
def _strict_fp32() -> Iterator[None]:
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _is_float_tensor(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point()


def _to_floating(t: Any, device: torch.device, dtype: torch.dtype) -> Any:
    # Inputs a problem built explicitly elsewhere (its own device= or dtype=) are moved; the normal path
    # (torch.rand under the defaults) already matches and this is a no-op.
    if _is_float_tensor(t):
        return t.to(device=device, dtype=dtype)
    if isinstance(t, torch.Tensor):
        return t.to(device=device)
    return t
