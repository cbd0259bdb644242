"""Measured ceilings of a GPU, cached per GPU, and the peaks the roofline uses.

``python -m profiling.peaks [--device cuda:N] [--json] [--specs FILE]`` measures on the GPU:

- DRAM bandwidth: ``dst.copy_(src)`` of two 2 GiB random fp32 buffers (far larger than any L2), bytes
  read + bytes written over the time;
- BF16 tensor-core rate: an 8192^3 ``torch.matmul``, 2*M*N*K FLOPs over the time;
- FP32 CUDA-core rate: the same matmul in fp32 with TF32 off.

Each is the median of CUDA-event times per call, after a warm-up long enough for clocks to ramp, under
the per-GPU lock (``workers.harness.gpu_lock``) so nothing else shares the GPU meanwhile.
Results are cached as JSON in ``$BEAMSEARCH_CACHE_DIR/peaks/<device slug>.json`` (default
``~/.cache/beamsearch``). ``effective_peaks`` prefers these measured ceilings over the datasheet
(a kernel is judged against what the GPU can actually reach) and takes the rest from the datasheet,
naming the origin of every number.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from beamsearch.records.schema import Record
from profiling.gpu_specs import GpuSpecs, UnknownGpu, lookup_specs, specs_from_file

logger = logging.getLogger(__name__)

GIB = 2**30
COPY_BYTES = 2 * GIB  # per buffer; two buffers
MIN_COPY_BYTES = 256 * 2**20  # below this an L2 of 100+ MB would flatter the copy
MATMUL_N = 8192
WARMUP_S = 0.5  # lets an idle GPU's clocks ramp up before the timed calls
REP_S = 1.0
MIN_REPS, MAX_REPS = 10, 200
DEFAULT_CACHE_DIR = "~/.cache/beamsearch"


class MeasuredPeaks(Record):
    device_name: str
    copy_gbps: float  # device-to-device copy: (bytes read + bytes written) / s / 1e9
    read_gbps: float = 0.0  # read-only stream (a sum over a large tensor): bytes read / s / 1e9; 0 if not measured
    bf16_tflops: float  # bf16 matmul, 2*M*N*K / s / 1e12
    fp32_tflops: float  # fp32 matmul with TF32 off
    torch_version: str
    measured_at: str  # ISO 8601, UTC
    method: str


class Peaks(Record):
    """The ceilings a roofline uses; ``source`` names, per field, where its number came from."""

    device_name: str
    dram_gbps: float
    bf16_tflops: float
    fp16_tflops: float
    fp32_tflops: float
    tf32_tflops: float
    fp8_tflops: float | None
    sm_count: int
    l2_bytes: int
    source: dict[str, str]


# ----------------------------------------------------------------------------------------------- cache


def cache_dir() -> Path:
    return Path(os.environ.get("BEAMSEARCH_CACHE_DIR") or DEFAULT_CACHE_DIR).expanduser() / "peaks"


def device_slug(device_name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"nvidia-h100-80gb-hbm3"``."""
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "unknown"


def cache_path(device_name: str) -> Path:
    return cache_dir() / f"{device_slug(device_name)}.json"


