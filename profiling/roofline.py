"""The roofline class of a profiled kernel, and the analytic floor of a problem. Pure functions.

Classification uses ncu's speed-of-light percentages: compute = SM throughput, memory = the busiest of
DRAM, L1 and L2 (``gpu__compute_memory_throughput``). If both are under ``underutilized_below_pct``
the kernel is *underutilized* (too little work in flight, launch or latency bound); otherwise the
larger one names the bottleneck. At the roofline means the larger is at least ``at_roofline_pct``.

The floor needs no profile: the fewest bytes the problem must move and its FLOPs, over the measured
(or datasheet) peaks. Every timed kernel reports ``% of floor`` (floor / measured; 100 % is physics),
and one measured faster than the floor beyond a margin is suspect: it did not do the work.
"""

from __future__ import annotations

from beamsearch.records.schema import Floor, Roofline, Work
from profiling.metrics import COMPUTE_SOL, DRAM_SOL, MEMORY_SOL, TENSOR_INST, TENSOR_PIPE

DEFAULT_UNDERUTILIZED_BELOW_PCT = 60.0
DEFAULT_AT_ROOFLINE_PCT = 90.0
SUSPECT_MARGIN = 0.9  # faster than 90 % of the floor is beyond measurement error and peak uncertainty
# Kernels with no matrix instructions still show a trace on the tensor pipe (a fraction of a percent,
# docs/profiling.md): tensor cores count as used from 1 % of peak cycles.
TENSOR_CORES_MIN_PCT = 1.0


def classify(
    metrics: dict[str, float],
    *,
    underutilized_below_pct: float = DEFAULT_UNDERUTILIZED_BELOW_PCT,
    at_roofline_pct: float = DEFAULT_AT_ROOFLINE_PCT,
) -> Roofline:
    warnings: list[str] = []
    compute = metrics.get(COMPUTE_SOL)
    memory = metrics.get(MEMORY_SOL)
    if memory is None and DRAM_SOL in metrics:
        memory = metrics[DRAM_SOL]
        warnings.append(f"{MEMORY_SOL} missing: memory SOL from DRAM alone ({DRAM_SOL})")
    if compute is None:
        warnings.append(f"{COMPUTE_SOL} missing: no compute SOL")
    if memory is None:
        warnings.append(f"{MEMORY_SOL} and {DRAM_SOL} missing: no memory SOL")
    tensor = metrics.get(TENSOR_PIPE, metrics.get(TENSOR_INST))
    if tensor is None:
        warnings.append(f"{TENSOR_PIPE} missing: tensor-core use unknown")
    if compute is None or memory is None:
        bottleneck = "unknown"
    elif max(compute, memory) < underutilized_below_pct:
        bottleneck = "underutilized"
    else:
        bottleneck = "compute" if compute >= memory else "memory"
    known = [v for v in (compute, memory) if v is not None]
    return Roofline(
        compute_sol_pct=compute,
        memory_sol_pct=memory,
        bottleneck=bottleneck,
        at_roofline=bool(known) and max(known) >= at_roofline_pct,
        tensor_cores_used=None if tensor is None else tensor >= TENSOR_CORES_MIN_PCT,
        underutilized_below_pct=underutilized_below_pct,
        at_roofline_pct=at_roofline_pct,
        warnings=warnings,
    )


def floor(work: Work, *, dram_gbps: float, tflops: float, peaks_source: str) -> Floor:
    memory_ms = work.bytes_moved / (dram_gbps * 1e9) * 1e3
    compute_ms = work.flops / (tflops * 1e12) * 1e3
    return Floor(
        work=work,
        dram_gbps=dram_gbps,
        tflops=tflops,
        memory_ms=memory_ms,
        compute_ms=compute_ms,
        floor_ms=max(memory_ms, compute_ms),
        bound="memory" if memory_ms >= compute_ms else "compute",
        peaks_source=peaks_source,
    )


def pct_of_floor(floor_ms: float, measured_ms: float) -> float:
    """How close to physics: 100 % means the kernel runs at the floor."""
    return 100.0 * floor_ms / measured_ms


def is_suspect(floor_ms: float, measured_ms: float, margin: float = SUSPECT_MARGIN) -> bool:
    """Faster than the floor allows: a measurement or verification hole, never a win."""
    return measured_ms < margin * floor_ms
