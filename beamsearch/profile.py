"""``python -m beamsearch.profile --problem P [--kernel K]``: where a kernel's time goes, and how far from
physics (``profiling.profile``): the bench clock's time, one ncu profile of the kernel's own Triton
kernels, the roofline class and the problem's analytic floor. The kernel is not verified here: use
``python -m beamsearch.verify`` first. Exit 1 when its timing failed, its time is suspect (faster than the
floor) or no profile could be taken (docs/cli.md).
"""

from __future__ import annotations

import argparse

from rich.console import Console

from beamsearch.cli_common import add_run_options, fail, finish, require_files, resolve_run
from profiling.profile import KernelReport, render, report_kernel


def failures(report: KernelReport) -> list[str]:
    """One line for each thing asked that failed: the timing, a time under the floor, the profile."""
    out, kernel, timing = [], report.kernel_path, report.timing
    if timing.status != "ok":
        out.append(f"{kernel}: timing {timing.status}: {timing.reason}")
    if report.suspect and report.floor is not None and timing.timing is not None:
        out.append(f"{kernel}: suspect: {timing.timing.median_ms:.4f} ms, under the floor's "
                   f"{report.floor.floor_ms:.4f} ms: faster than physics allows")  # fmt: skip
    if not report.profile.available:
        out.append(f"{kernel}: no profile: {report.profile.reason}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.profile", description=__doc__)
    add_run_options(parser)
    parser.add_argument("--kernel", help="kernel file (default: the problem's input_kernel.py)")
    args = parser.parse_args(argv)
    problem, spec = resolve_run(args)
    kernel = args.kernel or problem.input_kernel_path
    if kernel is None:
        fail(f"problem {problem.name} has no input_kernel.py; pass --kernel")
    require_files([kernel], "kernel file")
    report = report_kernel(problem.name, spec, kernel)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        render(report, Console())
    finish(failures(report))


if __name__ == "__main__":
    main()
