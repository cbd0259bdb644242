"""Timing one callable, the same way for eager PyTorch, torch.compile and candidate kernels.

GPU, per repetition (shaped like ``triton.testing.do_bench``): zero a 256 MB buffer to flush L2, queue
a short spin kernel so the GPU is still busy while the host enqueues the call (host launch overhead
stays off the clock, as in do_bench's pipelined loop), record a start event, call, record an end event
on the stream, then synchronise the *whole device* and record a second end event. If the device-wide
end is later than the stream's end by more than the host's own wake-up latency and ``ESCAPE_MS``, the
call left work on another stream and the device-wide time is used, so such work cannot escape the
clock. The margin is measured, not assumed: how late the host wakes from a long sync varies, so the gap is first taken for a spin kernel on the call's own stream
that lasts as long as the call, and only a gap beyond that plus ``ESCAPE_MS`` counts. Warm-up and
repetition counts come from time budgets and a first estimate. CPU: a host clock per call; these are
Triton-interpreter or CPU-eager times, labelled as such and never to be compared with GPU times.

Between repetitions, off the clock, ``between_reps`` may change the inputs, and after each timed
repetition, off the clock too, ``after_rep`` is handed its outputs (``workers.harness.timed_outputs``: some are
kept, chosen only then, and checked, so every timed call may be the one checked).

The events are cross-checked against the host clock: after the repetitions, batches of back-to-back
calls run between two device-wide synchronisations, timed with ``time.perf_counter``. Such a batch can
take no less than the GPU work it contains, so when the host time per call exceeds both the event time
and the host's own time to enqueue a call by a margin, the events missed work (patched events, work
started after the end event) and ``clock_disagreement`` says so. The clock functions are taken when this
module is imported, before any kernel is.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from beamsearch.records.schema import CheckResult, DType, ShapeSet, Timing

_perf_counter = time.perf_counter  # taken before any kernel is imported
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize
_sleep = torch.cuda._sleep

L2_FLUSH_BYTES = 256 * 1024 * 1024
HIDE_LAUNCH_CYCLES = 400_000  # ~200 us at H100/H200 boost clocks: longer than a Triton launch from Python
ESCAPE_MS = 0.05
ESTIMATE_REPS = 5
MARGIN_REPS = 5
# A first estimate this many times a search's screen marks a clear loser: it stops after a first look of
# FIRST_LOOK_REPS repetitions, with no sync margin measured and no warm-up, which for slow calls (tens of
# milliseconds) were most of its hold on the GPU. Cold calls run slow, hence the factor.
CLEAR_LOSER = 2.0
FIRST_LOOK_REPS = 3
# Each cross-check batch runs about this long: the host's wake-up from the sync (tens of microseconds)
# stays a fraction of a percent of it, far under the check's tolerance, and a search's timing holds the
# GPU alone for the three batches.
HOST_BATCH_MS = 20.0
HOST_BATCHES = 3  # the fastest batch counts: the host clock only ever adds time
CLOCK_REL_TOL = 0.5
CLOCK_ABS_TOL_MS = 0.05
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
    between_reps: Callable[[], None] | None = None,
    after_rep: Callable[[Any], None] | None = None,
    screen_above_ms: float | None = None,
) -> Timing:
    """Median, mean, std and min of ``fn``'s time in ms over budgeted repetitions. ``fn`` has run once.

    ``between_reps`` runs before each repetition, off the clock (before the L2 flush on a GPU).
    ``after_rep`` gets each timed repetition's return value once the whole device is synchronised.
    ``screen_above_ms``: when the median of the first ``min_reps`` repetitions (after the warm-up) is above
    it, the timing stops there (``Timing.screened_above_ms``), without the host clock's cross-check, which
    only ever finds a call slower than its events say: a search passes the time a candidate must beat to
    enter its beam, and a clear loser's exact time is not worth the GPU's measurement lock. A first
    estimate ``CLEAR_LOSER`` times the screen is looked at after ``FIRST_LOOK_REPS`` repetitions, before the
    sync margin and the warm-up; their times are the stream's ends, a lower bound, so work a call leaves
    on other streams can only keep it from stopping there. If that look does not stop it, the margin and
    warm-up are taken then and the timing goes on in full."""
    on_gpu = device.startswith("cuda")
    prepare = between_reps or (lambda: None)
    once = _cuda_rep(torch.device(device), prepare) if on_gpu else _cpu_rep(prepare)
    if on_gpu:
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = "cpu"
    estimate = statistics.median(once(fn)[0][0] for _ in range(ESTIMATE_REPS if on_gpu else 1))
    # Interpreter calls take up to seconds each: a handful is enough to label a CPU time.
    n_min = min_reps if on_gpu else min(min_reps, 3)
    n_rep = _clamp(rep_ms / max(estimate, 1e-3), n_min, max_reps)
    first_look = (on_gpu and screen_above_ms is not None and n_rep >= FIRST_LOOK_REPS
                  and estimate > CLEAR_LOSER * screen_above_ms)  # fmt: skip
    margin_ms: float | None = None  # None: not measured yet, a repetition's time is its stream's end

    def settle() -> int:
        """The sync margin and the warm-up, before the repetitions timed in full; the warm-up's calls."""
        nonlocal margin_ms
        margin_ms = _sync_margin_ms(once, torch.device(device), estimate) if on_gpu else 0.0
        n = _clamp(warmup_ms / max(estimate, 1e-3), 1, max_reps) if on_gpu else 0
        for _ in range(n):
            fn()
        return n

    n_warmup = 0 if first_look else settle()
    look_at = FIRST_LOOK_REPS if first_look else n_min
    reps: list[Rep] = []
    screened = False
    while len(reps) < n_rep and not screened:
        rep, out = once(fn)
        reps.append(rep)
        if after_rep is not None:
            after_rep(out)
        del out  # as after an untimed call: the next call's memory may reuse it
        if screen_above_ms is not None and len(reps) == look_at:
            # Stopped here even where these are all the repetitions: the host clock's batches are spared.
            screened = statistics.median(_rep_ms(rep, margin_ms) for rep in reps) > screen_above_ms
            if not screened and margin_ms is None:  # the first look was wrong: timed in full from here
                n_warmup, look_at = settle(), n_min
    escaped = [_escaped(rep, margin_ms) for rep in reps]
    times = [_rep_ms(rep, margin_ms) for rep in reps]
    host_batch_ms = host_enqueue_ms = None
    if on_gpu:
        host_enqueue_ms = statistics.median(enqueue for *_, enqueue in reps)
        if not screened:
            host_batch_ms = _host_batch_ms(fn, torch.device(device), statistics.median(times))
    return Timing(
        median_ms=statistics.median(times),
        mean_ms=statistics.fmean(times),
        std_ms=statistics.pstdev(times),
        min_ms=min(times),
        n=len(times),
        device_end_n=sum(escaped),
        device_gap_ms=statistics.median(gap for _, _, gap, _ in reps) if on_gpu else None,
        sync_margin_ms=margin_ms if on_gpu else None,  # None also where a first look stopped it
        warmup_n=n_warmup,
        method=GPU_METHOD if on_gpu else CPU_METHOD,
        device_name=device_name,
        on_gpu=on_gpu,
        dtype=dtype,
        shapes=shapes,
        host_batch_ms=host_batch_ms,
        host_enqueue_ms=host_enqueue_ms,
        screened_above_ms=screen_above_ms if screened else None,
    )


