"""Timing one callable, the same way for eager PyTorch, torch.compile and candidate kernels.

GPU, per repetition (shaped like ``triton.testing.do_bench``): zero a 256 MB buffer to flush L2, queue
a short spin kernel so the GPU is still busy while the host enqueues the call (host launch overhead
stays off the clock, as in do_bench's pipelined loop), record a start event, call, record an end event
on the stream, then synchronise the *whole device* and record a second end event. If the device-wide
end is later than the stream's end by more than ``ESCAPE_MS`` (the sync's own latency is ~10 us), the
call left work on another stream and the device-wide time is used, so such work cannot escape the
clock. Warm-up and repetition counts come from time budgets and a first estimate. CPU: a host clock per call; these are Triton-interpreter or CPU-eager times, labelled
as such and never to be compared with GPU times.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from beamsearch.schema import DType, ShapeSet, Timing

L2_FLUSH_BYTES = 256 * 1024 * 1024
HIDE_LAUNCH_CYCLES = 400_000  # ~200 us at H100/H200 boost clocks: longer than a Triton launch from Python
ESCAPE_MS = 0.05
ESTIMATE_REPS = 5
GPU_METHOD = "cuda events, L2 flushed (256 MB), whole device synchronised per repetition"
CPU_METHOD = "host perf_counter per call (CPU; kernels run in Triton's interpreter)"


def measure(
    fn: Callable[[], Any],
    device: str,
    *,
    dtype: DType,
    shapes: ShapeSet,
    warmup_ms: float,
    rep_ms: float,
    min_reps: int,
    max_reps: int,
) -> Timing:
    """Median, mean, std and min of ``fn``'s time in ms over budgeted repetitions. ``fn`` has run once."""
    on_gpu = device.startswith("cuda")
    once = _cuda_rep_ms(torch.device(device)) if on_gpu else _cpu_rep_ms
    if on_gpu:
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = "cpu"
    estimate = statistics.median(once(fn)[0] for _ in range(ESTIMATE_REPS if on_gpu else 1))
    n_warmup = _clamp(warmup_ms / max(estimate, 1e-3), 1, max_reps) if on_gpu else 0
    # Interpreter calls take up to seconds each: a handful is enough to label a CPU time.
    n_rep = _clamp(rep_ms / max(estimate, 1e-3), min_reps if on_gpu else min(min_reps, 3), max_reps)
    for _ in range(n_warmup):
        fn()
    reps = [once(fn) for _ in range(n_rep)]
    times = [ms for ms, _ in reps]
    return Timing(
        median_ms=statistics.median(times),
        mean_ms=statistics.fmean(times),
        std_ms=statistics.pstdev(times),
        min_ms=min(times),
        n=len(times),
        device_end_n=sum(escaped for _, escaped in reps),
        warmup_n=n_warmup,
        method=GPU_METHOD if on_gpu else CPU_METHOD,
        device_name=device_name,
        on_gpu=on_gpu,
        dtype=dtype,
        shapes=shapes,
    )


def _cuda_rep_ms(device: torch.device) -> Callable[[Callable[[], Any]], tuple[float, bool]]:
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device)

    def once(fn: Callable[[], Any]) -> tuple[float, bool]:
        start, end_stream, end_device = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        torch.cuda.synchronize(device)
        flush.zero_()
        torch.cuda._sleep(HIDE_LAUNCH_CYCLES)
        start.record()
        fn()
        end_stream.record()
        torch.cuda.synchronize(device)  # every stream, not only the current one
        end_device.record()
        end_device.synchronize()
        stream_ms, device_ms = start.elapsed_time(end_stream), start.elapsed_time(end_device)
        escaped = device_ms - stream_ms > ESCAPE_MS
        return (device_ms if escaped else stream_ms), escaped

    return once


def _cpu_rep_ms(fn: Callable[[], Any]) -> tuple[float, bool]:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3, False


def _clamp(x: float, lo: int, hi: int) -> int:
    return int(max(lo, min(hi, round(x))))
