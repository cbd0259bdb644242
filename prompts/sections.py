"""Records rendered as the plain-text sections of a prompt. Pure functions, no templates.

Numbers carry their units, and ncu metrics their raw names: a diagnosis cites metrics by those names.
"""

from __future__ import annotations

import difflib

from beamsearch.records.schema import Attempt, Bottleneck, Floor, Profile, Roofline, Verdict
from profiling.metrics import Metric, by_section
from profiling.peaks import Peaks
from profiling.roofline import pct_of_floor

TRACEBACK_LINES = 40  # the end of a traceback names the error; its start is the harness
DIFF_CHARS = 6000


def format_ms(ms: float | None) -> str:
    return "unknown" if ms is None else f"{ms:.4f} ms"


def format_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} bytes"


def format_peaks(peaks: Peaks) -> str:
    def source(field: str) -> str:
        return f" ({peaks.source[field]})" if field in peaks.source else ""

    lines = [
        f"GPU: {peaks.device_name}",
        f"- DRAM bandwidth: {peaks.dram_gbps:,.0f} GB/s{source('dram_gbps')}",
        f"- BF16 tensor-core rate: {peaks.bf16_tflops:,.0f} TFLOP/s{source('bf16_tflops')}",
        f"- FP32 CUDA-core rate: {peaks.fp32_tflops:,.1f} TFLOP/s{source('fp32_tflops')}",
        f"- SMs: {peaks.sm_count}",
        f"- L2 cache: {peaks.l2_bytes / 2**20:.0f} MiB",
    ]
    return "\n".join(lines)


def format_roofline(roofline: Roofline | None) -> str:
    if roofline is None:
        return "No roofline: the kernel has no profile."

    def pct(v: float | None) -> str:
        return "unknown" if v is None else f"{v:.1f} %"

    tensor = {None: "unknown (metric missing)", True: "used", False: "not used"}[roofline.tensor_cores_used]
    lines = [
        f"- Compute SOL (SM throughput): {pct(roofline.compute_sol_pct)}",
        f"- Memory SOL (busiest of DRAM, L1, L2): {pct(roofline.memory_sol_pct)}",
        f"- Class: {roofline.bottleneck} (underutilized when both SOLs are under "
        f"{roofline.underutilized_below_pct:.0f} %)",
        f"- At the roofline: {'yes' if roofline.at_roofline else 'no'} "
        f"(from {roofline.at_roofline_pct:.0f} % SOL)",
        f"- Tensor cores: {tensor}",
    ]
    lines += [f"- Warning: {w}" for w in roofline.warnings]
    return "\n".join(lines)


INTERPRETED = " (in Triton's interpreter on a CPU: compare it only with other times of this run, never with GPU numbers)"


def format_floor(floor: Floor | None, measured_ms: float | None, interpreted: bool = False) -> str:
    measured = f"Measured time: {format_ms(measured_ms)}" + (INTERPRETED if interpreted and measured_ms else "")
    if floor is None:
        return f"{measured}\nFloor: unknown."
    lines = [
        f"Floor: {floor.floor_ms:.4f} ms, {floor.bound}-bound "
        f"(memory: {format_bytes(floor.work.bytes_moved)} at {floor.dram_gbps:,.0f} GB/s = {floor.memory_ms:.4f} ms; "
        f"compute: {floor.work.flops / 1e9:,.2f} GFLOP at {floor.tflops:,.0f} TFLOP/s = {floor.compute_ms:.4f} ms)",
        measured,
    ]
    if measured_ms is not None and measured_ms > 0:
        lines.append(
            f"The kernel runs at {pct_of_floor(floor.floor_ms, measured_ms):.1f} % of the floor "
            "(100 % is the physical limit)."
        )
    return "\n".join(lines)


def format_performance(measured_ms: float | None, floor: Floor | None, interpreted: bool = False) -> str:
    """One line: the time, and where it stands against the floor; ``interpreted``: a CPU run's time."""
    line = f"Measured time: {format_ms(measured_ms)}" + (INTERPRETED if interpreted and measured_ms else "")
    if floor is not None:
        line += f"; floor {floor.floor_ms:.4f} ms ({floor.bound}-bound)"
        if measured_ms:
            line += f", so the kernel runs at {pct_of_floor(floor.floor_ms, measured_ms):.1f} % of the floor"
    return line + "."


def format_metric_value(metric: Metric, value: float | None) -> str:
    if value is None:
        return "not reported"
    if metric.unit == "%":
        return f"{value:.2f} %"
    if metric.unit == "ns":
        return f"{value:,.0f} ns ({value / 1e6:.4f} ms)"
    if metric.unit == "byte":
        return f"{value:,.0f} bytes ({format_bytes(value)})"
    if metric.unit == "byte/second":
        return f"{value / 1e9:,.1f} GB/s"
    number = f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 1000 else f"{value:.4g}"
    return f"{number} {metric.unit}"


