"""``python -m beamsearch.bench --problem P [--kernel K]...``: eager, torch.compile and kernels, one method.

Each kernel is verified first and timed only if it passes; exit 1 when one fails either, or its time is
suspect (docs/cli.md). Every target is timed in its own child
process by the same clock (see ``workers/harness/clock.py``), in the same dtype, on the same seeded inputs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from beamsearch.cli_common import add_run_options, comma_list, fail, finish, require_files, resolve_run
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


def render_report(report: BenchReport, console: Console, *, with_failures: bool = True) -> None:
    """The table, the floor and the method; with ``with_failures`` each failure's reason below it in red."""
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
    for failure in failures(report) if with_failures else []:
        console.print(failure, style="red", markup=False)


def failures(report: BenchReport) -> list[str]:
    """One line per row that failed: its verdict, its timing (a failed check, a crash, a timeout), or a time
    faster than the floor allows. A baseline that could not be timed counts too: it was asked for."""
    out = []
    for row in report.rows:
        if row.verdict is not None and not row.verdict.passed:
            out.append(f"{row.target}: {row.verdict.status}: {row.verdict.reason}")
        elif row.timing is not None and row.timing.status != "ok":
            out.append(f"{row.target}: timing {row.timing.status}: {row.timing.reason}")
        elif row.suspect and report.floor is not None:
            out.append(f"{row.target}: suspect: {row.ranked_ms:.4f} ms, under the floor's {report.floor.floor_ms:.4f} ms: "
                       "faster than physics allows")  # fmt: skip
    return out


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.bench", description=__doc__)
    add_run_options(parser)
    # One file per --kernel, as in run, verify and profile; repeated for more (a path may hold a comma).
    parser.add_argument("--kernel", action="append", default=None, metavar="K",
                        help="a kernel file; repeat for more (default: the problem's input_kernel.py)")  # fmt: skip
    parser.add_argument(
        "--baselines", type=comma_list(BUILTIN_TARGETS), default=["eager", "compile"],
        help=f"comma-separated, as in run: {', '.join(BUILTIN_TARGETS)} (empty string: none; default eager,compile; "
        "compile-max-autotune compiles for minutes)",
    )  # fmt: skip
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
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
        render_report(report, console, with_failures=False)  # said once, on stderr
    finish(failures(report))


if __name__ == "__main__":
    main()
