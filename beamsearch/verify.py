"""``python -m beamsearch.verify --problem P --kernel K``: check a kernel; exit 0 only if it passes."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from beamsearch.cli_common import add_run_options, comma_list, fail, finish, require_files, resolve_run
from beamsearch.records.schema import Verdict
from workers.harness.verify import DEFAULT_VERIFY_TIMEOUT_S, MIN_SEEDS, verify_kernel


def render_verdict(verdict: Verdict, console: Console) -> None:
    spec = verdict.spec
    where = f"{spec.device}, {spec.dtype}, {spec.shapes} shapes" if spec else ""
    table = Table(title=f"{verdict.kernel_path}\n{where}", title_justify="left")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    for c in verdict.checks:
        table.add_row(c.name, "[green]pass[/]" if c.passed else "[red]FAIL[/]", c.detail)
    console.print(table)
    colour = "green" if verdict.passed else "red"
    errs = ""
    if verdict.max_abs_err is not None:
        errs = f"  max abs err {verdict.max_abs_err:.3g}, max rel err {verdict.max_rel_err:.3g}"
    console.print(f"[{colour}]{verdict.status}[/]: {verdict.reason}{errs}  ({verdict.duration_s:.1f} s)")
    if not verdict.passed and verdict.traceback:
        console.print(verdict.traceback.strip().splitlines()[-1][:300], style="dim", markup=False)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.verify", description=__doc__)
    add_run_options(parser)
    parser.add_argument("--kernel", help="kernel file (default: the problem's input_kernel.py)")
    parser.add_argument("--seeds", type=comma_list(item=int), default=[0, 1, 2],
                        help=f"comma-separated input seeds, at least {MIN_SEEDS} (default 0,1,2)")  # fmt: skip
    # Not run's --task-timeout: that bounds a candidate's whole task (its proposal, verification and
    # timing); this bounds one verification, which a search's task gives DEFAULT_VERIFY_TIMEOUT_S.
    parser.add_argument("--verify-timeout", dest="verify_timeout_s", type=float, default=DEFAULT_VERIFY_TIMEOUT_S,
                        metavar="SECONDS", help="a verification with no verdict by then is a timeout "
                        f"(default {DEFAULT_VERIFY_TIMEOUT_S:g})")  # fmt: skip
    parser.add_argument("--timeout", dest="verify_timeout_s", type=float, help=argparse.SUPPRESS)  # the old name
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    problem, spec = resolve_run(args)
    kernel = args.kernel or problem.input_kernel_path
    if kernel is None:
        fail(f"problem {problem.name} has no input_kernel.py; pass --kernel")
    require_files([kernel], "kernel file")
    if len(set(args.seeds)) < MIN_SEEDS:
        fail(f"--seeds: at least {MIN_SEEDS} distinct seeds of fresh inputs are required")
    verdict = verify_kernel(spec, kernel, seeds=args.seeds, timeout_s=args.verify_timeout_s)
    if args.json:
        print(verdict.model_dump_json(indent=2))
    else:
        render_verdict(verdict, Console())
    finish([] if verdict.passed else [f"{kernel}: {verdict.status}: {verdict.reason}"])


if __name__ == "__main__":
    main()
