"""The one list of Nsight Compute metrics: it builds the ncu command, guides parsing, and renders prompts.

Adding a metric is one line in METRICS. ``combine`` says how launches of several kernels (or several
launches of one) add up to a whole: counts are summed, everything else is weighted by kernel time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

COMPUTE = "SM and compute"
MEMORY = "Memory bandwidth and caches"
ACCESS = "Memory access patterns"
OCCUPANCY = "Occupancy and resources"
STALLS = "Warp stalls"
SECTIONS = (COMPUTE, MEMORY, ACCESS, OCCUPANCY, STALLS)

DURATION = "gpu__time_duration.sum"
COMPUTE_SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_SOL = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_SOL = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
TENSOR_PIPE = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
TENSOR_INST = "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active"


@dataclass(frozen=True)
class Metric:
    key: str  # the ncu metric name
    label: str
    unit: str  # base unit as ncu prints it with --print-units base
    section: str
    combine: Literal["sum", "time_weighted"] = "time_weighted"


METRICS: tuple[Metric, ...] = (
    Metric(DURATION, "Kernel duration", "ns", COMPUTE, "sum"),
    Metric(COMPUTE_SOL, "Compute (SM) throughput", "%", COMPUTE),
    Metric(MEMORY_SOL, "Memory throughput (max of DRAM, L1, L2)", "%", COMPUTE),
    Metric("sm__cycles_active.avg", "SM active cycles", "cycle", COMPUTE),
    Metric("sm__inst_executed.sum", "Instructions executed", "inst", COMPUTE, "sum"),
    Metric(TENSOR_INST, "Tensor pipe instructions", "%", COMPUTE),
    Metric(TENSOR_PIPE, "Tensor pipe active cycles", "%", COMPUTE),
    Metric("dram__bytes_read.sum", "DRAM bytes read", "byte", MEMORY, "sum"),
    Metric("dram__bytes_write.sum", "DRAM bytes written", "byte", MEMORY, "sum"),
    Metric("dram__bytes.sum.per_second", "DRAM bandwidth", "byte/second", MEMORY),
    Metric(DRAM_SOL, "DRAM throughput", "%", MEMORY),
    Metric("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "GPU DRAM throughput", "%", MEMORY),
    Metric("l1tex__t_sector_hit_rate.pct", "L1 hit rate", "%", MEMORY),
    Metric("l1tex__throughput.avg.pct_of_peak_sustained_active", "L1 throughput", "%", MEMORY),
    Metric("lts__t_sector_hit_rate.pct", "L2 hit rate", "%", MEMORY),
    Metric("lts__throughput.avg.pct_of_peak_sustained_active", "L2 throughput", "%", MEMORY),
    Metric("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "Global load sector use", "%", ACCESS),
    Metric("smsp__sass_average_branch_targets_threads_uniform.pct", "Uniform branch targets", "%", ACCESS),
    Metric("sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved occupancy", "%", OCCUPANCY),
    Metric("launch__occupancy_limit_blocks", "Occupancy limit: blocks", "block", OCCUPANCY),
    Metric("launch__occupancy_limit_registers", "Occupancy limit: registers", "block", OCCUPANCY),
    Metric("launch__occupancy_limit_shared_mem", "Occupancy limit: shared memory", "block", OCCUPANCY),
    Metric("launch__registers_per_thread", "Registers per thread", "register/thread", OCCUPANCY),
    Metric("launch__shared_mem_per_block_allocated", "Shared memory per block", "byte/block", OCCUPANCY),
    Metric("launch__grid_size", "Grid size", "block", OCCUPANCY),
    Metric("launch__block_size", "Block size", "thread", OCCUPANCY),
    Metric("smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", "Stall: long scoreboard (memory)", "%", STALLS),
    Metric("smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct", "Stall: short scoreboard", "%", STALLS),
    Metric("smsp__warp_issue_stalled_barrier_per_warp_active.pct", "Stall: barrier", "%", STALLS),
    Metric("smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct", "Stall: branch resolving", "%", STALLS),
)

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


def metric_keys() -> list[str]:
    return [m.key for m in METRICS]


def by_section(values: dict[str, float]) -> dict[str, list[tuple[Metric, float | None]]]:
    """Values grouped for display (prompts, reports), in METRICS order; None where missing."""
    grouped: dict[str, list[tuple[Metric, float | None]]] = {s: [] for s in SECTIONS}
    for m in METRICS:
        grouped[m.section].append((m, values.get(m.key)))
    return grouped
