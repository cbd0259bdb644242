"""A problem's least work (bytes and FLOPs, counted on the meta device: no memory, no GPU) and floor.

The problem module is ours or the user's (trusted, unlike candidates), so this runs in-process.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from beamsearch.records.schema import Floor, RunSpec, Work
from profiling.peaks import effective_peaks
from profiling.roofline import floor, is_suspect, pct_of_floor
from workers.harness.problem_instance import instantiate, load_problem_module

# The compute rate that bounds a problem in each dtype: tensor cores for bf16/fp16; for fp32 the plain
# FP32 rate, since TF32 would miss fp32's tolerance.
RATE_FIELDS = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp32": "fp32_tflops"}


def count_work(spec: RunSpec) -> Work:
    """Bytes: every input tensor and model parameter/buffer read once, every output written once,
    in the dtype under test. FLOPs: PyTorch's FLOP counter on the model (counts matmul, convolution
    and attention; elementwise work and reductions count 0, so their floor is set by bytes)."""
    meta = spec.model_copy(update={"device": "meta"})
    instance = instantiate(load_problem_module(meta), meta, seed=0)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = instance.model(*instance.inputs)
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    tensors = [t for t in instance.inputs if isinstance(t, torch.Tensor)]
    tensors += list(instance.model.parameters()) + list(instance.model.buffers()) + outputs
    return Work(bytes_moved=sum(t.numel() * t.element_size() for t in tensors), flops=int(counter.get_total_flops()))


def problem_floor(spec: RunSpec, device_name: str) -> Floor:
    """The problem's floor on this GPU, from measured peaks where cached, else the datasheet.

    Raises UnknownGpu (profiling.gpu_specs) for a GPU with neither."""
    peaks = effective_peaks(device_name)
    rate_field = RATE_FIELDS[spec.dtype]
    return floor(
        count_work(spec),
        dram_gbps=peaks.dram_gbps,
        tflops=getattr(peaks, rate_field),
        peaks_source=f"{device_name}: bandwidth {_kind(peaks.source['dram_gbps'])}, "
        f"{spec.dtype} rate {_kind(peaks.source[rate_field])}",
    )


def _kind(source: str) -> str:
    """'measured <date>' or 'datasheet' (the document's name stays in Peaks.source)."""
    return source.split(":")[0]


def judge_time(floor_: Floor, median_ms: float) -> tuple[float, bool]:
    """(% of floor, suspect) of a measured median against the floor."""
    return pct_of_floor(floor_.floor_ms, median_ms), is_suspect(floor_.floor_ms, median_ms)