def _escaped(rep: Rep, margin_ms: float | None) -> bool:
    """The device-wide end came later than the host's own wake-up explains: work escaped the stream. With
    no margin measured (a first look), nothing counts as escaped: the stream's end is a lower bound."""
    return margin_ms is not None and rep[2] > margin_ms + ESCAPE_MS


def _rep_ms(rep: Rep, margin_ms: float | None) -> float:
    """A repetition's time: to the stream's end, or to the device-wide end where work escaped the stream."""
    stream_ms, device_ms, _, _ = rep
    return device_ms if _escaped(rep, margin_ms) else stream_ms


def expected_measure_s(on_gpu: bool, call_s: float, *, warmup_ms: float, rep_ms: float, min_reps: int, max_reps: int) -> float:
    """About how long ``measure`` takes for a call of ``call_s`` seconds: its time budgets, or the calls
    it makes whatever the budgets where those take longer. Per-repetition overheads (L2 flush, sync) are
    left out; a caller that judges a hang against this allows slack for them."""
    if not on_gpu:
        return call_s + max(min(min_reps, 3) * call_s, rep_ms / 1e3)
    fixed_calls = (ESTIMATE_REPS + MARGIN_REPS) * call_s
    warmup = max(call_s, warmup_ms / 1e3)
    reps = min(max_reps * call_s, max(min_reps * call_s, rep_ms / 1e3))
    host_batches = HOST_BATCHES * max(5 * call_s, HOST_BATCH_MS / 1e3)
    return fixed_calls + warmup + reps + host_batches


def clock_disagreement(
    event_ms: float,
    host_batch_ms: float,
    host_enqueue_ms: float,
    *,
    rel_tol: float = CLOCK_REL_TOL,
    abs_tol_ms: float = CLOCK_ABS_TOL_MS,
) -> str | None:
    """None when the event time and the host clock agree; else why they do not.

    A synchronised batch of back-to-back calls takes, per call, about the larger of the GPU time (warm
    L2, so at most the flushed event time) and the host's time to enqueue a call. A host time per call
    well above both means the events did not see all of the call's work.
    """
    bound_ms = max(event_ms, host_enqueue_ms) * (1 + rel_tol) + abs_tol_ms
    if host_batch_ms <= bound_ms:
        return None
    return (
        f"the host clock says {host_batch_ms:.4g} ms per call over a synchronised batch, more than the CUDA events "
        f"({event_ms:.4g} ms) or enqueueing a call ({host_enqueue_ms:.4g} ms) account for (limit {bound_ms:.4g} ms): "
        "the events missed work"
    )


