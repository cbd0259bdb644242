"""Reproduce the artifact tables: each problem's baselines and kernels verified and timed by one clock.

    python scripts/benchmark.py [problem ...] [--json out.json] [--markdown out.md]
                                [--device auto] [--shapes auto] [--dtype bf16] [--targets T ...]

Per problem (default: every bundled problem in artifacts/; a name, unique prefix or folder each):
PyTorch eager, torch.compile (default mode), torch.compile(mode="max-autotune-no-cudagraphs"), the
problem's input_kernel.py and, where the folder has one, its optimized_kernel_beam_search.py.
``--targets`` picks among eager, compile, compile-max-autotune, input, optimized (default: all;
max-autotune compiles for minutes). Kernels are verified first and timed only if they pass, all targets
in child processes by the same clock (``beamsearch.bench.run_bench``). One progress line per problem,
then one table: speedups vs eager and vs torch.compile (GPU runs only: CPU times are the interpreter's)
and % of the problem's floor. Exit status 1 if a kernel failed verification or beat its floor.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from beamsearch.bench import (
    first_timing,
    fmt_pct,
    fmt_ratio,
    row_status,
    run_bench,
    speedup,
)
from beamsearch.cli_common import resolve_run
from beamsearch.records.problems import bundled_problem_names
from beamsearch.records.schema import BenchReport, BenchRow, Record
from beamsearch.trace import BEST_KERNEL_FILE
from workers.harness.environment import environment
from workers.harness.timing import BUILTIN_TARGETS

KERNEL_TARGETS = {"input": "input kernel", "optimized": "optimized kernel"}
TARGETS = (*BUILTIN_TARGETS, *KERNEL_TARGETS)


class BenchmarkRun(Record):
    """What ``--json`` writes: the environment and one bench report per problem."""

    environment: dict[str, str]
    targets: list[str]
    reports: list[BenchReport]
    seconds: dict[str, float] = {}


def bench_problem(name: str, args: argparse.Namespace) -> tuple[BenchReport, list[str]]:
    """One problem's report (kernel rows labelled 'input kernel' / 'optimized kernel') and its notes."""
    problem, spec = resolve_run(argparse.Namespace(problem=name, device=args.device, shapes=args.shapes, dtype=args.dtype))
    folder = Path(problem.problem_path).parent
    found = {"input": problem.input_kernel_path, "optimized": str(folder / BEST_KERNEL_FILE)}
    labels, notes = {}, []
    for target, label in KERNEL_TARGETS.items():
        path = found[target]
        if target not in args.targets:
            continue
        if path and Path(path).is_file():
            labels[path] = label
        else:
            notes.append(f"no {label}")
    baselines = [t for t in BUILTIN_TARGETS if t in args.targets]
    report = run_bench(problem.name, spec, list(labels), baselines, console=None)
    rows = [r.model_copy(update={"label": labels[r.target]}) if r.target in labels else r for r in report.rows]
    return report.model_copy(update={"rows": rows}), notes


def progress_line(i: int, n: int, report: BenchReport, notes: list[str], seconds: float) -> str:
    parts = [f"{row.label} {_short_result(row)}" for row in report.rows] + notes
    return f"[{i}/{n}] {report.problem} ({seconds:.0f} s): " + ", ".join(parts)


def _short_result(row: BenchRow) -> str:
    if row.verdict is not None and not row.verdict.passed:
        return row.verdict.status
    if row.ranked_ms is None:
        return row.timing.status if row.timing else "not timed"
    return f"{row.ranked_ms:.4f} ms" + (" (suspect)" if row.suspect else "")


