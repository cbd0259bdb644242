"""Datasheet peaks of NVIDIA GPUs, and finding the entry for a device name.

Every number is a *dense* peak: NVIDIA's datasheets print tensor-core rates "with sparsity" (2:4
structured sparsity, twice the dense rate) and say the dense figure is half of it; we store the half,
never the sparse figure, because a roofline against a sparse peak makes every kernel look twice as far
from its ceiling as it is. Tensor rates for BF16/FP16 are with FP32 accumulation (what Triton's
``tl.dot`` does by default); FP32 is the non-tensor (CUDA-core) rate. ``dram_gbps`` is in GB/s
(1e9 bytes/s). ``l2_bytes`` is in MiB-based bytes (40 MB -> 40 * 2**20), which is what
``torch.cuda.get_device_properties(i).L2_cache_size`` reports.

Unknown GPUs are not guessed: ``lookup_specs`` raises ``UnknownGpu``, and the user either writes the
specs in a JSON file (``specs_from_file``) or measures ceilings with ``python -m profiling.peaks``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from beamsearch.records.schema import Record

MIB = 2**20


class GpuSpecs(Record):
    name: str  # canonical, e.g. "H100 SXM5 80GB"
    sm_count: int
    l2_bytes: int
    dram_gbps: float  # GB/s, 1e9 bytes/s
    fp32_tflops: float  # non-tensor FP32
    tf32_tflops: float  # tensor, dense
    bf16_tflops: float  # tensor, dense, FP32 accumulate
    fp16_tflops: float  # tensor, dense, FP32 accumulate
    fp8_tflops: float | None  # tensor, dense, FP32 accumulate; None without FP8 tensor cores
    source: str


class UnknownGpu(LookupError):
    """No datasheet entry for this device name (or the device is a MIG slice)."""


def _how_to_proceed() -> str:
    fields = ", ".join(GpuSpecs.model_fields)
    return (
        "Either give its specs in a JSON file with the fields "
        f"{fields} (load it with profiling.gpu_specs.specs_from_file), or measure its ceilings on the GPU "
        "with `python -m profiling.peaks` (cached, then used by profiling.peaks.effective_peaks)."
    )


_A100_SRC = (
    "NVIDIA A100 Tensor Core GPU datasheet (dense = half the 'with sparsity' figures); "
    "SM count and L2 from the NVIDIA Ampere GA100 architecture whitepaper"
)
_H100_SRC = (
    "NVIDIA H100 Tensor Core GPU datasheet (dense = half the 'with sparsity' figures); "
    "SM count and L2 from the NVIDIA H100 (Hopper) architecture whitepaper"
)
_H200_SRC = (
    "NVIDIA H200 Tensor Core GPU datasheet (dense = half the 'with sparsity' figures); "
    "SM count and L2 as H100 (same GH100 configuration), NVIDIA H100 architecture whitepaper"
)

# One entry per product; keyed by the canonical name.
GPU_SPECS: dict[str, GpuSpecs] = {
    s.name: s
    for s in [
        GpuSpecs(
            name="A100 SXM4 40GB", sm_count=108, l2_bytes=40 * MIB, dram_gbps=1555.0,
            fp32_tflops=19.5, tf32_tflops=156.0, bf16_tflops=312.0, fp16_tflops=312.0, fp8_tflops=None,
            source=_A100_SRC,
        ),
        GpuSpecs(
            name="A100 SXM4 80GB", sm_count=108, l2_bytes=40 * MIB, dram_gbps=2039.0,
            fp32_tflops=19.5, tf32_tflops=156.0, bf16_tflops=312.0, fp16_tflops=312.0, fp8_tflops=None,
            source=_A100_SRC,
        ),
        GpuSpecs(
            name="A100 PCIe 40GB", sm_count=108, l2_bytes=40 * MIB, dram_gbps=1555.0,
            fp32_tflops=19.5, tf32_tflops=156.0, bf16_tflops=312.0, fp16_tflops=312.0, fp8_tflops=None,
            source=_A100_SRC + " (PCIe: same peaks, lower power limit, so sustained clocks may be lower)",
        ),
        GpuSpecs(
            name="A100 PCIe 80GB", sm_count=108, l2_bytes=40 * MIB, dram_gbps=1935.0,
            fp32_tflops=19.5, tf32_tflops=156.0, bf16_tflops=312.0, fp16_tflops=312.0, fp8_tflops=None,
            source=_A100_SRC + " (PCIe: same peaks, lower power limit, so sustained clocks may be lower)",
        ),
        GpuSpecs(
            name="H100 SXM5 80GB", sm_count=132, l2_bytes=50 * MIB, dram_gbps=3350.0,
            fp32_tflops=67.0, tf32_tflops=494.5, bf16_tflops=989.5, fp16_tflops=989.5, fp8_tflops=1979.0,
            source=_H100_SRC + " (H100 SXM column)",
        ),
        GpuSpecs(
            name="H100 PCIe 80GB", sm_count=114, l2_bytes=50 * MIB, dram_gbps=2000.0,
            fp32_tflops=51.0, tf32_tflops=378.0, bf16_tflops=756.5, fp16_tflops=756.5, fp8_tflops=1513.0,
            source=_H100_SRC + " (H100 PCIe column)",
        ),
        GpuSpecs(
            name="H100 NVL 94GB", sm_count=132, l2_bytes=50 * MIB, dram_gbps=3900.0,
            fp32_tflops=60.0, tf32_tflops=417.5, bf16_tflops=835.5, fp16_tflops=835.5, fp8_tflops=1670.5,
            source=_H100_SRC + " (H100 NVL column, per GPU; SM count 132 as the full H100 SXM configuration)",
        ),
        GpuSpecs(
            name="H200 SXM 141GB", sm_count=132, l2_bytes=50 * MIB, dram_gbps=4800.0,
            fp32_tflops=67.0, tf32_tflops=494.5, bf16_tflops=989.5, fp16_tflops=989.5, fp8_tflops=1979.0,
            source=_H200_SRC + " (H200 SXM column)",
        ),
        GpuSpecs(
            name="H200 NVL 141GB", sm_count=132, l2_bytes=50 * MIB, dram_gbps=4800.0,
            fp32_tflops=60.0, tf32_tflops=417.5, bf16_tflops=835.5, fp16_tflops=835.5, fp8_tflops=1670.5,
            source=_H200_SRC + " (H200 NVL column)",
        ),
        GpuSpecs(
            name="B200", sm_count=148, l2_bytes=126 * MIB, dram_gbps=7700.0,
            fp32_tflops=75.0, tf32_tflops=1100.0, bf16_tflops=2250.0, fp16_tflops=2250.0, fp8_tflops=4500.0,
            source=(
                "NVIDIA HGX B200 specifications, per-GPU column (180 GB HBM3e, 7.7 TB/s; dense = half the "
                "'with sparsity' figures); SM count (148) and L2 (126 MB) from Chips and Cheese, "
                "'Nvidia's B200: Keeping the CUDA Juggernaut Rolling' (not in the datasheet)"
            ),
        ),
        GpuSpecs(
            name="L40S", sm_count=142, l2_bytes=96 * MIB, dram_gbps=864.0,
            fp32_tflops=91.6, tf32_tflops=183.0, bf16_tflops=362.05, fp16_tflops=362.05, fp8_tflops=733.0,
            source=(
                "NVIDIA L40S datasheet (dense column; the '*' column is with sparsity); SM count (142, one RT "
                "core per SM) and L2 (96 MB) from the NVIDIA Ada GPU architecture whitepaper v2.01 (L40)"
            ),
        ),
        GpuSpecs(
            name="RTX 4090", sm_count=128, l2_bytes=72 * MIB, dram_gbps=1008.0,
            fp32_tflops=82.6, tf32_tflops=82.6, bf16_tflops=165.2, fp16_tflops=165.2, fp8_tflops=330.3,
            source=(
                "NVIDIA Ada GPU architecture whitepaper, GeForce RTX 4090 table (dense figures; GeForce tensor "
                "rates with FP32 accumulate are half those with FP16 accumulate: FP16 330.3, FP8 660.6)"
            ),
        ),
    ]
}  # fmt: skip

# Matching rules, tried in order; the first whose `required` tokens all appear as whole tokens of the
# normalised name, and none of whose `forbidden` tokens do, wins. Normalised: upper case, '-' and '_'
# as spaces, so "NVIDIA A100-SXM4-80GB" has the tokens NVIDIA, A100, SXM4, 80GB. Whole tokens, not
# substrings, so "GH200" is not "H200", "GB200" is not "B200", and "L40" is not "L40S".
# More specific rules come first (PCIe/NVL before the bare SXM rule).
MATCH_RULES: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (("A100", "PCIE", "80GB"), (), "A100 PCIe 80GB"),  # "NVIDIA A100 80GB PCIe"
    (("A100", "PCIE"), (), "A100 PCIe 40GB"),  # "NVIDIA A100-PCIE-40GB"
    (("A100", "80GB"), (), "A100 SXM4 80GB"),  # "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM-80GB"
    (("A100", "40GB"), (), "A100 SXM4 40GB"),  # "NVIDIA A100-SXM4-40GB"
    (("H100", "PCIE"), (), "H100 PCIe 80GB"),  # "NVIDIA H100 PCIe"
    (("H100", "NVL"), (), "H100 NVL 94GB"),  # "NVIDIA H100 NVL"
    (("H100", "80GB"), (), "H100 SXM5 80GB"),  # "NVIDIA H100 80GB HBM3"
    (("H200", "NVL"), (), "H200 NVL 141GB"),  # "NVIDIA H200 NVL"
    (("H200",), (), "H200 SXM 141GB"),  # "NVIDIA H200"
    (("B200",), (), "B200"),  # "NVIDIA B200"
    (("L40S",), (), "L40S"),  # "NVIDIA L40S"
    # "RTX 4090 D" (114 SMs) and the laptop part (a different chip) are other GPUs.
    (("RTX", "4090"), ("D", "LAPTOP", "MOBILE", "MAX"), "RTX 4090"),  # "NVIDIA GeForce RTX 4090"
]


def _tokens(device_name: str) -> list[str]:
    return re.sub(r"[-_]", " ", device_name.upper()).split()


def lookup_specs(device_name: str) -> GpuSpecs:
    """The datasheet entry for a torch / nvidia-smi device name; ``UnknownGpu`` if none matches."""
    tokens = set(_tokens(device_name))
    if "MIG" in tokens:
        # A MIG instance has a fraction of the SMs, L2 and bandwidth: the whole GPU's peaks would be wrong.
        raise UnknownGpu(
            f"{device_name!r} is a MIG slice, which has only part of the GPU's SMs, L2 and memory bandwidth, "
            f"so the datasheet peaks do not apply. {_how_to_proceed()}"
        )
    for required, forbidden, name in MATCH_RULES:
        if tokens.issuperset(required) and tokens.isdisjoint(forbidden):
            return GPU_SPECS[name]
    raise UnknownGpu(
        f"unknown GPU {device_name!r}: no datasheet entry matches it (known: {', '.join(GPU_SPECS)}). "
        f"{_how_to_proceed()}"
    )


def specs_from_file(path: str | Path) -> GpuSpecs:
    """User-given specs from a JSON object with GpuSpecs' fields (``source`` defaults to the file)."""
    path = Path(path).expanduser()
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object with the fields {', '.join(GpuSpecs.model_fields)}")
    data.setdefault("source", f"user-given specs file {path.resolve()}")
    return GpuSpecs.model_validate(data)