def save_peaks(measured: MeasuredPeaks) -> Path:
    """Write the measurement to the cache atomically (a reader never sees half a file)."""
    path = cache_path(measured.device_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(measured.model_dump_json(indent=2))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    logger.info("cached measured peaks of %s in %s", measured.device_name, path)
    return path


def load_cached_peaks(device_name: str) -> MeasuredPeaks | None:
    """The cached measurement for this device name, or None (none, unreadable, or another device's)."""
    path = cache_path(device_name)
    if not path.is_file():
        return None
    try:
        measured = MeasuredPeaks.model_validate_json(path.read_text())
    except (OSError, ValueError) as e:
        logger.warning("ignoring unreadable peaks cache %s: %s", path, e)
        return None
    if measured.device_name != device_name:  # two names that slug alike
        logger.warning(
            "ignoring peaks cache %s: it is for %r, not %r", path, measured.device_name, device_name
        )
        return None
    return measured


# ------------------------------------------------------------------------------------------ measuring


def measure_peaks(device: str = "cuda") -> MeasuredPeaks:
    """Measure copy bandwidth and bf16/fp32 matmul rates on ``device`` (a CUDA GPU). Does not cache."""
    import torch

    from workers.harness.gpu_lock import gpu_lock

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU is visible: peaks can only be measured on a GPU")
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"device {device!r}: peaks are measured on a CUDA device (cuda or cuda:N)")
    dev = torch.device("cuda", torch.cuda.current_device() if dev.index is None else dev.index)
    name = torch.cuda.get_device_name(dev)
    started = time.perf_counter()
    with gpu_lock(str(dev)) as waited_s, torch.cuda.device(dev):
        if waited_s > 1.0:
            logger.info("waited %.1f s for the GPU lock", waited_s)
        generator = torch.Generator(device=dev).manual_seed(0)
        copy_gbps, copy_note = _copy_gbps(dev, generator)
        read_gbps, read_note = _read_gbps(dev, generator)
        bf16_tflops, bf16_note = _matmul_tflops(dev, torch.bfloat16, generator)
        with _tf32_off():
            fp32_tflops, fp32_note = _matmul_tflops(dev, torch.float32, generator)
    torch.cuda.empty_cache()
    logger.info("measured peaks of %s in %.1f s", name, time.perf_counter() - started)
    method = (
        f"copy: {copy_note}; read: {read_note}; bf16: {bf16_note}; fp32 (TF32 off): {fp32_note}. Each: median of CUDA-event "
        f"times per call, after >= {WARMUP_S} s of warm-up calls, random inputs (seed 0), under the "
        "per-GPU lock"
    )
    return MeasuredPeaks(
        device_name=name,
        copy_gbps=copy_gbps,
        read_gbps=read_gbps,
        bf16_tflops=bf16_tflops,
        fp32_tflops=fp32_tflops,
        torch_version=torch.__version__,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        method=method,
    )