def timing_checks(timing: Timing, device: str, screen_above_ms: float | None = None) -> list[CheckResult]:
    """What a timing says about the call it timed, from the kernel's own process, so checked: it ran on the
    GPU asked for; on a GPU, it has the host clock's cross-check (only a timing stopped early may skip it),
    the events agree with the host clock, and most repetitions ended on the call's own stream; a timing
    stopped early (``screen_above_ms``, what the caller asked for) was slower than that, as it must be."""
    checks = []
    if device.startswith("cuda") and not timing.on_gpu:
        checks.append(CheckResult(name="timed_on_the_gpu", passed=False, detail=f"asked for {device}, timed on the CPU"))
    if timing.screened_above_ms is not None:
        honest = screen_above_ms is not None and timing.screened_above_ms == screen_above_ms \
            and timing.median_ms > screen_above_ms  # fmt: skip
        checks.append(CheckResult(name="stopped_early_when_slower", passed=honest, detail="" if honest else (
            f"the timing says it stopped early above {timing.screened_above_ms} ms at {timing.median_ms:.4g} ms; "
            f"asked to stop above {screen_above_ms} ms")))  # fmt: skip
    if not timing.on_gpu:
        return checks
    missing = timing.host_enqueue_ms is None or (timing.host_batch_ms is None and timing.screened_above_ms is None)
    checks.append(CheckResult(name="host_clock_reported", passed=not missing, detail="" if not missing else
                              "the timing reported no host-clock cross-check of its events"))  # fmt: skip
    if timing.host_batch_ms is not None and timing.host_enqueue_ms is not None:
        why = clock_disagreement(timing.median_ms, timing.host_batch_ms, timing.host_enqueue_ms)
        checks.append(CheckResult(name="clocks_agree", passed=why is None, detail=why or ""))
    on_stream = timing.device_end_n * 2 <= timing.n
    checks.append(CheckResult(name="current_stream", passed=on_stream, detail="" if on_stream else (
        f"{timing.device_end_n} of {timing.n} repetitions ended on another stream after the call's own stream "
        f"(median gap {timing.device_gap_ms or 0:.3g} ms; a call of the same length on one stream: at most "
        f"{timing.sync_margin_ms or 0:.3g} ms): kernel_function left its work unordered with the caller's stream")))  # fmt: skip
    return checks


Rep = tuple[float, float, float, float]  # stream ms, device-wide ms, their gap, host enqueue ms


def _cuda_rep(device: torch.device, prepare: Callable[[], None]) -> Callable[[Callable[[], Any]], tuple[Rep, Any]]:
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device)

    def once(fn: Callable[[], Any]) -> tuple[Rep, Any]:
        start, end_stream, end_device = (_Event(enable_timing=True) for _ in range(3))
        _synchronize(device)
        prepare()
        flush.zero_()
        _sleep(HIDE_LAUNCH_CYCLES)
        start.record()
        enqueue_start = _perf_counter()
        out = fn()
        enqueue_ms = (_perf_counter() - enqueue_start) * 1e3
        end_stream.record()
        _synchronize(device)  # every stream, not only the current one
        end_device.record()
        end_device.synchronize()
        stream_ms, device_ms = start.elapsed_time(end_stream), start.elapsed_time(end_device)
        return (stream_ms, device_ms, device_ms - stream_ms, enqueue_ms), out

    return once


def _sync_margin_ms(once: Callable[[Callable[[], Any]], tuple[Rep, Any]], device: torch.device, call_ms: float) -> float:
    """The largest stream-to-device-wide gap for a spin kernel as long as the call, on the call's own
    stream: what the host's wake-up from the sync adds when nothing escapes."""
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    _synchronize(device)
    start.record()
    _sleep(HIDE_LAUNCH_CYCLES)
    end.record()
    end.synchronize()
    cycles = int(HIDE_LAUNCH_CYCLES * call_ms / max(start.elapsed_time(end), 1e-3))
    return max(once(lambda: _sleep(max(cycles, 1)))[0][2] for _ in range(MARGIN_REPS))


def _host_batch_ms(fn: Callable[[], Any], device: torch.device, per_call_ms: float) -> float:
    """Host clock per call over synchronised batches of back-to-back calls (the fastest batch)."""
    n = _clamp(HOST_BATCH_MS / max(per_call_ms, 1e-3), 5, 1000)
    best = float("inf")
    for _ in range(HOST_BATCHES):
        _synchronize(device)
        start = _perf_counter()
        for _ in range(n):
            fn()
        _synchronize(device)
        best = min(best, (_perf_counter() - start) * 1e3 / n)
    return best


def _cpu_rep(prepare: Callable[[], None]) -> Callable[[Callable[[], Any]], tuple[Rep, Any]]:
    def once(fn: Callable[[], Any]) -> tuple[Rep, Any]:
        prepare()
        start = _perf_counter()
        out = fn()
        ms = (_perf_counter() - start) * 1e3
        return (ms, ms, 0.0, ms), out

    return once


def _clamp(x: float, lo: int, hi: int) -> int:
    return int(max(lo, min(hi, round(x))))
