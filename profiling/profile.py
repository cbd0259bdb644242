"""Where a kernel's time goes, and how far from physics (the command: ``python -m beamsearch.profile``).

Times the kernel (the bench clock), profiles one call with Nsight Compute (its own Triton kernels only),
classifies it on the roofline, and sets the measured time against the problem's analytic floor. The
kernel is not verified here: use ``python -m beamsearch.verify`` first.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from beamsearch.records.schema import Floor, Profile, Record, Roofline, RunSpec, TimingResult
from profiling.gpu_specs import UnknownGpu
from profiling.metrics import by_section
from profiling.ncu import profile_kernel
from profiling.roofline import classify
from profiling.work import judge_time, problem_floor
from workers.harness.timing import time_target


class KernelReport(Record):
    problem: str
    kernel_path: str
    timing: TimingResult
    profile: Profile
    roofline: Roofline | None = None
    floor: Floor | None = None
    floor_note: str = ""
    pct_of_floor: float | None = None
    suspect: bool = False


def report_kernel(problem: str, spec: RunSpec, kernel_path: str) -> KernelReport:
    timing = time_target(spec, kernel_path)
    profile = profile_kernel(spec, kernel_path)
    roofline = classify(profile.combined) if profile.available else None
    floor, note, pct, suspect = None, "", None, False
    if timing.timing is None or not timing.timing.on_gpu:
        note = "no GPU timing"
    else:
        try:
            floor = problem_floor(spec, timing.timing.device_name)
            pct, suspect = judge_time(floor, timing.timing.median_ms)
        except UnknownGpu as e:
            note = str(e).splitlines()[0]
    return KernelReport(problem=problem, kernel_path=kernel_path, timing=timing, profile=profile, roofline=roofline,
                        floor=floor, floor_note=note, pct_of_floor=pct, suspect=suspect)  # fmt: skip


def render(report: KernelReport, console: Console) -> None:
    t = report.timing.timing
    console.print(f"[bold]{report.problem}[/]  {report.kernel_path}")
    console.print(f"time: {t.median_ms:.4f} ms median ({t.device_name})" if t else f"time: {report.timing.reason}")
    if report.floor:
        f = report.floor
        console.print(f"floor: {f.floor_ms:.4f} ms ({f.bound}-bound), {report.pct_of_floor:.0f}% of floor"
                      + ("  [red]SUSPECT: faster than the floor[/]" if report.suspect else ""))  # fmt: skip
    p = report.profile
    if not p.available:
        console.print(f"[yellow]no profile[/]: {p.reason}")
        return
    r = report.roofline
    console.print(f"roofline: {r.bottleneck}-bound, compute SOL {r.compute_sol_pct}%, memory SOL {r.memory_sol_pct}%, "
                  f"tensor cores {'yes' if r.tensor_cores_used else 'no'}; ncu {p.duration_s:.1f} s, "
                  f"kernels {', '.join(k.name for k in p.kernels)}")  # fmt: skip
    for warning in r.warnings:
        console.print(f"[yellow]warning[/]: {warning}")
    table = Table(show_header=True)
    table.add_column("section")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("unit")
    for section, items in by_section(p.combined).items():
        for metric, value in items:
            table.add_row(section, metric.label, "n/a" if value is None else f"{value:,.2f}", metric.unit)
            section = ""
    console.print(table)
