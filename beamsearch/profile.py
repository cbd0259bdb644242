"""``python -m beamsearch.profile --problem P [--kernel K]``: where a kernel's time goes, and how far from
physics (``profiling.profile``): the bench clock's time, one ncu profile of the kernel's own Triton
kernels, the roofline class and the problem's analytic floor. The kernel is not verified here: use
``python -m beamsearch.verify`` first.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from beamsearch.cli_common import add_run_options, fail, resolve_run
from profiling.profile import render, report_kernel


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.profile", description=__doc__)
    add_run_options(parser)
    parser.add_argument("--kernel", help="kernel file (default: the problem's input_kernel.py)")
    args = parser.parse_args(argv)
    problem, spec = resolve_run(args)
    kernel = args.kernel or problem.input_kernel_path
    if kernel is None:
        fail(f"problem {problem.name} has no input_kernel.py; pass --kernel")
    report = report_kernel(problem.name, spec, kernel)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        render(report, Console())
    raise SystemExit(0 if report.profile.available else 1)


if __name__ == "__main__":
    main()
