"""Child process: import a candidate kernel, run it on fresh inputs, and write its Verdict.

Run only through ``workers.verify.verify_kernel``, which hands it a request (``child_process.serve``).
For each seed: build the model and fresh inputs, compute the reference one precision up, call the
kernel under the PyTorch-compute guard (fresh allocations poisoned), then check structure, unwritten
elements, non-finite values, tolerance and unchanged inputs. On the first seed, also change the
inputs' values in place and call again on the same tensors, which catches caching by pointer.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from beamsearch.schema import CheckResult, Verdict, VerifyRequest
from workers.binding import BindError, BoundCall, bind, model_values
from workers.child_process import serve
from workers.compare import compare
from workers.problem_instance import (
    TORCH_DTYPES,
    NoKernelFunction,
    ProblemLoadError,
    fresh_values_into,
    instantiate,
    load_kernel_function,
    load_problem_module,
    reference_output,
    select_device,
)
from workers.torch_guard import TorchComputeGuard, as_bits

POINTER_CHECK_SEED_OFFSET = 1000


class Failed(Exception):
    """A verdict reached before the end: carries the status and the reason."""

    def __init__(self, status: str, reason: str, tb: str = "") -> None:
        super().__init__(reason)
        self.status, self.reason, self.tb = status, reason, tb


class Checks:
    def __init__(self) -> None:
        self.results: list[CheckResult] = []
        self.max_abs_err: float | None = None
        self.max_rel_err: float | None = None
        self.call_times_s: list[float] = []

    def record(self, name: str, passed: bool, detail: str = "") -> None:
        """Keep one line per check: its first pass, or the failure that ends verification."""
        if passed and any(r.name == name for r in self.results):
            return
        self.results.append(CheckResult(name=name, passed=passed, detail="" if passed else detail))
        if not passed:
            raise Failed("incorrect", f"{name}: {detail}")

    def errors(self, abs_err: float, rel_err: float) -> None:
        self.max_abs_err = max(self.max_abs_err or 0.0, abs_err)
        self.max_rel_err = max(self.max_rel_err or 0.0, rel_err)


def verify(req: VerifyRequest) -> Verdict:
    started_at = time.time()
    start = time.perf_counter()
    checks = Checks()
    status, reason, tb = "ok", "all checks passed", ""
    try:
        _verify(req, checks)
    except Failed as f:
        status, reason, tb = f.status, f.reason, f.tb
    except Exception as e:  # the harness's own steps (inputs, copies, references) failed, e.g. out of memory
        status, reason, tb = "problem_error", f"verification could not run: {type(e).__name__}: {e}"[:500], traceback.format_exc()
    return Verdict(
        started_at=started_at,
        passed=status == "ok",
        status=status,
        reason=reason,
        kernel_path=req.kernel_path,
        checks=checks.results,
        max_abs_err=checks.max_abs_err,
        max_rel_err=checks.max_rel_err,
        seeds=req.seeds,
        spec=req.spec,
        tolerance=req.tolerance,
        child_s=time.perf_counter() - start,
        kernel_call_s=sum(checks.call_times_s),
        first_call_s=checks.call_times_s[0] if checks.call_times_s else 0.0,
        traceback=tb,
    )


def _verify(req: VerifyRequest, checks: Checks) -> None:
    spec = req.spec
    if spec.device.startswith("cuda") and not torch.cuda.is_available():
        raise Failed("problem_error", f"device {spec.device} asked for, but no CUDA GPU is visible")
    try:
        select_device(spec)
        module = load_problem_module(spec)
    except (ProblemLoadError, RuntimeError, ValueError) as e:  # a bad problem file, or cuda:N that is not there
        raise Failed("problem_error", str(e), traceback.format_exc()) from e
    kernel_fn = _load_kernel_function(req.kernel_path)
    checks.results.append(CheckResult(name="imports", passed=True))
    for i, seed in enumerate(req.seeds):
        try:
            instance = instantiate(module, spec, seed)
            reference = reference_output(instance, spec)
        except Exception as e:
            raise Failed("problem_error", f"problem failed for seed {seed}: {e}", traceback.format_exc()) from e
        try:
            call = bind(kernel_fn, instance.inputs, model_values(instance.model))
        except BindError as e:
            raise Failed("bind_failed", str(e)) from e
        snapshot = _snapshot(call)
        _check_call(call, reference, req, checks, f"seed {seed}")
        _check_unchanged(snapshot, checks, f"seed {seed}")
        if i == 0:
            # Same tensors, new values: a kernel that caches results by pointer returns the old answer.
            fresh_values_into(module, spec, seed + POINTER_CHECK_SEED_OFFSET, call.inputs)
            reference = reference_output(instance, spec)
            snapshot = _snapshot(call)
            _check_call(call, reference, req, checks, f"seed {seed}, inputs changed in place",
                        values_check="values_after_inputs_changed")
            _check_unchanged(snapshot, checks, f"seed {seed}, inputs changed in place")


def _load_kernel_function(path: str) -> Callable[..., Any]:
    if not Path(path).is_file():
        raise Failed("compile_failed", f"kernel file {path} does not exist")
    try:
        return load_kernel_function(path)
    except NoKernelFunction as e:
        raise Failed("compile_failed", str(e)) from e
    except BaseException as e:
        raise Failed("compile_failed", f"importing the kernel failed: {_one_line(e)}", traceback.format_exc()) from e


def _check_call(
    call: BoundCall, reference: Any, req: VerifyRequest, checks: Checks, where: str, values_check: str = "values"
) -> None:
    guard = TorchComputeGuard()
    started = time.perf_counter()
    try:
        with torch.no_grad(), guard:
            out = call()
        if req.spec.device.startswith("cuda"):
            torch.cuda.synchronize()  # asynchronous faults (illegal address) surface here
        checks.call_times_s.append(time.perf_counter() - started)
    except BaseException as e:
        status = "compile_failed" if _is_triton_compile_error(e) else "runtime_error"
        raise Failed(status, f"kernel_function raised ({where}): {_one_line(e)}", traceback.format_exc()) from e
    checks.record(
        "pytorch_compute",
        not guard.forbidden,
        f"PyTorch compute operators ran inside kernel_function ({where}): {guard.describe_forbidden()}"
        if guard.forbidden
        else "",
    )
    outs, refs = _as_list(out), _as_list(reference)
    structure_problem = _structure_problem(outs, refs, req)
    checks.record("output_structure", structure_problem is None, f"{structure_problem} ({where})")
    for k, (o, r) in enumerate(zip(outs, refs, strict=True)):
        cmp = compare(o, r, req.tolerance)
        checks.errors(cmp.max_abs_err, cmp.max_rel_err)
        label = f"output {k}" if len(outs) > 1 else "output"
        checks.record(
            "all_written",
            cmp.n_unwritten == 0,
            f"{cmp.n_unwritten} of {cmp.n} {label} elements were never written ({where}; first at flat index "
            f"{cmp.first_bad_index})",
        )
        checks.record(
            "finite",
            cmp.n_unexpected_nonfinite == 0,
            f"{cmp.n_unexpected_nonfinite} {label} elements are NaN/Inf where the reference is finite ({where})",
        )
        checks.record(
            values_check,
            cmp.n_mismatched == 0,
            f"{cmp.n_mismatched} of {cmp.n} {label} elements outside atol={req.tolerance.atol} "
            f"rtol={req.tolerance.rtol}; max abs err {cmp.max_abs_err:.4g}, max rel err {cmp.max_rel_err:.4g}, "
            f"first at flat index {cmp.first_bad_index} ({where})",
        )


def _structure_problem(outs: list[Any], refs: list[Any], req: VerifyRequest) -> str | None:
    if len(outs) != len(refs):
        return f"returned {len(outs)} outputs, the reference returns {len(refs)}"
    want_device = torch.device(req.spec.device)
    for k, (o, r) in enumerate(zip(outs, refs, strict=True)):
        if not isinstance(o, torch.Tensor):
            return f"output {k} is a {type(o).__name__}, not a torch.Tensor"
        if type(o) is not torch.Tensor and not isinstance(o, torch.nn.Parameter):
            return f"output {k} is a tensor subclass ({type(o).__name__}), not a plain torch.Tensor"
        want_dtype = TORCH_DTYPES[req.spec.dtype] if r.is_floating_point() else r.dtype
        if tuple(o.shape) != tuple(r.shape):
            return f"output {k} has shape {tuple(o.shape)}, expected {tuple(r.shape)}"
        if o.dtype != want_dtype:
            return f"output {k} has dtype {o.dtype}, expected {want_dtype}"
        if o.device.type != want_device.type:
            return f"output {k} is on {o.device}, expected {want_device}"
    return None


def _snapshot(call: BoundCall) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """Copies of every tensor the kernel is given: its inputs and the model values (weight, bias...)."""
    named = [(f"input {k}", t) for k, t in enumerate(call.inputs)]
    named += [(f"model value '{name}'", t) for name, t in call.kwargs.items()]
    return [(label, t, t.clone()) for label, t in named if isinstance(t, torch.Tensor)]


def _check_unchanged(snapshot: list[tuple[str, torch.Tensor, torch.Tensor]], checks: Checks, where: str) -> None:
    for label, now, before in snapshot:
        same = now.shape == before.shape and bool((_bits(now) == _bits(before)).all())
        checks.record("inputs_unchanged", same, f"{label} was modified by kernel_function ({where})")


def _bits(t: torch.Tensor) -> torch.Tensor:
    return as_bits(t) if t.is_floating_point() else t


def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _is_triton_compile_error(e: BaseException) -> bool:
    return any(c.__name__ == "CompilationError" for c in type(e).__mro__)


def _one_line(e: BaseException) -> str:
    """First and last line of the message: Triton puts the location first and the cause last."""
    lines = [ln.strip() for ln in f"{type(e).__name__}: {e}".splitlines() if ln.strip()]
    text = lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"
    return text[:500]


if __name__ == "__main__":
    serve(VerifyRequest, verify)