def render(run: BenchmarkRun, console: Console) -> None:
    env = run.environment
    table = Table(title=f"benchmark: {env.get('gpu', '?')}", title_justify="left")
    for col in ("problem", "target", "status", "median ms", "min ms", "n", "vs eager", "vs torch.compile", "% of floor"):
        table.add_column(col, justify="left" if col in ("problem", "target", "status") else "right")
    for report in run.reports:
        for i, row in enumerate(report.rows):
            t = row.timing.timing if row.timing and row.timing.timing else None
            cells = [f"{t.median_ms:.4f}", f"{t.min_ms:.4f}", str(t.n)] if t else ["-"] * 3
            cells += [fmt_ratio(speedup(report, row, base)) for base in ("eager", "compile")]
            table.add_row(escape(report.problem) if i == 0 else "", escape(row.label), row_status(row), *cells,
                          fmt_pct(row.pct_of_floor))  # fmt: skip
        table.add_section()
    console.print(table)
    console.print(_environment_line(env, run.reports), style="dim", markup=False)
    for report in run.reports:
        if report.floor is not None:
            f = report.floor
            console.print(f"{report.problem}: floor {f.floor_ms:.4f} ms ({f.bound}-bound; {f.peaks_source})",
                          style="dim", markup=False)  # fmt: skip
        for row in report.rows:
            if row.verdict is not None and not row.verdict.passed:
                console.print(f"{report.problem} {row.label}: {row.verdict.status}: {row.verdict.reason}", style="red", markup=False)
            elif row.timing is not None and row.timing.status != "ok":
                console.print(f"{report.problem} {row.label}: timing {row.timing.status}: {row.timing.reason}", style="red", markup=False)
    if not any((t := first_timing(r)) and t.on_gpu for r in run.reports):
        console.print("CPU run: kernels ran in Triton's interpreter, so these times say nothing about GPU speed; "
                      "ratios and floors are shown only for GPU runs.", style="yellow")  # fmt: skip


def markdown(run: BenchmarkRun) -> str:
    """The table as committed to artifacts/README.md: one row per target, ratios from the same run."""
    lines = [
        _environment_line(run.environment, run.reports),
        "",
        "| problem | target | median ms | min ms | std ms | n | vs eager | vs torch.compile | % of floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for report in run.reports:
        for row in report.rows:
            t = row.timing.timing if row.timing and row.timing.timing else None
            if t is None or row.ranked_ms is None:
                why = (f"{row.verdict.status}: {row.verdict.reason}" if row.verdict is not None and not row.verdict.passed
                       else f"{row.timing.status}: {row.timing.reason}" if row.timing else "not timed")  # fmt: skip
                lines.append(f"| {report.problem} | {row.label} | {_cell(why)} | | | | | | |")
                continue
            ratios = " | ".join(fmt_ratio(speedup(report, row, base)) for base in ("eager", "compile"))
            suspect = " (suspect)" if row.suspect else ""
            lines.append(f"| {report.problem} | {row.label} | {t.median_ms:.3f}{suspect} | {t.min_ms:.3f} | "
                         f"{t.std_ms:.3f} | {t.n} | {ratios} | {fmt_pct(row.pct_of_floor)} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _environment_line(env: dict[str, str], reports: list[BenchReport]) -> str:
    specs = {(r.spec.dtype, r.spec.shapes) for r in reports}
    how = ", ".join(f"{d}, {s} shapes" for d, s in sorted(specs))
    method = next((t.method for r in reports if (t := first_timing(r))), "")
    gpu = env.get("gpu") or "?"
    parts = ["CPU (Triton's interpreter)" if gpu == "cpu" else f"GPU {gpu}", f"driver {env.get('driver') or '-'}", f"CUDA {env.get('cuda') or '-'}",
             f"torch {env.get('torch', '?')}", f"triton {env.get('triton', '?')}", f"python {env.get('python', '?')}", how]  # fmt: skip
    return "; ".join(parts) + (f". Method: {method}." if method else ".")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")[:200]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="scripts/benchmark.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("problems", nargs="*", help="bundled names, unique prefixes or folders (default: all bundled)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, or auto (cuda if there is a GPU)")
    parser.add_argument("--shapes", default="auto", choices=["auto", "full", "small"])
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS, metavar="TARGET",
                        help=f"what to time, of {', '.join(TARGETS)} (default: all)")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="write every report and the environment here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the table as markdown here")
    args = parser.parse_args(argv)
    names = args.problems or bundled_problem_names()
    console = Console() if sys.stdout.isatty() else Console(width=160)  # logs: no wrapped columns
    reports, seconds, env = [], {}, None
    for i, name in enumerate(names, start=1):
        start = time.perf_counter()
        with console.status(f"[{i}/{len(names)}] {escape(name)}: verifying and timing ..."):
            report, notes = bench_problem(name, args)
        seconds[report.problem] = time.perf_counter() - start
        console.print(progress_line(i, len(names), report, notes, seconds[report.problem]), markup=False)
        reports.append(report)
        env = env or environment(report.spec.device)
    run = BenchmarkRun(environment=env or {}, targets=args.targets, reports=reports, seconds=seconds)
    if args.json:
        args.json.write_text(run.model_dump_json(indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(run))
    render(run, console)
    failed = any(r.suspect or (r.verdict is not None and not r.verdict.passed) for rep in reports for r in rep.rows)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