def _copy_gbps(dev: Any, generator: Any) -> tuple[float, str]:
    import torch

    free_bytes, _ = torch.cuda.mem_get_info(dev)
    nbytes = min(COPY_BYTES, free_bytes // 4) // (4 * 2**20) * (4 * 2**20)  # both buffers, with room to spare
    if nbytes < MIN_COPY_BYTES:
        raise RuntimeError(
            f"only {free_bytes / GIB:.2f} GiB free on {dev}: too little for a copy that misses L2"
        )
    src = torch.rand(nbytes // 4, dtype=torch.float32, device=dev, generator=generator)
    dst = torch.empty_like(src)
    times_ms = _time_calls(lambda: dst.copy_(src))
    median_ms = statistics.median(times_ms)
    gbps = 2 * nbytes / (median_ms * 1e-3) / 1e9  # every byte is read once and written once
    return (
        gbps,
        f"dst.copy_(src), {nbytes / GIB:.2f} GiB fp32 each, (read + written bytes) / time, n={len(times_ms)}",
    )


def _read_gbps(dev: Any, generator: Any) -> tuple[float, str]:
    """A read-only stream runs faster than a copy (no read/write turnaround): a floor needs both."""
    import torch

    free_bytes, _ = torch.cuda.mem_get_info(dev)
    nbytes = min(COPY_BYTES, free_bytes // 4) // (4 * 2**20) * (4 * 2**20)
    src = torch.rand(nbytes // 4, dtype=torch.float32, device=dev, generator=generator)
    out = torch.empty((), dtype=torch.float32, device=dev)
    times_ms = _time_calls(lambda: torch.sum(src, dim=0, out=out))
    median_ms = statistics.median(times_ms)
    return nbytes / (median_ms * 1e-3) / 1e9, f"torch.sum over {nbytes / GIB:.2f} GiB fp32, bytes read / time, n={len(times_ms)}"


def _matmul_tflops(dev: Any, dtype: Any, generator: Any) -> tuple[float, str]:
    import torch

    n = MATMUL_N
    a = torch.randn(n, n, dtype=dtype, device=dev, generator=generator)
    b = torch.randn(n, n, dtype=dtype, device=dev, generator=generator)
    out = torch.empty(n, n, dtype=dtype, device=dev)
    times_ms = _time_calls(lambda: torch.matmul(a, b, out=out))
    median_ms = statistics.median(times_ms)
    tflops = 2 * n**3 / (median_ms * 1e-3) / 1e12
    return (
        tflops,
        f"torch.matmul {n}x{n} @ {n}x{n} {str(dtype).removeprefix('torch.')}, 2*M*N*K FLOPs, n={len(times_ms)}",
    )


def _time_calls(fn: Callable[[], Any]) -> list[float]:
    """Per-call GPU times (ms) by CUDA events, after a time-budgeted warm-up."""
    import torch

    fn()  # first call: cuBLAS handle and workspace, allocator
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    estimate_s = max(time.perf_counter() - t0, 1e-5)
    for _ in range(_clamp(WARMUP_S / estimate_s, 1, 10_000)):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(_clamp(REP_S / estimate_s, MIN_REPS, MAX_REPS))]  # fmt: skip
    # Calls queue back to back (each takes milliseconds), so the GPU stays busy and its clocks up.
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in events]


@contextlib.contextmanager
def _tf32_off() -> Iterator[None]:
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # else the "fp32" matmul runs on tensor cores in TF32
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


def _clamp(x: float, lo: int, hi: int) -> int:
    return int(max(lo, min(hi, round(x))))


# ------------------------------------------------------------------------------------ effective peaks


def effective_peaks(device_name: str, specs: GpuSpecs | None = None) -> Peaks:
    """Measured ceilings where cached, datasheet for the rest; ``UnknownGpu`` if neither exists.

    ``specs`` overrides the datasheet lookup (e.g. from ``specs_from_file``). Measured bf16 does not stand
    in for fp16 on a known GPU: fp16, tf32 and fp8 stay datasheet numbers.
    """
    lookup_error: UnknownGpu | None = None
    if specs is None:
        try:
            specs = lookup_specs(device_name)
        except UnknownGpu as e:
            lookup_error = e
    measured = load_cached_peaks(device_name)
    if specs is None:
        if measured is None:
            assert lookup_error is not None
            raise lookup_error
        return _measured_only(device_name, measured)

    sheet = f"datasheet: {specs.source}"
    src = dict.fromkeys(("dram_gbps", "bf16_tflops", "fp16_tflops", "fp32_tflops", "tf32_tflops",
                         "fp8_tflops", "sm_count", "l2_bytes"), sheet)  # fmt: skip
    values: dict[str, Any] = {
        "dram_gbps": specs.dram_gbps,
        "bf16_tflops": specs.bf16_tflops,
        "fp16_tflops": specs.fp16_tflops,
        "fp32_tflops": specs.fp32_tflops,
        "tf32_tflops": specs.tf32_tflops,
        "fp8_tflops": specs.fp8_tflops,
        "sm_count": specs.sm_count,
        "l2_bytes": specs.l2_bytes,
    }
    if measured is not None:
        tag = _measured_tag(measured)
        for field, value in _measured_values(measured).items():
            values[field], src[field] = value, tag
    return Peaks(device_name=device_name, source=src, **values)


def _measured_tag(measured: MeasuredPeaks) -> str:
    return f"measured {measured.measured_at[:10]}"


def _measured_values(measured: MeasuredPeaks) -> dict[str, float]:
    # The floor is a lower bound on time, so the DRAM ceiling is the faster of the two measured streams.
    return {
        "dram_gbps": max(measured.copy_gbps, measured.read_gbps),
        "bf16_tflops": measured.bf16_tflops,
        "fp32_tflops": measured.fp32_tflops,
    }


def _measured_only(device_name: str, measured: MeasuredPeaks) -> Peaks:
    """An unknown GPU with a measurement: measured numbers, the rest derived or read from the device."""
    tag = _measured_tag(measured)
    values: dict[str, Any] = dict(_measured_values(measured))
    src = dict.fromkeys(values, tag)
    # Dense BF16 and FP16 (FP32 accumulate) tensor rates are equal, and TF32 is half of them, on every
    # NVIDIA GPU from Ampere to Blackwell; derived numbers say so in their source.
    values["fp16_tflops"] = measured.bf16_tflops
    src["fp16_tflops"] = f"derived: {tag} bf16 (fp16 and bf16 tensor rates are equal on Ampere..Blackwell)"
    values["tf32_tflops"] = measured.bf16_tflops / 2
    src["tf32_tflops"] = f"derived: {tag} bf16 / 2 (tf32 tensor rate is half bf16 on Ampere..Blackwell)"
    values["fp8_tflops"] = None
    src["fp8_tflops"] = "unknown: not measured and no datasheet entry"
    props = _device_properties(device_name)
    if props is not None:
        values["sm_count"], values["l2_bytes"] = props
        src["sm_count"] = src["l2_bytes"] = "torch.cuda.get_device_properties"
    else:
        values["sm_count"], values["l2_bytes"] = 0, 0
        src["sm_count"] = src["l2_bytes"] = "unknown: no datasheet entry and no such GPU visible here"
    return Peaks(device_name=device_name, source=src, **values)


def _device_properties(device_name: str) -> tuple[int, int] | None:
    """(SM count, L2 bytes) of a visible GPU with this name, or None."""
    import torch

    if not torch.cuda.is_available():
        return None
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        if props.name == device_name:
            return props.multi_processor_count, props.L2_cache_size
    return None


# ------------------------------------------------------------------------------------------------ CLI


def render_comparison(measured: MeasuredPeaks, specs: GpuSpecs | None, console: Console) -> None:
    table = Table(title=f"{measured.device_name}: measured vs datasheet", title_justify="left")
    for col in ("ceiling", "measured", "datasheet", "measured / datasheet"):
        table.add_column(col, justify="left" if col == "ceiling" else "right")
    rows = [
        ("DRAM bandwidth (copy), GB/s", measured.copy_gbps, specs.dram_gbps if specs else None),
        ("DRAM bandwidth (read), GB/s", measured.read_gbps, specs.dram_gbps if specs else None),
        ("BF16 matmul, TFLOPS", measured.bf16_tflops, specs.bf16_tflops if specs else None),
        ("FP32 matmul (TF32 off), TFLOPS", measured.fp32_tflops, specs.fp32_tflops if specs else None),
    ]
    for label, got, sheet in rows:
        ratio = f"{got / sheet:.0%}" if sheet else "-"
        table.add_row(label, f"{got:,.1f}", f"{sheet:,.1f}" if sheet else "-", ratio)
    console.print(table)
    console.print(f"method: {measured.method}", style="dim", markup=False)
    console.print(
        f"datasheet: {specs.source}" if specs else "datasheet: none for this GPU", style="dim", markup=False
    )


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m profiling.peaks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--device", default="cuda", help="cuda or cuda:N")
    parser.add_argument(
        "--specs", default=None, help="JSON file of the GPU's datasheet specs (for a GPU we do not know)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not _has_gpu():
        _fail("no CUDA GPU is visible here: peaks are measured on the GPU (datasheet numbers: profiling.gpu_specs)")
    console = Console(stderr=True) if args.json else Console()
    specs: GpuSpecs | None = specs_from_file(args.specs) if args.specs else None
    console.print(f"measuring {args.device} (about 5 s) ...", markup=False)
    try:
        measured = measure_peaks(args.device)
    except (RuntimeError, ValueError) as e:
        _fail(str(e))
    path = save_peaks(measured)
    if specs is None:
        try:
            specs = lookup_specs(measured.device_name)
        except UnknownGpu as e:
            console.print(str(e), style="yellow", markup=False)
    peaks = effective_peaks(measured.device_name, specs)
    if args.json:
        report = {
            "measured": measured.model_dump(),
            "datasheet": specs.model_dump() if specs else None,
            "peaks": peaks.model_dump(),
            "cache_path": str(path),
        }
        print(json.dumps(report, indent=2))
    else:
        render_comparison(measured, specs, console)
        console.print(f"cached in {path}", style="dim", markup=False)


if __name__ == "__main__":
    main()
