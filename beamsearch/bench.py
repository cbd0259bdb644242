"""``python -m beamsearch.bench --problem P [--kernel K ...]``: eager, torch.compile and kernels, one method.

Each kernel is verified first and timed only if it passes. Every target is timed in its own child
process by the same clock (see ``workers/harness/clock.py``), in the same dtype, on the same seeded inputs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from beamsearch.cli_common import add_run_options, fail, require_files, resolve_run
from beamsearch.records.schema import BenchReport, BenchRow, RunSpec, Timing
from profiling.gpu_specs import UnknownGpu
from profiling.work import judge_time, problem_floor
from workers.harness.timing import BUILTIN_TARGETS, time_target
from workers.harness.verify import verify_kernel

BASELINE_LABELS = {"eager": "PyTorch eager", "compile": "torch.compile", "compile-max-autotune": "torch.compile max-autotune"}


def run_bench(problem: str, spec: RunSpec, kernels: list[str], baselines: list[str], console: Console | None) -> BenchReport:
    rows: list[BenchRow] = []

    def say(text: str) -> None:
        if console is not None:
            console.print(text, markup=False)

    for target in baselines:
        say(f"timing {BASELINE_LABELS[target]} ...")
        rows.append(BenchRow(label=BASELINE_LABELS[target], target=target, timing=time_target(spec, target)))
    for kernel in kernels:
        say(f"verifying {kernel} ...")
        verdict = verify_kernel(spec, kernel)
        timing = None
        if verdict.passed:
            say(f"timing {kernel} ...")
            timing = time_target(spec, kernel)
        rows.append(BenchRow(label=Path(kernel).name, target=kernel, verdict=verdict, timing=timing))
    return with_floor(BenchReport(problem=problem, spec=spec, rows=rows))


def with_floor(report: BenchReport) -> BenchReport:
    """Add the problem's floor, each row's % of floor, and flag rows faster than physics allows."""
    timed = [r.timing.timing for r in report.rows if r.timing and r.timing.timing]
    if not timed or not timed[0].on_gpu:
        return report.model_copy(update={"floor_note": "no floor for CPU times"})
    try:
        floor = problem_floor(report.spec, timed[0].device_name)
    except UnknownGpu as e:
        return report.model_copy(update={"floor_note": str(e).splitlines()[0]})
    rows = [
        row.model_copy(update=dict(zip(("pct_of_floor", "suspect"), judge_time(floor, row.ranked_ms), strict=True)))
        if row.ranked_ms
        else row
        for row in report.rows
    ]
    return report.model_copy(update={"rows": rows, "floor": floor})


def first_timing(report: BenchReport) -> Timing | None:
    """The first timing of the report: its device, method and whether it ran on a GPU."""
    return next((r.timing.timing for r in report.rows if r.timing and r.timing.timing), None)


def speedup(report: BenchReport, row: BenchRow, baseline: str) -> float | None:
    """The baseline's time over this row's (> 1 is faster); None on the CPU or when either is untimed."""
    t = first_timing(report)
    base_ms = next((r.ranked_ms for r in report.rows if r.target == baseline), None)
    if t is None or not t.on_gpu or base_ms is None or row.ranked_ms is None:
        return None
    return base_ms / row.ranked_ms


def render_report(report: BenchReport, console: Console) -> None:
    spec = report.spec
    timing = first_timing(report)
    on_gpu = bool(timing and timing.on_gpu)
    device = timing.device_name if timing else spec.device
    table = Table(title=f"{report.problem}\n{device}, {spec.dtype}, {spec.shapes} shapes", title_justify="left")
    for col in ("target", "status", "median ms", "min ms", "std ms", "n", "vs eager", "vs compile", "% of floor"):
        table.add_column(col, justify="left" if col in ("target", "status") else "right")
    for row in report.rows:
        status, t = row_status(row), row.timing.timing if row.timing and row.timing.timing else None
        cells = [f"{t.median_ms:.4f}", f"{t.min_ms:.4f}", f"{t.std_ms:.4f}", str(t.n)] if t else ["-"] * 4
        cells += [fmt_ratio(speedup(report, row, base)) for base in ("eager", "compile")]
        cells.append(fmt_pct(row.pct_of_floor))
        table.add_row(row.label, status, *cells)
    console.print(table)
    if report.floor is not None:
        f = report.floor
        console.print(
            f"floor {f.floor_ms:.4f} ms ({f.bound}-bound: {f.work.bytes_moved / 1e9:.3f} GB at {f.dram_gbps:.0f} GB/s, "
            f"{f.work.flops / 1e9:.2f} GFLOP at {f.tflops:.0f} TFLOP/s; {f.peaks_source})", style="dim", markup=False,
        )  # fmt: skip
    elif report.floor_note:
        console.print(f"no floor: {report.floor_note}", style="dim", markup=False)
    if timing:
        console.print(f"method: {timing.method}", style="dim")
    if not on_gpu:
        console.print(
            "CPU run: kernels ran in Triton's interpreter, so these times say nothing about GPU speed; "
            "ratios are shown only for GPU runs.", style="yellow",
        )  # fmt: skip
    for row in report.rows:
        if row.verdict is not None and not row.verdict.passed:
            console.print(f"{row.label}: {row.verdict.status}: {row.verdict.reason}", style="red", markup=False)
        elif row.timing is not None and row.timing.status != "ok":
            console.print(f"{row.label}: timing {row.timing.status}: {row.timing.reason}", style="red", markup=False)


def row_status(row: BenchRow) -> str:
    """The row's status as rich markup: ok, verified, the verdict's or timing's failure, or suspect."""
    if row.suspect:
        return "[red]suspect: faster than the floor[/]"
    if row.verdict is not None and not row.verdict.passed:
        return f"[red]{row.verdict.status}[/]"
    if row.timing is None or row.timing.status != "ok":
        return f"[red]{row.timing.status if row.timing else 'not timed'}[/]"
    return "[green]ok[/]" if row.verdict is None else "[green]verified[/]"


def fmt_ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def fmt_pct(pct: float | None) -> str:
    if pct is None:
        return "-"
    return f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.bench", description=__doc__)
    add_run_options(parser)
    parser.add_argument("--kernel", nargs="+", default=None, help="kernel files (default: the input kernel)")
    parser.add_argument(
        "--baselines", nargs="*", default=["eager", "compile"], choices=list(BUILTIN_TARGETS),
        help="PyTorch baselines to time (compile-max-autotune compiles for minutes)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    problem, spec = resolve_run(args)
    kernels = args.kernel or ([problem.input_kernel_path] if problem.input_kernel_path else [])
    if not kernels and not args.baselines:
        fail("nothing to time: the problem has no input_kernel.py and no --kernel or --baselines were given")
    require_files(kernels, "kernel file")
    console = Console(stderr=True) if args.json else Console()
    report = run_bench(problem.name, spec, kernels, args.baselines, console)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        render_report(report, console)
    failed = any(r.suspect or (r.verdict is not None and not r.verdict.passed) for r in report.rows)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