def format_metrics(profile: Profile | None) -> str:
    if profile is None or not profile.available:
        reason = profile.reason if profile is not None else "the kernel was not profiled"
        return f"No Nsight Compute profile: {reason}. Diagnose from the sources and the times above."
    lines = []
    if len(profile.kernels) > 1:
        lines.append(
            f"kernel_function launches {len(profile.kernels)} Triton kernels; the metrics below combine them "
            "(counts summed, rates and percentages weighted by kernel time):"
        )
    else:
        lines.append("Triton kernel profiled:")
    for k in profile.kernels:
        shape = f", grid {k.grid}, block {k.block}" if k.grid or k.block else ""
        lines.append(f"- {k.name}: {k.launches} launch(es){shape}")
    if profile.ignored_kernels:
        lines.append(f"Not counted (PyTorch's own kernels in the call): {', '.join(profile.ignored_kernels)}")
    for section, items in by_section(profile.combined).items():
        lines += ["", f"{section}:"]
        lines += [f"- {m.label}: {format_metric_value(m, v)} [{m.key}]" for m, v in items]
    return "\n".join(lines)


def format_bottleneck(b: Bottleneck) -> str:
    lines = [f"Category: {b.category}", f"Summary: {b.summary}"]
    if b.reasoning:
        lines.append(f"Reasoning: {b.reasoning}")
    if b.root_causes:
        lines.append("Root causes:")
        for i, rc in enumerate(b.root_causes, 1):
            lines.append(f"{i}. {rc.cause}")
            for e in rc.evidence:
                value = "" if e.value is None else f" = {_number(e.value)}"
                note = f": {e.interpretation}" if e.interpretation else ""
                lines.append(f"   - {e.metric}{value}{note}")
    if b.recommended_fixes:
        lines.append("Recommended fixes:")
        for i, f in enumerate(b.recommended_fixes, 1):
            lines.append(f"{i}. {f.fix}" + (f" (why: {f.rationale})" if f.rationale else ""))
    return "\n".join(lines)


def format_attempts(attempts: list[Attempt], limit: int) -> str:
    """The most recent ``limit`` attempts, oldest first."""
    if not attempts or limit <= 0:
        return "None yet."
    recent = attempts[-limit:]
    lines = []
    if len(attempts) > len(recent):
        lines.append(f"({len(attempts) - len(recent)} older attempts not shown)")
    for i, a in enumerate(recent, 1):
        lines.append(f"{i}. [{a.kernel_hash}] {a.note or '(no description)'}")
        lines.append(f"   Outcome: {a.outcome}")
        if a.lesson:
            lines.append(f"   Lesson: {a.lesson}")
    return "\n".join(lines)


def format_verdict(verdict: Verdict) -> str:
    lines = [f"Status: {verdict.status}", f"Reason: {verdict.reason}"]
    failed = [c for c in verdict.checks if not c.passed]
    if failed:
        lines.append("Failing checks:")
        lines += [f"- {c.name}" + (f": {c.detail}" if c.detail else "") for c in failed]
    if verdict.max_abs_err is not None:
        errs = f"Largest error: {verdict.max_abs_err:.4g} absolute"
        if verdict.max_rel_err is not None:
            errs += f", {verdict.max_rel_err:.4g} relative"
        if verdict.tolerance is not None:
            errs += f" (allowed: atol {verdict.tolerance.atol:g} + rtol {verdict.tolerance.rtol:g} * |ref|)"
        lines.append(errs)
    if verdict.traceback.strip():
        tail = verdict.traceback.strip().splitlines()[-TRACEBACK_LINES:]
        lines += ["Traceback (last lines):", *tail]
    return "\n".join(lines)


def format_outcome(parent_ms: float | None, child_ms: float | None, verdict: Verdict | None) -> str:
    """What became of a child kernel: its failure, or its time against the parent's."""
    if verdict is not None and not verdict.passed:
        return f"The new kernel failed verification ({verdict.status}): {verdict.reason}"
    if child_ms is None:
        return "The new kernel passed verification but has no time."
    line = f"The new kernel takes {format_ms(child_ms)} against the parent's {format_ms(parent_ms)}"
    if parent_ms is not None and child_ms > 0:
        line += f": {parent_ms / child_ms:.3f}x the parent's speed"
    return line + "."


def format_diff(parent_source: str, child_source: str) -> str:
    if not parent_source and not child_source:
        return "(sources not given)"
    diff = "".join(
        difflib.unified_diff(
            _lines(parent_source),
            _lines(child_source),
            fromfile="parent.py",
            tofile="child.py",
        )
    )
    if not diff:
        return "(no change)"
    if len(diff) > DIFF_CHARS:
        diff = diff[:DIFF_CHARS] + f"\n... ({len(diff) - DIFF_CHARS} more characters of diff not shown)\n"
    return diff


def _lines(source: str) -> list[str]:
    # A last line without "\n" would run into the next line of the diff.
    return [line if line.endswith("\n") else line + "\n" for line in source.splitlines(keepends=True)]


def _number(value: float | str) -> str:
    # JSON gives 7286447360 back as 7286447360.0 at times; the ".0" is noise.
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
